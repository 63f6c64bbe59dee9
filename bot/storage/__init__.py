"""Storage: SQLite through aiosqlite; the only package that speaks SQL."""

from __future__ import annotations

from pathlib import Path

from bot.storage.chats import ChatRepository
from bot.storage.community import CommunityRepository
from bot.storage.db import Database
from bot.storage.feedback import FeedbackRepository
from bot.storage.guides import GuideRepository
from bot.storage.heartbeats import HeartbeatRepository
from bot.storage.outbox import OutboxRepository
from bot.storage.papers import PaperRepository
from bot.storage.rankings import RankingRepository
from bot.storage.saved import SavedRepository
from bot.storage.sources import SourceRepository
from bot.storage.subscriptions import SubscriptionRepository
from bot.storage.topics import TopicRepository


class Storage:
    """The database and one repository per table family."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.chats = ChatRepository(db)
        self.subscriptions = SubscriptionRepository(db)
        self.papers = PaperRepository(db)
        self.outbox = OutboxRepository(db)
        self.saved = SavedRepository(db)
        self.feedback = FeedbackRepository(db)
        self.rankings = RankingRepository(db)
        self.sources = SourceRepository(db)
        self.heartbeats = HeartbeatRepository(db)
        self.guides = GuideRepository(db)
        self.community = CommunityRepository(db)
        self.topics = TopicRepository(db)

    @classmethod
    async def open(cls, path: Path | str) -> Storage:
        return cls(await Database.open(path))

    async def close(self) -> None:
        await self.db.close()


__all__ = ["Database", "Storage"]

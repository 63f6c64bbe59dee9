"""Storage: SQLite through aiosqlite; the only package that speaks SQL."""

from __future__ import annotations

from pathlib import Path

from bot.storage.sqlite.chats import ChatRepository
from bot.storage.sqlite.community import CommunityRepository
from bot.storage.sqlite.db import Database
from bot.storage.sqlite.feedback import FeedbackRepository
from bot.storage.sqlite.foryou_outbox import ForYouOutboxRepository
from bot.storage.sqlite.guides import GuideRepository
from bot.storage.sqlite.heartbeats import HeartbeatRepository
from bot.storage.sqlite.outbox import OutboxRepository
from bot.storage.sqlite.papers import PaperRepository
from bot.storage.sqlite.rankings import RankingRepository
from bot.storage.sqlite.saved import SavedRepository
from bot.storage.sqlite.sources import SourceRepository
from bot.storage.sqlite.subscriptions import SubscriptionRepository
from bot.storage.sqlite.topics import TopicRepository


class Storage:
    """The database and one repository per table family."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.chats = ChatRepository(db)
        self.subscriptions = SubscriptionRepository(db)
        self.papers = PaperRepository(db)
        self.outbox = OutboxRepository(db)
        self.for_you_outbox = ForYouOutboxRepository(db)
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

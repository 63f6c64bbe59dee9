"""Storage on SQLite: the repositories over one `Database`, and its write transactions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite

from bot.core.models import Leadership
from bot.storage.interfaces import Compaction
from bot.storage.sqlite.cards import CardRepository
from bot.storage.sqlite.chats import ChatRepository, ChatsInTransaction
from bot.storage.sqlite.community import CommunityRepository
from bot.storage.sqlite.db import BUSY_TIMEOUT, Database
from bot.storage.sqlite.feedback import FeedbackRepository
from bot.storage.sqlite.foryou_outbox import ForYouOutboxRepository
from bot.storage.sqlite.guides import GuideRepository
from bot.storage.sqlite.heartbeats import HeartbeatRepository
from bot.storage.sqlite.outbox import OutboxInTransaction, OutboxRepository
from bot.storage.sqlite.paid_broadcasts import PaidBroadcastRepository
from bot.storage.sqlite.papers import PaperRepository, PapersInTransaction
from bot.storage.sqlite.rankings import RankingRepository
from bot.storage.sqlite.saved import SavedInTransaction, SavedRepository
from bot.storage.sqlite.sources import SourceRepository
from bot.storage.sqlite.subscriptions import SubscriptionRepository
from bot.storage.sqlite.topics import TopicRepository
from bot.storage.sqlite.zotero import ZoteroRepository


class SqliteTransaction:
    """The repositories of one write transaction, all on the writer connection."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.papers = PapersInTransaction(conn)
        self.outbox = OutboxInTransaction(conn)
        self.chats = ChatsInTransaction(conn)
        self.saved = SavedInTransaction(conn)


class SqliteStorage:
    """The database and one repository per table family (`bot.storage.interfaces.Storage`).

    `db` is for what only SQLite has (the engine's own tests, the benches that time its
    writer); the bot itself goes through the repositories.
    """

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
        self.paid_broadcasts = PaidBroadcastRepository(db)
        self.zotero = ZoteroRepository(db)
        self.cards = CardRepository(db)

    @classmethod
    async def open(cls, path: Path | str, *, create: bool = True, migrate: bool = True,
                   busy_timeout: float | None = None) -> SqliteStorage:
        """See `Database.open`: WAL, the pragmas, the migrations, the reader beside the writer."""
        return cls(await Database.open(
            path, create=create, migrate=migrate,
            busy_timeout=BUSY_TIMEOUT if busy_timeout is None else busy_timeout))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTransaction]:
        """BEGIN IMMEDIATE … COMMIT on the writer (rolled back on error)."""
        async with self.db.transaction() as conn:
            yield SqliteTransaction(conn)

    async def check_writable(self) -> None:
        await self.db.check_writable()

    async def check_pages(self) -> None:
        """SQLite's quick_check, on a connection of its own (see `Database.quick_check`)."""
        await self.db.quick_check()

    async def upkeep(self) -> Compaction | None:
        """PRAGMA optimize and the write-ahead log cut to nothing, then VACUUM when pruning left
        a large share of the file free."""
        await self.db.optimize()
        vacuumed = await self.db.vacuum_if_worth()
        return None if vacuumed is None else Compaction(*vacuumed)

    async def backup(self, target: Path) -> None:
        await self.db.backup(target)

    async def size_bytes(self) -> int:
        return await self.db.size_bytes()

    async def free_bytes(self) -> int:
        return await self.db.free_bytes()

    def leading(self) -> bool:
        return True  # the file lock is held for the life of the process: one bot, the leader

    async def leadership(self, instance: str) -> Leadership | None:
        return None

    async def close(self) -> None:
        await self.db.close()

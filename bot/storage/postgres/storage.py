"""Storage on PostgreSQL: the repositories over one `Database`, and its write transactions."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from bot.config import hide_password
from bot.core.models import Leadership, Role
from bot.storage.errors import DatabaseError
from bot.storage.interfaces import Compaction
from bot.storage.postgres.db import Connection, Database, engine_errors
from bot.storage.postgres.lock import leading
from bot.storage.postgres.repositories import (
    CardRepository,
    ChatRepository,
    ChatsInTransaction,
    CommunityRepository,
    FeedbackRepository,
    ForYouOutboxRepository,
    GuideRepository,
    HeartbeatRepository,
    OutboxInTransaction,
    OutboxRepository,
    PaidBroadcastRepository,
    PaperRepository,
    PapersInTransaction,
    RankingRepository,
    SavedInTransaction,
    SavedRepository,
    SourceRepository,
    SubscriptionRepository,
    TopicRepository,
    ZoteroRepository,
)

CONNECT_TIMEOUT = 10.0  # seconds to reach the server before the start-up gives up on a try


class PostgresTransaction:
    """The repositories of one write transaction, all on the writer connection."""

    def __init__(self, conn: Connection) -> None:
        self.papers = PapersInTransaction(conn)  # type: ignore[arg-type]
        self.outbox = OutboxInTransaction(conn)  # type: ignore[arg-type]
        self.chats = ChatsInTransaction(conn)  # type: ignore[arg-type]
        self.saved = SavedInTransaction(conn)  # type: ignore[arg-type]


class PostgresStorage:
    """The database and one repository per table family (`bot.storage.interfaces.Storage`).

    `db` is for what only PostgreSQL has (the engine's own tests)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.chats = ChatRepository(db)  # type: ignore[arg-type]
        self.subscriptions = SubscriptionRepository(db)  # type: ignore[arg-type]
        self.papers = PaperRepository(db)  # type: ignore[arg-type]
        self.outbox = OutboxRepository(db)  # type: ignore[arg-type]
        self.for_you_outbox = ForYouOutboxRepository(db)  # type: ignore[arg-type]
        self.saved = SavedRepository(db)  # type: ignore[arg-type]
        self.feedback = FeedbackRepository(db)  # type: ignore[arg-type]
        self.rankings = RankingRepository(db)  # type: ignore[arg-type]
        self.sources = SourceRepository(db)  # type: ignore[arg-type]
        self.heartbeats = HeartbeatRepository(db)  # type: ignore[arg-type]
        self.guides = GuideRepository(db)  # type: ignore[arg-type]
        self.community = CommunityRepository(db)  # type: ignore[arg-type]
        self.topics = TopicRepository(db)  # type: ignore[arg-type]
        self.paid_broadcasts = PaidBroadcastRepository(db)  # type: ignore[arg-type]
        self.zotero = ZoteroRepository(db)  # type: ignore[arg-type]
        self.cards = CardRepository(db)  # type: ignore[arg-type]

    @classmethod
    async def open(cls, url: str, *, create: bool = True, migrate: bool = True,
                   busy_timeout: float | None = None) -> PostgresStorage:
        """Connect and create the schema if the database is empty (see `Database.open`)."""
        return cls(await Database.open(
            url, create=create, migrate=migrate,
            timeout=CONNECT_TIMEOUT if busy_timeout is None else max(busy_timeout, 1.0)))

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTransaction]:
        """BEGIN … COMMIT on the writer (rolled back on error)."""
        async with self.db.transaction() as conn:
            yield PostgresTransaction(conn)

    async def check_writable(self) -> None:
        await self.db.check_writable()

    async def check_pages(self) -> None:
        """Nothing to read here: the server checks its own pages (data checksums) and its
        operator's tools (amcheck, pg_dump) read them; a failed read raises as it happens."""

    async def upkeep(self) -> Compaction | None:
        """ANALYZE for the planner; autovacuum gives free space back, so no compaction here."""
        with engine_errors(self.db.url):
            await self.db.execute("ANALYZE")
        return None

    async def backup(self, target: Path) -> None:
        raise DatabaseError(
            f"the database {hide_password(self.db.url)!r} is on PostgreSQL: back it up with "
            "the server's own tool, pg_dump (e.g. `pg_dump -Fc -f bot.dump DATABASE_URL`)")

    async def size_bytes(self) -> int:
        return await self.db.size_bytes()

    async def free_bytes(self) -> int:
        """What autovacuum has not yet given back is the server's to manage: counted as none."""
        return 0

    def leading(self) -> bool:
        return leading()

    async def leadership(self, instance: str) -> Leadership | None:
        """The lease row and `instance`'s processes (`bot.storage.postgres.lock`'s tables);
        an instance's process counts as running while it was seen within a lease."""
        if not await self.db.has_table("bot_leadership"):
            return None
        lease = await self.db.fetchone(
            "SELECT term, holder, lease_seconds, "
            "extract(epoch FROM clock_timestamp()) - renewed_at AS age "
            "FROM bot_leadership WHERE id = 1")
        if lease is None:
            return None
        processes = await self.db.fetchall(
            "SELECT holder, role FROM bot_processes WHERE instance = ? "
            "AND seen_at >= extract(epoch FROM clock_timestamp()) - ?",
            (instance, lease["lease_seconds"]))
        roles = {row["holder"]: Role(row["role"]) for row in processes}
        role = None
        if roles.get(lease["holder"]) is Role.LEADER:
            role = Role.LEADER
        elif roles:
            role = Role.STANDBY
        return Leadership(term=lease["term"], leader=lease["holder"],
                          lease_age=max(0.0, float(lease["age"])),
                          lease_seconds=float(lease["lease_seconds"]), role=role)

    async def close(self) -> None:
        await self.db.close()

"""Subscriptions: each chat's `/follow` queries, in canonical form and as typed."""

from __future__ import annotations

from bot.core.models import GENERAL, MAX_SUBSCRIPTIONS_PER_CHAT, FollowStatus, Subscription
from bot.storage.interfaces import AddResult
from bot.storage.sqlite.db import Database, inserted_id


class SubscriptionRepository:
    """Reads and writes the `subscriptions` table."""

    _inserted_id = staticmethod(inserted_id)

    def __init__(self, db: Database) -> None:
        self._db = db

    async def add(self, chat_id: int, query: str, typed: str, now: float,
                  topic_id: int = GENERAL) -> AddResult:
        """Add a canonical query for a chat (its alerts going to forum topic `topic_id`)
        unless it is a duplicate or the chat is full.

        `typed` is kept to show the chat; a duplicate comes back as it was typed first.
        """
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "SELECT id FROM subscriptions WHERE chat_id = ? AND query = ?", (chat_id, query)
            )
            if (row := await cursor.fetchone()) is not None:
                return AddResult(FollowStatus.DUPLICATE,
                                 await self._numbered(conn, chat_id, row["id"]))
            cursor = await conn.execute(
                "SELECT COUNT(*) FROM subscriptions WHERE chat_id = ?", (chat_id,)
            )
            if (await cursor.fetchone())[0] >= MAX_SUBSCRIPTIONS_PER_CHAT:
                return AddResult(FollowStatus.LIMIT)
            sub_id = await self._inserted_id(
                conn,
                "INSERT INTO subscriptions (chat_id, query, raw_query, created_at, topic_id) "
                "VALUES (?, ?, ?, ?, ?)",
                (chat_id, query, typed, now, topic_id),
            )
            return AddResult(FollowStatus.ADDED, await self._numbered(conn, chat_id, sub_id))

    @staticmethod
    async def _numbered(conn, chat_id: int, sub_id: int | None) -> Subscription:
        cursor = await conn.execute(
            "SELECT id, query, raw_query, topic_id FROM subscriptions WHERE chat_id = ? "
            "ORDER BY id", (chat_id,),
        )
        for number, row in enumerate(await cursor.fetchall(), start=1):
            if row["id"] == sub_id:
                return Subscription(row["id"], chat_id, row["query"], number, row["raw_query"],
                                    row["topic_id"])
        raise LookupError(sub_id)

    async def for_chat(self, chat_id: int) -> list[Subscription]:
        """The chat's subscriptions, numbered 1.. in the order they were added."""
        rows = await self._db.fetchall(
            "SELECT id, query, raw_query, topic_id FROM subscriptions WHERE chat_id = ? "
            "ORDER BY id", (chat_id,),
        )
        return [Subscription(r["id"], chat_id, r["query"], n, r["raw_query"], r["topic_id"])
                for n, r in enumerate(rows, 1)]

    async def move(self, chat_id: int, sub_id: int, topic_id: int) -> bool:
        """Send a subscription's alerts to another forum topic of its chat from now on."""
        return await self._db.execute(
            "UPDATE subscriptions SET topic_id = ? WHERE id = ? AND chat_id = ?",
            (topic_id, sub_id, chat_id)) > 0

    async def remove(self, chat_id: int, sub_id: int) -> bool:
        """Remove one subscription, only if it belongs to `chat_id`."""
        return (
            await self._db.execute(
                "DELETE FROM subscriptions WHERE id = ? AND chat_id = ?", (sub_id, chat_id)
            )
            > 0
        )

    async def remove_all(self, chat_id: int) -> int:
        return await self._db.execute("DELETE FROM subscriptions WHERE chat_id = ?", (chat_id,))

    async def all(self) -> list[Subscription]:
        """Every subscription of every chat (to build the matcher)."""
        rows = await self._db.fetchall(
            "SELECT id, chat_id, query, raw_query, topic_id FROM subscriptions ORDER BY id")
        return [Subscription(r["id"], r["chat_id"], r["query"], typed=r["raw_query"],
                             topic_id=r["topic_id"])
                for r in rows]

    async def get(self, sub_id: int) -> Subscription | None:
        row = await self._db.fetchone(
            "SELECT id, chat_id, query, raw_query, topic_id FROM subscriptions WHERE id = ?",
            (sub_id,)
        )
        return None if row is None else Subscription(row["id"], row["chat_id"], row["query"],
                                                     typed=row["raw_query"],
                                                     topic_id=row["topic_id"])

    async def count(self) -> int:
        return int(await self._db.fetchval("SELECT COUNT(*) FROM subscriptions"))

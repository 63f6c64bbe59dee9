"""Forum topics: their names, and what happens when one is deleted or closed."""

from __future__ import annotations

from bot.core.models import GENERAL
from bot.storage.interfaces import TopicFallback
from bot.storage.sqlite.db import Database
from bot.storage.sqlite.outbox import unpack_staged

# Alerts not yet delivered; those move to General with their topic's subscriptions.
_UNDELIVERED = "('pending', 'held')"


class TopicRepository:
    """Reads and writes the `topics` table, and rebinds a gone topic's subscriptions."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def remember(self, chat_id: int, topic_id: int, name: str) -> None:
        """A topic's name, from its forum_topic_created or forum_topic_edited message."""
        await self._db.execute(
            "INSERT INTO topics (chat_id, topic_id, name) SELECT id, ?, ? FROM chats "
            "WHERE id = ? ON CONFLICT (chat_id, topic_id) DO UPDATE SET name = excluded.name",
            (topic_id, name, chat_id))

    async def knows(self, chat_id: int, topic_id: int) -> bool:
        return await self._db.fetchval(
            "SELECT 1 FROM topics WHERE chat_id = ? AND topic_id = ?",
            (chat_id, topic_id)) is not None

    async def names(self, chat_id: int) -> dict[int, str]:
        """The chat's topic names by topic id."""
        rows = await self._db.fetchall(
            "SELECT topic_id, name FROM topics WHERE chat_id = ?", (chat_id,))
        return {r["topic_id"]: r["name"] for r in rows}

    async def fall_back(self, chat_id: int, topic_id: int) -> TopicFallback:
        """Telegram refused a send into the topic (deleted or closed): its subscriptions are
        bound to General again and its undelivered alerts go there, in one transaction.

        An alert that General already has for the same paper version is dropped instead of
        moved: the chat gets that version once in General, never twice.
        """
        async with self._db.transaction() as conn:
            await unpack_staged(conn, [chat_id])
            cursor = await conn.execute(
                "SELECT raw_query, query FROM subscriptions WHERE chat_id = ? AND topic_id = ? "
                "ORDER BY id", (chat_id, topic_id))
            queries = tuple(r["raw_query"] or r["query"] for r in await cursor.fetchall())
            await conn.execute(
                "UPDATE subscriptions SET topic_id = ? WHERE chat_id = ? AND topic_id = ?",
                (GENERAL, chat_id, topic_id))
            cursor = await conn.execute(
                f"UPDATE outbox SET topic_id = :general WHERE chat_id = :chat "
                f"AND topic_id = :topic AND status IN {_UNDELIVERED} AND NOT EXISTS ("
                f"SELECT 1 FROM outbox g WHERE g.chat_id = :chat AND g.topic_id = :general "
                f"AND g.arxiv_id = outbox.arxiv_id AND g.version = outbox.version)",
                {"general": GENERAL, "chat": chat_id, "topic": topic_id})
            moved = cursor.rowcount
            await conn.execute(
                f"DELETE FROM outbox WHERE chat_id = ? AND topic_id = ? "
                f"AND status IN {_UNDELIVERED}", (chat_id, topic_id))
            # For you, too: its waiting message now, and each day's after it.
            await conn.execute(
                f"UPDATE foryou_outbox SET topic_id = ? WHERE chat_id = ? AND topic_id = ? "
                f"AND status IN {_UNDELIVERED}", (GENERAL, chat_id, topic_id))
            await conn.execute(
                "UPDATE foryou SET topic_id = ? WHERE chat_id = ? AND topic_id = ?",
                (GENERAL, chat_id, topic_id))
            cursor = await conn.execute(
                "SELECT name FROM topics WHERE chat_id = ? AND topic_id = ?", (chat_id, topic_id))
            row = await cursor.fetchone()
        return TopicFallback(row["name"] if row else None, queries, moved)

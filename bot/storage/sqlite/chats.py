"""Chats: who talks to the bot, their settings, and whether they can be reached."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

import aiosqlite

from bot.core.constants import DAY
from bot.core.models import Chat, DeliveryMode
from bot.storage.sqlite.db import Database, in_chunks
from bot.storage.sqlite.outbox import (
    DELIVERY_TABLES,
    HELD_ALERT_DAYS,
    STAGED_TABLE,
    unpack_staged,
)

LAST_SEEN_RESOLUTION = 600.0  # seconds: `last_seen_at` is refreshed at most this often
# The tables a chat owns rows in, each with the rest of its unique key beside chat_id.
_KEYS_BESIDE_CHAT = {"subscriptions": ("query",), "saved": ("arxiv_id",),
                     "outbox": ("topic_id", "arxiv_id", "version"), "foryou_outbox": ("day",)}
# Every table with a row per chat besides `chats` itself (keyed `chat_id`): what forgetting a
# chat erases. A new table that names a chat belongs here (tests/test_e2e_forget.py checks).
CHAT_TABLES = ("subscriptions", "topics", "saved", "feedback", "chat_models", "foryou",
               "guide_calls", "alert_threads", "zotero_items", "zotero_links", "card_messages",
               *DELIVERY_TABLES, STAGED_TABLE)


def _chat(row: sqlite3.Row) -> Chat:
    return Chat(
        id=row["id"],
        type=row["type"],
        title=row["title"],
        language=row["language"],
        language_chosen=bool(row["language_chosen"]),
        timezone=row["timezone"],
        delivery_mode=DeliveryMode(row["delivery_mode"]),
        digest_time=row["digest_time"],
        last_digest_at=row["last_digest_at"],
        paused=bool(row["paused"]),
        inactive_since=row["inactive_since"],
        rating_buttons=bool(row["rating_buttons"]),
    )


class ChatsInTransaction:
    """The chats as one open transaction finds them (see `SqliteStorage.transaction`)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def inactive_ids(self) -> set[int]:
        """Chats that blocked the bot or are gone (read inside the transaction)."""
        cursor = await self._conn.execute("SELECT id FROM chats WHERE inactive_since IS NOT NULL")
        return {row["id"] for row in await cursor.fetchall()}


class ChatRepository:
    """Reads and writes the `chats` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def record(
        self, chat_id: int, chat_type: str, title: str | None, language: str, now: float
    ) -> tuple[Chat, bool]:
        """Insert or refresh a chat that wrote to the bot; re-activates it if it was inactive.

        Returns the chat and whether it was re-activated (so held alerts can be released).
        Most updates change nothing: then nothing is written, and the chat's commands never
        wait behind another transaction (a big ingest) just to be recorded.
        """
        row = await self._db.fetchone("SELECT * FROM chats WHERE id = ?", (chat_id,))
        if row is not None:
            known = _chat(row)
            if (known.active and known.type == chat_type and known.title == title
                    and (known.language_chosen or known.language == language)
                    and 0 <= now - row["last_seen_at"] < LAST_SEEN_RESOLUTION):
                return known, False
        async with self._db.transaction() as conn:
            cursor = await conn.execute("SELECT inactive_since FROM chats WHERE id = ?", (chat_id,))
            existing = await cursor.fetchone()
            reactivated = existing is not None and existing["inactive_since"] is not None
            if reactivated:
                # Staged alerts become held ones first, released (or expired) with the rest.
                await unpack_staged(conn, [chat_id])
            await conn.execute(
                """
                INSERT INTO chats (id, type, title, language, created_at, last_seen_at)
                VALUES (?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    type = excluded.type,
                    title = excluded.title,
                    -- a language chosen with /lang wins over Telegram's language_code
                    language = CASE WHEN chats.language_chosen <> 0 THEN chats.language
                                    ELSE excluded.language END,
                    last_seen_at = excluded.last_seen_at,
                    inactive_since = NULL,
                    inactive_reason = NULL
                """,
                (chat_id, chat_type, title, language, now, now),
            )
            for table in DELIVERY_TABLES if reactivated else ():
                await conn.execute(
                    f"UPDATE {table} SET due_at = :now, status = CASE WHEN created_at >= :fresh "
                    f"THEN 'pending' ELSE 'expired' END WHERE chat_id = :chat AND status = 'held'",
                    {"now": now, "fresh": now - HELD_ALERT_DAYS * DAY, "chat": chat_id},
                )
            cursor = await conn.execute("SELECT * FROM chats WHERE id = ?", (chat_id,))
            row = await cursor.fetchone()
        return _chat(row), reactivated

    async def get(self, chat_id: int) -> Chat | None:
        row = await self._db.fetchone("SELECT * FROM chats WHERE id = ?", (chat_id,))
        return None if row is None else _chat(row)

    async def get_many(self, chat_ids: Iterable[int]) -> dict[int, Chat]:
        """These chats, by id (those the bot does not know left out)."""
        chats: dict[int, Chat] = {}
        for chunk, marks in in_chunks(chat_ids):
            rows = await self._db.fetchall(f"SELECT * FROM chats WHERE id IN ({marks})", chunk)
            chats.update((row["id"], _chat(row)) for row in rows)
        return chats

    async def set_language(self, chat_id: int, language: str) -> None:
        await self._db.execute(
            "UPDATE chats SET language = ?, language_chosen = 1 WHERE id = ?", (language, chat_id)
        )

    async def set_timezone(self, chat_id: int, timezone: str) -> None:
        await self._db.execute("UPDATE chats SET timezone = ? WHERE id = ?", (timezone, chat_id))

    async def set_digest(self, chat_id: int, digest_time: str | None, now: float) -> None:
        """Daily digest at `digest_time` ('HH:MM' local), or instant alerts when None.

        The schedule counts from `now`, so the first digest is the next HH:MM, not at once.
        """
        mode = DeliveryMode.INSTANT if digest_time is None else DeliveryMode.DIGEST
        await self._db.execute(
            "UPDATE chats SET delivery_mode = ?, digest_time = ?, last_digest_at = ? "
            "WHERE id = ?",
            (mode, digest_time, now, chat_id),
        )

    async def mark_digests_sent(self, chat_ids: Iterable[int], now: float) -> None:
        """These chats' digests of `now` are done, in one transaction."""
        async with self._db.transaction() as conn:
            for chunk, marks in in_chunks(chat_ids):
                await conn.execute(
                    f"UPDATE chats SET last_digest_at = ? WHERE id IN ({marks})", (now, *chunk))

    async def set_paused(self, chat_id: int, paused: bool) -> None:
        await self._db.execute("UPDATE chats SET paused = ? WHERE id = ?", (int(paused), chat_id))

    async def set_rating_buttons(self, chat_id: int, shown: bool) -> None:
        await self._db.execute("UPDATE chats SET rating_buttons = ? WHERE id = ?",
                               (int(shown), chat_id))

    async def mark_inactive(self, chat_id: int, reason: str, now: float) -> None:
        """The chat blocked the bot (or is gone): skip it, and hold its pending alerts (kept,
        not dropped), until it writes again."""
        async with self._db.transaction() as conn:
            await unpack_staged(conn, [chat_id])
            await conn.execute(
                "UPDATE chats SET inactive_since = COALESCE(inactive_since, ?), "
                "inactive_reason = ? WHERE id = ?",
                (now, reason, chat_id),
            )
            for table in DELIVERY_TABLES:
                await conn.execute(
                    f"UPDATE {table} SET status = 'held', last_error = ?, claimed_at = NULL "
                    f"WHERE chat_id = ? AND status IN ('pending', 'sending')",
                    (reason[:500], chat_id),
                )

    async def migrate_id(self, old_id: int, new_id: int) -> None:
        """A group became a supergroup: move the chat and everything it owns to the new id.

        If the supergroup already has a row (someone wrote there first), the old group's
        settings, subscriptions, library and alerts are merged into it; what the new id
        already has wins on a clash (same query, same paper).
        """
        async with self._db.transaction() as conn:
            # Both chats' alerts as outbox rows, so that the clash rule below sees them all.
            await unpack_staged(conn, [old_id, new_id])
            cursor = await conn.execute("SELECT 1 FROM chats WHERE id = ?", (new_id,))
            if await cursor.fetchone() is None:
                # ON UPDATE CASCADE carries subscriptions, saved and outbox along.
                await conn.execute("UPDATE chats SET id = ? WHERE id = ?", (new_id, old_id))
                return
            await conn.execute(
                """
                UPDATE chats SET (language, language_chosen, timezone, delivery_mode,
                                  digest_time, last_digest_at, paused) =
                    (SELECT language, language_chosen, timezone, delivery_mode, digest_time,
                            last_digest_at, paused FROM chats WHERE id = :old)
                WHERE id = :new AND EXISTS (SELECT 1 FROM chats WHERE id = :old)
                """,
                {"old": old_id, "new": new_id},
            )
            for table, key in _KEYS_BESIDE_CHAT.items():
                # What the new id has already (the same key) is not moved: it stays behind.
                clash = " AND ".join(f"x.{column} = {table}.{column}" for column in key)
                await conn.execute(
                    f"UPDATE {table} SET chat_id = :new WHERE chat_id = :old AND NOT EXISTS "
                    f"(SELECT 1 FROM {table} x WHERE x.chat_id = :new AND {clash})",
                    {"new": new_id, "old": old_id},
                )
            # What clashed stays with the old row and goes with it (ON DELETE CASCADE).
            await conn.execute("DELETE FROM chats WHERE id = ?", (old_id,))

    async def forget(self, chat_id: int) -> None:
        """Erase every row that names the chat, in one transaction: its record and settings,
        subscriptions and topics, library, 👍 / 👎, model, For you, guide calls, alerts queued
        or sent and their threads."""
        async with self._db.transaction() as conn:
            for table in CHAT_TABLES:
                await conn.execute(f"DELETE FROM {table} WHERE chat_id = ?", (chat_id,))
            await conn.execute("DELETE FROM chats WHERE id = ?", (chat_id,))

    async def departed_before(self, cutoff: float) -> list[int]:
        """Chats that blocked or removed the bot before `cutoff` and have not written since."""
        rows = await self._db.fetchall(
            "SELECT id FROM chats WHERE inactive_since IS NOT NULL AND inactive_since < ? "
            "ORDER BY id", (cutoff,))
        return [row["id"] for row in rows]

    async def counts(self) -> dict[str, int]:
        row = await self._db.fetchone(
            """
            SELECT COUNT(*) AS total,
                   SUM(CASE WHEN inactive_since IS NULL THEN 1 ELSE 0 END) AS active,
                   SUM(CASE WHEN inactive_since IS NULL THEN 0 ELSE 1 END) AS inactive,
                   SUM(paused) AS paused
            FROM chats
            """
        )
        assert row is not None
        return {k: int(row[k] or 0) for k in ("total", "active", "inactive", "paused")}

    async def in_digest_mode(self) -> list[Chat]:
        rows = await self._db.fetchall(
            "SELECT * FROM chats WHERE delivery_mode = ? AND inactive_since IS NULL",
            (DeliveryMode.DIGEST,)
        )
        return [_chat(r) for r in rows]

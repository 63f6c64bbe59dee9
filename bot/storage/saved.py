"""The saved library: papers a chat keeps, watched for revisions."""

from __future__ import annotations

from collections.abc import Iterable

import aiosqlite

from bot.models import Paper
from bot.storage.db import Database, in_chunks
from bot.storage.papers import paper_from_row


class SavedRepository:
    """Reads and writes the `saved` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def toggle(self, chat_id: int, arxiv_id: str, version: int, now: float) -> bool:
        """Save the paper, or remove it if saved already; returns whether it is saved now."""
        async with self._db.transaction() as conn:
            cursor = await conn.execute(
                "DELETE FROM saved WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id)
            )
            if cursor.rowcount:
                return False
            await conn.execute(
                "INSERT INTO saved (chat_id, arxiv_id, saved_version, saved_at) "
                "VALUES (?, ?, ?, ?)",
                (chat_id, arxiv_id, version, now),
            )
            return True

    async def save(self, chat_id: int, arxiv_id: str, version: int, now: float) -> bool:
        """Save the paper; returns False if it was saved already."""
        cursor_rows = await self._db.execute(
            "INSERT OR IGNORE INTO saved (chat_id, arxiv_id, saved_version, saved_at) "
            "VALUES (?, ?, ?, ?)",
            (chat_id, arxiv_id, version, now),
        )
        return cursor_rows > 0

    async def remove(self, chat_id: int, arxiv_id: str) -> bool:
        return await self._db.execute(
            "DELETE FROM saved WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id)
        ) > 0

    async def is_saved(self, chat_id: int, arxiv_id: str) -> bool:
        return await self._db.fetchone(
            "SELECT 1 FROM saved WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id)
        ) is not None

    async def page(self, chat_id: int, offset: int, limit: int) -> list[Paper]:
        """One page of the chat's library, newest saved first."""
        rows = await self._db.fetchall(
            """
            SELECT p.* FROM saved s JOIN papers p USING (arxiv_id)
            WHERE s.chat_id = ? ORDER BY s.saved_at DESC, s.arxiv_id LIMIT ? OFFSET ?
            """,
            (chat_id, limit, offset),
        )
        return [paper_from_row(r) for r in rows]

    async def all(self, chat_id: int) -> list[Paper]:
        return await self.page(chat_id, 0, -1)

    async def count(self, chat_id: int) -> int:
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM saved WHERE chat_id = ?", (chat_id,)
        ))

    @staticmethod
    async def chats_saving_in(
        conn: aiosqlite.Connection, arxiv_ids: Iterable[str]
    ) -> dict[str, list[int]]:
        """For each id, the chats that saved it (inside the caller's transaction)."""
        found: dict[str, list[int]] = {}
        for chunk, marks in in_chunks(arxiv_ids):
            cursor = await conn.execute(
                f"SELECT arxiv_id, chat_id FROM saved WHERE arxiv_id IN ({marks})",
                chunk,
            )
            for row in await cursor.fetchall():
                found.setdefault(row["arxiv_id"], []).append(row["chat_id"])
        return found

"""The saved library: papers a chat keeps, watched for revisions, and in a group who saved them."""

from __future__ import annotations

from collections.abc import Iterable

import aiosqlite

from bot.core.models import GroupMember, LibraryEntry, Paper
from bot.storage.interfaces import SaveRecord
from bot.storage.sqlite.db import Database, in_chunks
from bot.storage.sqlite.papers import paper_from_row


def _saver(row: aiosqlite.Row) -> GroupMember | None:
    if row["saved_by"] is None:
        return None
    return GroupMember(row["saved_by"], row["saved_by_name"] or "")


class SavedInTransaction:
    """The saved papers as one open transaction finds them (see `SqliteStorage.transaction`)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def chats_saving(self, arxiv_ids: Iterable[str]) -> dict[str, list[int]]:
        """For each id, the chats that saved it (read inside the transaction)."""
        found: dict[str, list[int]] = {}
        for chunk, marks in in_chunks(arxiv_ids):
            cursor = await self._conn.execute(
                f"SELECT arxiv_id, chat_id FROM saved WHERE arxiv_id IN ({marks})",
                chunk,
            )
            for row in await cursor.fetchall():
                found.setdefault(row["arxiv_id"], []).append(row["chat_id"])
        return found


class SavedRepository:
    """Reads and writes the `saved` table."""

    _NO_LIMIT: int | None = -1  # what LIMIT takes for "every row"

    def __init__(self, db: Database) -> None:
        self._db = db

    async def save(self, chat_id: int, arxiv_id: str, version: int, now: float,
                   saver: GroupMember | None = None) -> bool:
        """Save the paper (in a group, with who saved it); False if it was saved already, and
        then its first saver stays."""
        cursor_rows = await self._db.execute(
            "INSERT INTO saved (chat_id, arxiv_id, saved_version, saved_at, saved_by, "
            "saved_by_name) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (chat_id, arxiv_id) DO NOTHING",
            (chat_id, arxiv_id, version, now, saver.user_id if saver else None,
             saver.first_name if saver else None),
        )
        return cursor_rows > 0

    async def save_many(self, chat_id: int, papers: Iterable[tuple[str, int]], now: float,
                        saver: GroupMember | None = None) -> int:
        """Save (arxiv_id, version) pairs in one transaction (in a group, with who saved
        them); returns how many were new."""
        rows = [(chat_id, arxiv_id, version, now, saver.user_id if saver else None,
                 saver.first_name if saver else None) for arxiv_id, version in papers]
        async with self._db.transaction() as conn:
            before = conn.total_changes
            await conn.executemany(
                "INSERT INTO saved (chat_id, arxiv_id, saved_version, saved_at, saved_by, "
                "saved_by_name) VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (chat_id, arxiv_id) DO NOTHING", rows)
            return conn.total_changes - before

    async def saved_among(self, chat_id: int, arxiv_ids: Iterable[str]) -> set[str]:
        """Which of `arxiv_ids` the chat has saved."""
        found: set[str] = set()
        for chunk, marks in in_chunks(arxiv_ids):
            rows = await self._db.fetchall(
                f"SELECT arxiv_id FROM saved WHERE chat_id = ? AND arxiv_id IN ({marks})",
                [chat_id, *chunk])
            found.update(row["arxiv_id"] for row in rows)
        return found

    async def remove(self, chat_id: int, arxiv_id: str) -> bool:
        return await self._db.execute(
            "DELETE FROM saved WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id)
        ) > 0

    async def is_saved(self, chat_id: int, arxiv_id: str) -> bool:
        return await self.record(chat_id, arxiv_id) is not None

    async def record(self, chat_id: int, arxiv_id: str) -> SaveRecord | None:
        """The paper's save in this chat, or None if the chat has not saved it."""
        row = await self._db.fetchone(
            "SELECT saved_by, saved_by_name FROM saved WHERE chat_id = ? AND arxiv_id = ?",
            (chat_id, arxiv_id),
        )
        return None if row is None else SaveRecord(_saver(row))

    async def refresh_saver_name(self, chat_id: int, member: GroupMember) -> None:
        """Show the member's current first name beside what they saved in this chat.

        Read first: nearly always the name is unchanged, and then nothing is written (the
        member's command does not wait behind another transaction).
        """
        stale = await self._db.fetchone(
            "SELECT 1 FROM saved WHERE chat_id = ? AND saved_by = ? "
            "AND (saved_by_name IS NULL OR saved_by_name <> ?) LIMIT 1",
            (chat_id, member.user_id, member.first_name),
        )
        if stale is not None:
            await self._db.execute(
                "UPDATE saved SET saved_by_name = ? WHERE chat_id = ? AND saved_by = ?",
                (member.first_name, chat_id, member.user_id),
            )

    async def entries(self, chat_id: int, offset: int, limit: int) -> list[LibraryEntry]:
        """One page of the chat's library with who saved each paper, newest saved first."""
        rows = await self._db.fetchall(
            """
            SELECT p.*, s.saved_by, s.saved_by_name FROM saved s JOIN papers p USING (arxiv_id)
            WHERE s.chat_id = ? ORDER BY s.saved_at DESC, s.arxiv_id LIMIT ? OFFSET ?
            """,
            (chat_id, limit, offset),
        )
        return [LibraryEntry(paper_from_row(r), _saver(r)) for r in rows]

    async def page(self, chat_id: int, offset: int, limit: int) -> list[Paper]:
        """One page of the chat's library, newest saved first."""
        return [entry.paper for entry in await self.entries(chat_id, offset, limit)]

    async def all(self, chat_id: int) -> list[Paper]:
        return await self.page(chat_id, 0, self._NO_LIMIT)

    async def count(self, chat_id: int) -> int:
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM saved WHERE chat_id = ?", (chat_id,)
        ))

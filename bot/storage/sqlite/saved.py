"""The saved library: papers a chat keeps, watched for revisions, and in a group who saved them."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import aiosqlite

from bot.core.models import (
    GroupMember,
    LibraryEntry,
    LibraryFacets,
    LibraryLabel,
    LibraryMatches,
    LibraryQuery,
    LibrarySort,
    Paper,
)
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


def like_prefix(text: str) -> str:
    """A LIKE pattern (with ESCAPE '\\') for values starting with `text`."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def library_text_query(words: Iterable[str]) -> str:
    """An FTS5 query over the titles and authors only (a library is searched by those, not by
    abstracts): every word required, each the start of a word (a single letter a whole word:
    the start of every word with that letter is most of the index), none read as an
    operator."""
    quoted = ['"' + word.replace('"', '""') + ('"*' if len(word) > 1 else '"') for word in words]
    return "{title authors} : (" + " ".join(quoted) + ")"


_LIBRARY_ORDER = {
    LibrarySort.SAVED: "s.saved_at DESC, s.arxiv_id",
    # A paper without the date sorted by goes last; ties keep the library's own order.
    LibrarySort.UPDATED: "COALESCE(p.updated, p.published) DESC NULLS LAST, s.saved_at DESC, "
                         "s.arxiv_id",
    LibrarySort.PUBLISHED: "COALESCE(p.published, p.updated) DESC NULLS LAST, s.saved_at DESC, "
                           "s.arxiv_id",
}


class SavedRepository:
    """Reads and writes the `saved` table."""

    _NO_LIMIT: int | None = -1  # what LIMIT takes for "every row"
    # The statements' parts PostgreSQL words differently (`bot/storage/postgres`).
    _IN_CATEGORY = ("EXISTS (SELECT 1 FROM json_each(p.categories) c "
                    "WHERE c.value = :category OR c.value LIKE :archive ESCAPE '\\')")
    _FIRST_CATEGORY = "json_extract(p.categories, '$[0]')"

    @staticmethod
    def _text_match(words: Sequence[str], params: dict[str, Any]) -> str:
        """Papers whose title or authors hold the words, found by the full-text index of
        inline search (migration 17): the index's matches among this library's papers."""
        params["text"] = library_text_query(words)
        return ("s.arxiv_id IN (SELECT i.arxiv_id FROM paper_text t "
                "JOIN paper_text_ids i ON i.id = t.rowid WHERE paper_text MATCH :text)")

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

    def _library_where(self, chat_id: int, query: LibraryQuery) -> tuple[str, dict[str, Any]]:
        where = ["s.chat_id = :chat"]
        params: dict[str, Any] = {"chat": chat_id}
        if query.words:
            where.append(self._text_match(query.words, params))
        for number, prefix in enumerate(query.id_prefixes):
            where.append(f"s.arxiv_id LIKE :id{number} ESCAPE '\\'")
            params[f"id{number}"] = like_prefix(prefix)
        if query.category:
            where.append(self._IN_CATEGORY)
            params["category"] = query.category
            params["archive"] = like_prefix(query.category + ".")
        if query.label is LibraryLabel.NONE:
            where.append("f.label IS NULL")
        elif query.label is not None:
            where.append("f.label = :label")
            params["label"] = query.label.value
        if query.saver is not None:
            where.append("s.saved_by = :saver")
            params["saver"] = query.saver
        # The feedback join only when a label is asked for: (chat_id, arxiv_id) is its key.
        joins = ("LEFT JOIN feedback f ON f.chat_id = s.chat_id AND f.arxiv_id = s.arxiv_id"
                 if query.label is not None else "")
        return f"{joins} WHERE " + " AND ".join(where), params

    async def select(self, chat_id: int, query: LibraryQuery) -> LibraryMatches:
        """The library's papers that `query` asks for, in its order, one page of them, and
        how many match in all."""
        where, params = self._library_where(chat_id, query)
        # The page's ids first, sorted by narrow rows; then only the page's papers are read
        # whole (sorting a thousand papers with their abstracts costs several times more).
        page = await self._db.fetchall(
            f"""
            SELECT s.arxiv_id, COUNT(*) OVER () AS matching
            FROM saved s JOIN papers p USING (arxiv_id) {where}
            ORDER BY {_LIBRARY_ORDER[query.sort]} LIMIT :limit OFFSET :offset
            """,
            {**params, "limit": self._NO_LIMIT if query.limit is None else query.limit,
             "offset": query.offset})
        if not page:
            matching = 0 if query.offset == 0 else int(await self._db.fetchval(
                f"SELECT COUNT(*) FROM saved s JOIN papers p USING (arxiv_id) {where}", params))
            return LibraryMatches([], matching)
        order = {row["arxiv_id"]: index for index, row in enumerate(page)}
        entries: list[LibraryEntry] = []
        for chunk, marks in in_chunks(order):
            rows = await self._db.fetchall(
                "SELECT p.*, s.saved_by, s.saved_by_name FROM saved s "
                f"JOIN papers p USING (arxiv_id) WHERE s.chat_id = ? AND s.arxiv_id IN ({marks})",
                [chat_id, *chunk])
            entries += (LibraryEntry(paper_from_row(r), _saver(r)) for r in rows)
        entries.sort(key=lambda entry: order[entry.paper.arxiv_id])
        return LibraryMatches(entries, int(page[0]["matching"]))

    async def facets(self, chat_id: int) -> LibraryFacets:
        """What the library's filters offer: its size, its primary categories and savers."""
        rows = await self._db.fetchall(
            f"""
            SELECT {self._FIRST_CATEGORY} AS category, COUNT(*) AS papers
            FROM saved s JOIN papers p USING (arxiv_id) WHERE s.chat_id = :chat
            GROUP BY {self._FIRST_CATEGORY}
            """, {"chat": chat_id})
        total = sum(int(row["papers"]) for row in rows)
        counted = [(row["category"], int(row["papers"])) for row in rows if row["category"]]
        savers = await self._db.fetchall(
            "SELECT saved_by, MAX(saved_by_name) AS name FROM saved "
            "WHERE chat_id = :chat AND saved_by IS NOT NULL GROUP BY saved_by",
            {"chat": chat_id})
        return LibraryFacets(
            total, [category for category, _ in sorted(counted, key=lambda c: (-c[1], c[0]))],
            sorted(((int(row["saved_by"]), row["name"] or "") for row in savers),
                   key=lambda saver: (saver[1].casefold(), saver[0])))

"""AI reading guides: the cache per (paper, version, language) and the calls the budgets count."""

from __future__ import annotations

from bot.core.models import Guide
from bot.storage.sqlite.db import Database, inserted_id


class GuideRepository:
    """Reads and writes `guides` and `guide_calls`."""

    _inserted_id = staticmethod(inserted_id)

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, arxiv_id: str, version: int, language: str) -> Guide | None:
        row = await self._db.fetchone(
            "SELECT * FROM guides WHERE arxiv_id = ? AND version = ? AND language = ?",
            (arxiv_id, version, language),
        )
        return None if row is None else Guide(**dict(row))

    async def put(self, guide: Guide) -> None:
        await self._db.execute(
            """
            INSERT INTO guides (arxiv_id, version, language, text, model, created_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (arxiv_id, version, language) DO UPDATE SET
                text = excluded.text, model = excluded.model, created_at = excluded.created_at
            """,
            (guide.arxiv_id, guide.version, guide.language, guide.text, guide.model,
             guide.created_at),
        )

    async def record_call(self, chat_id: int, now: float) -> int:
        """Count one request to the endpoint against the budgets; returns its id."""
        async with self._db.transaction() as conn:
            return await self._inserted_id(
                conn, "INSERT INTO guide_calls (chat_id, called_at) VALUES (?, ?)", (chat_id, now))

    async def mark_call_ok(self, call_id: int) -> None:
        await self._db.execute("UPDATE guide_calls SET ok = 1 WHERE id = ?", (call_id,))

    async def calls_since(self, since: float, chat_id: int | None = None) -> int:
        """Requests made since `since`, by one chat or by all."""
        if chat_id is None:
            return int(await self._db.fetchval(
                "SELECT COUNT(*) FROM guide_calls WHERE called_at >= ?", (since,)))
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM guide_calls WHERE chat_id = ? AND called_at >= ?",
            (chat_id, since)))

    async def written_since(self, since: float) -> int:
        """Guides written (successful requests) since `since`, for /stats."""
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM guide_calls WHERE ok = 1 AND called_at >= ?", (since,)))

    async def prune(self, before: float) -> int:
        """Forget budget records and cached guides older than `before`."""
        calls = await self._db.execute("DELETE FROM guide_calls WHERE called_at < ?", (before,))
        guides = await self._db.execute("DELETE FROM guides WHERE created_at < ?", (before,))
        return calls + guides

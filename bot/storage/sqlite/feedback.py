"""Feedback labels: a chat's 👍 / 👎 on papers, each stored with when it was given."""

from __future__ import annotations

from bot.core.models import Feedback
from bot.storage.sqlite.db import Database


class FeedbackRepository:
    """Reads and writes the `feedback` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def set(self, chat_id: int, arxiv_id: str, label: Feedback | None, now: float) -> None:
        """Give the paper `label` (replacing any other), or clear its label (`None`)."""
        if label is None:
            await self._db.execute(
                "DELETE FROM feedback WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id))
            return
        await self._db.execute(
            "INSERT INTO feedback (chat_id, arxiv_id, label, labelled_at) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (chat_id, arxiv_id) DO UPDATE SET label = excluded.label, "
            "labelled_at = excluded.labelled_at WHERE feedback.label != excluded.label",
            (chat_id, arxiv_id, label.value, now),
        )

    async def get(self, chat_id: int, arxiv_id: str) -> Feedback | None:
        value = await self._db.fetchval(
            "SELECT label FROM feedback WHERE chat_id = ? AND arxiv_id = ?", (chat_id, arxiv_id))
        return None if value is None else Feedback(value)

    async def labelled_at(self, chat_id: int, arxiv_id: str) -> float | None:
        return await self._db.fetchval(
            "SELECT labelled_at FROM feedback WHERE chat_id = ? AND arxiv_id = ?",
            (chat_id, arxiv_id))

    async def of_chat(self, chat_id: int) -> dict[str, Feedback]:
        rows = await self._db.fetchall(
            "SELECT arxiv_id, label FROM feedback WHERE chat_id = ?", (chat_id,))
        return {row["arxiv_id"]: Feedback(row["label"]) for row in rows}

    async def count(self, chat_id: int) -> int:
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM feedback WHERE chat_id = ?", (chat_id,)))

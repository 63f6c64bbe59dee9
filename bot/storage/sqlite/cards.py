"""The bot's card messages: which paper each shows, so that a reaction on one rates it."""

from __future__ import annotations

from bot.storage.sqlite.db import Database


class CardRepository:
    """Reads and writes `card_messages`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def shown(self, chat_id: int, message_id: int, arxiv_id: str, version: int,
                    now: float) -> None:
        await self._db.execute(
            "INSERT INTO card_messages (chat_id, message_id, arxiv_id, version, sent_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (chat_id, message_id) DO UPDATE SET "
            "arxiv_id = excluded.arxiv_id, version = excluded.version",
            (chat_id, message_id, arxiv_id, version, now))

    async def paper_of(self, chat_id: int, message_id: int) -> tuple[str, int] | None:
        row = await self._db.fetchone(
            "SELECT arxiv_id, version FROM card_messages WHERE chat_id = ? AND message_id = ?",
            (chat_id, message_id))
        return None if row is None else (row["arxiv_id"], row["version"])

    async def prune(self, before: float) -> int:
        return await self._db.execute("DELETE FROM card_messages WHERE sent_at < ?", (before,))

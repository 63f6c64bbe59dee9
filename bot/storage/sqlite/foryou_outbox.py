"""For you's outbox: a day's For-you message is queued with the day marked, then delivered as
alerts are (claimed, paced, retried, held while the chat blocks the bot)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from bot.core.models import ForYouPick, ForYouRound, ForYouRow, OutboxStatus
from bot.storage.sqlite.outbox import DeliveryQueue


def _picks_json(picks: Sequence[ForYouPick]) -> str:
    return json.dumps([{"arxiv_id": p.arxiv_id, "version": p.version, "like": p.like_title,
                        "terms": list(p.terms)} for p in picks])


def _row(row: sqlite3.Row) -> ForYouRow:
    return ForYouRow(
        id=row["id"], chat_id=row["chat_id"], day=row["day"],
        picks=tuple(ForYouPick(p["arxiv_id"], p["version"], p["like"], tuple(p["terms"]))
                    for p in json.loads(row["picks"])),
        status=OutboxStatus(row["status"]), attempts=row["attempts"],
        created_at=row["created_at"], topic_id=row["topic_id"], message_id=row["message_id"])


class ForYouOutboxRepository(DeliveryQueue[ForYouRow]):
    """Reads and writes the `foryou_outbox` table (and marks the day in `foryou`)."""

    _table = "foryou_outbox"
    _decode = staticmethod(_row)

    async def enqueue(self, rounds: Sequence[ForYouRound], now: float) -> int:
        """Queue each round's message and mark its chat's day sent, in one transaction: a crash
        leaves either both or neither. Returns how many messages were queued.

        A round without picks only marks the day. A chat that already has a message for that
        day gets no second one. A new message replaces one still waiting from an earlier day
        (a paused chat, or one that blocked the bot), so a chat back after days gets one, the
        newest. A chat that blocked the bot has its message held, as alerts are.
        """
        queued = 0
        async with self._db.transaction() as conn:
            for round_ in rounds:
                await conn.execute("UPDATE foryou SET last_sent_at = ? WHERE chat_id = ?",
                                   (now, round_.chat_id))
                if not round_.picks:
                    continue
                cursor = await conn.execute(
                    """
                    INSERT INTO foryou_outbox (chat_id, topic_id, day, picks, status,
                                               created_at, due_at)
                    SELECT c.id, f.topic_id, ?, ?,
                           CASE WHEN c.inactive_since IS NULL THEN 'pending' ELSE 'held' END,
                           ?, ?
                    FROM chats c JOIN foryou f ON f.chat_id = c.id WHERE c.id = ?
                    ON CONFLICT (chat_id, day) DO NOTHING
                    """,
                    (round_.day, _picks_json(round_.picks), now, now, round_.chat_id))
                if not cursor.rowcount:
                    continue
                queued += 1
                await conn.execute(
                    "UPDATE foryou_outbox SET status = 'expired' WHERE chat_id = ? "
                    "AND day != ? AND status IN ('pending', 'held')",
                    (round_.chat_id, round_.day))
        return queued

    async def of_chat(self, chat_id: int) -> list[ForYouRow]:
        """Every For-you message of a chat still stored, oldest first."""
        rows = await self._db.fetchall(
            "SELECT * FROM foryou_outbox WHERE chat_id = ? ORDER BY id", (chat_id,))
        return [_row(r) for r in rows]

"""Paid broadcasts: how many messages of each UTC day's Stars budget have been reserved."""

from __future__ import annotations

from bot.storage.sqlite.db import Database


class PaidBroadcastRepository:
    """Reads and writes `paid_broadcasts`, one row a UTC day. A process reserves messages in
    blocks before sending them with `allow_paid_broadcast`, so that no crash, restart or second
    process can spend beyond the day's budget; what it did not use it gives back on stopping."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def reserve(self, day: str, wanted: int, budget: int) -> int:
        """Reserve up to `wanted` messages of `day`'s `budget`; returns how many were granted
        (0 once the day's budget is reserved)."""
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO paid_broadcasts (day, messages) VALUES (?, 0) "
                "ON CONFLICT (day) DO NOTHING", (day,))
            cursor = await conn.execute(
                "SELECT messages FROM paid_broadcasts WHERE day = ?", (day,))
            row = await cursor.fetchone()
            granted = max(0, min(wanted, budget - int(row["messages"])))
            if granted:
                await conn.execute(
                    "UPDATE paid_broadcasts SET messages = messages + ? WHERE day = ?",
                    (granted, day))
            return granted

    async def give_back(self, day: str, unused: int) -> None:
        """Return reserved messages that were not sent paid (the process is stopping)."""
        if unused > 0:
            await self._db.execute(
                "UPDATE paid_broadcasts SET messages = CASE WHEN messages > ? "
                "THEN messages - ? ELSE 0 END WHERE day = ?", (unused, unused, day))

    async def reserved(self, day: str) -> int:
        """Messages of `day` reserved by every process so far (sent, or held for sending)."""
        if not await self._db.has_table("paid_broadcasts"):
            return 0
        value = await self._db.fetchval(
            "SELECT messages FROM paid_broadcasts WHERE day = ?", (day,))
        return int(value or 0)

    async def prune(self, before_day: str) -> int:
        """Forget days before `before_day`."""
        return await self._db.execute("DELETE FROM paid_broadcasts WHERE day < ?", (before_day,))

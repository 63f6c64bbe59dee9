"""Heartbeats: when the bot last succeeded at each outside service, for `health` and /status."""

from __future__ import annotations

from bot.core.models import Beat
from bot.storage.sqlite.db import Database


class HeartbeatRepository:
    """Reads and writes the `heartbeats` table: one time per beat, the latest."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def beat(self, beat: Beat, now: float) -> None:
        await self._db.execute(
            "INSERT INTO heartbeats (name, at) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET at = MAX(at, excluded.at)",
            (beat.value, now),
        )

    async def all(self) -> dict[Beat, float]:
        rows = await self._db.fetchall("SELECT name, at FROM heartbeats")
        known = {beat.value for beat in Beat}
        return {Beat(row["name"]): float(row["at"]) for row in rows if row["name"] in known}

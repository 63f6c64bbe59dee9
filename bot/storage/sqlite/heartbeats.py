"""Heartbeats: when the bot last succeeded at each outside service, and the database's last
integrity check, for `health` and /status."""

from __future__ import annotations

from bot.core.models import Beat, IntegrityCheck
from bot.storage.sqlite.db import Database

QUICK_CHECK = "quick_check"


class HeartbeatRepository:
    """Reads and writes the `heartbeats` table (one time per beat, the latest) and the
    `integrity_checks` row. Health reads a database that may not be migrated yet: a missing
    table reads as nothing recorded, and the start-up check records nothing in it."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def beat(self, beat: Beat, now: float) -> None:
        await self._db.execute(
            "INSERT INTO heartbeats (name, at) VALUES (?, ?) "
            "ON CONFLICT (name) DO UPDATE SET at = CASE WHEN excluded.at > heartbeats.at "
            "THEN excluded.at ELSE heartbeats.at END",
            (beat.value, now),
        )

    async def all(self) -> dict[Beat, float]:
        if not await self._db.has_table("heartbeats"):
            return {}
        rows = await self._db.fetchall("SELECT name, at FROM heartbeats")
        known = {beat.value for beat in Beat}
        return {Beat(row["name"]): float(row["at"]) for row in rows if row["name"] in known}

    async def record_check(self, check: IntegrityCheck) -> None:
        if not await self._db.has_table("integrity_checks"):
            return
        await self._db.execute(
            "INSERT INTO integrity_checks (name, at, problem) VALUES (?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET at = excluded.at, problem = excluded.problem",
            (QUICK_CHECK, check.at, check.problem),
        )

    async def last_check(self) -> IntegrityCheck | None:
        if not await self._db.has_table("integrity_checks"):
            return None
        row = await self._db.fetchone(
            "SELECT at, problem FROM integrity_checks WHERE name = ?", (QUICK_CHECK,))
        return None if row is None else IntegrityCheck(float(row["at"]), row["problem"])

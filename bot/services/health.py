"""Is the bot alive? The last successful arXiv poll and Telegram call against their limits, and
the database's last integrity check.

`python -m bot health` (for a service manager's health check) and /status show the beats.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from bot.config import Settings
from bot.core.models import Beat, IntegrityCheck, Leadership, Role
from bot.core.text import duration
from bot.storage import Storage
from bot.storage.errors import DatabaseDamaged, DatabaseError

TELEGRAM_HEARTBEAT_INTERVAL = 60.0  # the bot asks Telegram getMe this often, if nothing else


@dataclass(frozen=True, slots=True)
class BeatAge:
    """One heartbeat: when it last beat (None: never) and how old it may be."""

    beat: Beat
    at: float | None
    limit: float

    def age(self, now: float) -> float | None:
        return None if self.at is None else max(0.0, now - self.at)

    def stale(self, now: float) -> bool:
        age = self.age(now)
        return age is None or age > self.limit


@dataclass(frozen=True, slots=True)
class Health:
    arxiv: BeatAge
    telegram: BeatAge
    now: float
    integrity: IntegrityCheck | None = None  # None: the database was never checked yet
    # Several bots on one (PostgreSQL) database: whether one is shared, and its leader lease
    # as this instance sees it (None there: no bot has led the database yet).
    shared: bool = False
    leadership: Leadership | None = None

    @property
    def ok(self) -> bool:
        return not (self.arxiv.stale(self.now) or self.telegram.stale(self.now)
                    or self._integrity_failed or self._role_failed)

    @property
    def _role_failed(self) -> bool:
        lease = self.leadership
        return self.shared and (lease is None or lease.role is None or not lease.leader_alive)

    def _describe_role(self) -> str:
        lease = self.leadership
        if lease is None:
            return "no bot has led this database yet"
        age = f"{lease.lease_age:.1f} s"
        if lease.role is Role.LEADER:
            role = f"leader (term {lease.term}, lease renewed {age} ago)"
        elif lease.role is Role.STANDBY:
            role = (f"standby (the leader is {lease.leader}, term {lease.term}, lease renewed "
                    f"{age} ago)")
        else:
            role = "no bot of this instance (INSTANCE_NAME) is running"
        if not lease.leader_alive:
            role += (f"; NO LEADER: the lease of term {lease.term} ({lease.leader}) is {age} "
                     f"old, past its {lease.lease_seconds:.0f} s")
        return role

    @property
    def _integrity_failed(self) -> bool:
        return self.integrity is not None and not self.integrity.ok

    def line(self) -> str:
        """One line for the operator: what is stale or failed, with ages and limits."""
        beats = [(self._describe(self.arxiv, "arXiv poll"), self.arxiv.stale(self.now)),
                 (self._describe(self.telegram, "Telegram call"), self.telegram.stale(self.now))]
        parts = [*beats, (self._describe_integrity(), self._integrity_failed)]
        if self.shared:
            parts.insert(0, (self._describe_role(), self._role_failed))
        bad = [text for text, failing in parts if failing]
        fine = [text for text, failing in parts if not failing]
        if not bad:
            return "healthy: " + "; ".join(fine)
        head = "stale: " if any(stale for _, stale in beats) else "unhealthy: "
        return head + "; ".join(bad) + ("; fine: " + "; ".join(fine) if fine else "")

    def _describe_integrity(self) -> str:
        check = self.integrity
        if check is None:
            return "integrity not checked yet"
        ago = duration("en", max(0.0, self.now - check.at))
        if check.ok:
            return f"integrity ok {ago} ago"
        return f"integrity FAILED {ago} ago: {check.problem}"

    def _describe(self, beat: BeatAge, what: str) -> str:
        age = beat.age(self.now)
        limit = duration("en", beat.limit)
        if age is None:
            return f"no successful {what} yet (limit {limit})"
        return f"last successful {what} {duration('en', age)} ago (limit {limit})"


def assess(beats: dict[Beat, float], settings: Settings, now: float,
           integrity: IntegrityCheck | None = None, leadership: Leadership | None = None, *,
           shared: bool = False) -> Health:
    return Health(
        arxiv=BeatAge(Beat.ARXIV_POLL, beats.get(Beat.ARXIV_POLL),
                        settings.health_max_arxiv_age_seconds),
        telegram=BeatAge(Beat.TELEGRAM, beats.get(Beat.TELEGRAM),
                           settings.health_max_telegram_age_seconds),
        now=now,
        integrity=integrity,
        shared=shared,
        leadership=leadership,
    )


async def check_integrity(storage: Storage, now: float) -> IntegrityCheck:
    """SQLite's quick_check of the whole database, recorded for `health`, so that a failing
    disk is noticed while the bot runs rather than at its next start.

    A damaged database raises `DatabaseDamaged` once the failure is recorded (where the file
    still takes that write): the bot stops rather than keep writing into it.
    """
    try:
        await storage.check_pages()
    except DatabaseDamaged as exc:
        with contextlib.suppress(DatabaseError):
            await storage.heartbeats.record_check(IntegrityCheck(now, exc.reason))
        raise
    check = IntegrityCheck(now)
    await storage.heartbeats.record_check(check)
    return check


async def record_beat(storage: Storage, beat: Beat, at: float) -> None:
    """A heartbeat, stored for `health` (which reads it from another process)."""
    await storage.heartbeats.beat(beat, at)

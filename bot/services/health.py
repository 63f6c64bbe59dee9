"""Is the bot alive? The last successful arXiv poll and Telegram call, against their limits.

`python -m bot health` (for a service manager's health check) and /status show the same facts.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.config import Settings
from bot.core.models import Beat
from bot.core.text import duration

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

    @property
    def ok(self) -> bool:
        return not (self.arxiv.stale(self.now) or self.telegram.stale(self.now))

    def line(self) -> str:
        """One line for the operator: what is stale, with ages and limits."""
        parts = [self._describe(self.arxiv, "arXiv poll"),
                 self._describe(self.telegram, "Telegram call")]
        stale = [p for p, f in zip(parts, (self.arxiv, self.telegram), strict=True)
                 if f.stale(self.now)]
        fresh = [p for p in parts if p not in stale]
        if not stale:
            return "healthy: " + "; ".join(fresh)
        return "stale: " + "; ".join(stale) + ("; fine: " + "; ".join(fresh) if fresh else "")

    def _describe(self, beat: BeatAge, what: str) -> str:
        age = beat.age(self.now)
        limit = duration("en", beat.limit)
        if age is None:
            return f"no successful {what} yet (limit {limit})"
        return f"last successful {what} {duration('en', age)} ago (limit {limit})"


def assess(beats: dict[Beat, float], settings: Settings, now: float) -> Health:
    return Health(
        arxiv=BeatAge(Beat.ARXIV_POLL, beats.get(Beat.ARXIV_POLL),
                        settings.health_max_arxiv_age_seconds),
        telegram=BeatAge(Beat.TELEGRAM, beats.get(Beat.TELEGRAM),
                           settings.health_max_telegram_age_seconds),
        now=now,
    )

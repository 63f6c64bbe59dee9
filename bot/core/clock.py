"""Time as a dependency, so tests and the soak can move it without sleeping."""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def now(self) -> float:
        """Unix seconds."""
        ...


class SystemClock:
    """The wall clock."""

    def now(self) -> float:
        return time.time()


class ManualClock:
    """A clock that moves only when told to (tests, benchmarks)."""

    def __init__(self, start: float = 1_790_000_000.0) -> None:
        self._now = start

    def now(self) -> float:
        return self._now

    def advance(self, seconds: float) -> None:
        self._now += seconds

    def set(self, when: float) -> None:
        self._now = when

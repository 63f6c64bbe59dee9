"""Paid broadcasts: bulk alerts and digests sent past the free 30 a second, for Stars, within a
daily budget the operator sets (`PAID_BROADCAST_STARS_PER_DAY`).

Telegram takes 0.1 Stars from the bot's balance for each message sent with
`allow_paid_broadcast`, and then lets up to 1,000 such messages through a second. The budget is
counted in messages of the UTC day and reserved in the database in blocks before they are
spent, so neither a crash, a restart nor a second process sends beyond it: a crash forfeits at
most one block of the day's budget, and a clean stop gives its unused part back.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.core.clock import Clock
from bot.storage.interfaces import PaidBroadcastRepository

log = logging.getLogger(__name__)

MESSAGES_PER_STAR = 10  # 0.1 Stars a message
BLOCK = 100  # messages reserved at once (10 Stars)
# Once the day's budget is all reserved, how long before asking again (another process may have
# stopped and given its unused part back).
RECHECK_SECONDS = 60.0


def utc_day(now: float) -> str:
    return datetime.fromtimestamp(now, UTC).strftime("%Y-%m-%d")


@dataclass(frozen=True, slots=True)
class Spend:
    """The day's paid broadcasts: Stars spent (and reserved by a process still sending) of the
    budget; `refused` once Telegram said the bot's balance cannot pay for more."""

    day: str
    stars: float
    budget_stars: int
    refused: bool = False


class PaidBroadcasts:
    """Decides, message by message, whether a bulk send goes as a paid broadcast: while the
    day's budget lasts and Telegram has not refused one for the balance."""

    def __init__(self, repository: PaidBroadcastRepository, clock: Clock,
                 stars_per_day: int) -> None:
        if stars_per_day < 1:
            raise ValueError(f"a paid-broadcast budget is at least 1 Star, got {stars_per_day}")
        self._repository = repository
        self._clock = clock
        self._budget = stars_per_day * MESSAGES_PER_STAR
        self.stars_per_day = stars_per_day
        self._lock = asyncio.Lock()
        self._day = ""
        self._held = 0  # reserved in the database for this process, not yet spent
        self._spent_day = ""  # the day Telegram refused a paid send for the balance
        self._recheck_at = float("-inf")  # the day's budget was all reserved: not before then

    async def take(self) -> bool:
        """One message's worth of the budget, or False when the bulk send goes free."""
        now = self._clock.now()
        day = utc_day(now)
        if self._spent_day == day:
            return False
        async with self._lock:
            if day != self._day:  # a new UTC day: what was held of the last one lapses
                self._day, self._held, self._recheck_at = day, 0, float("-inf")
            if self._held == 0:
                if now < self._recheck_at:
                    return False
                self._held = await self._repository.reserve(day, BLOCK, self._budget)
                if self._held == 0:
                    self._recheck_at = now + RECHECK_SECONDS
                    log.info("the paid-broadcast budget of %s (%d Stars) is spent: bulk "
                             "messages go at the free pace until midnight UTC", day,
                             self.stars_per_day)
                    return False
            self._held -= 1
            return True

    def unused(self) -> None:
        """A message taken from the budget went unpaid (Telegram did not take it): it counts
        for the next one."""
        if utc_day(self._clock.now()) == self._day:
            self._held += 1

    def refused(self, error: str) -> None:
        """Telegram refused a paid broadcast for the bot's balance: free sends for the day."""
        day = utc_day(self._clock.now())
        if self._spent_day != day:
            log.warning("Telegram refused a paid broadcast (%s): bulk messages go at the free "
                        "pace until midnight UTC", error)
        self._spent_day = day

    async def spend(self) -> Spend:
        """The day's spend so far, for /status."""
        day = utc_day(self._clock.now())
        reserved = await self._repository.reserved(day)
        held = self._held if day == self._day else 0
        return Spend(day, max(0, reserved - held) / MESSAGES_PER_STAR, self.stars_per_day,
                     refused=self._spent_day == day)

    async def close(self) -> None:
        """Give back what this process reserved and did not spend."""
        async with self._lock:
            if self._held:
                await self._repository.give_back(self._day, self._held)
                self._held = 0

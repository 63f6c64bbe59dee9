"""Pacing for Telegram's limits: ~30 messages/s overall, 1/s per private chat, 20/min per group."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

OVERALL_PER_SECOND = 29.5  # a hair under Telegram's 30/s so a rolling second never sees 31
PRIVATE_CHAT_INTERVAL = 1.0
GROUP_CHAT_INTERVAL = 3.0  # 20 messages a minute


class Pacer:
    """Spaces sends evenly: one global slot every 1/rate s, and per-chat minimum intervals
    (groups and channels, which have negative ids, get the longer group interval).

    Evenly spaced slots (rather than a bucket that allows a burst) keep every rolling second
    at or under the rate, which is what Telegram counts.
    """

    def __init__(
        self,
        rate: float = OVERALL_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        *,
        private_interval: float = PRIVATE_CHAT_INTERVAL,
        group_interval: float = GROUP_CHAT_INTERVAL,
    ) -> None:
        self._gap = 1.0 / rate
        self._private_interval = private_interval
        self._group_interval = group_interval
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._next_global = 0.0
        self._next_chat: dict[int, float] = {}

    async def wait_turn(self, chat_id: int) -> None:
        """Wait until both the chat and the global rate allow one more message."""
        chat_ready = self._next_chat.get(chat_id, 0.0)
        delay = chat_ready - self._monotonic()
        if delay > 0:
            await self._sleep(delay)
        async with self._lock:
            now = self._monotonic()
            slot = max(now, self._next_global)
            self._next_global = slot + self._gap
        if slot > now:
            await self._sleep(slot - now)
        interval = self._group_interval if chat_id < 0 else self._private_interval
        self._next_chat[chat_id] = self._monotonic() + interval

    def pause_chat(self, chat_id: int, seconds: float) -> None:
        """After a 429 for this chat: nothing more to it for `seconds`."""
        self._next_chat[chat_id] = max(
            self._next_chat.get(chat_id, 0.0), self._monotonic() + seconds
        )

    def pause_all(self, seconds: float) -> None:
        """After a global flood-wait: nothing to anyone for `seconds`."""
        self._next_global = max(self._next_global, self._monotonic() + seconds)

    def forget_idle(self) -> None:
        """Drop per-chat entries whose interval has passed (keeps memory flat over months)."""
        now = self._monotonic()
        self._next_chat = {c: t for c, t in self._next_chat.items() if t > now}

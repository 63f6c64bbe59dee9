"""Pacing for Telegram's limits: ~30 messages/s overall, 1/s per private chat, 20/min per group."""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

OVERALL_PER_SECOND = 30  # Telegram's overall limit, counted over any rolling second
PRIVATE_CHAT_INTERVAL = 1.0
GROUP_CHAT_INTERVAL = 3.0  # 20 messages a minute
# Telegram counts a message somewhere between our request leaving and its answer arriving; a
# little slack on top absorbs clock granularity on either side.
SAFETY_MARGIN = 0.01
# Sends are spread a little tighter than 1/rate apart, so time lost to a late wake-up (a busy
# event loop) is made up within the same second; the window rule alone enforces the limit.
SPACING = 0.93


@dataclass(eq=False, slots=True)
class _Send:
    """One paced send: when it was let go and when Telegram's answer came back."""

    released: float
    done: float | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


class Pacer:
    """Spaces sends so that Telegram never counts more than `rate` in one second, nor more than
    one per chat interval (groups and channels, which have negative ids, get the longer one).

    The limits are measured from when the answer to an earlier send came back, not from when that
    send was let go: Telegram counted it somewhere in between, and how long that took (a cold
    connection, a busy event loop) must not let two counted sends come closer than allowed. So
    the `rate`-th send before this one must have been answered over a second ago; within that,
    sends are spread evenly rather than in a burst.
    """

    def __init__(
        self,
        rate: float = OVERALL_PER_SECOND,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        *,
        private_interval: float = PRIVATE_CHAT_INTERVAL,
        group_interval: float = GROUP_CHAT_INTERVAL,
        margin: float = SAFETY_MARGIN,
    ) -> None:
        self._gap = SPACING / rate
        self._window = 1.0 + margin
        self._margin = margin
        self._recent: deque[_Send] = deque(maxlen=max(1, int(rate)))
        self._private_interval = private_interval
        self._group_interval = group_interval
        self._monotonic = monotonic
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._last = float("-inf")
        self._paused_until = float("-inf")
        self._next_chat: dict[int, float] = {}

    @asynccontextmanager
    async def turn(self, chat_id: int) -> AsyncIterator[None]:
        """Wait until the chat and the overall rate allow one more message; send it inside."""
        delay = self._next_chat.get(chat_id, 0.0) - self._monotonic()
        if delay > 0:
            await self._sleep(delay)
        send = await self._release()
        try:
            yield
        finally:
            send.done = self._monotonic()
            send.finished.set()
            interval = self._group_interval if chat_id < 0 else self._private_interval
            self._next_chat[chat_id] = max(self._next_chat.get(chat_id, 0.0),
                                           send.done + interval + self._margin)

    async def _release(self) -> _Send:
        # Waiters queue on the lock in arrival order; the holder waits until its turn.
        async with self._lock:
            turn = None
            while True:
                oldest = self._recent[0] if len(self._recent) == self._recent.maxlen else None
                if oldest is not None and oldest.done is None:
                    await oldest.finished.wait()  # still in flight: not yet known when counted
                    continue
                now = self._monotonic()
                due = max(self._last + self._gap, self._paused_until)
                if oldest is not None and oldest.done is not None:
                    due = max(due, oldest.done + self._window)
                if due <= now:
                    break
                turn = due
                await self._sleep(due - now)
            send = _Send(now)
            self._recent.append(send)
            # After a wake-up the spacing counts from the turn, not from the (maybe late) wake-up,
            # so lateness does not add up; the window rule keeps any catching up within limits.
            self._last = now if turn is None else max(turn, now - self._gap)
            return send

    def pause_chat(self, chat_id: int, seconds: float) -> None:
        """After a 429 for this chat: nothing more to it for `seconds`."""
        self._next_chat[chat_id] = max(
            self._next_chat.get(chat_id, 0.0), self._monotonic() + seconds
        )

    def pause_all(self, seconds: float) -> None:
        """After a global flood-wait: nothing to anyone for `seconds`."""
        self._paused_until = max(self._paused_until, self._monotonic() + seconds)

    def forget_idle(self) -> None:
        """Drop per-chat entries whose interval has passed (keeps memory flat over months)."""
        now = self._monotonic()
        self._next_chat = {c: t for c, t in self._next_chat.items() if t > now}

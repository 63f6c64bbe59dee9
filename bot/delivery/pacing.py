"""Pacing for Telegram's limits: ~30 messages/s overall, 1/s per private chat, 20/min per group;
and up to 1,000 a second for messages sent as paid broadcasts (`allow_paid_broadcast`).

The bot's one rate limiter: the sender asks it before each alert, and PTB's requests for
everything else (replies, documents) pass through it as PTB's rate limiter (`PacedRateLimiter`).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from telegram.ext import BaseRateLimiter

OVERALL_PER_SECOND = 30  # Telegram's overall limit, counted over any rolling second
# Paid broadcasts ignore the overall limit, up to this many a second (0.1 Stars each); the
# per-chat limits still hold.
PAID_PER_SECOND = 1000
PRIVATE_CHAT_INTERVAL = 1.0
GROUP_CHAT_INTERVAL = 3.0  # 20 messages a minute
# Telegram counts a send a little after we release it (the request's way there). What varies
# of that delay is measured (see Pacer); the margin absorbs clock granularity on either side.
SAFETY_MARGIN = 0.01
ROUND_TRIP_MEMORY = 100  # recent round trips, whose fastest is the steady part of the delay
# Sends are spread a little tighter than 1/rate apart, so time lost to a late wake-up (a busy
# event loop) is made up within the same second; the window rule alone enforces the limit.
SPACING = 0.93
# A 429 for a chat the bot has not written to within this long cannot be that chat's own limit,
# so it is the bot's overall one.
CHAT_FLOOD_MEMORY = {True: 10.0, False: 60.0}  # by "is a private chat"
# What PTB requests that put a message into a chat, and so count towards Telegram's limits.
_SENDING_ENDPOINTS = frozenset({
    "sendMessage", "sendDocument", "sendPhoto", "sendMediaGroup", "sendAudio", "sendVideo",
    "sendAnimation", "sendVoice", "sendSticker", "sendLocation", "sendContact", "sendPoll",
    "copyMessage", "forwardMessage",
})
_NEVER = (float("-inf"), float("-inf"))


@dataclass(eq=False, slots=True)
class _Send:
    """One paced send: when it was let go and when Telegram's answer came back."""

    released: float
    answered: float | None = None
    finished: asyncio.Event = field(default_factory=asyncio.Event)


@dataclass(eq=False, slots=True)
class _Lane:
    """One overall limit: sends spread `gap` apart, never more than `rate` in a second."""

    gap: float
    recent: deque[_Send]
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    last: float = float("-inf")

    @classmethod
    def at(cls, rate: float) -> _Lane:
        return cls(SPACING / rate, deque(maxlen=max(1, int(rate))))


class Pacer:
    """Releases sends so that Telegram never counts more than `rate` in one second, nor more
    than one per chat interval (groups and channels, which have negative ids, get the longer one).
    Paid broadcasts go through a lane of their own at `paid_rate`, beside the free one; per-chat
    intervals and flood waits hold for both.

    A send counts from the moment it is released, not from its answer: with several requests
    unconfirmed at once (the sender's window) a slow answer must not slow everyone else. So the
    `rate`-th send before this one must have been released over a second (plus a margin) ago,
    and sends are spread evenly within that second rather than sent in a burst, also after a
    stall of the event loop.

    Telegram counts a send somewhere on its way, a fairly constant time after its release. When
    a send's answer takes longer than the fastest recent one, Telegram may have counted it that
    much later (a busy event loop or network held it up on the way there), so that send counts
    from its release plus that excess. On a steady network that excess is nil; with jitter, it
    is exactly what keeps two sends a second apart where Telegram counts them.
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
        paid_rate: float = PAID_PER_SECOND,
    ) -> None:
        self._free = _Lane.at(rate)
        self._paid = _Lane.at(paid_rate)
        self._window = 1.0 + margin
        self._margin = margin
        self._round_trips: deque[float] = deque(maxlen=ROUND_TRIP_MEMORY)
        self._private_interval = private_interval
        self._group_interval = group_interval
        self._monotonic = monotonic
        self._sleep = sleep
        self._paused_until = float("-inf")
        self._next_chat: dict[int, float] = {}
        # The two latest releases to each chat, to tell its own 429 from the overall one.
        self._releases: dict[int, tuple[float, float]] = {}

    async def chat_ready(self, chat_id: int) -> None:
        """Wait until the chat's interval since its last send, and any pause, have passed."""
        while (delay := max(self._next_chat.get(chat_id, 0.0), self._paused_until)
               - self._monotonic()) > 0:
            await self._sleep(delay)

    @asynccontextmanager
    async def turn(self, chat_id: int, *, paid: bool = False) -> AsyncIterator[None]:
        """Wait for the chat's and the overall turn (of paid broadcasts if `paid`), then send
        inside the block; the send counts from when the block starts."""
        await self.chat_ready(chat_id)
        send = await self._release(self._paid if paid else self._free)
        interval = self._private_interval if chat_id > 0 else self._group_interval
        self._next_chat[chat_id] = max(self._next_chat.get(chat_id, 0.0),
                                       send.released + interval + self._margin)
        self._releases[chat_id] = (self._releases.get(chat_id, _NEVER)[1], send.released)
        try:
            yield
        finally:
            send.answered = self._monotonic()
            send.finished.set()
            self._round_trips.append(send.answered - send.released)

    async def _release(self, lane: _Lane) -> _Send:
        # Waiters queue on the lock in arrival order; the holder waits until its turn.
        async with lane.lock:
            turn = None
            while True:
                recent = lane.recent
                oldest = recent[0] if len(recent) == recent.maxlen else None
                if oldest is not None and oldest.answered is None:
                    await oldest.finished.wait()  # its excess round trip is not known yet
                    continue
                now = self._monotonic()
                due = max(lane.last + lane.gap, self._paused_until)
                if oldest is not None and oldest.answered is not None:
                    due = max(due, oldest.released + self._window + self._excess(oldest))
                if due <= now:
                    break
                turn = due
                await self._sleep(due - now)
            send = _Send(now)
            lane.recent.append(send)
            # After a wake-up the spacing counts from the turn, not from the (maybe late) wake-up,
            # so lateness does not add up; the window rule keeps any catching up within limits.
            lane.last = now if turn is None else max(turn, now - lane.gap)
            return send

    def _excess(self, send: _Send) -> float:
        """How much later than the fastest recent send Telegram may have counted this one."""
        assert send.answered is not None
        fastest = min(self._round_trips, default=0.0)
        return max(0.0, send.answered - send.released - fastest)

    def flood_wait(self, chat_id: int, seconds: float) -> bool:
        """After a 429 for this chat: pause that chat, or everything when the 429 cannot be the
        chat's own limit (nothing else went to it lately). True for an overall pause."""
        earlier, _ = self._releases.get(chat_id, _NEVER)
        memory = CHAT_FLOOD_MEMORY[chat_id > 0]
        if self._monotonic() - earlier > memory:
            self.pause_all(seconds)
            return True
        self.pause_chat(chat_id, seconds)
        return False

    def pause_chat(self, chat_id: int, seconds: float) -> None:
        """Nothing more to this chat for `seconds`."""
        self._next_chat[chat_id] = max(
            self._next_chat.get(chat_id, 0.0), self._monotonic() + seconds
        )

    def pause_all(self, seconds: float) -> None:
        """After a global flood-wait: nothing to anyone for `seconds`."""
        self._paused_until = max(self._paused_until, self._monotonic() + seconds)

    def forget_idle(self) -> None:
        """Drop per-chat entries that no longer matter (keeps memory flat over months)."""
        now = self._monotonic()
        self._next_chat = {c: t for c, t in self._next_chat.items() if t > now}
        longest = max(CHAT_FLOOD_MEMORY.values())
        self._releases = {c: r for c, r in self._releases.items() if r[1] > now - longest}


class PacedRateLimiter(BaseRateLimiter[bool]):
    """PTB's rate limiter backed by the bot's one `Pacer`: replies and documents wait for their
    turn like alerts do. The sender paces its own requests and marks them `rate_limit_args=True`
    so they are not counted twice. A 429 is not retried here: it reaches the caller."""

    def __init__(self, pacer: Pacer) -> None:
        self.pacer = pacer

    async def initialize(self) -> None:
        """Nothing to open."""

    async def shutdown(self) -> None:
        """Nothing to close."""

    async def process_request(
        self,
        callback: Callable[..., Coroutine[Any, Any, bool | dict[str, Any] | list[dict[str, Any]]]],
        args: Any,
        kwargs: dict[str, Any],
        endpoint: str,
        data: dict[str, Any],
        rate_limit_args: bool | None,
    ) -> bool | dict[str, Any] | list[dict[str, Any]]:
        chat_id = data.get("chat_id")
        if not rate_limit_args and endpoint in _SENDING_ENDPOINTS and isinstance(chat_id, int):
            async with self.pacer.turn(chat_id):
                return await callback(*args, **kwargs)
        return await callback(*args, **kwargs)

"""Updates of different chats run concurrently; the updates of one chat run in arrival order."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any

from telegram import Update
from telegram.ext import BaseUpdateProcessor

# Updates waiting for their chat's turn cost a small task each; past this many PTB stops
# taking more from its queue until some finish.
MAX_WAITING_UPDATES = 4096
# Handlers running at once. A chat waiting for its own earlier update holds no slot, so one
# chat that floods the bot cannot crowd the others out.
MAX_RUNNING_UPDATES = 64

# Decides on arrival, before an update waits for its chat's turn, whether it is handled at all.
Admission = Callable[[object], Awaitable[bool]]


class _ChatTurn:
    """The lock that orders one chat's updates, and how many updates hold or await it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.users = 0


class PerChatUpdateProcessor(BaseUpdateProcessor):
    """Runs each chat's updates one after another, and different chats' side by side.

    PTB starts one task per update in arrival order; asyncio's lock wakes waiters first in,
    first out, so a chat's updates run in the order Telegram sent them.
    """

    def __init__(self, max_running: int = MAX_RUNNING_UPDATES,
                 max_waiting: int = MAX_WAITING_UPDATES, admission: Admission | None = None
                 ) -> None:
        super().__init__(max_concurrent_updates=max_waiting)
        # Set once the application exists (the command budget needs it); runs on arrival, so
        # a chat waiting for its own slow update is still charged for what it sends meanwhile.
        self.admission = admission
        self._running = asyncio.BoundedSemaphore(max_running)
        self._turns: dict[int, _ChatTurn] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    @staticmethod
    def chat_key(update: object) -> int | None:
        """The chat whose order an update belongs to (None: it needs no order)."""
        if isinstance(update, Update) and update.effective_chat is not None:
            return update.effective_chat.id
        return None

    async def do_process_update(self, update: object, coroutine: Awaitable[Any]) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            if self.admission is None or await self.admission(update):
                await self._process_in_turn(update, coroutine)
        finally:
            self._tasks.discard(task)  # type: ignore[arg-type]
            if inspect.iscoroutine(coroutine) and inspect.getcoroutinestate(
                    coroutine) == inspect.CORO_CREATED:
                coroutine.close()  # cancelled while waiting its turn: it never started

    @property
    def running_tasks(self) -> set[asyncio.Task[Any]]:
        """Updates being handled or waiting for their chat's turn (a stop may cancel them)."""
        return set(self._tasks)

    async def _process_in_turn(self, update: object, coroutine: Awaitable[Any]) -> None:
        key = self.chat_key(update)
        if key is None:
            async with self._running:
                await coroutine
            return
        turn = self._turns.setdefault(key, _ChatTurn())
        turn.users += 1
        try:
            async with turn.lock, self._running:
                await coroutine
        finally:
            turn.users -= 1
            if turn.users == 0:
                del self._turns[key]

    @property
    def waiting_chats(self) -> int:
        """Chats with an update running or waiting (their locks are dropped when done)."""
        return len(self._turns)

    async def initialize(self) -> None:
        """Nothing to open: locks are made per chat as updates come."""

    async def shutdown(self) -> None:
        """Nothing to close: every running update finishes under PTB's own shutdown."""

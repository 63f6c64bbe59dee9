"""Long work, visibly: a chat action at once, then a progress message that is edited as the
work advances and finally replaced by the answer.

    async with Progress(update, context, first_text) as progress:
        ...
        await progress.advance(text_with_counts)
        ...
        await progress.finish(answer_text, reply_markup=markup)

Work done within `show_after` seconds shows no progress message at all, only the chat action
("typing…", "sending a file…"), and the answer arrives as a plain reply.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from types import TracebackType

from telegram import Message, Update
from telegram.constants import ChatAction
from telegram.error import TelegramError

from bot.chat.context import BotContext
from bot.chat.handlers.common import edit_quietly, reply

log = logging.getLogger(__name__)


class Progress:
    """A chat action now, a progress message if the work takes long, the answer in its place."""

    def __init__(self, update: Update, context: BotContext, text: str, *,
                 action: str = ChatAction.TYPING) -> None:
        self._update = update
        self._context = context
        self._policy = context.services.progress
        self._text = text
        self._action = action
        self._message: Message | None = None
        self._shown_text = ""
        self._last_edit = float("-inf")
        self._started = 0.0
        self._ticker: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> Progress:
        self._started = time.monotonic()
        await self._send_action()
        if self._policy.show_after <= 0:
            await self._show()
        self._ticker = asyncio.create_task(self._tick(), name="progress")
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._stop_ticker()

    async def advance(self, text: str) -> None:
        """New progress text; shown at once if the message is up and the last edit not recent."""
        self._text = text
        if self._message is not None and (
                time.monotonic() - self._last_edit >= self._policy.edit_every):
            await self._edit(text)

    async def finish(self, text: str, **kwargs: object) -> Message | None:
        """The answer: it replaces the progress message if one is shown, else it is a reply;
        the message that shows it."""
        await self._stop_ticker()
        if self._message is None:
            return await reply(self._update, self._context, text, **kwargs)
        await edit_quietly(self._message.edit_text(text, **kwargs))  # type: ignore[arg-type]
        return self._message

    async def dismiss(self) -> None:
        """Remove the progress message (the answer went out another way, e.g. a document)."""
        await self._stop_ticker()
        if self._message is not None:
            with contextlib.suppress(TelegramError):
                await self._message.delete()
            self._message = None

    async def _tick(self) -> None:
        try:
            await self._tick_until_cancelled()
        except TelegramError as exc:  # progress is a courtesy: the work and its answer go on
            log.info("progress message failed: %s", exc)

    async def _tick_until_cancelled(self) -> None:
        next_action = self._started + self._policy.action_every
        while True:
            now = time.monotonic()
            show_at = self._started + self._policy.show_after
            due = [next_action] + ([show_at] if self._message is None else [])
            if self._message is not None and self._text != self._shown_text:
                due.append(self._last_edit + self._policy.edit_every)
            await asyncio.sleep(max(0.0, min(due) - now))
            now = time.monotonic()
            if now >= next_action:
                await self._send_action()
                next_action = now + self._policy.action_every
            if self._message is None and now >= show_at:
                await self._show()
            elif (self._message is not None and self._text != self._shown_text
                  and now - self._last_edit >= self._policy.edit_every):
                await self._edit(self._text)

    async def _send_action(self) -> None:
        chat = self._update.effective_chat
        if chat is None:
            return
        try:
            await self._context.bot.send_chat_action(chat.id, self._action)
        except TelegramError as exc:  # only a courtesy: never fail the work for it
            log.info("chat action in chat %s failed: %s", chat.id, exc)

    async def _show(self) -> None:
        async with self._lock:
            if self._message is not None:
                return
            message = self._update.effective_message
            if message is None:
                return
            self._message = await message.reply_text(
                self._text)
            self._shown_text = self._text
            self._last_edit = time.monotonic()

    async def _edit(self, text: str) -> None:
        async with self._lock:
            if self._message is None or text == self._shown_text:
                return
            self._shown_text = text
            self._last_edit = time.monotonic()
            await edit_quietly(self._message.edit_text(text))

    async def _stop_ticker(self) -> None:
        # Under the lock: a progress message half sent when the answer comes must not be lost
        # track of, or the chat would get the answer twice.
        async with self._lock:
            if self._ticker is not None:
                self._ticker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._ticker
                self._ticker = None

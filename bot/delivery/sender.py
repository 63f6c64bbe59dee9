"""Drains the outbox into Telegram: paced, once per version, and careful with every error."""

from __future__ import annotations

import asyncio
import html
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta

from telegram import Bot, InlineKeyboardMarkup, LinkPreviewOptions
from telegram.constants import ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
)

from bot.clock import Clock
from bot.delivery.compose import compose_for_chat
from bot.delivery.pacing import Pacer
from bot.delivery.render import RenderedMessage
from bot.storage import Storage
from bot.storage.chats import Chat
from bot.storage.outbox import OutboxRow

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_WAITS = 3
RETRY_BACKOFF_BASE = 5.0
RETRY_BACKOFF_MAX = 600.0
WORKERS = 40  # chats served at once; enough to keep the overall pace full
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)


@dataclass(frozen=True, slots=True)
class Sent:
    message_id: int


@dataclass(frozen=True, slots=True)
class Retry:
    error: str


@dataclass(frozen=True, slots=True)
class Blocked:
    error: str


@dataclass(frozen=True, slots=True)
class Failed:
    error: str


@dataclass(frozen=True, slots=True)
class Migrated:
    new_chat_id: int


Outcome = Sent | Retry | Blocked | Failed | Migrated


@dataclass
class DrainReport:
    """What one drain did, for logs and benchmarks."""

    sent: int = 0
    digests: int = 0
    retried: int = 0
    failed: int = 0
    blocked_chats: int = 0
    retry_after_waits: int = 0
    errors: list[str] = field(default_factory=list)


def html_to_plain(text: str) -> str:
    """The visible text of our HTML, for the plain-text retry after an entity error."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


class Sender:
    """Sends pending outbox rows; a row is marked sent only after Telegram accepted it."""

    def __init__(self, bot: Bot, storage: Storage, clock: Clock, pacer: Pacer | None = None,
                 sleep=asyncio.sleep, *,
                 on_migrated: Callable[[int, int], Awaitable[object]] | None = None) -> None:
        """`on_migrated(old_id, new_id)` runs after a group moved to a supergroup id, for
        whatever keeps chat ids in memory (the subscription matcher)."""
        self._bot = bot
        self._store = storage
        self._clock = clock
        self._pacer = pacer or Pacer()
        self._sleep = sleep
        self._on_migrated = on_migrated
        self._lock = asyncio.Lock()
        self._in_flight = asyncio.Lock()  # one request unconfirmed at a time: see _send_message

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def drain(self) -> DrainReport:
        """Send everything due to every reachable chat in instant mode; never runs twice at once."""
        report = DrainReport()
        async with self._lock:
            chat_ids = await self._store.outbox.due_chats(self._clock.now())
            queue: asyncio.Queue[int] = asyncio.Queue()
            for chat_id in chat_ids:
                queue.put_nowait(chat_id)

            async def worker() -> None:
                while not queue.empty():
                    chat_id = queue.get_nowait()
                    try:
                        await self._deliver_chat(chat_id, report, digest_mode_run=False)
                    except Exception as exc:  # one chat's trouble must not stop the others
                        log.exception("delivery to chat %s failed", chat_id)
                        report.errors.append(f"{chat_id}: {exc}")

            await asyncio.gather(*(worker() for _ in range(min(WORKERS, len(chat_ids)))))
            self._pacer.forget_idle()
        if report.sent or report.failed or report.blocked_chats:
            log.info("delivery: sent=%d digests=%d retried=%d failed=%d blocked_chats=%d",
                     report.sent, report.digests, report.retried, report.failed,
                     report.blocked_chats)
        return report

    async def send_daily_digest(self, chat_id: int) -> DrainReport:
        """Send a digest-mode chat everything pending, as one digest (called at its local time)."""
        report = DrainReport()
        async with self._lock:
            await self._deliver_chat(chat_id, report, digest_mode_run=True)
        return report

    async def _deliver_chat(self, chat_id: int, report: DrainReport, digest_mode_run: bool) -> None:
        chat = await self._store.chats.get(chat_id)
        if chat is None or not chat.active or chat.paused:
            return
        if chat.delivery_mode == "digest" and not digest_mode_run:
            return
        rows = await self._store.outbox.pending_for_chat(chat_id, self._clock.now())
        if not rows:
            return
        composition = await compose_for_chat(self._store, chat, rows, digest_run=digest_mode_run)
        if composition.missing:
            await self._store.outbox.mark_failed([r.id for r in composition.missing],
                                                 "paper missing from the store")
            report.failed += len(composition.missing)
        for outgoing in composition.messages:
            if not await self._send_rows(chat, list(outgoing.rows), [outgoing.message], report):
                return
        if composition.digest and composition.messages:
            report.digests += 1

    async def _send_rows(self, chat: Chat, rows: list[OutboxRow],
                         messages: list[RenderedMessage], report: DrainReport) -> bool:
        row_ids = [r.id for r in rows]

        async def mark_sent(message_id: int) -> None:
            await self._store.outbox.mark_sent(row_ids, message_id, self._clock.now())

        for message in messages:
            outcome = await self._send_message(chat.id, message.text, message.reply_markup,
                                               report, mark_sent)
            match outcome:
                case Sent():
                    report.sent += len(row_ids)
                case Retry(error):
                    attempts = max(r.attempts for r in rows) + 1
                    delay = min(RETRY_BACKOFF_BASE * 2 ** (attempts - 1), RETRY_BACKOFF_MAX)
                    await self._store.outbox.retry_later(row_ids, self._clock.now() + delay, error)
                    report.retried += len(row_ids)
                    return False
                case Blocked(error):
                    log.info("chat %s blocked the bot; holding its alerts", chat.id)
                    await self._store.chats.mark_inactive(chat.id, error, self._clock.now())
                    report.blocked_chats += 1
                    return False
                case Failed(error):
                    log.warning("alert for chat %s failed for good: %s", chat.id, error)
                    await self._store.outbox.mark_failed(row_ids, error)
                    report.failed += len(row_ids)
                case Migrated(new_chat_id):
                    log.info("chat %s migrated to %s", chat.id, new_chat_id)
                    await self._store.chats.migrate_id(chat.id, new_chat_id)
                    if self._on_migrated is not None:
                        await self._on_migrated(chat.id, new_chat_id)
                    return False  # the next drain sends to the new id
        return True

    async def _send_message(self, chat_id: int, text: str, markup: InlineKeyboardMarkup | None,
                            report: DrainReport,
                            mark_sent: Callable[[int], Awaitable[None]]) -> Outcome:
        """Send one message; once Telegram accepts it, `mark_sent` records that at once.

        Only one message is ever between "sent" and "recorded": a crash can then repeat at
        most one alert. Chats still wait for their turns side by side; only the request and
        its record take turns.
        """
        parse_mode: str | None = ParseMode.HTML
        plain_retry_used = False
        waits = 0
        while True:
            try:
                async with self._pacer.turn(chat_id), self._in_flight:
                    message = await self._bot.send_message(
                        chat_id, text, parse_mode=parse_mode, reply_markup=markup,
                        link_preview_options=NO_PREVIEW,
                    )
                    await mark_sent(message.message_id)
                return Sent(message.message_id)
            except RetryAfter as exc:
                waits += 1
                report.retry_after_waits += 1
                seconds = _seconds(exc.retry_after)
                log.warning("Telegram asked to wait %.0f s before chat %s", seconds, chat_id)
                if waits > MAX_RETRY_AFTER_WAITS:
                    return Retry(str(exc))
                self._pacer.pause_chat(chat_id, seconds)
            except Forbidden as exc:
                return Blocked(str(exc))
            except ChatMigrated as exc:
                return Migrated(exc.new_chat_id)
            except BadRequest as exc:
                if "chat not found" in str(exc).lower():
                    return Blocked(str(exc))
                if plain_retry_used:
                    return Failed(str(exc))
                log.warning("Telegram refused an alert to chat %s (%s); retrying as plain text",
                            chat_id, exc)
                text, parse_mode, plain_retry_used = html_to_plain(text)[:4096], None, True
            except NetworkError as exc:  # TimedOut included: it may have arrived; retry later
                return Retry(str(exc))
            except TelegramError as exc:
                return Retry(str(exc))


def _seconds(value: int | float | timedelta) -> float:
    return value.total_seconds() if isinstance(value, timedelta) else float(value)

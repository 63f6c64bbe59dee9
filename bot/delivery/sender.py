"""Drains the outbox into Telegram: paced, a window of requests at once, every row claimed
before its request and recorded as soon as Telegram answers, careful with every error."""

from __future__ import annotations

import asyncio
import html
import logging
import math
import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING

from telegram import Bot, LinkPreviewOptions, ReplyParameters
from telegram.constants import MessageLimit, ParseMode
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Forbidden,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.ext import ExtBot

from bot.core.clock import Clock
from bot.core.models import Chat, DeliveryMode
from bot.delivery.compose import (
    DIGEST_MESSAGES,
    Composition,
    DigestMemo,
    Outgoing,
    Relevance,
    behind_more,
    compose_for_chat,
    compose_for_you,
)
from bot.delivery.pacing import OVERALL_PER_SECOND, PAID_PER_SECOND, Pacer
from bot.delivery.paid import PaidBroadcasts
from bot.delivery.render import render_topic_fallback, topic_label
from bot.storage import Storage
from bot.storage.errors import DatabaseDamaged

if TYPE_CHECKING:
    from bot.storage.interfaces import DeliveryQueue

log = logging.getLogger(__name__)

MAX_RETRY_AFTER_WAITS = 3
RETRY_BACKOFF_BASE = 5.0
RETRY_BACKOFF_MAX = 600.0
# A send that keeps failing (5 s, 10 s, 20 s … 600 s apart: about 40 minutes in all) is given
# up after this many attempts and marked failed with its error.
MAX_SEND_ATTEMPTS = 10
WORKERS = 40  # chats served at once, at least; enough to keep the overall pace full
# The default window: the pace times a p99 round trip to api.telegram.org from a distant
# server (about 0.5 s), so that even then the window is not what limits the pace.
P99_ROUND_TRIP = 0.5
DEFAULT_SEND_WINDOW = math.ceil(OVERALL_PER_SECOND * P99_ROUND_TRIP)
PAID_SEND_WINDOW = math.ceil(PAID_PER_SECOND * P99_ROUND_TRIP)  # the same, for paid broadcasts
# What Telegram answers a paid broadcast the bot's Stars balance cannot pay for.
_BALANCE_ERRORS = ("balance_too_low", "not enough stars")
TOPIC_ROUNDS = 4  # rounds of one chat's delivery in a drain while its forum topics fall back
STOP_TIMEOUT = 5.0  # how long stop() lets requests in flight be answered and recorded
HELD_MARGIN = 0.001  # seconds: a poll's alerts are due at its start or later, never before
NO_PREVIEW = LinkPreviewOptions(is_disabled=True)
# sendMessage by a name PTB does not know as its own method (it warns when asked for a method
# it wraps by that method's name): Bot API method names are case-insensitive.
SEND_MESSAGE = "sendmessage"


@dataclass(frozen=True, slots=True)
class Sent:
    message_id: int


@dataclass(frozen=True, slots=True)
class Retry:
    error: str
    gave_up: bool = False  # the last allowed attempt: the rows are failed now


@dataclass(frozen=True, slots=True)
class Blocked:
    error: str


@dataclass(frozen=True, slots=True)
class Failed:
    error: str


@dataclass(frozen=True, slots=True)
class Migrated:
    new_chat_id: int


@dataclass(frozen=True, slots=True)
class FloodWait:
    """A 429: Telegram did not take the message; wait `seconds`, then try again."""

    seconds: float
    error: str
    overall: bool  # every chat pauses, not only this one


@dataclass(frozen=True, slots=True)
class PlainText:
    """Telegram could not parse our HTML: send the same text plain, once."""

    error: str


@dataclass(frozen=True, slots=True)
class TopicGone:
    """The forum topic was deleted or closed: Telegram did not take the message."""

    error: str


@dataclass(frozen=True, slots=True)
class BalanceTooLow:
    """A paid broadcast the bot's Stars balance could not pay for: Telegram did not take it;
    it goes again at once, free."""

    error: str


@dataclass(frozen=True, slots=True)
class NotClaimed:
    """The rows were no longer pending (held meanwhile): nothing was sent."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """The sender is stopping: nothing was sent."""


Outcome = (Sent | Retry | Blocked | Failed | Migrated | FloodWait | PlainText | TopicGone
           | BalanceTooLow | NotClaimed | Stopped)
# What Telegram answers a send into a deleted forum topic, and into a closed one.
_TOPIC_GONE_ERRORS = ("message thread not found", "topic_closed", "topic_deleted")


@dataclass
class DrainReport:
    """What one drain did, for logs and benchmarks."""

    sent: int = 0  # alerts
    paid: int = 0  # messages sent as paid broadcasts
    digests: int = 0
    digest_chats: set[int] = field(default_factory=set)  # chats that got a digest
    for_you: int = 0  # For-you messages
    retried: int = 0
    failed: int = 0
    blocked_chats: int = 0
    # (chat, topic) of forum topics found deleted or closed: their alerts went to General.
    topics_fallen_back: list[tuple[int, int]] = field(default_factory=list)
    retry_after_waits: int = 0
    overall_pauses: int = 0
    errors: list[str] = field(default_factory=list)


def html_to_plain(text: str) -> str:
    """The visible text of our HTML, for the plain-text retry after an entity error."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


class Sender:
    """Sends pending outbox rows. Up to `window` requests are unconfirmed at once; each row is
    claimed (`sending`) before its request and marked sent as soon as Telegram accepts it, so a
    crash leaves at most `window` messages uncertain, and those are sent again at the next start.
    """

    def __init__(self, bot: Bot, storage: Storage, clock: Clock, pacer: Pacer | None = None, *,
                 window: int | None = None,
                 on_migrated: Callable[[int, int], Awaitable[object]] | None = None,
                 on_topic_gone: Callable[[int, int], Awaitable[object]] | None = None,
                 guides: bool = False,
                 relevance: Relevance | None = None,
                 held_since: Callable[[], float | None] | None = None,
                 paid: PaidBroadcasts | None = None,
                 digest_messages: int = DIGEST_MESSAGES) -> None:
        """`on_migrated(old_id, new_id)` runs after a group moved to a supergroup id, and
        `on_topic_gone(chat_id, topic_id)` after a forum topic's subscriptions were bound to
        General, for whatever keeps them in memory (the subscription matcher). `window` None
        means DEFAULT_SEND_WINDOW; `guides` adds the 🧠 Guide button to alerts. `held_since()`
        is when the poll still storing its alerts began (None when none is): alerts due since
        then wait, so that a chat gets a poll's alerts together (a digest when they are many),
        not the first batches one by one. With `paid`, alerts, digests and For-you messages go
        as paid broadcasts while its budget lasts, up to PAID_SEND_WINDOW of them unconfirmed
        beside the free window. A digest's first delivery takes at most `digest_messages`
        messages; the rest waits behind its More button."""
        window = DEFAULT_SEND_WINDOW if window is None else window
        if window < 1:
            raise ValueError(f"the send window must be at least 1, got {window}")
        self._bot = bot
        self._store = storage
        self._clock = clock
        self._pacer = pacer or Pacer()
        self._on_migrated = on_migrated
        self._on_topic_gone = on_topic_gone
        self._guides = guides
        self._relevance = relevance  # orders a digest, most relevant first
        self._digest_messages = digest_messages
        self._held_since = held_since or (lambda: None)
        self._lock = asyncio.Lock()
        self._window = asyncio.Semaphore(window)
        self._paid = paid
        paid_window = PAID_SEND_WINDOW if paid is not None else 0
        self._paid_window = asyncio.Semaphore(max(1, paid_window))
        self.window = window + paid_window  # unconfirmed at once, at most
        # PTB's rate limiter (the same Pacer) must not count our already paced requests again.
        self._paced = {"rate_limit_args": True} if isinstance(bot, ExtBot) else {}
        self._recovered = False
        self._stopping = False
        self._in_flight = 0  # requests sent and not yet answered and recorded
        self._idle = asyncio.Event()
        self._idle.set()
        self._workers: asyncio.Future[object] | None = None
        # Digest-mode chats whose hour came while a drain runs, each with its caller's report.
        self._guests: list[tuple[int, DrainReport]] = []
        self._memo: DigestMemo | None = None  # the running drain's, for all its digests

    @property
    def busy(self) -> bool:
        return self._lock.locked()

    async def drain(self) -> DrainReport:
        """Send everything due to every reachable chat in instant mode; never runs twice at once."""
        report = DrainReport()
        async with self._lock:
            if self._stopping:
                return report
            await self._recover()
            await self._deliver_chats(await self._due_chats(), report, digest_mode_run=False)
            self._pacer.forget_idle()
        if report.sent or report.for_you or report.failed or report.blocked_chats:
            log.info("delivery: sent=%d digests=%d for_you=%d retried=%d failed=%d "
                     "blocked_chats=%d", report.sent, report.digests, report.for_you,
                     report.retried, report.failed, report.blocked_chats)
        return report

    async def send_daily_digests(self, chat_ids: Sequence[int]) -> DrainReport:
        """Send each digest-mode chat everything pending, as one digest (called at their local
        time), many chats at once as a drain does. While a drain runs (an evening's lasts half
        an hour), its workers take these chats first, before their own next ones: the digests
        are due now, and waiting for the drain's end kept a quarter of the chats waiting as
        long as the drain did."""
        report = DrainReport()
        self._guests.extend((chat_id, report) for chat_id in chat_ids)
        async with self._lock:
            # Those no running drain's workers took (none ran, or it was ending): sent here.
            left = [chat_id for chat_id, owner in self._guests if owner is report]
            self._guests = [guest for guest in self._guests if guest[1] is not report]
            if self._stopping:
                return report
            await self._recover()
            await self._deliver_chats(left, report, digest_mode_run=True)
        return report

    async def _deliver_chats(self, chat_ids: Sequence[int], report: DrainReport,
                             digest_mode_run: bool) -> None:
        """Deliver to each chat, enough of them at once to keep the pace full; digests that
        come due meanwhile (`send_daily_digests`) are taken first."""
        queue: asyncio.Queue[int] = asyncio.Queue()
        for chat_id in chat_ids:
            queue.put_nowait(chat_id)

        async def worker() -> None:
            while (self._guests or not queue.empty()) and not self._stopping:
                if self._guests:
                    (chat_id, owner), digest = self._guests.pop(0), True
                else:
                    chat_id, owner, digest = queue.get_nowait(), report, digest_mode_run
                try:
                    await self._deliver_chat(chat_id, owner, digest)
                except DatabaseDamaged:
                    raise  # every chat's: the bot stops (bot/runtime.py)
                except Exception as exc:  # one chat's trouble must not stop the others
                    log.exception("delivery to chat %s failed", chat_id)
                    owner.errors.append(f"{chat_id}: {exc}")

        workers = min(max(WORKERS, 2 * self.window), len(chat_ids))
        self._memo = DigestMemo(self._store)
        try:
            await self._run(asyncio.gather(*(worker() for _ in range(workers))))
        finally:
            self._memo = None

    async def stop(self, timeout: float = STOP_TIMEOUT) -> None:
        """Stop sending, for shutdown: no request starts after this call; those in flight get
        `timeout` seconds to be answered and recorded, then the drain is cancelled.

        A row is never marked sent unless Telegram accepted it. A row whose request was cut
        off stays claimed and is sent again at the next start (at most `window` of them).
        """
        self._stopping = True
        try:
            await asyncio.wait_for(self._idle.wait(), timeout)
        except TimeoutError:
            log.warning("stopping with %d request(s) unanswered; they are sent again at the "
                        "next start", self._in_flight)
        workers = self._workers
        if workers is not None and not workers.done():
            workers.cancel()
            await asyncio.gather(workers, return_exceptions=True)

    async def _run(self, workers: asyncio.Future[object]) -> None:
        """Await the drain's workers; stop() may cancel them, which ends the drain quietly."""
        self._workers = workers
        try:
            await workers
        except asyncio.CancelledError:
            if not (self._stopping and workers.cancelled()):
                raise
        finally:
            self._workers = None

    async def _recover(self) -> None:
        """Once per process, before its first send: rows a previous process claimed and never
        recorded are pending again (the database lock keeps a second bot away)."""
        if self._recovered:
            return
        self._recovered = True
        uncertain = await self._store.outbox.requeue_claimed()
        uncertain += await self._store.for_you_outbox.requeue_claimed()
        if uncertain:
            log.warning("%d message(s) were being sent when the bot stopped; Telegram may have "
                        "taken them, but cannot be asked: sending them again", uncertain)

    def _due_by(self) -> float:
        """Send what is due by now, except what a poll in progress has stored so far."""
        now = self._clock.now()
        held_since = self._held_since()
        return now if held_since is None else min(now, held_since - HELD_MARGIN)

    async def _deliver_chat(self, chat_id: int, report: DrainReport, digest_mode_run: bool) -> None:
        # A forum topic found gone sends its alerts to General: they go in this same drain,
        # in another round (a few at most; anything left waits for the next drain).
        def fallen_back() -> int:
            return sum(chat == chat_id for chat, _ in report.topics_fallen_back)

        for _ in range(TOPIC_ROUNDS):
            before = fallen_back()
            await self._deliver_rows(chat_id, report, digest_mode_run)
            if fallen_back() == before:
                return

    async def preview(self) -> dict[int, list[Outgoing]]:
        """What a drain would send now, chat by chat, composed exactly as the drain composes
        it; nothing is claimed, sent or changed (`poll-once --dry-run` prints it)."""
        previews = {}
        for chat_id in await self._due_chats():
            composed = await self._compose(chat_id, digest_mode_run=False)
            messages = [] if composed is None else [
                message for composition, _ in composed[1] for message in composition.messages]
            if messages:
                previews[chat_id] = messages
        return previews

    async def _due_chats(self) -> list[int]:
        """Chats with alerts or a For-you message due; For you is due when queued (no poll's
        alerts are held back with it)."""
        return sorted(set(await self._store.outbox.due_chats(self._due_by()))
                      | set(await self._store.for_you_outbox.due_chats(self._clock.now())))

    async def _compose(self, chat_id: int, digest_mode_run: bool
                       ) -> tuple[Chat, list[tuple[Composition, DeliveryQueue]]] | None:
        """A chat's pending rows as messages, its alerts' then its For you's, each with the
        queue that holds their rows; None when nothing may go to it now."""
        chat = await self._store.chats.get(chat_id)
        if chat is None or not chat.active or chat.paused:
            return None
        store, parts = self._store, []
        # A digest-mode chat's alerts wait for its digest; its For you comes at its own time.
        if chat.delivery_mode != DeliveryMode.DIGEST or digest_mode_run:
            rows = await store.outbox.pending_for_chat(chat_id, self._due_by())
            if rows:
                parts.append((await compose_for_chat(
                    store, chat, rows, digest_run=digest_mode_run, guide=self._guides,
                    relevance=self._relevance, digest_messages=self._digest_messages,
                    memo=self._memo), store.outbox))
        waiting = await store.for_you_outbox.pending_for_chat(chat_id, self._clock.now())
        if waiting:
            parts.append((await compose_for_you(store, chat, waiting), store.for_you_outbox))
        return chat, parts

    async def _deliver_rows(self, chat_id: int, report: DrainReport,
                            digest_mode_run: bool) -> None:
        composed = await self._compose(chat_id, digest_mode_run)
        if composed is None:
            return
        chat, parts = composed
        for composition, queue in parts:
            if not await self._deliver_composed(chat, composition, queue, report):
                return

    async def _deliver_composed(self, chat: Chat, composition: Composition,
                                queue: DeliveryQueue, report: DrainReport) -> bool:
        """Send a composition's messages in order; False when the chat can take no more now."""
        if composition.missing:
            await queue.mark_failed([r.id for r in composition.missing],
                                    "paper missing from the store")
            report.failed += len(composition.missing)
        for outgoing in composition.messages:
            if not await self._deliver(chat, outgoing, report):
                return False
        if composition.digest and composition.messages:
            report.digests += 1
            report.digest_chats.add(chat.id)
        return True

    async def _deliver(self, chat: Chat, outgoing: Outgoing, report: DrainReport) -> bool:
        """Send one message until it has an outcome; False when the chat can take no more now."""
        text = outgoing.message.text
        parse_mode: str | None = ParseMode.HTML
        waits = 0
        while True:
            outcome = await self._send(chat, outgoing, text, parse_mode, waits, report)
            match outcome:
                case FloodWait():
                    waits += 1
                    continue  # the pacer now holds the chat, or everyone, back
                case BalanceTooLow():
                    continue  # free, now that paid broadcasts are off for the day
                case PlainText(error):
                    log.warning("Telegram refused %s to chat %s (%s); retrying as plain "
                                "text", _what(outgoing, article=True), chat.id, error)
                    text, parse_mode = html_to_plain(text)[:MessageLimit.MAX_TEXT_LENGTH], None
                    continue
                case Sent() if outgoing.for_you:
                    report.for_you += 1
                    return True
                case Sent():
                    report.sent += len(outgoing.rows)
                    return True
                case Retry(error, gave_up=True):
                    log.warning("%s for chat %s failed %d times; giving up: %s",
                                _what(outgoing), chat.id, MAX_SEND_ATTEMPTS, error)
                    report.failed += len(outgoing.rows)
                case Retry():
                    report.retried += len(outgoing.rows)
                case Failed(error):
                    log.warning("%s for chat %s failed for good: %s", _what(outgoing), chat.id,
                                error)
                    report.failed += len(outgoing.rows)
                    return True
                case Blocked():
                    log.info("chat %s blocked the bot; holding its alerts", chat.id)
                    report.blocked_chats += 1
                case Migrated(new_chat_id):
                    log.info("chat %s migrated to %s", chat.id, new_chat_id)
                    if self._on_migrated is not None:
                        await self._on_migrated(chat.id, new_chat_id)
                case TopicGone(error):
                    await self._fall_back(chat, outgoing.topic_id, error, report)
            return False  # retried later, held, migrated (the next drain sends to the new id),
            # or nothing sent (the rows were held meanwhile, or the sender is stopping)

    async def _send(self, chat: Chat, outgoing: Outgoing, text: str, parse_mode: str | None,
                    waits: int, report: DrainReport) -> Outcome:
        """Claim the rows, wait for the pacer, send, and record the outcome in the rows, all
        within one slot of the window: no row stays claimed longer than its slot.

        The claim comes before the pacer's turn, so no database wait can come between a send's
        release and its request and bunch sends together.
        """
        row_ids = [r.id for r in outgoing.rows]
        outbox = self._queue(outgoing)
        await self._pacer.chat_ready(chat.id)
        paid = self._paid is not None and await self._paid.take()
        async with self._paid_window if paid else self._window:
            if self._stopping:
                return self._unpaid(paid, Stopped())
            if not await outbox.claim(row_ids, self._clock.now()):
                return self._unpaid(paid, NotClaimed())
            self._in_flight += 1
            self._idle.clear()
            try:
                async with self._pacer.turn(chat.id, paid=paid):
                    # A leader whose lease ran out meanwhile (PostgreSQL) sends nothing more.
                    stop = self._stopping or not self._store.leading()
                    outcome = Stopped() if stop else await self._request(
                        chat.id, outgoing, text, parse_mode, paid=paid)
                if paid and isinstance(outcome, Sent):
                    report.paid += 1
                else:
                    self._unpaid(paid, outcome)
                if isinstance(outcome, BalanceTooLow) and self._paid is not None:
                    self._paid.refused(outcome.error)
                if isinstance(outcome, Stopped):
                    await outbox.unclaim(row_ids)
                    return outcome
                if isinstance(outcome, FloodWait):
                    report.retry_after_waits += 1
                    report.overall_pauses += outcome.overall
                return await self._resolve(chat, outgoing, outcome, parse_mode, waits)
            finally:
                self._in_flight -= 1
                if not self._in_flight:
                    self._idle.set()

    def _unpaid(self, paid: bool, outcome: Outcome) -> Outcome:
        """A message taken from the paid budget that Telegram did not take: it stays in it."""
        if paid and self._paid is not None:
            self._paid.unused()
        return outcome

    async def _resolve(self, chat: Chat, outgoing: Outgoing, outcome: Outcome,
                       parse_mode: str | None, waits: int) -> Outcome:
        """Record what Telegram answered in the claimed rows; returns the final outcome."""
        rows = outgoing.rows
        row_ids = [r.id for r in rows]
        outbox = self._queue(outgoing)
        now = self._clock.now()
        match outcome:
            case Sent(message_id) if outgoing.hidden:
                # The rows behind its More button with those it shows, in one transaction.
                await outbox.mark_sent([r.id for r in outgoing.shown_rows], message_id, now,
                                       hidden=[r.id for r in outgoing.hidden_rows],
                                       hidden_message_id=behind_more(message_id))
            case Sent(message_id):
                await outbox.mark_sent(row_ids, message_id, now, alone=outgoing.alone)
            case FloodWait(error=error) if waits >= MAX_RETRY_AFTER_WAITS:
                outcome = Retry(error)
            case PlainText(error) if parse_mode is None:
                outcome = Failed(error)
            case FloodWait() | PlainText() | BalanceTooLow():
                await outbox.unclaim(row_ids)  # Telegram did not take it: try again
            case Blocked(error):
                await self._store.chats.mark_inactive(chat.id, error, now)  # holds the rows
            case Migrated(new_chat_id):
                await outbox.unclaim(row_ids)
                await self._store.chats.migrate_id(chat.id, new_chat_id)
            case TopicGone():
                await outbox.unclaim(row_ids)  # Telegram did not take it: General will
        match outcome:
            case Retry(error):
                attempts = max(r.attempts for r in rows) + 1
                delay = min(RETRY_BACKOFF_BASE * 2 ** (attempts - 1), RETRY_BACKOFF_MAX)
                await outbox.retry_later(row_ids, now + delay, error, MAX_SEND_ATTEMPTS)
                outcome = Retry(error, gave_up=attempts >= MAX_SEND_ATTEMPTS)
            case Failed(error):
                await outbox.mark_failed(row_ids, error)
        return outcome

    def _queue(self, outgoing: Outgoing) -> DeliveryQueue:
        """The table whose rows the message delivers."""
        return self._store.for_you_outbox if outgoing.for_you else self._store.outbox

    async def tell(self, chat_id: int, text: str) -> bool:
        """A one-off notice (HTML) to a chat, outside the outbox: a courtesy, not retried;
        False if Telegram did not take it."""
        try:
            await self._bot.send_message(chat_id, text, parse_mode=ParseMode.HTML,
                                         link_preview_options=NO_PREVIEW)
        except TelegramError as exc:
            log.warning("could not send a notice to chat %s: %s", chat_id, exc)
            return False
        return True

    async def _fall_back(self, chat: Chat, topic_id: int, error: str,
                         report: DrainReport) -> None:
        """A forum topic took no more messages: bind its subscriptions and alerts to General,
        and tell the chat there once (a later refusal finds nothing bound, and says nothing).
        The notice is a courtesy: should it fail, the alerts still go to General."""
        fallback = await self._store.topics.fall_back(chat.id, topic_id)
        report.topics_fallen_back.append((chat.id, topic_id))
        log.info("topic %s of chat %s is gone (%s): %d subscription(s) and %d alert(s) now go "
                 "to General", topic_id, chat.id, error, len(fallback.queries), fallback.moved)
        if self._on_topic_gone is not None:
            await self._on_topic_gone(chat.id, topic_id)
        if not fallback.queries:
            return
        label = topic_label(fallback.name, topic_id, chat.language)
        await self.tell(chat.id, render_topic_fallback(label, fallback.queries, chat.language))

    async def _request(self, chat_id: int, outgoing: Outgoing, text: str,
                       parse_mode: str | None, *, paid: bool = False) -> Outcome:
        # A deleted original is no error: the revision then arrives on its own.
        reply = None if outgoing.reply_to is None else ReplyParameters(
            outgoing.reply_to, allow_sending_without_reply=True)
        # What send_message would post; the answer is kept as JSON: a drain needs only the
        # message id, and parsing a digest's answer into a Message (its dozens of entities) was
        # a fifth of a paid drain's event loop. None values are not sent.
        api_kwargs = {"chat_id": chat_id, "text": text, "parse_mode": parse_mode,
                      "reply_markup": outgoing.message.reply_markup,
                      "link_preview_options": NO_PREVIEW, "reply_parameters": reply,
                      "message_thread_id": outgoing.topic_id or None,
                      "allow_paid_broadcast": True if paid else None}
        try:
            answer = await self._bot.do_api_request(SEND_MESSAGE, api_kwargs, **self._paced)
        except RetryAfter as exc:
            seconds = flood_wait_seconds(exc)
            overall = self._pacer.flood_wait(chat_id, seconds)
            log.warning("Telegram asked to wait %.0f s before %s", seconds,
                        "any message" if overall else f"chat {chat_id}")
            return FloodWait(seconds, str(exc), overall)
        except Forbidden as exc:
            return Blocked(str(exc))
        except ChatMigrated as exc:
            return Migrated(exc.new_chat_id)
        except BadRequest as exc:
            reason = str(exc).lower()
            if paid and any(balance in reason for balance in _BALANCE_ERRORS):
                return BalanceTooLow(str(exc))
            if outgoing.topic_id and any(gone in reason for gone in _TOPIC_GONE_ERRORS):
                return TopicGone(str(exc))
            if "chat not found" in reason:
                return Blocked(str(exc))
            return PlainText(str(exc))
        except NetworkError as exc:  # TimedOut included: it may have arrived; retry later
            return Retry(str(exc))
        except TelegramError as exc:
            return Retry(str(exc))
        return Sent(answer["message_id"])


def _what(outgoing: Outgoing, *, article: bool = False) -> str:
    """What a message is, for the log."""
    if outgoing.for_you:
        return "a For-you message" if article else "For-you message"
    return "an alert" if article else "alert"


TELEGRAM_BACKOFF_MAX = 30.0  # seconds between tries to reach Telegram: 1, 2, 4 … 30


def telegram_backoff(attempt: int) -> float:
    """Seconds before try `attempt + 1` at a Bot API call that must go through (getMe at
    start-up, setWebhook): 1, 2, 4, 8, 16, 30, 30 …"""
    return min(2.0 ** (attempt - 1), TELEGRAM_BACKOFF_MAX)


def error_reason(exc: BaseException) -> str:
    """An error as one short line for the log."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:200]


def flood_wait_seconds(exc: RetryAfter) -> float:
    """Telegram's flood-control wait in seconds (PTB gives a timedelta or, before its timedelta
    behaviour was chosen, a number)."""
    value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)

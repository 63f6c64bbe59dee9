"""The scheduled jobs besides the poll (`bot/jobs/poll.py`): delivery, daily digests, For you,
daily upkeep, the Telegram heartbeat and the Hugging Face list. Each takes the services from
the container (`bot/services/container.py`); `bot/jobs/schedule.py` schedules them."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable

from telegram.error import TelegramError
from telegram.ext import CallbackContext

from bot.core.constants import DAY
from bot.core.models import Beat, ForYouPick, ForYouRound
from bot.delivery.schedule import digest_due, for_you_time, local_time
from bot.delivery.sender import Sender
from bot.ranking.service import Ranker
from bot.services.container import Services
from bot.services.health import TELEGRAM_HEARTBEAT_INTERVAL
from bot.storage import Storage

log = logging.getLogger(__name__)

OUTBOX_RETENTION_DAYS = 30
PAPER_RETENTION_DAYS = 90  # far beyond /stats' 7 days and /follow's 7-day preview
# Where each paper's first alert went, for threading its revisions: they often come months
# after v1, so a year (one small row per paper a chat was alerted to on its own).
THREAD_RETENTION_DAYS = 365


# What PTB's JobQueue calls; the context gives the Telegram bot and the job queue, never services.
JobCallback = Callable[[CallbackContext], Awaitable[None]]
Job = Callable[[Services, CallbackContext], Awaitable[None]]


def tracked(services: Services, job: Job) -> JobCallback:
    """The job as PTB's callback, with these services, and one that a stop can find and cancel
    (see bot/runtime.py)."""

    @functools.wraps(job)
    async def run(context: CallbackContext) -> None:
        task = asyncio.current_task()
        work = services.run.work
        if task is not None:
            work.add(task)
        try:
            await job(services, context)
        except asyncio.CancelledError:
            # Only a stop cancels jobs; the scheduler would log it as a crash.
            log.info("%s abandoned: the bot is stopping", job.__name__)
        finally:
            work.discard(task)  # type: ignore[arg-type]

    return run


async def community_job(services: Services, context: CallbackContext) -> None:
    """Hugging Face's daily list, a few times a day; its failures stay on its own source.

    An alert already sent is not edited when its paper reaches the list later: an edit notifies
    nobody, so the badge would go unseen, and it would spend the chat's message budget; the
    paper shows in /trending (and /trending mine) instead.
    """
    if services.community is not None:
        await services.community.poll()


async def drain_job(services: Services, context: CallbackContext) -> None:
    """Deliver whatever came due (retries, resumed chats); skipped while a drain runs."""
    if not services.sender.busy:
        await services.sender.drain()


async def digest_job(services: Services, context: CallbackContext) -> None:
    """Send each digest-mode chat its daily digest once its local time has come."""
    await send_due_digests(services.storage, services.sender, services.clock.now())


async def send_due_digests(storage: Storage, sender: Sender, now: float) -> int:
    """Send every digest that is due at `now`; returns how many chats received one.

    A chat with nothing waiting at its hour gets no message (an empty digest is noise), and
    its next digest counts from now.
    """
    sent = 0
    for chat in await storage.chats.in_digest_mode():
        if chat.digest_time is None or chat.paused:
            continue
        last = chat.last_digest_at if chat.last_digest_at is not None else now
        if digest_due(now, last, chat.digest_time, chat.timezone):
            report = await sender.send_daily_digest(chat.id)
            await storage.chats.mark_digest_sent(chat.id, now)
            sent += report.digests > 0
    return sent


async def for_you_job(services: Services, context: CallbackContext) -> None:
    """Queue each chat's For-you message once its local time has come, then deliver it."""
    queued = await queue_for_you(services.storage, services.ranker, services.clock.now())
    # The drain job (every few seconds) delivers it if a drain is running now.
    if queued and not services.sender.busy:
        await services.sender.drain()


async def queue_for_you(storage: Storage, ranker: Ranker, now: float) -> int:
    """Queue every For-you message due at `now` (the sender delivers them like alerts); returns
    how many were queued. A chat whose papers all score below the threshold gets nothing that
    day. A paused chat's message waits for /resume. A chat that blocked the bot gets no round,
    as it gets no alerts, until it writes again (a message it blocked is held until then)."""
    due = []
    for setting in await storage.rankings.for_you_chats():
        chat = await storage.chats.get(setting.chat_id)
        if chat is None or not chat.active:
            continue
        last = setting.last_sent_at if setting.last_sent_at is not None else setting.enabled_at
        if digest_due(now, last, for_you_time(chat.digest_time), chat.timezone):
            due.append((chat, setting.count))
    if not due:
        return 0
    picks = await ranker.suggestions([(chat.id, count) for chat, count in due], now)
    return await storage.for_you_outbox.enqueue([ForYouRound(
        chat.id, local_time(now, chat.timezone, "%Y-%m-%d"),
        tuple(ForYouPick(s.paper.arxiv_id, s.paper.version, s.like.title if s.like else None,
                         s.terms) for s in picks.get(chat.id, ())))
        for chat, _count in due], now)


async def prune_job(services: Services, context: CallbackContext) -> None:
    """Daily upkeep: forget old delivered alerts and old papers nobody keeps; let the garbage
    collector see a large index once (it frees what polls' freezes kept from it)."""
    await prune(services.storage, services.clock.now())
    services.subscriptions.refreeze()


async def prune(storage: Storage, now: float) -> tuple[int, int]:
    """Delivered alerts after 30 days, papers nobody saved or awaits after 90 days; then the
    planner statistics, and a VACUUM when pruning left a significant share of the file free."""
    expired = await storage.outbox.expire_held(now)
    expired += await storage.for_you_outbox.expire_held(now)
    if expired:
        log.info("%d messages held for chats that blocked the bot expired", expired)
    alerts = await storage.outbox.prune(now - OUTBOX_RETENTION_DAYS * DAY)
    await storage.for_you_outbox.prune(now - OUTBOX_RETENTION_DAYS * DAY)
    await storage.outbox.prune_threads(now - THREAD_RETENTION_DAYS * DAY)
    papers = await storage.papers.prune(now - PAPER_RETENTION_DAYS * DAY)
    await storage.guides.prune(now - PAPER_RETENTION_DAYS * DAY)
    await storage.community.prune(now - PAPER_RETENTION_DAYS * DAY)
    if alerts or papers:
        log.info("pruned %d delivered alerts and %d papers", alerts, papers)
    await storage.db.optimize()
    vacuumed = await storage.db.vacuum_if_worth()
    if vacuumed is not None:
        before, after = vacuumed
        log.info("vacuum freed %.1f MB of %.1f MB (%.0f %%)", (before - after) / 1e6,
                 before / 1e6, 100 * (before - after) / before)
    return alerts, papers


async def telegram_heartbeat_job(services: Services, context: CallbackContext) -> None:
    """Store when Telegram last answered (for `health`); ask it getMe if nothing else did
    within the last heartbeat interval (webhook mode with no traffic)."""
    answered = services.run.telegram_ok_at
    if answered is None or services.clock.now() - answered > TELEGRAM_HEARTBEAT_INTERVAL:
        try:
            await context.bot.get_me()
        except TelegramError as exc:
            log.warning("Telegram heartbeat failed (%s)", exc)
            return
    if services.run.telegram_ok_at is not None:
        await services.storage.heartbeats.beat(Beat.TELEGRAM, services.run.telegram_ok_at)

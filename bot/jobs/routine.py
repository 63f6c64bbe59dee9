"""The scheduled jobs besides the poll (`bot/jobs/poll.py`): delivery, daily digests, For you,
daily upkeep, the Telegram heartbeat, the Hugging Face list and the Zotero link. Each takes the
services from the container (`bot/services/container.py`); `bot/jobs/schedule.py` schedules
them."""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Awaitable, Callable

from telegram.error import TelegramError
from telegram.ext import CallbackContext

from bot.core.models import Beat
from bot.services import daily, upkeep
from bot.services.container import Services
from bot.services.health import TELEGRAM_HEARTBEAT_INTERVAL, check_integrity, record_beat

log = logging.getLogger(__name__)

# What PTB's JobQueue calls; the context gives the Telegram bot and the job queue, never services.
JobCallback = Callable[[CallbackContext], Awaitable[None]]
Job = Callable[[Services, CallbackContext], Awaitable[None]]


def tracked(services: Services, job: Job, *, one_at_a_time: bool = False) -> JobCallback:
    """The job as PTB's callback, with these services, and one that a stop can find and cancel
    (see bot/runtime.py). `one_at_a_time` (the repeating jobs): a turn that comes while the
    job still runs is skipped at once, as the running one does that work (an evening's drain
    outlasts its 2 s interval for many minutes). Scheduled with room for that second instance
    (`REPEATING`), APScheduler no longer warns at every turn skipped (hundreds an evening).
    The poll's chain and its retries are not skipped: each is a poll that must happen."""
    running = False

    @functools.wraps(job)
    async def run(context: CallbackContext) -> None:
        nonlocal running
        if running and one_at_a_time:
            return
        running = True
        task = asyncio.current_task()
        work = services.run.work
        if task is not None:
            work.add(task)
        try:
            await job(services, context)
        except asyncio.CancelledError:
            # Only a stop cancels jobs; the scheduler would log it as a crash.
            log.info("%s abandoned: the bot is stopping", job.__name__)
        else:
            # A failure goes on to the application's error handlers, which log it by the
            # job's name (bot/chat/handlers/basic.py) or stop the bot (bot/runtime.py).
            name = getattr(getattr(context, "job", None), "name", None)
            if name is not None and services.run.failing_jobs.pop(name, None) is not None:
                log.info("job %s runs again", name)
        finally:
            running = False
            work.discard(task)  # type: ignore[arg-type]

    return run


# APScheduler lets a job's next turn start while the last still runs; `tracked` ends it at once.
REPEATING = {"max_instances": 2}


async def community_job(services: Services, context: CallbackContext) -> None:
    """Hugging Face's daily list, a few times a day; its failures stay on its own source.

    An alert already sent is not edited when its paper reaches the list later: an edit notifies
    nobody, so the badge would go unseen, and it would spend the chat's message budget; the
    paper shows in /trending (and /trending mine) instead.
    """
    if services.community is not None:
        await services.community.poll()


async def zotero_pull_job(services: Services, context: CallbackContext) -> None:
    """Hourly, each linked Zotero library not read for a day: what changed in it joins its
    chat's library."""
    if services.zotero is not None:
        report = await services.zotero.pull(due_only=True)
        log.info("zotero pull: %d added, %d removed, %d unchanged libraries, %d unlinked",
                 report.added, report.removed, report.unchanged, len(report.revoked))


async def zotero_push_job(services: Services, context: CallbackContext) -> None:
    """Write the papers chats saved, and their new versions, to their Zotero libraries."""
    if services.zotero is not None:
        report = await services.zotero.push()
        if report.written or report.updated or report.revoked:
            log.info("zotero push: %d written, %d updated, %d unlinked", report.written,
                     report.updated, len(report.revoked))


async def drain_job(services: Services, context: CallbackContext) -> None:
    """Deliver whatever came due (retries, resumed chats); skipped while a drain runs."""
    if not services.sender.busy:
        await services.sender.drain()


async def digest_job(services: Services, context: CallbackContext) -> None:
    """Send each digest-mode chat its daily digest once its local time has come; not while a
    poll is storing its alerts (the next check, 30 s on, does): the alerts it has not stored
    yet would miss the digest, and the chat's day would be marked done without them (ten
    chats' alerts waited a day that way in the 10,000-chat evening, a minute of storing)."""
    if services.pipeline.storing_since is None:
        await daily.send_due_digests(services.storage, services.sender, services.clock.now())


async def for_you_job(services: Services, context: CallbackContext) -> None:
    """Queue each chat's For-you message once its local time has come, then deliver it; not
    while a poll is storing its alerts, whose papers would look unmatched and be suggested
    beside their own alerts."""
    if services.pipeline.storing_since is not None:
        return
    queued = await daily.queue_for_you(services.storage, services.ranker, services.clock.now())
    # The drain job (every few seconds) delivers it if a drain is running now.
    if queued and not services.sender.busy:
        await services.sender.drain()


async def prune_job(services: Services, context: CallbackContext) -> None:
    """Daily upkeep: check every page of the database (a damaged one stops the bot, see
    bot/runtime.py), forget chats that left the bot half a year ago, old delivered alerts and
    old papers nobody keeps; let the garbage collector see a large index once (it frees what
    polls' freezes kept from it)."""
    started = time.monotonic()
    await check_integrity(services.storage, services.clock.now())
    log.info("database integrity ok (quick_check in %.1f s)", time.monotonic() - started)
    await upkeep.forget_departed(services.storage, services.subscriptions, services.clock.now())
    await upkeep.prune(services.storage, services.clock.now())
    services.subscriptions.refreeze()


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
        await record_beat(services.storage, Beat.TELEGRAM, services.run.telegram_ok_at)

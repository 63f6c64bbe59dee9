"""The scheduled poll: run one, deliver what it queued, and decide when the next one runs.

Polls follow arXiv's calendar (`bot/arxiv/freshness.py`): every minute or so from a due rebuild
until every feed carries the due announcement, then relaxed, waking again for the next
rebuild, never further apart than POLL_INTERVAL_SECONDS. A poll with failed feeds is also
retried early with backoff. An empty feed on a weekend or holiday is no failure.
"""

from __future__ import annotations

import logging
import time

from telegram.ext import CallbackContext, JobQueue

from bot.core.models import Beat, ChangeStatus
from bot.jobs.routine import JobCallback, tracked
from bot.services.container import Services
from bot.services.health import record_beat

log = logging.getLogger(__name__)

POLL_JOB = "poll"
RETRY_JOB = "poll-retry"
RETRY_BASE_SECONDS = 60.0  # a failed poll is tried again after 60 s, 120 s, 240 s …


def schedule_polls(jobs: JobQueue, services: Services, *, first: float) -> None:
    """Start the chain of polls: each schedules the next by the calendar, with the same
    callback (one that a stop can cancel)."""
    jobs.run_once(tracked(services, poll_job), when=first, name=POLL_JOB)


async def poll_job(services: Services, context: CallbackContext) -> None:
    """The scheduled poll: ingest, match, queue, then deliver what it queued."""
    jobs = getattr(context, "job_queue", None)
    job = getattr(context, "job", None)
    chained = job is not None and job.name == POLL_JOB and jobs is not None
    callback = job.callback if job is not None else tracked(services, poll_job)
    try:
        await _poll_and_deliver(services, jobs, callback)
    finally:
        if chained:
            delay = await services.pipeline.next_poll_delay()
            jobs.run_once(callback, when=delay, name=POLL_JOB)
            log.debug("next poll in %.0f s", delay)


async def _poll_and_deliver(services: Services, jobs: JobQueue | None,
                            callback: JobCallback) -> None:
    started = time.monotonic()
    report = await services.pipeline.poll()
    if report.sources and not report.failed_sources:
        await record_beat(services.storage, Beat.ARXIV_POLL, services.clock.now())
    drained = await services.sender.drain()
    log.info(
        "poll done sources=%d failed=%d items=%d new=%d revised=%d seen=%d matches=%d "
        "sent=%d digests=%d retried=%d failed_alerts=%d seconds=%.2f",
        len(report.sources), len(report.failed_sources),
        sum(s.items for s in report.sources), report.count(ChangeStatus.NEW),
        report.count(ChangeStatus.REVISED), report.count(ChangeStatus.SEEN), report.alert_count,
        drained.sent, drained.digests, drained.retried, drained.failed,
        time.monotonic() - started,
    )
    run = services.run
    if not report.failed_sources:
        run.failed_polls = 0
        return
    run.failed_polls += 1
    delay = retry_delay(run.failed_polls, services.settings.poll_interval_seconds)
    if delay is not None and jobs is not None and not jobs.get_jobs_by_name(RETRY_JOB):
        jobs.run_once(callback, when=delay, name=RETRY_JOB)
        log.warning("%d feed(s) failed; polling again in %.0f s",
                    len(report.failed_sources), delay)


def retry_delay(failed_polls: int, interval: float) -> float | None:
    """Seconds to an extra poll after `failed_polls` failed ones in a row (60, 120, 240 s …);
    None once the regular poll would come as soon."""
    delay = RETRY_BASE_SECONDS * 2 ** min(failed_polls - 1, 16)
    return delay if delay < interval else None

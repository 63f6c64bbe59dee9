"""Which jobs run, and how often: the one place that puts the bot's work on PTB's JobQueue."""

from __future__ import annotations

from telegram.ext import JobQueue

from bot.core.constants import DAY, HOUR
from bot.jobs.poll import schedule_polls
from bot.jobs.routine import (
    REPEATING,
    Job,
    community_job,
    digest_job,
    drain_job,
    for_you_job,
    prune_job,
    telegram_heartbeat_job,
    tracked,
    zotero_pull_job,
    zotero_push_job,
)
from bot.services.container import Services
from bot.services.health import TELEGRAM_HEARTBEAT_INTERVAL

FIRST_POLL_DELAY = 3.0  # the spec asks for the first poll within 5 s of start-up
HF_FIRST_POLL_DELAY = 20.0  # after the first arXiv poll has had its turn
DIGEST_CHECK_INTERVAL = 30.0
DRAIN_INTERVAL = 2.0  # picks up retries that came due and alerts released by /resume
FIRST_UPKEEP_DELAY = 600.0
ZOTERO_FIRST_PULL_DELAY = 900.0  # after the start's arXiv work
ZOTERO_PUSH_INTERVAL = 60.0  # a paper saved reaches Zotero within a minute


def schedule_jobs(jobs: JobQueue, services: Services) -> None:
    """Every recurring job of a running bot, each with these services."""
    schedule_polls(jobs, services, first=FIRST_POLL_DELAY)

    def every(job: Job, interval: float, first: float, name: str) -> None:
        jobs.run_repeating(tracked(services, job, one_at_a_time=True), interval=interval,
                           first=first, name=name, job_kwargs=REPEATING)

    every(drain_job, DRAIN_INTERVAL, DRAIN_INTERVAL, "drain")
    every(digest_job, DIGEST_CHECK_INTERVAL, DIGEST_CHECK_INTERVAL, "digests")
    every(prune_job, DAY, FIRST_UPKEEP_DELAY, "prune")
    every(for_you_job, DIGEST_CHECK_INTERVAL, DIGEST_CHECK_INTERVAL, "for-you")
    every(telegram_heartbeat_job, TELEGRAM_HEARTBEAT_INTERVAL, 1.0, "telegram-heartbeat")
    if services.features.trending:
        every(community_job, services.settings.hf_poll_interval_seconds, HF_FIRST_POLL_DELAY,
              "huggingface")
    if services.features.zotero:
        every(zotero_pull_job, HOUR, ZOTERO_FIRST_PULL_DELAY, "zotero-pull")
        every(zotero_push_job, ZOTERO_PUSH_INTERVAL, ZOTERO_PUSH_INTERVAL, "zotero-push")

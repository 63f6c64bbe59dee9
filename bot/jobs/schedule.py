"""Which jobs run, and how often: the one place that puts the bot's work on PTB's JobQueue."""

from __future__ import annotations

from telegram.ext import JobQueue

from bot.core.constants import DAY, HOUR
from bot.jobs.poll import schedule_polls
from bot.jobs.routine import (
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
    jobs.run_repeating(tracked(services, drain_job), interval=DRAIN_INTERVAL,
                       first=DRAIN_INTERVAL, name="drain")
    jobs.run_repeating(tracked(services, digest_job), interval=DIGEST_CHECK_INTERVAL,
                       first=DIGEST_CHECK_INTERVAL, name="digests")
    jobs.run_repeating(tracked(services, prune_job), interval=DAY, first=FIRST_UPKEEP_DELAY,
                       name="prune")
    jobs.run_repeating(tracked(services, for_you_job), interval=DIGEST_CHECK_INTERVAL,
                       first=DIGEST_CHECK_INTERVAL, name="for-you")
    jobs.run_repeating(tracked(services, telegram_heartbeat_job),
                       interval=TELEGRAM_HEARTBEAT_INTERVAL, first=1.0, name="telegram-heartbeat")
    if services.features.trending:
        jobs.run_repeating(tracked(services, community_job),
                           interval=services.settings.hf_poll_interval_seconds,
                           first=HF_FIRST_POLL_DELAY, name="huggingface")
    if services.features.zotero:
        jobs.run_repeating(tracked(services, zotero_pull_job), interval=HOUR,
                           first=ZOTERO_FIRST_PULL_DELAY, name="zotero-pull")
        jobs.run_repeating(tracked(services, zotero_push_job), interval=ZOTERO_PUSH_INTERVAL,
                           first=ZOTERO_PUSH_INTERVAL, name="zotero-push")

"""The operator's view: one structured line per poll, with what came in and what went out."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

import pytest

from bot.jobs.poll import poll_job
from tests.conftest import Harness, make_paper


async def test_each_poll_logs_one_structured_summary(harness: Harness,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    await harness.ask(8001, "/follow cs.LG")
    harness.serve_feed([make_paper(1), make_paper(2), make_paper(3, categories=("math.AG",))])
    with caplog.at_level(logging.INFO, logger="bot"):
        await poll_job(harness.services, SimpleNamespace())
    lines = [r.getMessage() for r in caplog.records]
    per_source = [line for line in lines if line.startswith("poll source=")]
    assert len(per_source) == 1 and "items=3 new=3 revised=0 seen=0 alerts=2" in per_source[0]
    summary = [line for line in lines if line.startswith("poll done")]
    assert len(summary) == 1
    fields = dict(re.findall(r"(\w+)=([\d.]+)", summary[0]))
    assert fields["sources"] == "1" and fields["items"] == "3" and fields["new"] == "3"
    assert fields["matches"] == "2" and fields["sent"] == "2" and float(fields["seconds"]) >= 0
    assert harness.settings.telegram_bot_token not in caplog.text


def test_retry_backoff_doubles_and_yields_to_the_regular_poll() -> None:
    from bot.jobs.poll import retry_delay

    assert [retry_delay(n, 900) for n in (1, 2, 3, 4, 5)] == [60, 120, 240, 480, None]
    assert retry_delay(1, 30) is None, "a poll every 30 s needs no extra retry"


async def test_a_failed_poll_is_retried_early_with_backoff(harness: Harness) -> None:
    jobs = harness.app.job_queue
    context = SimpleNamespace(job_queue=jobs)
    harness.arxiv.fail_next(status=404, times=2)  # not retried inside the poll: fast

    async def failed_poll_schedules_a_retry_in(seconds: float) -> None:
        # The retry is set `seconds` after some instant within the poll's run: bracketed by
        # that run, so a slow machine moves both ends alike.
        before = datetime.now(UTC)
        await poll_job(harness.services, context)
        after = datetime.now(UTC)
        [retry] = jobs.get_jobs_by_name("poll-retry")
        retry.schedule_removal()
        delay = timedelta(seconds=seconds)
        assert before + delay <= retry.next_t <= after + delay

    await failed_poll_schedules_a_retry_in(60)
    await harness.settle()
    await failed_poll_schedules_a_retry_in(120)  # fails again: the retry waits twice as long

    harness.serve_feed([make_paper(1)])
    await poll_job(harness.services, context)  # recovered: no retry, and the backoff starts over
    assert harness.services.run.failed_polls == 0
    assert not [j for j in jobs.get_jobs_by_name("poll-retry") if not j.removed]

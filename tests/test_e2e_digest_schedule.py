"""The daily digest at the chat's local hour: sent by the running bot's own scheduler, and at
08:00 local on both sides of Europe/Berlin's October clock change."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

import bot.jobs.schedule
from bot.core.clock import ManualClock
from bot.jobs.routine import digest_job
from tests.conftest import (
    SHANGHAI,
    Harness,
    digest_at_eight_in_shanghai,
    make_paper,
    make_settings,
    start_bot_with_jobs,
    stop_bot,
)
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

CHAT = 7301
BERLIN = ZoneInfo("Europe/Berlin")


@pytest.fixture
async def scheduled(tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
                    monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Harness]:
    """The whole bot as `run` builds it, jobs and all, on a clock the test moves. The digest
    job looks every 0.2 s instead of every 30 s, and the scheduled poll waits (the test polls
    itself, so it knows what was announced)."""
    monkeypatch.setattr(bot.jobs.schedule, "DIGEST_CHECK_INTERVAL", 0.2)
    monkeypatch.setattr(bot.jobs.schedule, "FIRST_POLL_DELAY", 3600.0)
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv)
    app = await start_bot_with_jobs(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


async def test_the_running_bots_scheduler_sends_the_digest_at_the_chats_hour(
        scheduled: Harness) -> None:
    harness = scheduled
    await digest_at_eight_in_shanghai(harness, CHAT)
    before = len(harness.tg.messages(CHAT))
    harness.serve_feed([make_paper(n) for n in (1, 2)])
    await harness.poll()
    assert len(harness.tg.messages(CHAT)) == before, "digest mode holds instant alerts"
    assert harness.app.job_queue.get_jobs_by_name("digests"), "the job is scheduled"

    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    digest = await harness.tg.wait_for_message(CHAT, contains="part 2", timeout=30)
    assert "part 1" in digest.text
    # The job marks the day once the digest is out.
    await harness.tg.wait_for(
        lambda: harness.rows("SELECT last_digest_at FROM chats WHERE id = ?", (CHAT,))
        == [(harness.clock.now(),)], what="the job to mark the day's digest")


async def test_a_berlin_digest_comes_at_0800_local_on_both_sides_of_the_october_change(
        harness: Harness) -> None:
    harness.clock.set(datetime(2026, 10, 23, 20, 0, tzinfo=BERLIN).timestamp())
    await harness.ask(CHAT, "/follow cs.LG")
    await harness.ask(CHAT, "/tz Europe/Berlin")
    reply = await harness.ask(CHAT, "/digest 08:00")
    assert "2026-10-24 08:00" in reply.text

    harness.serve_feed([make_paper(1)])
    await harness.poll()
    harness.clock.set(datetime(2026, 10, 24, 7, 59, tzinfo=BERLIN).timestamp())
    assert await harness.send_due_digests() == 0
    summer = datetime(2026, 10, 24, 8, 0, 30, tzinfo=BERLIN)
    assert summer.utcoffset().total_seconds() == 2 * 3600  # CEST
    harness.clock.set(summer.timestamp())
    assert await harness.send_due_digests() == 1
    await harness.tg.wait_for_message(CHAT, contains="part 1")

    # The clocks go back at 03:00 on Sunday 25 October: 08:00 local is now 07:00 UTC.
    harness.serve_feed([make_paper(2)])
    await harness.poll()
    a_day_later = datetime(2026, 10, 25, 6, 0, 30, tzinfo=UTC)  # 07:00:30 local (CET)
    harness.clock.set(a_day_later.timestamp())
    assert await harness.send_due_digests() == 0, "24 hours on is 07:00 local, not yet 08:00"
    harness.clock.set(datetime(2026, 10, 25, 7, 59, tzinfo=BERLIN).timestamp())
    assert await harness.send_due_digests() == 0
    winter = datetime(2026, 10, 25, 8, 0, 30, tzinfo=BERLIN)
    assert winter.utcoffset().total_seconds() == 3600  # CET
    harness.clock.set(winter.timestamp())
    assert await harness.send_due_digests() == 1
    digest = await harness.tg.wait_for_message(CHAT, contains="part 2")
    assert "part 1" not in digest.text, "each paper in one digest"
    assert await harness.send_due_digests() == 0, "once a day"


async def test_a_digest_waits_for_a_poll_that_is_still_storing_its_alerts(
        harness: Harness) -> None:
    """At the chat's hour a poll is still storing (a minute at 10,000 chats): the check then
    would send what is stored so far and mark the day done, and the rest would wait a day."""
    await digest_at_eight_in_shanghai(harness, CHAT)
    harness.serve_feed([make_paper(n) for n in (1, 2, 3)])
    await harness.poll()
    before = len(harness.tg.messages(CHAT))
    marked = (await harness.services.storage.chats.get(CHAT)).last_digest_at
    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    pipeline = harness.services.pipeline
    pipeline.storing_since = harness.clock.now() - 5  # the next poll is mid-store
    try:
        await digest_job(harness.services, None)
    finally:
        pipeline.storing_since = None
    assert len(harness.tg.messages(CHAT)) == before, "no digest while a poll is storing"
    chat = await harness.services.storage.chats.get(CHAT)
    assert chat.last_digest_at == marked, "the day is not marked done"

    harness.clock.advance(30)  # the next check, the poll stored
    await digest_job(harness.services, None)
    await harness.settle()
    text = "\n".join(m.text for m in harness.tg.messages(CHAT)[before:])
    assert all(f"long-context models, part {n}" in text for n in (1, 2, 3)), text
    assert (await harness.services.storage.chats.get(CHAT)).last_digest_at == \
        harness.clock.now()

"""Revisions say what changed, including what only the API knows: the comment."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from bot.core.clock import ManualClock
from bot.jobs.poll import poll_job
from bot.jobs.routine import tracked
from bot.storage import Storage
from tests.conftest import (
    ON_BOTH_ENGINES,
    Harness,
    make_paper,
    make_settings,
    start_bot_with_jobs,
    stop_bot,
)
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

CHAT = 9301


@ON_BOTH_ENGINES
async def test_a_saved_papers_revision_shows_the_new_comment_from_the_api(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    v1 = make_paper(1, title="Routing attention")
    harness.serve_feed([v1])
    await harness.poll()
    card = await harness.ask(CHAT, "/paper 2611.10001")
    await harness.press(CHAT, card.message_id, card.callback_data[0])  # Save
    assert await harness.services.storage.saved.count(CHAT) == 1

    v2 = make_paper(1, version=2, title="Routing attention at scale")
    harness.arxiv.set_api_papers([
        v1, make_paper(1, version=2, title="Routing attention at scale",
                       comment="Accepted at NeurIPS 2026; 12 pages")])
    harness.serve_feed([v2])
    await harness.poll()
    alert = await harness.tg.wait_for_message(CHAT, contains="at scale")
    assert "v2" in alert.text
    assert "Accepted at NeurIPS 2026" in alert.text
    assert "Routing attention" in alert.text  # the old title, shown as what changed
    looked_up = [r for r in harness.arxiv.requests if r.path.endswith("/api/query")]
    assert len(looked_up) == 1, "one batched API request for the poll's revisions"


@ON_BOTH_ENGINES
async def test_a_failing_api_does_not_hold_back_the_revision(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:Yoneki")
    harness.serve_feed([make_paper(2)])
    await harness.poll()
    harness.arxiv.fail_next(status=400, times=10, path="/api/query")  # not retried: fast
    harness.serve_feed([make_paper(2, version=2, title="A second look")])
    await harness.poll()
    alert = await harness.tg.wait_for_message(CHAT, contains="A second look")
    assert "v2" in alert.text
    api = [r for r in harness.arxiv.requests if r.path.endswith("/api/query")]
    assert [r.status for r in api] == [400], "the look-up failed, and the alert still came"


@pytest.fixture
async def live(tmp_path: Path, fake_telegram: FakeTelegram,
               fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    """The bot with its scheduled jobs running, as in production: the first poll 3 s after
    start-up and the drain job every 2 s; later polls are started by the test."""
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, POLL_INTERVAL_SECONDS="3600")
    app = await start_bot_with_jobs(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


async def announce_revision_with_live_jobs(live: Harness, api_delay: float) -> None:
    """v1 through the first scheduled poll, then v2 through a poll whose API look-up of the
    details takes `api_delay` seconds, while the drain job keeps running."""
    v1 = make_paper(3, title="Routing attention")
    live.serve_feed([v1])
    await live.ask(CHAT, "/follow au:Yoneki")
    store = live.services.storage
    await live.tg.wait_for(lambda: live.arxiv.requests, timeout=15, what="the first poll")
    await wait_until(lambda: store.papers.get("2611.10003"), "v1 to be stored")
    live.arxiv.set_api_papers([
        v1, make_paper(3, version=2, title="Routing attention at scale",
                       comment="Accepted at NeurIPS 2026; 12 pages")])
    live.arxiv.delay_next(api_delay, path="/api/query")
    live.serve_feed([make_paper(3, version=2, title="Routing attention at scale")])
    live.app.job_queue.run_once(tracked(live.services, poll_job), 0, name="poll")


async def wait_until(check: Callable[[], Awaitable[object]], what: str,
                     timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def pending(store: Storage) -> int:
    return (await store.outbox.counts())["pending"]


async def test_with_live_jobs_a_revision_alert_waits_for_its_comment(live: Harness) -> None:
    # The look-up takes longer than the drain job's 2-second beat, as arXiv's politeness gap
    # of ≥ 3 s does in production.
    await announce_revision_with_live_jobs(live, api_delay=4.5)

    alert = await live.tg.wait_for_message(CHAT, contains="at scale", timeout=30)

    assert "Comment added" in alert.text
    assert "Accepted at NeurIPS 2026" in alert.text
    assert len([m for m in live.tg.messages(CHAT) if "at scale" in m.text]) == 1


async def test_with_live_jobs_a_failed_look_up_lets_the_revision_go_without_details(
        live: Harness) -> None:
    live.arxiv.fail_next(status=400, times=10, path="/api/query")
    await announce_revision_with_live_jobs(live, api_delay=0)

    alert = await live.tg.wait_for_message(CHAT, contains="at scale", timeout=30)

    assert "v2" in alert.text
    assert "Accepted at NeurIPS 2026" not in alert.text


@ON_BOTH_ENGINES
async def test_a_revision_whose_look_up_never_ends_goes_out_after_one_poll_interval(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:Yoneki")
    harness.serve_feed([make_paper(4)])
    await harness.poll()
    harness.arxiv.delay_next(20, path="/api/query")  # as good as never, for this test
    harness.serve_feed([make_paper(4, version=2, title="Hanging look-up")])
    poll = asyncio.create_task(harness.services.pipeline.poll())
    try:
        store = harness.services.storage
        await wait_until(lambda: pending(store), "the revision to be queued")
        await harness.drain()
        assert not [m for m in harness.tg.messages(CHAT) if "Hanging" in m.text], "it waits"

        harness.clock.advance(harness.settings.poll_interval_seconds)
        await harness.drain()

        alert = await harness.tg.wait_for_message(CHAT, contains="Hanging look-up")
        assert "v2" in alert.text
    finally:
        poll.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await poll

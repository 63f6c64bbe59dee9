"""Quiet days, stale feeds and the listing page, end to end over real HTTP.

The bot runs against the fake Telegram and the fake arXiv (which serves feeds, the API and the
listing page in arXiv's markup, and has a "stale" switch), on a manual clock set to New York
dates, so the calendar's decisions are the ones a real week would bring.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from bot.core.clock import ManualClock
from bot.core.models import AnnounceType, Freshness, Paper, SourceOutcome
from tests.conftest import Harness, make_paper, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import listing_page, rss_feed
from tests.fakes.telegram_server import FakeTelegram

NEW_YORK = ZoneInfo("America/New_York")
STALE_AFTER = 600  # ARXIV_STALE_AFTER_SECONDS in these tests
READER = 7001
ADMIN = 1  # make_settings' ADMIN_CHAT_IDS


def eastern(day: date, hour: int, minute: int = 0) -> float:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=NEW_YORK).timestamp()


TUESDAY, WEDNESDAY = date(2026, 11, 17), date(2026, 11, 18)
THANKSGIVING = date(2026, 11, 26)  # a listed arXiv holiday, a Thursday


@pytest.fixture
async def bot(tmp_path: Path, fake_telegram: FakeTelegram,
              fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    clock = ManualClock(eastern(TUESDAY, 9))
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv,
                             ARXIV_STALE_AFTER_SECONDS=str(STALE_AFTER))
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


def announce(bot: Harness, papers: list[Paper], day: date) -> None:
    bot.arxiv.set_feed(None, rss_feed(papers, announce_date=datetime.fromtimestamp(
        eastern(day, 0), UTC)))


def alerted_ids(bot: Harness) -> list[str]:
    """arXiv ids of the alerts the reader received, one per alert message, in order."""
    ids = []
    for message in bot.tg.messages(READER):
        for number in range(10000, 10100):
            if f"2611.{number}" in message.text:
                ids.append(f"2611.{number}")
    return ids


async def test_a_stale_day_is_filled_from_the_listing_and_never_alerted_twice(
        bot: Harness) -> None:
    await bot.ask(READER, "/follow cs.LG")
    tuesday = [make_paper(1), make_paper(2)]
    announce(bot, tuesday, TUESDAY)
    await bot.poll()
    assert sorted(alerted_ids(bot)) == ["2611.10001", "2611.10002"]

    # Wednesday: the feed is rebuilt, but rss.arxiv.org keeps serving Tuesday's items while the
    # listing page and the API already have Wednesday's announcement.
    wednesday = [make_paper(3), make_paper(4, announce_type=AnnounceType.CROSS,
                                           categories=("cs.AI", "cs.LG")),
                 make_paper(1, version=2)]
    announce(bot, wednesday, WEDNESDAY)
    bot.arxiv.set_stale(True)
    bot.arxiv.set_listing("cs", listing_page(wednesday, announced_on=WEDNESDAY))
    bot.arxiv.set_api_papers(wednesday)

    bot.clock.set(eastern(WEDNESDAY, 0, 3))  # just after the rebuild: waiting, polled tightly
    report = await bot.poll()
    assert report.sources[0].freshness is Freshness.WAITING and report.alerts == []
    assert await bot.services.pipeline.next_poll_delay() == 60

    bot.clock.set(eastern(WEDNESDAY, 0) + STALE_AFTER + 30)  # the first poll past the limit
    report = await bot.poll()
    [source] = report.sources
    assert source.outcome is SourceOutcome.NOT_MODIFIED and source.filled == 3
    assert sorted(alerted_ids(bot)) == ["2611.10001", "2611.10001", "2611.10002",
                                        "2611.10003", "2611.10004"]
    revision = [m for m in bot.tg.messages(READER) if "2611.10001" in m.text][-1]
    assert "v2" in revision.text
    listing_requests = [r for r in bot.arxiv.requests if r.path == "/list/cs/new"]
    assert len(listing_requests) == 1

    status = (await bot.ask(ADMIN, "/status")).text
    assert "stale since" in status and "expected 2026-11-18" in status
    assert "filled from the listing" in status
    stats = (await bot.ask(READER, "/stats")).text
    assert "expected 2026-11-18" in stats and "announcement 2026-11-18" in stats

    # The feed catches up later in the morning: its items are all seen, nothing repeats.
    before = len(bot.tg.messages(READER))
    bot.arxiv.set_stale(False)
    bot.clock.set(eastern(WEDNESDAY, 2))
    report = await bot.poll()
    assert report.sources[0].outcome is SourceOutcome.OK and report.alerts == []
    assert report.sources[0].freshness is Freshness.FRESH
    assert len(bot.tg.messages(READER)) == before
    assert "fresh" in (await bot.ask(ADMIN, "/status")).text


async def test_a_listing_whose_counts_disagree_is_not_ingested(bot: Harness) -> None:
    await bot.ask(READER, "/follow cs.LG")
    announce(bot, [make_paper(1)], TUESDAY)
    await bot.poll()
    wednesday = [make_paper(3), make_paper(4)]
    announce(bot, wednesday, WEDNESDAY)
    bot.arxiv.set_stale(True)
    bot.arxiv.set_listing("cs", listing_page(wednesday, announced_on=WEDNESDAY,
                                             shown={"New submissions": 3}))
    bot.arxiv.set_api_papers(wednesday)
    bot.clock.set(eastern(WEDNESDAY, 1))

    report = await bot.poll()

    assert report.sources[0].freshness is Freshness.STALE and report.alerts == []
    assert alerted_ids(bot) == ["2611.10001"]
    status = (await bot.ask(ADMIN, "/status")).text
    assert "stale since" in status and "shows 3 entries, 2 parsed" in status


async def test_an_empty_feed_on_a_listed_holiday_is_quiet(bot: Harness) -> None:
    await bot.ask(READER, "/follow cs.LG")
    bot.clock.set(eastern(date(2026, 11, 25), 9))  # the Wednesday before Thanksgiving
    announce(bot, [make_paper(1)], date(2026, 11, 25))
    await bot.poll()

    bot.arxiv.set_feed(None, rss_feed([], announce_date=datetime.fromtimestamp(
        eastern(THANKSGIVING, 0), UTC), skip_days=("Saturday", "Sunday")))
    bot.clock.set(eastern(THANKSGIVING, 9))  # a weekday, yet no announcement
    jobs = bot.app.job_queue
    from types import SimpleNamespace

    from bot.jobs.poll import poll_job
    await poll_job(bot.services, SimpleNamespace(job_queue=jobs))

    source = (await bot.services.storage.sources.all())[0]
    assert source.healthy and source.last_error is None
    assert source.state.freshness is Freshness.QUIET
    assert bot.services.run.failed_polls == 0
    assert not jobs.get_jobs_by_name("poll-retry"), "no early retry on a holiday"
    assert not [r for r in bot.arxiv.requests if r.path.startswith("/list/")]
    assert await bot.services.pipeline.next_poll_delay() == \
        bot.settings.poll_interval_seconds, "relaxed, within the ceiling"
    status = (await bot.ask(ADMIN, "/status")).text
    assert "quiet" in status and "❌" not in status and "⚠️" not in status

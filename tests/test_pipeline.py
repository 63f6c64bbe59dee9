"""One poll end to end against a fake arXiv over loopback: two days of announcements, conditional
GET, the 3-second gap, every fault arXiv can throw, and what /status tells the operator."""

from __future__ import annotations

import dataclasses
import itertools
import random
import tracemalloc
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot import __version__
from bot.arxiv.client import ArxivClient
from bot.arxiv.plan import build_feed_plan
from bot.arxiv.taxonomy import CATEGORIES
from bot.config import Settings, load_settings
from bot.core.clock import ManualClock
from bot.core.models import Alert, AnnounceType, Paper
from bot.query.service import SubscriptionService
from bot.services import ingest
from bot.services.ingest import Pipeline, PollReport
from bot.storage import Storage, open_storage
from tests.conftest import TOKEN, Harness, RecordingSleep, make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed

FIXTURES = Path(__file__).parent / "fixtures"
EMPTY_WEEKEND_FEED = FIXTURES / "rss-new-format-empty-feed-test-archive.xml"
BAD_ARCHIVE_FEED = FIXTURES / "rss-new-format-error-bad-archive.xml"
CONTACT = "(+mailto:ops@example.org)"
MONDAY = datetime(2026, 11, 16, 5, 0, tzinfo=UTC)  # 00:00 US Eastern, as arXiv dates a day
TUESDAY = datetime(2026, 11, 17, 5, 0, tzinfo=UTC)
SATURDAY_NOON_ET = datetime(2026, 11, 21, 17, 0, tzinfo=UTC)
NEXT_TUESDAY_NOON_ET = datetime(2026, 11, 24, 17, 0, tzinfo=UTC)
READER = 501  # a researcher following cs.LG
MANY_CHATS = range(1000, 1600)  # more readers of cs.LG, for the polls that measure memory


@dataclasses.dataclass
class Rig:
    """Storage, arXiv client, subscriptions and pipeline, wired like the bot, on a fake arXiv."""

    server: FakeArxivServer
    settings: Settings
    storage: Storage
    arxiv: ArxivClient
    subscriptions: SubscriptionService
    pipeline: Pipeline
    clock: ManualClock
    sleep: RecordingSleep

    @property
    def url(self) -> str:
        """The one feed URL of the default plan (`ARXIV_ARCHIVES=cs`)."""
        return f"{self.server.rss_url}/cs"

    def serve(self, papers: list[Paper], day: datetime = MONDAY,
              build_date: datetime | None = None) -> None:
        self.server.set_feed(None, rss_feed(papers, names=("cs",), announce_date=day,
                                            build_date=build_date))

    async def follow(self, chat_id: int, query: str) -> None:
        await self.storage.chats.record(chat_id, "private", None, "en", self.clock.now())
        result = await self.subscriptions.follow(chat_id, query)
        assert result.status == "added", result

    async def poll(self) -> PollReport:
        self.clock.advance(900)
        return await self.pipeline.poll(keep_alerts=True)

    async def queued(self, chat_id: int) -> list[Alert]:
        return [row.alert for row in await self.storage.outbox.pending_for_chat(chat_id)]


RigFactory = Callable[..., Awaitable[Rig]]


def settings_for(tmp_path: Path, server: FakeArxivServer, **env: str) -> Settings:
    return load_settings({
        "TELEGRAM_BOT_TOKEN": TOKEN,
        "ARXIV_RSS_URL": server.rss_url,
        "ARXIV_API_URL": server.api_url,
        "ARXIV_LISTING_URL": server.listing_url,
        "DATABASE_PATH": str(tmp_path / "data" / "bot.sqlite3"),
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "CONTACT": CONTACT,
        **env,
    }, env_file=None)


@pytest.fixture
async def make_rig(tmp_path: Path, fake_arxiv: FakeArxivServer) -> AsyncIterator[RigFactory]:
    opened: list[Rig] = []

    async def make(env: dict[str, str] | None = None, **client_options: Any) -> Rig:
        settings = settings_for(tmp_path, fake_arxiv, **(env or {}))
        clock = ManualClock(MONDAY.timestamp() + 10 * 3600)
        storage = await open_storage(settings.database_path)
        sleep = RecordingSleep()
        options: dict[str, Any] = {
            "rss_url": settings.arxiv_rss_url, "api_url": settings.arxiv_api_url,
            "listing_url": settings.arxiv_listing_url,
            "contact": settings.contact, "min_interval": settings.arxiv_min_interval_seconds,
            "timeout": 5.0, "sleep": sleep, "backoff_base": 0.01, "rng": random.Random(3),
        }
        options.update(client_options)
        arxiv = ArxivClient(**options)
        subscriptions = SubscriptionService(storage, clock)
        await subscriptions.load()
        rig = Rig(fake_arxiv, settings, storage, arxiv, subscriptions,
                  Pipeline(settings, storage, arxiv, subscriptions, clock), clock, sleep)
        opened.append(rig)
        return rig

    yield make
    for rig in opened:
        await rig.arxiv.aclose()
        await rig.storage.close()


@pytest.fixture
async def rig(make_rig: RigFactory) -> Rig:
    built = await make_rig()
    await built.follow(READER, "cs.LG")
    return built


def monday_papers() -> list[Paper]:
    """Monday's cs listing: three new papers and two cross-lists from math and stat."""
    return [
        make_paper(1, updated=MONDAY),
        make_paper(2, updated=MONDAY),
        make_paper(3, updated=MONDAY, categories=("cs.LG", "stat.ML")),
        make_paper(4, categories=("math.OC", "cs.LG"), announce_type=AnnounceType.CROSS,
                   updated=MONDAY),
        make_paper(5, categories=("stat.ML", "cs.LG"), announce_type=AnnounceType.CROSS,
                   updated=MONDAY),
    ]


def tuesday_papers() -> list[Paper]:
    """Tuesday: new versions of papers 1 and 4, two new papers, and paper 2 listed again."""
    return [
        make_paper(1, version=2, title="Sparse attention for long-context models, revisited",
                   updated=TUESDAY),
        make_paper(4, version=3, categories=("math.OC", "cs.LG"),
                   announce_type=AnnounceType.REPLACE_CROSS, updated=TUESDAY,
                   journal_ref="SIAM J. Optim. 36 (2026) 1-20"),
        make_paper(6, updated=TUESDAY),
        make_paper(7, updated=TUESDAY),
        # Cross-listed into one more cs category on Tuesday: the same version, already known.
        make_paper(2, categories=("cs.LG", "cs.CL"), announce_type=AnnounceType.CROSS,
                   updated=TUESDAY),
    ]


def counts(report: PollReport) -> tuple[int, int, int]:
    return report.count("new"), report.count("revised"), report.count("seen")


# --- what a poll holds on to --------------------------------------------------------------------


async def traced_poll(rig: Rig, papers: int) -> tuple[PollReport, int, int]:
    """A scheduled poll of `papers` papers that 600 more chats follow, and what Python held
    after it and at its peak, in bytes above its start (tracemalloc)."""
    for chat_id in MANY_CHATS:
        await rig.follow(chat_id, "cs.LG")
    rig.serve([make_paper(n) for n in range(1, papers + 1)], MONDAY)
    rig.clock.advance(900)
    # httpx imports its async backend (anyio, 1.7 MB of modules) at a process's first request,
    # which pytest's plugins used to import at start-up: made here, so the figures are the
    # poll's own.
    async with httpx.AsyncClient() as client:
        await client.get(rig.server.base_url)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        report = await rig.pipeline.poll()
        held, peak = (figure - before for figure in tracemalloc.get_traced_memory())
    finally:
        tracemalloc.stop()
    return report, held, peak


async def test_a_running_bots_poll_keeps_none_of_its_alerts_once_they_are_stored(rig: Rig) -> None:
    """The scheduled poll needs only counts: half a million alerts after a big poll are about
    100 MB that the bot held until the next poll. Only the dry run asks to keep them."""
    report, held, _ = await traced_poll(rig, 20)

    assert (report.alert_count, report.alerted_chats) == (20 * 601, {READER, *MANY_CHATS})
    assert report.alerts == []
    assert held < 1_000_000, f"the poll held {held:,} bytes after its 12,020 alerts were stored"
    assert len(await rig.queued(1000)) == 20, "each is in the outbox"


async def test_a_big_polls_alerts_are_stored_as_a_row_per_chat_not_a_row_per_alert(
        rig: Rig) -> None:
    """516,668 rows, each through the outbox's unique key and indexes, were most of a big
    poll's 47 s store (docs/performance.md, "The store"). 20 papers to 601 chats are 12,020
    alerts, and now 601 rows; each chat still finds its 20 alerts waiting."""
    report, _, _ = await traced_poll(rig, 20)

    assert report.alert_count == 20 * 601
    db = rig.storage.db  # type: ignore[attr-defined]
    rows = (await db.fetchval("SELECT COUNT(*) FROM outbox")
            + await db.fetchval("SELECT COUNT(*) FROM outbox_staged"))
    assert rows <= 601, f"{rows:,} rows for 601 chats"
    assert len(await rig.queued(1000)) == len(await rig.queued(READER)) == 20


async def test_a_big_feed_is_matched_part_by_part_so_its_alerts_are_never_all_in_memory(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """Matched whole, a 2,000-paper day against 100,000 subscriptions held 516,668 alerts at
    once (200 MB more at the poll's peak); part by part, one part's alerts at a time."""
    monkeypatch.setattr(ingest, "INGEST_MATCH_PAPERS", 5)
    report, _, peak = await traced_poll(rig, 40)

    assert report.alert_count == 40 * 601
    assert peak < 3_000_000, f"the poll's peak was {peak:,} bytes above its start"
    assert len(await rig.queued(1000)) == 40, "nothing lost between the parts"


async def test_papers_stored_between_the_read_and_the_store_are_alerted_as_the_store_finds_them(
        rig: Rig, monkeypatch: pytest.MonkeyPatch) -> None:
    """A poll reads which papers are new, then matches them with no transaction open, so a
    paper may be stored meanwhile (a look-up, another poll). The transaction that stores the
    batch decides: a paper read as new but found known is no news, one found at an older
    version is a revision, and the batch's really new papers are still alerted."""
    rig.serve(monday_papers(), MONDAY)
    await rig.poll()
    late = 502  # follows after Monday's papers were stored
    await rig.follow(late, "cs.LG")

    async def nothing_stored_yet(arxiv_ids: object) -> dict[str, Paper]:
        return {}

    # As if all of Tuesday's papers had been read before Monday's were stored.
    monkeypatch.setattr(rig.storage.papers, "announced", nothing_stored_yet)
    rig.serve(tuesday_papers(), TUESDAY)
    tuesday = await rig.poll()

    assert counts(tuesday) == (2, 2, 1)
    expected = [("2611.10001", 2, "revision"), ("2611.10004", 3, "revision"),
                ("2611.10006", 1, "new"), ("2611.10007", 1, "new")]
    assert sorted((a.arxiv_id, a.version, a.kind) for a in tuesday.alerts
                  if a.chat_id == late) == expected
    assert tuesday.alert_count == 2 * 4, "the same for both readers"
    assert sorted((a.arxiv_id, a.version, a.kind) for a in await rig.queued(late)) == expected


# --- two days of announcements ------------------------------------------------------------------


async def test_two_days_of_feeds_store_every_paper_and_version(rig: Rig) -> None:
    rig.serve(monday_papers(), MONDAY)
    monday = await rig.poll()

    assert counts(monday) == (5, 0, 0)
    [source] = monday.sources
    assert (source.url, source.outcome, source.items) == (rig.url, "ok", 5)
    assert sorted(a.arxiv_id for a in monday.alerts) == [f"2611.1000{n}" for n in range(1, 6)]
    assert {(a.kind, a.version) for a in monday.alerts} == {("new", 1)}
    assert len(await rig.queued(READER)) == 5

    rig.serve(tuesday_papers(), TUESDAY)
    tuesday = await rig.poll()

    assert counts(tuesday) == (2, 2, 1)
    revised = {c.paper.arxiv_id: c for c in tuesday.changes if c.status == "revised"}
    assert {i: c.paper.version for i, c in revised.items()} == {"2611.10001": 2,
                                                                "2611.10004": 3}
    assert revised["2611.10001"].previous is not None
    assert revised["2611.10001"].previous.title.endswith("part 1"), "diffs need the old title"
    tuesday_alerts = {(a.arxiv_id, a.version, a.kind) for a in tuesday.alerts}
    assert tuesday_alerts == {("2611.10001", 2, "revision"), ("2611.10004", 3, "revision"),
                              ("2611.10006", 1, "new"), ("2611.10007", 1, "new")}

    papers = rig.storage.papers
    assert await papers.count() == 7
    latest = await papers.get("2611.10001")
    assert latest is not None and latest.version == 2
    assert latest.title == "Sparse attention for long-context models, revisited"
    first = await papers.get("2611.10001", 1)
    assert first is not None and first.title == "Sparse attention for long-context models, part 1"
    assert first.announce_type is AnnounceType.NEW
    cross = await papers.get("2611.10004")
    assert cross is not None and cross.version == 3
    assert cross.categories == ("math.OC", "cs.LG"), "primary category first"
    assert cross.journal_ref == "SIAM J. Optim. 36 (2026) 1-20"
    assert await papers.get("2611.10004", 1) is not None, "the version seen on Monday is kept"
    assert await papers.get("2611.10004", 2) is None, "arXiv never announced v2 to us"
    unchanged = await papers.get("2611.10002")
    assert unchanged is not None and unchanged.version == 1
    assert len(await rig.queued(READER)) == 9

    # arXiv rebuilds the feed (new lastBuildDate, same items): a full GET, but nothing changes.
    rig.serve(tuesday_papers(), TUESDAY, build_date=TUESDAY.replace(hour=18))
    again = await rig.poll()

    assert again.sources[0].outcome == "ok"
    assert counts(again) == (0, 0, 5)
    assert again.alerts == []
    assert await papers.count() == 7
    assert (await papers.get("2611.10001")) == latest
    assert len(await rig.queued(READER)) == 9


async def test_the_verbatim_arxiv_feed_is_ingested_with_its_fields(rig: Rig) -> None:
    rig.server.set_feed(None, (FIXTURES / "rss-new-format-2024-11-28-all-archives."
                                          "EXCERPT-29-of-1504-items.xml").read_bytes())

    report = await rig.poll()

    assert report.sources[0].items == 29
    # 10 new + 9 cross are new to us; the 10 replacements are revisions of unseen papers.
    assert counts(report) == (19, 10, 0)
    assert await rig.storage.papers.count() == 29
    eeg = await rig.storage.papers.get("2411.17709")
    assert eeg is not None and eeg.version == 1
    assert eeg.categories == ("eess.SP", "cs.LG")
    assert eeg.authors[2] == "Przemysław Olbratowski" and len(eeg.authors) == 8
    assert eeg.abstract.startswith("This study investigates the impact of quantity")
    dark_matter = await rig.storage.papers.get("2202.06515", 3)
    assert dark_matter is not None and dark_matter.announce_type is AnnounceType.CROSS
    assert dark_matter.doi == "10.1063/5.0236964"
    assert dark_matter.journal_ref == "Physics of Fluids 36, 117158 (2024)"
    assert "2411.17709" in {a.arxiv_id for a in await rig.queued(READER)}


# --- conditional GET ------------------------------------------------------------------------


async def test_an_unchanged_feed_costs_a_304(rig: Rig) -> None:
    rig.serve(monday_papers())
    await rig.poll()
    after_first = await rig.storage.sources.get(rig.url)
    assert after_first is not None and after_first.etag and after_first.last_modified

    second = await rig.poll()

    first_request, second_request = rig.server.requests
    assert first_request.header("If-None-Match") is None
    assert second_request.header("If-None-Match") == after_first.etag
    assert second_request.header("If-Modified-Since") == after_first.last_modified
    assert second_request.status == 304
    assert second.sources[0].outcome == "not-modified"
    assert second.changes == [] and second.alerts == []
    source = await rig.storage.sources.get(rig.url)
    assert source is not None
    assert source.last_success_at == rig.clock.now() > after_first.last_success_at
    assert source.healthy and source.consecutive_failures == 0
    assert source.last_items == 5, "a 304 keeps the item count of the last full fetch"
    assert source.etag == after_first.etag

    # When the feed changes, the conditional request gets the new feed.
    rig.serve(tuesday_papers(), TUESDAY)
    third = await rig.poll()
    assert rig.server.requests[-1].status == 200
    assert counts(third) == (2, 2, 1)


# --- politeness ---------------------------------------------------------------------------------


def wide_archives() -> str:
    """`cs` plus every category of seven other archives: too long for one feed URL."""
    archives = ("math", "physics", "cond-mat", "astro-ph", "q-bio", "q-fin", "stat")
    wanted = sorted(c for c in CATEGORIES if c.split(".")[0] in archives and "." in c)
    return ",".join(["cs", *wanted])


async def test_requests_are_three_seconds_apart_on_one_connection(make_rig: RigFactory) -> None:
    rig = await make_rig({"ARXIV_ARCHIVES": wide_archives(), "ARXIV_MIN_INTERVAL_SECONDS": "3"})
    await rig.follow(READER, "hep-th OR cs.LG")
    plan = build_feed_plan(rig.settings.arxiv_archives, rig.subscriptions.followed_sources(),
                           rss_url=rig.settings.arxiv_rss_url)
    assert len(plan.urls) == 2 and "hep-th" in plan.sources
    rig.serve(monday_papers())
    rig.server.fail_next(503, times=1)  # the retry must wait its turn too

    report = await rig.poll()

    assert [s.outcome for s in report.sources] == ["ok", "ok"]
    requests = rig.server.requests
    assert [r.status for r in requests] == [503, 200, 200]
    assert [r.path for r in requests] == ["/rss/" + u.rsplit("/rss/", 1)[1] for u in
                                          (plan.urls[0], *plan.urls)]
    gaps = [later.time - earlier.time for earlier, later in itertools.pairwise(requests)]
    assert min(gaps) >= 3.0, gaps
    assert len({r.client_port for r in requests}) == 1, "one connection, kept alive"
    assert {r.header("User-Agent") for r in requests} == {
        f"arxiv-alert-bot/{__version__} {CONTACT}"}


# --- faults ---------------------------------------------------------------------------------


def truncated_feed(server: FakeArxivServer) -> None:
    body = rss_feed(monday_papers(), announce_date=MONDAY)
    server.set_feed(None, body[: len(body) * 2 // 3])


def html_page(server: FakeArxivServer) -> None:
    server.set_feed(None, b"<!DOCTYPE html><html><head><title>arXiv is down for maintenance"
                          b"</title></head><body><h1>Back soon</h1></body></html>",
                    content_type="text/html; charset=utf-8")


def bad_archive_feed(server: FakeArxivServer) -> None:
    server.set_feed(None, BAD_ARCHIVE_FEED.read_bytes())


def timeouts(server: FakeArxivServer) -> None:
    server.delay_next(1.5, times=2)


def rate_limited(server: FakeArxivServer) -> None:
    server.fail_next(429, times=2, retry_after=120)


def server_errors(server: FakeArxivServer) -> None:
    server.fail_next(503, times=2)


@pytest.mark.parametrize(("fault", "error", "status"), [
    pytest.param(truncated_feed, "malformed feed", None, id="malformed-xml"),
    pytest.param(html_page, "not an RSS feed", None, id="html-page-with-200"),
    pytest.param(bad_archive_feed, "arXiv feed error: Bad archive 'astroph'", None,
                 id="feed-error-for-query"),
    pytest.param(timeouts, "did not answer in time", None, id="timeout"),
    pytest.param(rate_limited, "arXiv answered HTTP 429", 429, id="429-retry-after"),
    pytest.param(server_errors, "arXiv answered HTTP 503", 503, id="503-beyond-retries"),
])
async def test_a_fault_is_recorded_and_loses_no_paper(
    make_rig: RigFactory, fault: Callable[[FakeArxivServer], None], error: str,
    status: int | None,
) -> None:
    rig = await make_rig(max_attempts=2, timeout=0.5)
    await rig.follow(READER, "cs.LG")
    rig.serve(monday_papers())
    fault(rig.server)

    failed = await rig.poll()

    [source_report] = failed.sources
    assert source_report.outcome == "error"
    assert source_report.error is not None and error in source_report.error
    assert failed.changes == [] and failed.alerts == []
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and not source.healthy
    assert source.consecutive_failures == 1
    assert source.last_error is not None and error in source.last_error
    assert rig.url in source.last_error, "the error names the feed"
    assert source.last_status == status
    assert source.last_success_at is None and source.etag is None
    assert await rig.storage.papers.count() == 0, "nothing unparsed is marked as seen"
    if fault is rate_limited:
        assert rig.sleep.delays == [120.0], "Retry-After is honoured"

    # arXiv recovers: everything is still new, and the reader gets every alert.
    rig.server.clear_faults()
    rig.serve(monday_papers())
    recovered = await rig.poll()

    assert counts(recovered) == (5, 0, 0)
    assert len(await rig.queued(READER)) == 5
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and source.healthy
    assert (source.consecutive_failures, source.last_error, source.last_items) == (0, None, 5)


async def test_two_503s_then_success_within_one_poll(rig: Rig) -> None:
    rig.serve(monday_papers())
    rig.server.fail_next(503, times=2)

    report = await rig.poll()

    assert [r.status for r in rig.server.requests] == [503, 503, 200]
    assert len(rig.sleep.delays) == 2 and rig.sleep.delays[0] < rig.sleep.delays[1]
    assert report.sources[0].outcome == "ok"
    assert counts(report) == (5, 0, 0)
    assert len(await rig.queued(READER)) == 5
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and source.healthy and source.last_status == 200


async def test_a_fault_after_a_good_day_keeps_the_old_validators(rig: Rig) -> None:
    rig.serve(monday_papers())
    await rig.poll()
    monday_source = await rig.storage.sources.get(rig.url)
    assert monday_source is not None

    body = rss_feed(tuesday_papers(), announce_date=TUESDAY)
    rig.server.set_feed(None, body[: len(body) // 2])  # Tuesday's feed, cut off
    failed = await rig.poll()

    assert failed.sources[0].outcome == "error" and failed.changes == []
    source = await rig.storage.sources.get(rig.url)
    assert source is not None
    assert (source.etag, source.last_modified) == (monday_source.etag,
                                                    monday_source.last_modified)
    assert source.last_success_at == monday_source.last_success_at
    assert source.consecutive_failures == 1
    assert (await rig.storage.papers.get("2611.10001")).version == 1  # type: ignore[union-attr]

    rig.serve(tuesday_papers(), TUESDAY)
    recovered = await rig.poll()
    assert counts(recovered) == (2, 2, 1)
    assert len(await rig.queued(READER)) == 9


async def test_an_empty_weekend_feed_is_survived_and_not_trusted(rig: Rig) -> None:
    rig.serve(monday_papers())
    await rig.poll()
    rig.server.set_feed(None, EMPTY_WEEKEND_FEED.read_bytes())  # <skipDays>: Saturday, Sunday
    rig.clock.set(SATURDAY_NOON_ET.timestamp())

    weekend = await rig.poll()

    [source_report] = weekend.sources
    assert (source_report.outcome, source_report.items) == ("empty", 0)
    assert weekend.changes == [] and weekend.alerts == []
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and source.healthy and source.last_items == 0
    assert (source.etag, source.last_modified) == (None, None), "an empty feed keeps no validators"

    # The same empty feed again: asked for in full, not through a 304.
    await rig.poll()
    request = rig.server.requests[-1]
    assert request.header("If-None-Match") is None and request.header("If-Modified-Since") is None
    assert request.status == 200

    rig.clock.set(NEXT_TUESDAY_NOON_ET.timestamp())
    rig.serve(tuesday_papers(), TUESDAY)
    tuesday = await rig.poll()
    assert counts(tuesday) == (2, 2, 1)
    assert await rig.storage.papers.count() == 7


async def test_an_empty_feed_on_an_announcement_day_is_a_fault(rig: Rig) -> None:
    rig.serve(monday_papers())
    await rig.poll()
    monday_source = await rig.storage.sources.get(rig.url)
    assert monday_source is not None
    rig.clock.set(NEXT_TUESDAY_NOON_ET.timestamp())
    rig.server.set_feed(None, EMPTY_WEEKEND_FEED.read_bytes())  # empty, yet not a skip day

    suspicious = await rig.poll()

    [source_report] = suspicious.sources
    assert source_report.outcome == "error"
    assert source_report.error is not None and "empty feed" in source_report.error
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and not source.healthy and source.consecutive_failures == 1
    assert source.last_error is not None and "empty feed on an announcement day" in \
        source.last_error
    assert source.last_success_at == monday_source.last_success_at
    assert source.etag == monday_source.etag, "the last good feed's validators are kept"

    rig.serve(tuesday_papers(), TUESDAY)
    recovered = await rig.poll()
    assert counts(recovered) == (2, 2, 1)
    source = await rig.storage.sources.get(rig.url)
    assert source is not None and source.healthy


async def test_a_paper_looked_up_before_its_announcement_still_alerts(rig: Rig) -> None:
    early = make_paper(1, updated=MONDAY, comment="Accepted at ICML")
    rig.server.set_api_papers([early])
    [looked_up] = await rig.arxiv.lookup_ids(["2611.10001"])  # someone used /paper 2611.10001
    await rig.storage.papers.cache_lookups([looked_up], rig.clock.now())
    assert await rig.storage.papers.get("2611.10001") is not None

    rig.serve(monday_papers())
    report = await rig.poll()

    assert counts(report) == (5, 0, 0)
    assert "2611.10001" in {a.arxiv_id for a in await rig.queued(READER)}
    stored = await rig.storage.papers.get("2611.10001")
    assert stored is not None and stored.comment == "Accepted at ICML", "the API's comment stays"

    again = await rig.poll()  # a 304 now; and a full re-read would find it seen
    assert again.alerts == []


# --- the operator's view --------------------------------------------------------------------


async def test_a_persistent_fault_shows_on_status_for_admins_only(harness: Harness) -> None:
    async with harness.backoff_recorded() as sleep:
        harness.serve_feed([make_paper(1)], names=("cs",))
        await harness.poll()
        harness.clock.advance(2 * 3600 + 60)
        harness.arxiv.fail_next(503, times=8)  # arXiv is down for two polls

        await harness.poll()
        report = await harness.poll()

        assert report.failed_sources and len(sleep.delays) == 6
        status = await harness.ask(1, "/status")
        assert "❌ cs\n" in status.text
        assert "failures in a row: 2" in status.text
        assert "last error: arXiv answered HTTP 503" in status.text
        assert "after 4 attempts" in status.text
        assert "2 h ago" in status.text, "the age of the last success"

        refusal = await harness.ask(2, "/status")
        assert refusal.text == "Sorry, /status is for the bot's operators only."

        harness.arxiv.clear_faults()
        harness.serve_feed([make_paper(1), make_paper(2)], names=("cs",))
        await harness.poll()
        status = await harness.ask(1, "/status")
        assert "✅ cs\n" in status.text and "last error" not in status.text
        assert "failures in a row: 0" in status.text


async def test_stats_and_status_list_only_the_feeds_polled_now(harness: Harness) -> None:
    harness.serve_feed([make_paper(1)], names=("cs",))
    await harness.poll()
    reply = await harness.ask(42, "/follow hep-th")
    assert "hep-th" in reply.text
    harness.clock.advance(3 * 86400)  # the plan is now cs+hep-th, polled for three days

    await harness.poll()

    urls = [s.url for s in await harness.services.storage.sources.all()]
    assert urls == [f"{harness.arxiv.rss_url}/cs+hep-th"]
    stats = await harness.ask(42, "/stats")
    assert "cs+hep-th: last scan" in stats.text
    assert "days ago" not in stats.text, "no stale feed looks like a stalled scan"
    status = await harness.ask(1, "/status")
    assert status.text.count("last success:") == 1

"""The Hugging Face source on its own: parsing the daily list, and each fault over real HTTP."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.arxiv.client import ArxivClient
from bot.core.clock import ManualClock
from bot.sources.huggingface import CommunityPicks, HuggingFaceError, parse_daily_papers
from bot.storage import open_storage
from tests.conftest import make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.huggingface_server import FakeHuggingFace, daily_entry

DAY = "2026-11-30"
PAPER = make_paper(1, title="Sparse routers")


def test_the_fields_the_bot_keeps_are_read_from_the_real_shape() -> None:
    entry = daily_entry(PAPER, upvotes=42, comments=3, day=DAY,
                        github_repo="https://github.com/example-lab/sparse-router",
                        github_stars=1234, project_page="https://example.org/router")
    [pick] = parse_daily_papers(json.dumps([entry]).encode(), "2026-01-01")
    assert (pick.arxiv_id, pick.listed_on, pick.title, pick.upvotes, pick.comments) == (
        "2611.10001", DAY, "Sparse routers", 42, 3)
    assert pick.github_repo == "https://github.com/example-lab/sparse-router"
    assert (pick.github_stars, pick.project_page) == (1234, "https://example.org/router")


def test_a_picks_title_loses_direction_and_invisible_characters() -> None:
    entry = daily_entry(make_paper(1, title="Sparse \u202esretuor\u202c\u200b routers\ufffe"))
    [pick] = parse_daily_papers(json.dumps([entry]).encode(), DAY)
    assert pick.title == "Sparse sretuor routers"


def test_odd_entries_are_skipped_and_odd_values_ignored() -> None:
    good = daily_entry(PAPER, upvotes=5, day=DAY)
    good["paper"]["githubRepo"] = "javascript:alert(1)"
    good["paper"]["projectPage"] = "ftp://example.org"
    good["numComments"] = "many"
    body = json.dumps([{"paper": "not a dict"}, {"paper": {"id": "not an id"}}, good]).encode()
    [pick] = parse_daily_papers(body, DAY)
    assert (pick.github_repo, pick.project_page, pick.comments) == (None, None, 0)
    assert parse_daily_papers(b"[]", DAY) == []


@pytest.mark.parametrize("body", [b"<html>502</html>", b'{"error": "x"}', b"[{",
                                  b'[{"paper": {"title": "no id"}}]', b"\xff\xfe"])
def test_a_body_that_is_no_daily_list_is_an_error(body: bytes) -> None:
    with pytest.raises(HuggingFaceError):
        parse_daily_papers(body, DAY)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["paper", "id", "upvotes", "githubRepo", "githubStars", "numComments",
                         "projectPage", "title", "submittedOnDailyAt"]) | st.text(max_size=8),
        inner, max_size=6),
    max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(_JSON)
def test_the_parser_raises_only_its_own_error(data: object) -> None:
    try:
        picks = parse_daily_papers(json.dumps(data).encode(), DAY)
    except HuggingFaceError:
        return
    for pick in picks:
        assert pick.upvotes >= 0 and pick.comments >= 0
        assert pick.github_repo is None or pick.github_repo.startswith("https://github.com/")


@pytest.fixture
def fake_hf() -> Iterator[FakeHuggingFace]:
    with FakeHuggingFace() as hf:
        yield hf


@pytest.fixture
async def source(database_url: str, fake_hf: FakeHuggingFace,
                 fake_arxiv: FakeArxivServer) -> AsyncIterator[CommunityPicks]:
    storage = await open_storage(database_url)
    arxiv = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url, min_interval=0)
    slept: list[float] = []

    async def no_wait(seconds: float) -> None:
        slept.append(seconds)

    picks = CommunityPicks(fake_hf.url, storage, arxiv, ManualClock(time.time()), timeout=0.5,
                           sleep=no_wait)
    picks.slept = slept  # type: ignore[attr-defined]
    fake_hf.set_day(DAY, [daily_entry(PAPER, upvotes=9, day=DAY)])
    yield picks
    await picks.aclose()
    await arxiv.aclose()
    await storage.close()


FAULTS = {
    "429 then success": (dict(status=429, retry_after="7"), "ok"),
    "500 then success": (dict(status=500), "ok"),
    "429 every time": (dict(status=429, times=3), "HTTP 429"),
    "500 every time": (dict(status=500, times=3), "HTTP 500"),
    "404": (dict(status=404), "HTTP 404"),
    "slow every time": (dict(status=0, delay=1.5, times=3), "did not answer in time"),
    "malformed JSON": (dict(status=200, body=b'[{"paper": {"id": "2611.1'), "not JSON"),
    "an HTML page": (dict(status=200, body=b"<html>Bad gateway</html>"), "not JSON"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_each_fault_is_retried_or_recorded(fault: str, source: CommunityPicks,
                                                 fake_hf: FakeHuggingFace) -> None:
    kwargs, expected = FAULTS[fault]
    fake_hf.fail_next(**kwargs)  # type: ignore[arg-type]
    report = await source.poll(DAY)
    record = await source._store.sources.get(fake_hf.url)
    assert record is not None
    if expected == "ok":
        assert report.outcome == "ok" and record.healthy
        assert len(fake_hf.requests) == 2
        if "429" in fault:
            assert source.slept == [7.0]  # type: ignore[attr-defined]
        assert (await source._store.community.get("2611.10001")).upvotes == 9
    else:
        assert report.outcome == "error" and expected in (report.error or "")
        assert not record.healthy and expected in (record.last_error or "")
        assert await source._store.community.get("2611.10001") is None

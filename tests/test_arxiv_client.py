"""The arXiv client against a fake arXiv over loopback: pacing, retries, validators, errors."""

from __future__ import annotations

import asyncio
import itertools
import random
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pytest

from bot import __version__
from bot.arxiv.client import ArxivClient
from bot.arxiv.errors import (
    ApiError,
    FeedError,
    FetchTimeoutError,
    HTTPStatusError,
    NetworkError,
    RateLimitedError,
)
from bot.arxiv.feeds import parse_api
from bot.core.models import Paper
from tests.conftest import RecordingSleep
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed, synth_papers

FIXTURES = Path(__file__).parent / "fixtures"
RSS_EXCERPT = FIXTURES / "rss-new-format-2024-11-28-all-archives.EXCERPT-29-of-1504-items.xml"
CONTACT = "(+mailto:ops@example.org)"


@pytest.fixture
def server() -> Iterator[FakeArxivServer]:
    with FakeArxivServer() as fake:
        fake.set_feed(None, RSS_EXCERPT.read_bytes())
        yield fake


@pytest.fixture
def sleep() -> RecordingSleep:
    return RecordingSleep()


@pytest.fixture
async def make_client(server: FakeArxivServer, sleep: RecordingSleep
                      ) -> AsyncIterator[Callable[..., ArxivClient]]:
    clients: list[ArxivClient] = []

    def make(**overrides: Any) -> ArxivClient:
        options: dict[str, Any] = {
            "rss_url": server.rss_url, "api_url": server.api_url, "contact": CONTACT,
            "min_interval": 0.01, "timeout": 5.0, "sleep": sleep, "rng": random.Random(1),
        }
        options.update(overrides)
        client = ArxivClient(**options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.aclose()


async def test_feed_is_fetched_and_parsed(server: FakeArxivServer,
                                          make_client: Callable[..., ArxivClient]) -> None:
    client = make_client()

    fetched = await client.fetch_rss(server.feed_url("cs+math"))

    assert fetched.feed is not None
    assert len(fetched.feed.papers) == 29
    assert fetched.result.status == 200
    assert fetched.result.attempts == 1
    assert fetched.result.etag and fetched.result.last_modified
    assert [r.path for r in server.requests] == ["/rss/cs+math"]


async def test_user_agent_names_the_bot_version_and_contact(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    await make_client().fetch(server.feed_url("cs"))

    agent = server.requests[0].header("User-Agent")
    assert agent == f"arxiv-alert-bot/{__version__} {CONTACT}"


async def test_two_503s_then_success(server: FakeArxivServer, sleep: RecordingSleep,
                                     make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(503, times=2)

    fetched = await make_client().fetch_rss(server.feed_url("cs"))

    assert fetched.feed is not None and len(fetched.feed.papers) == 29
    assert fetched.result.attempts == 3
    assert [r.status for r in server.requests] == [503, 503, 200]
    # exponential backoff with jitter: 2 s + up to 2 s, then 4 s + up to 2 s
    assert len(sleep.delays) == 2
    assert 2.0 <= sleep.delays[0] <= 4.0 <= sleep.delays[1] <= 6.0


async def test_a_timeout_then_success(server: FakeArxivServer,
                                      make_client: Callable[..., ArxivClient]) -> None:
    server.delay_next(3.0)

    result = await make_client(timeout=0.3).fetch(server.feed_url("cs"))

    assert result.status == 200
    assert result.attempts == 2
    assert result.body == RSS_EXCERPT.read_bytes()


async def test_429_retry_after_seconds_is_honoured(
        server: FakeArxivServer, sleep: RecordingSleep,
        make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(429, retry_after=7)

    result = await make_client().fetch(server.feed_url("cs"))

    assert result.attempts == 2
    assert sleep.delays == [7.0]


async def test_retry_after_http_date_is_honoured_and_capped(
        server: FakeArxivServer, sleep: RecordingSleep,
        make_client: Callable[..., ArxivClient]) -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server.fail_next(503, retry_after=soon)
    server.fail_next(503, retry_after=86400)

    result = await make_client(max_retry_after=120).fetch(server.feed_url("cs"))

    assert result.attempts == 3
    assert 25 <= sleep.delays[0] <= 30
    assert sleep.delays[1] == 120


async def test_retries_exhausted_raise_with_attempt_count(
        server: FakeArxivServer, sleep: RecordingSleep,
        make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(503, times=10)

    with pytest.raises(HTTPStatusError) as caught:
        await make_client(max_attempts=3).fetch(server.feed_url("cs"))

    assert caught.value.status == 503
    assert caught.value.attempts == 3
    assert caught.value.retryable
    assert "after 3 attempts" in str(caught.value)
    assert len(server.requests) == 3
    assert len(sleep.delays) == 2


async def test_persistent_429_raises_rate_limited(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(429, times=4, retry_after=1)

    with pytest.raises(RateLimitedError) as caught:
        await make_client().fetch(server.feed_url("cs"))

    assert caught.value.attempts == 4


async def test_timeouts_exhausted_raise_timeout_error(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    server.delay_next(3.0, times=2)

    with pytest.raises(FetchTimeoutError) as caught:
        await make_client(timeout=0.2, max_attempts=2).fetch(server.feed_url("cs"))

    assert caught.value.attempts == 2
    assert caught.value.retryable


async def test_refused_connection_raises_network_error(
        make_client: Callable[..., ArxivClient]) -> None:
    with FakeArxivServer() as gone:
        url = gone.feed_url("cs")

    with pytest.raises(NetworkError) as caught:
        await make_client(max_attempts=2).fetch(url)

    assert caught.value.attempts == 2


async def test_not_found_is_not_retried(server: FakeArxivServer,
                                        make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(404)

    with pytest.raises(HTTPStatusError) as caught:
        await make_client().fetch(server.feed_url("cs"))

    assert caught.value.status == 404
    assert caught.value.attempts == 1
    assert not caught.value.retryable
    assert len(server.requests) == 1


@pytest.mark.parametrize("body", [
    b"<!DOCTYPE html><html><body><h1>arXiv is down for maintenance</h1></body></html>",
    RSS_EXCERPT.read_bytes()[:20_000],
])
async def test_html_or_malformed_body_with_200_raises_feed_error(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient], body: bytes) -> None:
    server.fail_next(200, body=body)
    url = server.feed_url("cs")

    with pytest.raises(FeedError) as caught:
        await make_client().fetch_rss(url)

    assert caught.value.url == url


async def test_conditional_get_turns_an_unchanged_feed_into_a_304(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    client = make_client()
    url = server.feed_url("cs")
    first = await client.fetch_rss(url)

    second = await client.fetch_rss(url, etag=first.result.etag,
                                    last_modified=first.result.last_modified)

    assert second.result.not_modified
    assert second.result.status == 304
    assert second.feed is None
    assert second.result.body == b""
    assert second.result.etag == first.result.etag
    request = server.requests[1]
    assert request.header("If-None-Match") == first.result.etag
    assert request.header("If-Modified-Since") == first.result.last_modified
    assert request.status == 304


async def test_changed_feed_is_served_again_despite_old_validators(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    client = make_client()
    url = server.feed_url("cs")
    first = await client.fetch_rss(url)
    server.set_feed("cs", rss_feed(synth_papers(5, seed=3)))

    second = await client.fetch_rss(url, etag=first.result.etag)

    assert not second.result.not_modified
    assert second.feed is not None and len(second.feed.papers) == 5
    assert second.result.etag != first.result.etag


async def test_last_modified_alone_also_gives_a_304(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    client = make_client()
    first = await client.fetch(server.feed_url("cs"))

    second = await client.fetch(server.feed_url("cs"), last_modified=first.last_modified)

    assert second.not_modified


async def test_concurrent_requests_share_one_connection_one_at_a_time(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    server.delay_next(0.2, times=3)
    client = make_client()

    results = await asyncio.gather(*(client.fetch(server.feed_url(name))
                                     for name in ("cs", "math", "stat")))

    assert [r.status for r in results] == [200, 200, 200]
    requests = server.requests
    assert len({r.client_port for r in requests}) == 1
    # each request arrives only after the previous one was answered (0.2 s delay each)
    for before, after in itertools.pairwise(requests):
        assert after.time - before.time >= 0.2


async def test_three_requests_are_at_least_three_seconds_apart(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    client = make_client(min_interval=3.0)

    for name in ("cs", "math", "stat"):
        await client.fetch(server.feed_url(name))

    times = [r.time for r in server.requests]
    assert len(times) == 3
    assert all(later - earlier >= 3.0 for earlier, later in itertools.pairwise(times))


async def test_retries_also_wait_their_turn(server: FakeArxivServer,
                                            make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(503)

    await make_client(min_interval=0.3).fetch(server.feed_url("cs"))

    first, retry = server.requests
    assert retry.time - first.time >= 0.3


# --- the API ------------------------------------------------------------------------------------

def paper(arxiv_id: str, version: int, title: str) -> Paper:
    return Paper(arxiv_id=arxiv_id, version=version, title=title, authors=("Eiko Yoneki",),
                 abstract="An abstract.", categories=("cs.DC", "cs.LG"))


async def test_lookup_ids_returns_latest_or_requested_version(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    server.set_api_papers([paper("2401.00001", 1, "First"), paper("2401.00001", 2, "Second"),
                           paper("hep-th/9901001", 1, "Old style")])

    found = await make_client().lookup_ids(["2401.00001", "hep-th/9901001v1", "2401.99999",
                                            "arXiv:2401.00001v1"])

    assert [(p.versioned_id, p.title) for p in found] == [
        ("2401.00001v2", "Second"), ("hep-th/9901001v1", "Old style"),
        ("2401.00001v1", "First")]
    query = server.requests[0].query
    assert query["id_list"] == ["2401.00001,hep-th/9901001v1,2401.99999,2401.00001v1"]


async def test_lookup_rejects_non_ids_before_asking_arxiv(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    with pytest.raises(ValueError, match="not an arXiv id"):
        await make_client().lookup_ids(["2401.00001", "robert'); DROP TABLE"])
    assert server.requests == []


async def test_api_400_error_feed_raises_api_error_with_arxivs_message(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    body = (FIXTURES / "api-error-idlist-abc-http400.atom.xml").read_bytes()
    server.set_api_response(None, body, status=400)

    with pytest.raises(ApiError, match="incorrect id format for abc") as caught:
        await make_client().lookup_ids(["2401.00001"])

    assert caught.value.url is not None and caught.value.url.startswith(server.api_url)


async def test_api_400_without_error_feed_is_an_http_error(
        server: FakeArxivServer, make_client: Callable[..., ArxivClient]) -> None:
    server.fail_next(400, body=b"<html>Bad Request</html>")

    with pytest.raises(HTTPStatusError) as caught:
        await make_client().lookup_ids(["2401.00001"])

    assert caught.value.status == 400


def test_api_search_response_parses_real_results() -> None:
    body = (FIXTURES / "api-legacy2016-search-au-del_maestro.atom.xml").read_bytes()

    result = parse_api(body)

    assert result.total_results == 31
    assert "cond-mat/0412498v1" in [p.versioned_id for p in result.papers]

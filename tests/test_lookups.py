"""Interactive look-ups over real HTTP against the fake arXiv: fair, batched, remembered misses,
one short try, and never ahead of a scheduled poll."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator

import pytest

from bot.arxiv.client import INTERACTIVE, ArxivClient, RequestPolicy
from bot.arxiv.errors import ArxivError, FetchTimeoutError
from bot.arxiv.lookups import LookupQueue, TooManyLookups
from bot.core.models import ArxivId
from tests.conftest import RecordingSleep, make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed

NOISY, QUIET = 1, 2


@pytest.fixture
async def client(fake_arxiv: FakeArxivServer) -> AsyncIterator[ArxivClient]:
    fake_arxiv.set_api_papers([make_paper(n) for n in range(1, 30)])
    arxiv = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url, min_interval=0)
    yield arxiv
    await arxiv.aclose()


def pid(number: int) -> ArxivId:
    parsed = ArxivId.parse(f"2611.{10000 + number}")
    assert parsed is not None
    return parsed


def asked(server: FakeArxivServer) -> list[list[str]]:
    """The ids of each API request, in order."""
    return [r.query["id_list"][0].split(",") for r in server.requests
            if r.path == "/api/query"]


async def test_chats_are_served_in_turn(client: ArxivClient, fake_arxiv: FakeArxivServer
                                        ) -> None:
    queue = LookupQueue(client, max_pending=10, batch_size=1)
    noisy = [queue.submit(NOISY, pid(n)) for n in range(1, 6)]
    quiet = queue.submit(QUIET, pid(20))
    await asyncio.gather(*noisy, quiet)
    order = [ids[0] for ids in asked(fake_arxiv)]
    assert order.index("2611.10020") == 1, "the quiet chat's paper comes second, not sixth"
    assert (await quiet).title.endswith("part 20")
    await queue.aclose()


async def test_look_ups_arriving_together_share_one_request(
        client: ArxivClient, fake_arxiv: FakeArxivServer) -> None:
    queue = LookupQueue(client)
    found = await asyncio.gather(*(queue.lookup(chat, pid(chat)) for chat in range(1, 6)),
                                 queue.lookup(6, pid(1)))  # one id asked by two chats
    assert [paper.arxiv_id for paper in found] == [
        "2611.10001", "2611.10002", "2611.10003", "2611.10004", "2611.10005", "2611.10001"]
    assert asked(fake_arxiv) == [["2611.10001", "2611.10002", "2611.10003", "2611.10004",
                                  "2611.10005"]]
    await queue.aclose()


async def test_what_arrives_during_the_gap_joins_the_next_request(
        fake_arxiv: FakeArxivServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_arxiv.set_api_papers([make_paper(n) for n in range(1, 10)])
    arxiv = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url,
                        min_interval=0)
    # The politeness gap lasts until the test ends it, however slow the machine; the worker
    # asks how much of it is left each time it looks.
    gap_open, looked = True, 0

    def gap_left() -> float:
        nonlocal looked
        looked += 1
        return 0.01 if gap_open else 0.0

    async def worker_looks() -> None:
        seen = looked
        while looked == seen:
            await asyncio.sleep(0.01)

    queue = LookupQueue(arxiv)
    await queue.lookup(1, pid(1))  # answered: the gap begins
    monkeypatch.setattr(arxiv, "_gap_left", gap_left)
    later = [queue.submit(2, pid(2))]
    await worker_looks()  # the worker waits out the gap with chat 2's id in hand
    later += [queue.submit(chat, pid(chat)) for chat in range(3, 6)]
    await worker_looks()
    gap_open = False
    await asyncio.gather(*later)
    assert [len(ids) for ids in asked(fake_arxiv)] == [1, 4]
    await queue.aclose()
    await arxiv.aclose()


async def test_an_unknown_id_is_remembered_so_asking_again_costs_nothing(
        client: ArxivClient, fake_arxiv: FakeArxivServer) -> None:
    now = [1000.0]
    queue = LookupQueue(client, miss_ttl=60, clock=lambda: now[0])
    assert await queue.lookup(NOISY, pid(999)) is None
    for _ in range(5):
        assert await queue.lookup(NOISY, pid(999)) is None
    assert len(asked(fake_arxiv)) == 1
    now[0] += 61  # it may have been announced since
    assert await queue.lookup(NOISY, pid(999)) is None
    assert len(asked(fake_arxiv)) == 2
    await queue.aclose()


async def test_a_chat_may_have_only_a_few_look_ups_waiting(client: ArxivClient) -> None:
    queue = LookupQueue(client, max_pending=2)
    waiting = [queue.submit(NOISY, pid(1)), queue.submit(NOISY, pid(2))]
    with pytest.raises(TooManyLookups):
        queue.submit(NOISY, pid(3))
    other = queue.submit(QUIET, pid(3))  # other chats are not affected
    await asyncio.gather(*waiting, other)
    assert await queue.lookup(NOISY, pid(4)) is not None, "answered look-ups free the line"
    await queue.aclose()


async def test_an_interactive_look_up_tries_once_and_waits_out_no_retry_after(
        fake_arxiv: FakeArxivServer) -> None:
    fake_arxiv.set_api_papers([make_paper(n) for n in range(1, 30)])
    sleep = RecordingSleep()  # every wait between tries goes through it
    client = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url,
                         min_interval=0, sleep=sleep)
    queue = LookupQueue(client)
    fake_arxiv.fail_next(503)
    with pytest.raises(ArxivError):
        await queue.lookup(NOISY, pid(1))
    fake_arxiv.fail_next(429, retry_after=120)
    with pytest.raises(ArxivError):
        await queue.lookup(NOISY, pid(2))
    assert sleep.delays == [], "no try was waited for, the two-minute Retry-After least of all"
    assert len(asked(fake_arxiv)) == 2, "one try each"
    assert await queue.lookup(NOISY, pid(2)) is not None, "a failure is not cached as missing"
    await queue.aclose()
    await client.aclose()


async def test_a_hanging_arxiv_ends_an_interactive_request_at_its_timeout(
        client: ArxivClient, fake_arxiv: FakeArxivServer) -> None:
    assert INTERACTIVE.attempts == 1 and INTERACTIVE.timeout <= 10
    fake_arxiv.delay_next(5)
    with pytest.raises(FetchTimeoutError) as raised:
        await client.lookup_ids(["2611.10001"], policy=RequestPolicy(1, 0.5, 0))
    assert raised.value.attempts == 1


async def test_a_running_poll_goes_first(fake_arxiv: FakeArxivServer) -> None:
    """Look-ups queued during a poll wait for it; the poll is not interleaved with them."""
    fake_arxiv.set_feed(None, rss_feed([make_paper(1)], names=("cs",)))
    fake_arxiv.set_api_papers([make_paper(n) for n in range(1, 5)])
    arxiv = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url,
                        min_interval=0.2)
    queue = LookupQueue(arxiv, batch_size=1)
    async with arxiv.ingest():
        lookups = [asyncio.ensure_future(queue.lookup(chat, pid(chat))) for chat in (1, 2)]
        for feed in ("cs", "math", "physics"):
            await arxiv.fetch_rss(fake_arxiv.feed_url(feed))
    await asyncio.gather(*lookups)
    paths = [r.path for r in fake_arxiv.requests]
    assert paths == ["/rss/cs", "/rss/math", "/rss/physics", "/api/query", "/api/query"]
    times = [r.time for r in fake_arxiv.requests]
    assert all(later - earlier >= 0.2 for earlier, later in itertools.pairwise(times))
    await queue.aclose()
    await arxiv.aclose()

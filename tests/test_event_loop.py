"""A big poll does not stop the bot from answering: matching runs in a worker thread, outside
the event loop and outside any transaction; commands that only read never wait behind the
ingest, and commands that write wait for one short batch of it at most."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from bot.arxiv.feeds import parse_api
from bot.core.clock import ManualClock
from bot.delivery.compose import DIGEST_THRESHOLD
from bot.query.matcher import Matcher, survivors_frozen
from bot.query.service import SubscriptionService
from bot.ranking import service as ranking_service
from bot.ranking.model import MIN_POSITIVES
from bot.ranking.service import Ranker
from bot.services import ingest as pipeline_module
from bot.storage import open_storage
from bot.storage.sqlite import rankings as ranking_storage
from tests.conftest import Harness, make_paper

CHAT = 7301
FIXTURES = Path(__file__).parent / "fixtures"
OTHER = 7302


class Gate:
    """Wraps a function run in a worker thread: each call waits until the test opens the gate,
    so the test can act while the work is surely in progress."""

    def __init__(self, real: Callable[..., Any], what: str) -> None:
        self.real = real
        self.what = what
        self.entered = threading.Event()
        self.opened = threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.entered.set()
        assert self.opened.wait(30), f"the gate never opened: {self.what}"
        return self.real(*args)

    async def wait_entered(self) -> None:
        await asyncio.to_thread(self.entered.wait, 30)


class GatedMatcher:
    """The real matcher, except that `match` waits until the test opens the gate."""

    def __init__(self, real: Matcher) -> None:
        self.real = real
        self.match = Gate(real.match, "the poll's match")


@asynccontextmanager
async def poll_held_while_matching(harness: Harness) -> AsyncIterator[asyncio.Task]:
    """A poll of two cs.LG papers, held inside its match until the block ends; yields the
    poll's task, whose report the caller awaits after the block."""
    subscriptions = harness.services.subscriptions
    gated = GatedMatcher(subscriptions.matcher)
    subscriptions.matcher = gated  # type: ignore[assignment]
    harness.serve_feed([make_paper(1), make_paper(2)])
    poll = asyncio.create_task(harness.services.pipeline.poll(keep_alerts=True))
    try:
        await gated.match.wait_entered()
        yield poll
    finally:
        gated.match.opened.set()


async def test_a_chat_is_answered_while_a_poll_is_matching(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    async with poll_held_while_matching(harness) as poll:
        # The poll is inside its ingest transaction, matching. Had it matched on the event
        # loop, nothing could answer until it finished, and it never would: the gate is shut.
        listing = await harness.ask(CHAT, "/list")
        assert "1. cs.LG" in listing.text
        assert not poll.done()
    report = await poll
    assert sorted(a.arxiv_id for a in report.alerts) == ["2611.10001", "2611.10002"]
    await harness.drain()
    assert len(harness.tg.messages(CHAT)) == 4  # follow, list, two alerts


async def test_a_chat_can_pause_while_a_poll_is_matching(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    async with poll_held_while_matching(harness) as poll:
        # Matching inside the ingest transaction held the one writer until the match was
        # done: /pause waited for it, and here it never would be (the gate is shut).
        paused = await harness.ask(CHAT, "/pause", timeout=5)
        assert "paused" in paused.text
        assert not poll.done()
    report = await poll
    assert report.alert_count == 2
    await harness.drain()
    assert len(harness.tg.messages(CHAT)) == 2, "paused before the poll stored its alerts"
    await harness.ask(CHAT, "/resume")
    await harness.drain()
    assert len(harness.tg.messages(CHAT)) == 5  # follow, pause, resume, two alerts


async def test_a_chat_writes_between_two_batches_of_a_poll_whose_alerts_go_out_together(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    papers = DIGEST_THRESHOLD + 2  # a flood: they go out as one digest
    monkeypatch.setattr(pipeline_module, "INGEST_BATCH_ALERTS", 4)  # two papers, two chats
    await harness.ask(CHAT, "/follow cs.LG")
    await harness.ask(OTHER, "/follow cs.LG")
    harness.serve_feed([make_paper(number) for number in range(papers)])
    pipeline = harness.services.pipeline
    store_batch = pipeline._store_batch
    batches: list[int] = []
    second, go_on = asyncio.Event(), asyncio.Event()

    async def gated_store_batch(*args: object, **kwargs: object) -> object:
        batches.append(len(batches) + 1)
        if len(batches) == 2:
            second.set()
            await go_on.wait()
        return await store_batch(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pipeline, "_store_batch", gated_store_batch)
    poll = asyncio.create_task(pipeline.poll())
    try:
        await asyncio.wait_for(second.wait(), 30)
        # The first batch is stored, the others are not: a write is served in between.
        paused = await harness.ask(CHAT, "/pause", timeout=5)
        assert "paused" in paused.text
        assert outbox_rows(harness) == 4, "one batch of the poll is stored, not all of it"
        # The drain holds what the poll stored so far: OTHER gets its alerts together.
        await harness.drain()
        assert len(harness.tg.messages(OTHER)) == 1  # only the /follow reply
        assert not poll.done()
    finally:
        go_on.set()
        report = await poll
    assert len(batches) == papers // 2
    assert report.alert_count == outbox_rows(harness) == 2 * papers
    await harness.drain()
    digest = harness.tg.messages(OTHER)[1:]
    assert len(digest) == 1 and all(f"2611.{10000 + n}" in digest[0].text
                                    for n in range(papers))
    assert len(harness.tg.messages(CHAT)) == 2, "paused: follow and pause replies only"


def outbox_rows(harness: Harness) -> int:
    """The alerts stored: outbox rows, and those staged one row per chat by a poll."""
    db = sqlite3.connect(harness.settings.database_path)
    try:
        return int(db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
                   + db.execute("SELECT COALESCE(SUM(alert_count), 0) FROM outbox_staged"
                                ).fetchone()[0])
    finally:
        db.close()


async def test_a_follow_made_while_the_worker_matches_reaches_the_matcher_after_it(
        tmp_path: Path) -> None:
    storage = await open_storage(tmp_path / "bot.sqlite3")
    try:
        clock = ManualClock(time.time())
        await storage.chats.record(CHAT, "private", "Ada", "en", clock.now())
        subscriptions = SubscriptionService(storage, clock)
        await subscriptions.load()
        await subscriptions.follow(CHAT, "cs.LG")
        paper = make_paper(1)
        work = Gate(lambda: subscriptions.matcher.matching(paper), "the worker's matching")
        matching = asyncio.create_task(subscriptions.in_worker(work))
        await work.wait_entered()
        result = await subscriptions.follow(CHAT, "au:Yoneki")
        assert result.status == "added", "stored at once"
        assert len(subscriptions.matcher) == 1, "the index does not change under the worker"
        work.opened.set()
        assert len(await matching) == 1
        assert len(subscriptions.matcher) == 2
        assert len(subscriptions.matcher.matching(paper)) == 2
        assert result.subscription is not None
        assert (subscriptions.query_text(result.subscription.id) or "").lower() == "au:yoneki"
    finally:
        await storage.close()


def test_what_outlives_a_big_batch_is_frozen_and_the_collector_runs_again() -> None:
    assert gc.isenabled()
    before = gc.get_freeze_count()
    try:
        with survivors_frozen():
            assert not gc.isenabled(), "no collection pauses the batch"
            kept = [[number] for number in range(1_000)]
        assert gc.isenabled()
        assert gc.get_freeze_count() >= before + len(kept)
        with survivors_frozen(enabled=False):
            assert gc.isenabled(), "a small batch leaves the collector alone"
    finally:
        gc.unfreeze()


async def test_a_chat_is_answered_while_its_stored_ranking_model_loads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    papers = list(parse_api((FIXTURES / "api-search-all-testing-m100.atom.xml").read_bytes())
                  .papers)
    storage = await open_storage(tmp_path / "bot.sqlite3")
    try:
        clock = ManualClock(time.time())
        await storage.papers.upsert_many(papers, clock.now())
        await storage.chats.record(CHAT, "private", "Ada", "en", clock.now())
        for paper in papers[:MIN_POSITIVES]:
            await storage.saved.save(CHAT, paper.arxiv_id, paper.version, clock.now())
        expected = await Ranker(storage, clock.now).chat_scores(CHAT, papers[:20])
        assert expected is not None, "trained and stored"

        gated = Gate(ranking_service._loaded, "the event loop was blocked while the model loaded")
        monkeypatch.setattr(ranking_service, "_loaded", gated)
        restarted = Ranker(storage, clock.now)  # a restart: the model is read from storage
        scoring = asyncio.create_task(restarted.chat_scores(CHAT, papers[:20]))
        await gated.wait_entered()
        # The model is loading. Had it loaded on the event loop, nothing else could run until
        # the gate opened, and only this coroutine opens it.
        chat = await storage.chats.get(CHAT)
        assert chat is not None and not scoring.done()
        gated.opened.set()
        assert await scoring == expected
    finally:
        await storage.close()


async def test_a_chat_is_answered_while_the_rankers_corpus_is_decoded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    storage = await open_storage(tmp_path / "bot.sqlite3")
    try:
        clock = ManualClock(time.time())
        await storage.papers.upsert_many([make_paper(n) for n in range(1, 4)], clock.now())
        await storage.chats.record(CHAT, "private", "Ada", "en", clock.now())
        gated = Gate(ranking_storage.paper_from_row,
                     "the event loop was blocked while the rows were decoded")
        monkeypatch.setattr(ranking_storage, "paper_from_row", gated)
        corpus = asyncio.create_task(storage.rankings.corpus(10))
        await gated.wait_entered()
        # The rows are being decoded. On the event loop, nothing else could run meanwhile.
        chat = await storage.chats.get(CHAT)
        assert chat is not None and not corpus.done()
        gated.opened.set()
        assert len(await corpus) == 3
    finally:
        await storage.close()

"""Paid broadcasts (PAID_BROADCAST_STARS_PER_DAY): bulk messages past the free 30 a second for
0.1 Stars each, within the day's budget, then free again; and a fake Telegram that charges and
enforces them like the real one (1,000 a second, nothing once the balance is empty)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from bot.core.clock import ManualClock
from bot.delivery.pacing import Pacer
from bot.delivery.paid import BLOCK, MESSAGES_PER_STAR, RECHECK_SECONDS, PaidBroadcasts
from bot.delivery.sender import PAID_SEND_WINDOW
from bot.storage import open_storage
from tests.conftest import (
    TOKEN,
    Harness,
    make_paper,
    make_settings,
    start_bot,
    stop_bot,
)
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram, RateLimits
from tests.test_sender import DAY1, VirtualTime, make_pacer, worst_second

OPERATOR = 1  # ADMIN_CHAT_IDS in make_settings
CHATS = range(7001, 7041)


@asynccontextmanager
async def bot_with_paid_broadcasts(tmp_path: Path, *, stars_per_day: int,
                                   balance: float) -> AsyncIterator[Harness]:
    """The bot with the day's budget, against a fake Telegram that enforces its limits (the
    free 30 a second, 1,000 paid) and holds `balance` Stars; the bot paces as in production."""
    with FakeTelegram(TOKEN, enforce_limits=True, stars_balance=balance) as tg, \
            FakeArxivServer() as arxiv:
        settings = make_settings(tmp_path, tg, arxiv,
                                 PAID_BROADCAST_STARS_PER_DAY=str(stars_per_day))
        clock = ManualClock(time.time())
        app = await start_bot(settings, clock, pacer=Pacer())
        try:
            yield Harness(tg, arxiv, app, clock, settings)
        finally:
            await stop_bot(app)


async def one_alert_to_each_chat(harness: Harness) -> list[dict]:
    for chat_id in CHATS:
        assert "Following" in (await harness.ask(chat_id, "/follow cs.LG")).text
    return await announce_and_deliver(harness, 1)


async def announce_and_deliver(harness: Harness, number: int) -> list[dict]:
    """Paper `number` announced, polled and delivered: the alerts sent, one to each chat."""
    before = len(alert_sends(harness.tg))
    harness.serve_feed([make_paper(number)], announce_date=DAY1)
    await harness.services.pipeline.poll()
    await harness.drain()
    sends = alert_sends(harness.tg)[before:]
    assert sorted(p["chat_id"] for p in sends) == list(CHATS), "each chat, exactly once"
    return sends


def alert_sends(tg: FakeTelegram) -> list[dict]:
    return [call.params for call in tg.calls
            if call.method == "sendMessage" and call.status == 200
            and "arXiv:" in call.params.get("text", "")]


async def test_bulk_alerts_go_paid_until_the_days_budget_is_spent_then_free(
    tmp_path: Path,
) -> None:
    async with bot_with_paid_broadcasts(tmp_path, stars_per_day=2, balance=100) as harness:
        sends = await one_alert_to_each_chat(harness)
        tg = harness.tg

        paid = [p for p in sends if p.get("allow_paid_broadcast")]
        assert len(paid) == 2 * MESSAGES_PER_STAR == tg.paid_messages
        assert sends[:len(paid)] == paid, "paid while the budget lasts, then at the free pace"
        assert tg.stars_balance == pytest.approx(98.0)
        assert tg.rate_limited_count == 0
        replies = [c.params for c in tg.calls if c.method == "sendMessage"
                   and "Following" in c.params.get("text", "")]
        assert not any(p.get("allow_paid_broadcast") for p in replies), "replies stay free"

        status = await harness.ask(OPERATOR, "/status")
        assert "Paid broadcasts today (UTC): 2.0 of 2 Stars" in status.text


async def test_an_empty_stars_balance_sends_the_rest_free_and_loses_nothing(
    tmp_path: Path,
) -> None:
    async with bot_with_paid_broadcasts(tmp_path, stars_per_day=100, balance=1) as harness:
        await one_alert_to_each_chat(harness)
        tg = harness.tg

        assert tg.paid_messages == 10 and tg.stars_balance == 0
        # Sends already on their way when the first refusal came back are refused too; each
        # goes again, free.
        refused = [c for c in tg.calls if c.status == 400]
        assert 1 <= len(refused) <= PAID_SEND_WINDOW
        counts = await harness.services.storage.outbox.counts()
        assert counts["sent"] == len(CHATS) and counts["failed"] == 0

        later = await announce_and_deliver(harness, 2)
        assert not any(p.get("allow_paid_broadcast") for p in later), "free for the rest of the day"
        assert len([c for c in tg.calls if c.status == 400]) == len(refused)

        status = await harness.ask(OPERATOR, "/status")
        assert "Paid broadcasts today (UTC): 1.0 of 100 Stars" in status.text
        assert "refused one for the Stars balance" in status.text


async def test_the_budget_holds_across_processes_and_a_clean_stop_gives_back_the_rest(
    database_url: str,
) -> None:
    clock = ManualClock(time.time())
    storage = await open_storage(database_url)
    try:
        stars = 2 * BLOCK // MESSAGES_PER_STAR + 5  # two blocks and a half
        first = PaidBroadcasts(storage.paid_broadcasts, clock, stars)
        second = PaidBroadcasts(storage.paid_broadcasts, clock, stars)
        budget = stars * MESSAGES_PER_STAR

        assert await first.take()  # the first reserves a block
        taken = 1 + sum([await second.take() for _ in range(budget)])
        assert taken == budget - BLOCK + 1, "the other's block is not the second's to spend"
        assert not await second.take()

        await first.close()  # it used 1 of its block: the rest is free for the second
        assert not await second.take(), "not asked again at once"
        clock.advance(RECHECK_SECONDS)
        assert sum([await second.take() for _ in range(budget)]) == BLOCK - 1
        assert (await second.spend()).stars == stars

        crashed = PaidBroadcasts(storage.paid_broadcasts, clock, stars)
        clock.advance(86_400)  # the next UTC day: a new budget
        assert await crashed.take()
        third = PaidBroadcasts(storage.paid_broadcasts, clock, stars)
        # A process that dies without closing forfeits what it held, never more.
        assert sum([await third.take() for _ in range(budget)]) == budget - BLOCK
    finally:
        await storage.close()


async def test_paid_sends_run_at_up_to_1000_a_second_beside_free_ones_at_30() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    paid_log: list = []
    free_log: list = []

    async def send(chat_id: int, paid: bool) -> None:
        async with pacer.turn(chat_id, paid=paid):
            released = vt.now
            await vt.sleep(0.1)
        (paid_log if paid else free_log).append((chat_id, released))

    await vt.run(*(send(chat_id, True) for chat_id in range(1, 3001)),
                 *(send(chat_id, False) for chat_id in range(10_001, 10_091)))

    class Released:
        def __init__(self, at: float) -> None:
            self.released = at

    paid_worst = worst_second([Released(at) for _, at in paid_log])
    free_worst = worst_second([Released(at) for _, at in free_log])
    assert 900 <= paid_worst <= 1000
    assert free_worst <= 30
    assert max(at for _, at in paid_log) < 3.5, "3,000 paid sends in about 3 virtual seconds"


def test_the_fake_refuses_paid_sends_above_1000_a_second_and_without_stars() -> None:
    now = [0.0]
    limits = RateLimits(paid_per_second=5)
    with FakeTelegram(enforce_limits=True, limits=limits, clock=lambda: now[0],
                      stars_balance=0.7) as tg, httpx.Client() as http:
        def paid_send(chat_id: int) -> httpx.Response:
            return http.post(f"{tg.api_url}/bot{tg.token}/sendMessage", json={
                "chat_id": chat_id, "text": "news", "allow_paid_broadcast": True})

        statuses = [paid_send(chat_id).status_code for chat_id in range(1, 9)]
        assert statuses[:5] == [200] * 5 and statuses[5] == 429, "at most 5 a second here"
        assert http.post(f"{tg.api_url}/bot{tg.token}/sendMessage", json={
            "chat_id": 9, "text": "free"}).status_code == 200, "free sends have their own limit"
        now[0] += 1.0
        more = [paid_send(chat_id) for chat_id in (20, 21, 22)]
        assert [r.status_code for r in more] == [200, 200, 400]
        assert "BALANCE_TOO_LOW" in more[2].json()["description"]
        assert tg.paid_messages == 7 and tg.stars_balance == 0

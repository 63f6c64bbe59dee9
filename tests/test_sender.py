"""Pacing and the sender's handling of Telegram's answers, in virtual time where time matters.

The pacer runs on an injected clock: sends "take" virtual time, and Telegram may count a send
anywhere between its release and its answer, so the checks below hold wherever it counts.
"""

from __future__ import annotations

import asyncio
import heapq
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import pairwise

import pytest

from bot.delivery.pacing import Pacer
from bot.delivery.sender import RETRY_BACKOFF_BASE, Sender
from tests.conftest import Harness, make_paper

DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


# ------------------------------------------------------------------------------ virtual time


class VirtualTime:
    """A clock that jumps from one sleeper's wake-up to the next; `lateness(n)` makes the n-th
    pacer sleep wake late, as on a busy event loop."""

    def __init__(self, lateness: Callable[[int], float] = lambda n: 0.0) -> None:
        self.now = 0.0
        self._lateness = lateness
        self._sleeps = 0
        self._heap: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = 0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        await self._wait_until(self.now + max(seconds, 0.0))

    async def late_sleep(self, seconds: float) -> None:
        """The pacer's sleep: sometimes it wakes late."""
        self._sleeps += 1
        await self._wait_until(self.now + max(seconds, 0.0) + self._lateness(self._sleeps))

    async def _wait_until(self, when: float) -> None:
        future = asyncio.get_running_loop().create_future()
        heapq.heappush(self._heap, (when, self._seq, future))
        self._seq += 1
        await future

    async def run(self, *coroutines) -> None:
        """Run the coroutines to completion, advancing time whenever all of them wait."""
        tasks = [asyncio.ensure_future(c) for c in coroutines]
        while not all(t.done() for t in tasks):
            for _ in range(20):  # let everything runnable run until it waits on the clock
                await asyncio.sleep(0)
            if all(t.done() for t in tasks):
                break
            if not self._heap:
                raise AssertionError("every task waits and no one sleeps: a deadlock")
            when, _, future = heapq.heappop(self._heap)
            self.now = max(self.now, when)
            future.set_result(None)
        for task in tasks:
            task.result()


@dataclass(frozen=True)
class Sent:
    chat_id: int
    released: float  # the request left
    answered: float  # Telegram's answer came back; it counted the send in between


def make_pacer(vt: VirtualTime, **kwargs: float) -> Pacer:
    return Pacer(monotonic=vt.monotonic, sleep=vt.late_sleep, **kwargs)


async def send(pacer: Pacer, vt: VirtualTime, chat_id: int, log: list[Sent],
               latency: float = 0.01) -> None:
    async with pacer.turn(chat_id):
        released = vt.now
        await vt.sleep(latency)
    log.append(Sent(chat_id, released, vt.now))


def worst_second(log: list[Sent]) -> int:
    """The most sends Telegram could have counted in one second, wherever it counted each.

    Send `k` can be counted as early as its release, send `j` as late as its answer; more than
    30 in a second means some send has 30 earlier ones answered less than a second before it.
    """
    by_release = sorted(log, key=lambda s: s.released)
    worst = 0
    for k, latest in enumerate(by_release):
        within = [s for s in by_release[:k] if s.answered > latest.released - 1.0]
        worst = max(worst, len(within) + 1)
    return worst


# ------------------------------------------------------------------------------ the pacer


async def test_sends_are_spread_evenly_at_nearly_30_a_second_and_never_31() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []

    await vt.run(*(send(pacer, vt, chat_id, log) for chat_id in range(1, 91)))

    releases = sorted(s.released for s in log)
    gaps = [b - a for a, b in pairwise(releases)]
    assert min(gaps) >= 0.93 / 30 - 1e-9, "evenly spread, not in bursts"
    assert worst_second(log) <= 30
    assert releases[-1] < 3.1, "90 sends in about three seconds: the pace stays near the limit"


async def test_late_wake_ups_do_not_bunch_sends_into_one_second() -> None:
    # Every fifth wake-up comes 60 ms late, as when rendering holds up the event loop.
    vt = VirtualTime(lateness=lambda n: 0.06 if n % 5 == 0 else 0.0)
    pacer = make_pacer(vt)
    log: list[Sent] = []

    await vt.run(*(send(pacer, vt, chat_id, log, latency=0.03) for chat_id in range(1, 121)))

    assert len(log) == 120
    assert worst_second(log) <= 30


async def test_a_slow_answer_holds_back_the_send_thirty_places_later() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []

    async def first_is_slow() -> None:
        await send(pacer, vt, 1, log, latency=2.0)

    await vt.run(first_is_slow(), *(send(pacer, vt, c, log) for c in range(2, 33)))

    slow = next(s for s in log if s.chat_id == 1)
    later = sorted(s.released for s in log if s.chat_id != 1)
    assert later[28] < 1.0, "the 29 sends after it go at the usual pace"
    assert later[29] >= slow.answered + 1.0, "the 31st waits a second after the slow answer"
    assert worst_second(log) <= 30


async def test_a_private_chat_gets_one_message_a_second_and_a_group_one_every_three() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []

    async def several(chat_id: int, count: int) -> None:
        for _ in range(count):
            await send(pacer, vt, chat_id, log, latency=0.2)

    await vt.run(several(5, 4), several(-5, 3), send(pacer, vt, 6, log))

    for chat_id, interval in ((5, 1.0), (-5, 3.0)):
        sends = [s for s in log if s.chat_id == chat_id]
        for before, after in pairwise(sends):
            assert after.released - before.answered >= interval
    other = next(s for s in log if s.chat_id == 6)
    assert other.released < 0.1, "other chats do not wait for a busy one"


async def test_paused_chats_and_a_global_pause_are_respected() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []
    pacer.pause_chat(7, 5.0)

    await vt.run(send(pacer, vt, 7, log), send(pacer, vt, 8, log))

    assert next(s for s in log if s.chat_id == 7).released >= 5.0
    assert next(s for s in log if s.chat_id == 8).released < 0.1

    pacer.pause_all(2.0)
    start = vt.now
    await vt.run(send(pacer, vt, 9, log))
    assert log[-1].released >= start + 2.0


async def test_a_failed_send_still_counts_towards_the_limits() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)

    async def refused() -> None:
        with pytest.raises(RuntimeError):
            async with pacer.turn(5):
                await vt.sleep(0.1)
                raise RuntimeError("Telegram said no")

    log: list[Sent] = []
    await vt.run(refused())
    await vt.run(send(pacer, vt, 5, log))

    assert log[0].released >= 1.1


# ------------------------------------------------------------------------------ the sender


class InstantTime:
    """Sleeping only moves the clock: for one chat's sends, one after another."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def _timedelta_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


async def queue_one_alert(harness: Harness, chat_id: int = 7001) -> None:
    reply = await harness.ask(chat_id, "/follow cs.LG")
    assert "Following" in reply.text
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.services.pipeline.poll()


def alerts_in(harness: Harness, chat_id: int) -> list[str]:
    return [m.text for m in harness.tg.messages(chat_id) if "arXiv:" in m.text]


async def test_a_server_error_puts_the_alert_back_with_backoff_and_it_arrives_later(
    harness: Harness,
) -> None:
    await queue_one_alert(harness)
    harness.tg.fail_next("sendMessage", 502)
    outbox = harness.services.storage.outbox

    report = await harness.services.sender.drain()

    assert report.retried == 1 and alerts_in(harness, 7001) == []
    [row] = await outbox.pending_for_chat(7001)
    assert row.attempts == 1
    await harness.drain()
    assert alerts_in(harness, 7001) == [], "not before the backoff has passed"

    harness.clock.advance(RETRY_BACKOFF_BASE + 1)
    await harness.drain()

    assert len(alerts_in(harness, 7001)) == 1
    assert await outbox.counts() == {"pending": 0, "sent": 1, "failed": 0, "held": 0}


async def test_a_flood_wait_that_repeats_puts_the_alert_back_instead_of_spinning(
    harness: Harness,
) -> None:
    await queue_one_alert(harness)
    time = InstantTime()
    sender = Sender(harness.app.bot, harness.services.storage, harness.clock,
                    Pacer(rate=1000, monotonic=time.monotonic, sleep=time.sleep))
    harness.tg.fail_next("sendMessage", 429, retry_after=7, times=4)

    report = await sender.drain()

    assert report.retry_after_waits == 4 and report.retried == 1
    assert [s for s in time.slept if s >= 7] == [7, 7, 7], "each wait is the one Telegram asked"
    assert len(await harness.services.storage.outbox.pending_for_chat(7001)) == 1

    harness.clock.advance(3600)
    await sender.drain()
    assert len(alerts_in(harness, 7001)) == 1


async def test_chat_not_found_holds_the_alerts_instead_of_failing_them(harness: Harness) -> None:
    await queue_one_alert(harness)
    harness.tg.fail_next("sendMessage", 400, description="Bad Request: chat not found")

    await harness.drain()

    store = harness.services.storage
    assert await store.outbox.counts() == {"pending": 0, "sent": 0, "failed": 0, "held": 1}
    chat = await store.chats.get(7001)
    assert chat is not None and not chat.active


async def test_a_migrated_group_keeps_matching_once_the_matcher_is_told(
    harness: Harness,
) -> None:
    group, supergroup = -4001, -1_000_000_004_001
    harness.tg.set_admins(group, {4242})
    reply = await harness.ask(group, "/follow cs.LG", title="Lab group")
    assert "Following" in reply.text
    services = harness.services
    assert services.subscriptions is not None

    async def reload_matcher(old_id: int, new_id: int) -> None:
        await services.subscriptions.load()

    sender = Sender(harness.app.bot, services.storage, harness.clock, services.pacer,
                    on_migrated=reload_matcher)
    harness.tg.migrate_chat(group, supergroup)
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await services.pipeline.poll()
    await sender.drain()
    await sender.drain()

    harness.serve_feed([make_paper(2)], announce_date=DAY1.replace(day=29))
    await services.pipeline.poll()
    await sender.drain()

    texts = alerts_in(harness, supergroup)
    assert len(texts) == 2 and "2611.10002v1" in texts[1], harness.tg.dump()

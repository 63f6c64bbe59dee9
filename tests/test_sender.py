"""Pacing and the sender's handling of Telegram's answers, in virtual time where time matters.

The pacer runs on an injected clock: sends "take" virtual time. Telegram counts a send a fixed
short while after its release (the request's way there), so the limits hold on release times;
how long the answer takes does not matter, as several requests are unconfirmed at once.
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
from bot.delivery.sender import (
    MAX_SEND_ATTEMPTS,
    RETRY_BACKOFF_BASE,
    RETRY_BACKOFF_MAX,
    Sender,
)
from tests.conftest import Harness, InstantTime, make_paper

DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
pytestmark = pytest.mark.usefixtures("timedelta_retry_after")


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
    """The most sends released within any one second (half-open), as Telegram counts them."""
    releases = sorted(s.released for s in log)
    worst, start = 0, 0
    for end, at in enumerate(releases):
        while releases[start] <= at - 1.0:
            start += 1
        worst = max(worst, end - start + 1)
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


async def test_slow_round_trips_do_not_slow_the_pace() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []

    await vt.run(*(send(pacer, vt, chat_id, log, latency=0.3) for chat_id in range(1, 91)))

    releases = sorted(s.released for s in log)
    assert releases[-1] < 3.1, "90 sends in about three seconds, as with instant answers"
    assert worst_second(log) <= 30


async def test_one_unusually_slow_answer_holds_back_only_the_send_thirty_places_later() -> None:
    # Telegram may have counted a send as late as its answer; by how much later than usual is
    # what the slow one took beyond the fastest round trip.
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []

    async def first_is_slow() -> None:
        await send(pacer, vt, 1, log, latency=2.0)

    await vt.run(first_is_slow(), *(send(pacer, vt, c, log) for c in range(2, 63)))

    slow = next(s for s in log if s.chat_id == 1)
    later = sorted(s.released for s in log if s.chat_id != 1)
    assert later[28] < 1.0, "the 29 sends after it go at the usual pace"
    assert later[29] >= slow.answered + 1.0 - 0.01, "the 31st waits for its excess"
    assert later[-1] < later[29] + 1.1, "and the sends after that at the usual pace again"


async def test_after_an_event_loop_stall_sends_resume_at_pace_not_in_a_burst() -> None:
    # The 10th wake-up comes 2 s late, as when a big poll holds the event loop.
    vt = VirtualTime(lateness=lambda n: 2.0 if n == 10 else 0.0)
    pacer = make_pacer(vt)
    log: list[Sent] = []

    await vt.run(*(send(pacer, vt, chat_id, log) for chat_id in range(1, 61)))

    releases = sorted(s.released for s in log)
    after_stall = [b - a for a, b in pairwise(releases) if a >= 2.0]
    assert sum(gap < 0.9 / 30 for gap in after_stall) <= 1, "at most one catch-up send"
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
            assert after.released - before.released >= interval
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

    assert log[0].released >= 1.0, "the refused send counted from its release"


async def test_a_429_pauses_only_its_chat_when_the_chat_was_written_to_lately() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []
    await vt.run(send(pacer, vt, 5, log), send(pacer, vt, 5, log))

    assert not pacer.flood_wait(5, 30.0), "a chat that just had two messages: its own limit"
    start = vt.now
    await vt.run(send(pacer, vt, 5, log), send(pacer, vt, 6, log))
    assert next(s for s in log[2:] if s.chat_id == 5).released >= start + 30.0
    assert next(s for s in log if s.chat_id == 6).released < start + 0.1, "others go on"


async def test_a_429_on_a_chats_first_message_pauses_everything() -> None:
    vt = VirtualTime()
    pacer = make_pacer(vt)
    log: list[Sent] = []
    await vt.run(send(pacer, vt, 5, log))

    assert pacer.flood_wait(5, 4.0), "nothing else went to chat 5: the overall limit"
    start = vt.now
    await vt.run(send(pacer, vt, 6, log), send(pacer, vt, -7, log))
    assert all(s.released >= start + 4.0 for s in log[1:])


# ------------------------------------------------------------------------------ the sender


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
    assert await outbox.counts() == {
        "pending": 0, "sent": 1, "failed": 0, "held": 0,
        "sending": 0, "expired": 0}


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
    assert await store.outbox.counts() == {
        "pending": 0, "sent": 0, "failed": 0, "held": 1,
        "sending": 0, "expired": 0}
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


async def queue_alerts_to_many_chats(harness: Harness, chats: int) -> list[int]:
    """One alert for each of `chats` chats (each follows one paper's title); returns the ids."""
    chat_ids = [7100 + n for n in range(1, chats + 1)]
    store, clock = harness.services.storage, harness.clock
    for n, chat_id in enumerate(chat_ids, 1):
        await store.chats.record(chat_id, "private", f"chat {chat_id}", "en", clock.now())
        result = await harness.services.subscriptions.follow(chat_id, f'ti:"part {n}"')
        assert result.status == "added"
    harness.serve_feed([make_paper(n) for n in range(1, chats + 1)], announce_date=DAY1)
    await harness.services.pipeline.poll()
    return chat_ids


async def test_at_most_the_window_of_rows_are_claimed_and_each_is_claimed_before_its_request(
    harness: Harness,
) -> None:
    chat_ids = await queue_alerts_to_many_chats(harness, 12)
    harness.tg.set_round_trip("sendMessage", 0.2)
    store = harness.services.storage
    sender = Sender(harness.app.bot, store, harness.clock, harness.services.pacer, window=3)
    seen_claimed: list[int] = []
    drain = asyncio.ensure_future(sender.drain())
    while not drain.done():
        counts = await store.outbox.counts()
        seen_claimed.append(counts["sending"])
        # Every message Telegram holds is either recorded as sent or still claimed.
        assert len(harness.tg.all_messages()) <= counts["sent"] + counts["sending"]
        await asyncio.sleep(0.02)
    report = await drain

    assert report.sent == 12
    assert max(seen_claimed) == 3, "three requests unconfirmed at once, never more"
    assert all(len(alerts_in(harness, c)) == 1 for c in chat_ids)


async def test_stop_lets_requests_in_flight_be_recorded_and_starts_no_more(
    harness: Harness,
) -> None:
    await queue_alerts_to_many_chats(harness, 12)
    harness.tg.set_round_trip("sendMessage", 0.3)
    store = harness.services.storage
    sender = Sender(harness.app.bot, store, harness.clock, harness.services.pacer, window=4)
    drain = asyncio.ensure_future(sender.drain())
    await harness.tg.wait_for(lambda: len(harness.tg.all_messages()) >= 2, what="two alerts")

    await sender.stop()

    assert drain.done()
    await drain
    counts = await store.outbox.counts()
    assert counts["sending"] == 0, "nothing left uncertain after a clean stop"
    assert counts["sent"] == len(harness.tg.all_messages()) < 12
    assert counts["pending"] == 12 - counts["sent"], "the rest wait for the next start"
    assert (await sender.drain()).sent == 0, "a stopped sender sends nothing"


async def test_a_send_that_keeps_failing_is_failed_with_its_error_after_the_attempt_limit(
    harness: Harness,
) -> None:
    await queue_one_alert(harness)
    harness.tg.fail_next("sendMessage", 502, times=MAX_SEND_ATTEMPTS)
    outbox = harness.services.storage.outbox

    reports = []
    for _ in range(MAX_SEND_ATTEMPTS + 3):
        reports.append(await harness.services.sender.drain())
        harness.clock.advance(RETRY_BACKOFF_MAX + 1)

    assert sum(r.retried for r in reports) == MAX_SEND_ATTEMPTS - 1
    assert sum(r.failed for r in reports) == 1
    tries = [c for c in harness.tg.calls_of("sendMessage") if "arXiv:" in c.params["text"]]
    assert len(tries) == MAX_SEND_ATTEMPTS, "then no more tries"
    assert (await outbox.counts())["failed"] == 1
    status = await harness.ask(1, "/status")
    assert "1 failed" in status.text and "Bad Gateway" in status.text


async def test_rows_left_claimed_by_a_dead_process_are_sent_again_at_start(
    harness: Harness,
) -> None:
    await queue_one_alert(harness)
    store = harness.services.storage
    [row] = await store.outbox.pending_for_chat(7001)
    assert await store.outbox.claim([row.id], harness.clock.now())  # then the process died

    fresh = Sender(harness.app.bot, store, harness.clock, harness.services.pacer)
    report = await fresh.drain()

    assert report.sent == 1 and len(alerts_in(harness, 7001)) == 1

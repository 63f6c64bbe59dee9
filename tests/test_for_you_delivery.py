"""For you is delivered as alerts are: queued with its day marked, claimed, paced, retried,
held for a chat that blocked the bot, kept for a paused one, sent in its forum topic."""

from __future__ import annotations

import pytest

from bot.core.constants import DAY
from bot.core.models import Alert, AlertKind
from bot.delivery.pacing import PRIVATE_CHAT_INTERVAL, Pacer
from bot.delivery.sender import RETRY_BACKOFF_BASE, Sender
from bot.jobs.routine import for_you_job
from bot.services.daily import queue_for_you
from tests.conftest import Harness, InstantTime
from tests.fakes.telegram_server import DEFAULT_GROUP_USER_ID, SentMessage
from tests.for_you_setup import (
    LATEST_PAPERS,
    is_for_you,
    next_day,
    seed_for_you,
    suggested,
)

CHAT = 7401
OTHER = 7402
FORUM = -1001500000007
pytestmark = pytest.mark.usefixtures("timedelta_retry_after")


def for_you_in(harness: Harness, chat_id: int) -> list[SentMessage]:
    return [m for m in harness.tg.messages(chat_id) if is_for_you(m.text)]


async def queue(harness: Harness) -> int:
    services = harness.services
    return await queue_for_you(services.storage, services.ranker, harness.clock.now())


async def test_a_round_queues_one_message_per_chat_and_day_and_the_drain_sends_it(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT, OTHER], harness.clock.now())

    assert await queue(harness) == 2
    assert await queue(harness) == 0, "the day is marked with the message queued"
    assert for_you_in(harness, CHAT) == [], "queued, not sent yet"

    report = await harness.services.sender.drain()

    assert report.for_you == 2 and report.sent == 0
    for chat_id in (CHAT, OTHER):
        [message] = for_you_in(harness, chat_id)
        entries = suggested(message.text)
        assert len(entries) == 3 and all("Graph neural networks" in e for e in entries)
        assert [b["text"] for b in message.buttons] == ["💾 1", "💾 2", "💾 3"]
    assert (await harness.services.sender.drain()).for_you == 0, "sent once"
    [row] = await store.for_you_outbox.of_chat(CHAT)
    assert row.status == "sent" and row.message_id == for_you_in(harness, CHAT)[0].message_id


async def test_the_message_is_rendered_when_it_goes_with_what_the_chat_did_meanwhile(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT], harness.clock.now())
    await queue(harness)
    [row] = await store.for_you_outbox.pending_for_chat(CHAT)
    first = row.picks[0]
    await store.saved.save_many(CHAT, [(first.arxiv_id, first.version)], harness.clock.now())
    await store.chats.set_language(CHAT, "zh")

    await harness.drain()

    [message] = [m for m in harness.tg.messages(CHAT) if "为你推荐" in m.text]
    assert message.buttons[0]["text"] == "✅ 1", "the paper saved meanwhile shows as saved"


async def test_a_failed_send_is_retried_after_the_backoff_and_arrives_once(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT, OTHER], harness.clock.now())
    await queue(harness)
    harness.tg.fail_next("sendMessage", 502, chat_id=CHAT)

    report = await harness.services.sender.drain()

    assert report.for_you == 1 and report.retried == 1
    assert for_you_in(harness, CHAT) == [] and len(for_you_in(harness, OTHER)) == 1
    [row] = await store.for_you_outbox.pending_for_chat(CHAT)
    assert row.attempts == 1
    await harness.drain()
    assert for_you_in(harness, CHAT) == [], "not before the backoff has passed"

    harness.clock.advance(RETRY_BACKOFF_BASE + 1)
    await harness.drain()

    assert len(for_you_in(harness, CHAT)) == 1
    assert await queue(harness) == 0, "the failure did not free the day for a second message"
    failed = [c for c in harness.tg.calls_of("sendMessage")
              if c.params["chat_id"] == CHAT and c.status != 200]
    assert len(failed) == 1


async def test_a_for_you_message_waits_its_chats_turn_after_an_alert(harness: Harness) -> None:
    store = harness.services.storage
    now = harness.clock.now()
    await seed_for_you(store, [CHAT], now)
    quantum = LATEST_PAPERS[-1]
    await store.outbox.enqueue([Alert(CHAT, quantum.arxiv_id, quantum.version, AlertKind.NEW,
                                      matched_queries=("ti:quantum",))], now)
    await queue(harness)
    time = InstantTime()
    sender = Sender(harness.app.bot, store, harness.clock,
                    Pacer(monotonic=time.monotonic, sleep=time.sleep))

    report = await sender.drain()

    assert report.sent == 1 and report.for_you == 1
    alert, for_you = harness.tg.messages(CHAT)
    assert quantum.arxiv_id in alert.text and is_for_you(for_you.text)
    assert time.now >= PRIVATE_CHAT_INTERVAL, "a private chat gets one message a second"


async def test_a_flood_wait_holds_the_for_you_message_back_as_long_as_telegram_asks(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT], harness.clock.now())
    await queue(harness)
    time = InstantTime()
    sender = Sender(harness.app.bot, store, harness.clock,
                    Pacer(monotonic=time.monotonic, sleep=time.sleep))
    harness.tg.fail_next("sendMessage", 429, retry_after=7, chat_id=CHAT)

    report = await sender.drain()

    assert report.retry_after_waits == 1 and report.for_you == 1
    assert [s for s in time.slept if s >= 7] == [7], "the wait Telegram asked for"
    assert len(for_you_in(harness, CHAT)) == 1


async def test_a_paused_chats_message_waits_for_resume_and_a_long_pause_brings_one(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT], harness.clock.now(), paused=(CHAT,))
    assert await queue(harness) == 1
    await harness.drain()
    assert for_you_in(harness, CHAT) == [], "not while paused"
    # Two more days of the pause: each day's message replaces the one still waiting.
    for day in (1, 2):
        harness.clock.advance(DAY)
        await next_day(store, harness.clock.now(), day)
        assert await queue(harness) == 1
    await harness.drain()
    assert for_you_in(harness, CHAT) == []

    await harness.ask(CHAT, "/resume")
    await harness.drain()

    assert len(for_you_in(harness, CHAT)) == 1, "one message, the newest"
    statuses = [row.status for row in await store.for_you_outbox.of_chat(CHAT)]
    assert statuses == ["expired", "expired", "sent"]


async def test_a_chat_that_blocked_the_bot_gets_its_message_when_it_writes_again(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT, OTHER], harness.clock.now())
    await queue(harness)
    harness.tg.block_chat(CHAT)

    report = await harness.services.sender.drain()

    assert report.blocked_chats == 1 and report.for_you == 1
    [row] = await store.for_you_outbox.of_chat(CHAT)
    assert row.status == "held", "kept, not failed"
    # The next day, still blocked: no round for it, as no alerts are matched for it.
    harness.clock.advance(DAY)
    await next_day(store, harness.clock.now(), 1)
    assert await queue(harness) == 1, "only the other chat's"
    await harness.drain()
    sends_to_blocked = [c for c in harness.tg.calls_of("sendMessage")
                        if c.params["chat_id"] == CHAT]
    assert len(sends_to_blocked) == 1

    harness.tg.unblock_chat(CHAT)
    await harness.ask(CHAT, "/list")
    await harness.drain()

    assert len(for_you_in(harness, CHAT)) == 1


async def test_rows_a_dead_process_left_claimed_are_sent_again_and_queued_ones_sent(
        harness: Harness) -> None:
    store = harness.services.storage
    await seed_for_you(store, [CHAT, OTHER], harness.clock.now())
    await queue(harness)  # then the process died: OTHER's message queued, CHAT's claimed
    [row] = await store.for_you_outbox.pending_for_chat(CHAT)
    assert await store.for_you_outbox.claim([row.id], harness.clock.now())

    fresh = Sender(harness.app.bot, store, harness.clock, harness.services.pacer)
    report = await fresh.drain()

    assert report.for_you == 2
    assert len(for_you_in(harness, CHAT)) == 1 and len(for_you_in(harness, OTHER)) == 1
    assert await queue(harness) == 0


async def test_for_you_goes_to_the_forum_topic_it_was_turned_on_in_and_to_general_once_gone(
        harness: Harness) -> None:
    store = harness.services.storage
    now = harness.clock.now()
    await seed_for_you(store, [FORUM], now)
    harness.tg.set_admins(FORUM, {DEFAULT_GROUP_USER_ID})
    reading = harness.tg.create_topic(FORUM, "Reading", title="Lab")
    await harness.settle()
    reply = await harness.ask(FORUM, "/foryou 3", thread_id=reading)
    assert "For you is on" in reply.text

    await queue(harness)
    await harness.drain()

    [message] = [m for m in harness.tg.messages_in(FORUM, reading) if is_for_you(m.text)]
    assert len(suggested(message.text)) == 3

    harness.tg.delete_topic(FORUM, reading)
    harness.clock.advance(DAY)
    await next_day(store, harness.clock.now(), 1)
    await queue(harness)
    await harness.drain()

    [general] = [m for m in harness.tg.messages_in(FORUM, None) if is_for_you(m.text)]
    assert len(suggested(general.text)) == 3


async def test_no_round_while_a_poll_is_storing_its_alerts(harness: Harness) -> None:
    """Mid-store, the poll's papers are stored and their alerts not all yet: a round then
    would suggest papers that arrive as the chat's alerts a moment later."""
    services = harness.services
    await seed_for_you(services.storage, [CHAT], harness.clock.now())
    services.pipeline.storing_since = harness.clock.now() - 5
    try:
        await for_you_job(services, None)
    finally:
        services.pipeline.storing_since = None
    assert await services.storage.for_you_outbox.of_chat(CHAT) == [], "nothing queued"
    await for_you_job(services, None)  # the next check, the poll stored
    await harness.settle()
    assert len(for_you_in(harness, CHAT)) == 1

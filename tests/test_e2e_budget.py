"""The command budget, end to end: a person is never limited; spam gets one reply, one short
reminder within the window, then silence; a pressed button is always answered.

The bot runs with the real `BudgetPolicy()`; the harness clock is the budget's clock, so a
test says how fast its user types by advancing it.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.core.clock import ManualClock
from bot.services.budget import BudgetPolicy
from tests.conftest import Harness, make_paper, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

CHAT = 9101
OTHER = 9102
GROUP = -100_910_000
SPAMMER, COLLEAGUE = 9201, 9202
SLOW_DOWN = "try again in"
STILL_LIMITED = "Still limited"
HELP = "Following papers"  # a line of /help's answer


@pytest.fixture
async def harness(tmp_path: Path, fake_telegram: FakeTelegram,
                  fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv)
    app = await start_bot(settings, clock, budget=BudgetPolicy())
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


def texts(harness: Harness, chat_id: int) -> list[str]:
    return [message.text for message in harness.tg.messages(chat_id)]


async def test_a_person_trying_things_out_is_answered_in_full(harness: Harness) -> None:
    """Ten varied commands in three seconds, three of them /paper, one a pasted link."""
    harness.serve_feed([make_paper(n) for n in range(1, 4)])
    await harness.poll()
    harness.arxiv.set_api_papers([make_paper(50, title="Only the API knows this one")])
    burst = ["/start", "/help", "/paper 2611.10001", "/follow cs.LG", "/list",
             "/paper 2611.10050", "/stats", "https://arxiv.org/abs/2611.10002",
             "/paper 2611.10003", "/saved"]
    for command in burst:
        answer = await harness.ask(CHAT, command)
        assert SLOW_DOWN not in answer.text, f"{command!r} was limited"
        harness.clock.advance(0.3)
    await harness.settle()
    replies = texts(harness, CHAT)
    assert len(replies) == len(burst)
    assert "Only the API knows this one" in "".join(replies)
    assert not any(SLOW_DOWN in text for text in replies)


async def test_spam_gets_one_slow_down_reply_one_reminder_then_silence_then_answers_again(
        harness: Harness) -> None:
    for _ in range(30):  # a script: thirty commands in no time at all
        harness.tg.send_command(CHAT, "/help")
    await harness.settle()
    replies = texts(harness, CHAT)
    # The slow-down reply goes out on arrival of the fifth, maybe before the answers to the
    # first four, which wait for the chat's turn; the sixth gets the window's one reminder.
    assert len(replies) == 6, "four answers, one slow-down reply, one reminder, then nothing"
    [slow_down] = [text for text in replies if SLOW_DOWN in text]
    assert "20 s" in slow_down
    [reminder] = [text for text in replies if STILL_LIMITED in text]
    assert reminder == "⏳ Still limited: 20 s left."
    assert sum(HELP in text for text in replies) == 4

    harness.clock.advance(10)  # still within the window: no reply at all
    for _ in range(5):
        harness.tg.send_command(CHAT, "/stats")
    await harness.settle()
    assert len(texts(harness, CHAT)) == 6

    other = await harness.ask(OTHER, "/help")  # another chat never noticed
    assert "Following papers" in other.text

    harness.clock.advance(11)  # the window is over
    again = await harness.ask(CHAT, "/start")
    assert "arXiv alerts" in again.text


async def test_a_person_writing_again_within_the_window_is_told_once_how_long_is_left(
        harness: Harness) -> None:
    for _ in range(5):  # four answers and the slow-down reply
        harness.tg.send_command(CHAT, "/help")
    await harness.settle()
    assert len(texts(harness, CHAT)) == 5
    harness.clock.advance(12)
    reminder = await harness.ask(CHAT, "/list")
    assert reminder.text == "⏳ Still limited: 8 s left.", "not silence, which reads as dead"
    harness.clock.advance(2)
    harness.tg.send_command(CHAT, "/list")
    await harness.settle()
    assert len(texts(harness, CHAT)) == 6, "one reminder a window"
    harness.clock.advance(7)  # the window is over
    listing = await harness.ask(CHAT, "/list")
    assert STILL_LIMITED not in listing.text and SLOW_DOWN not in listing.text


async def test_a_chat_that_keeps_spamming_waits_longer_each_time(harness: Harness) -> None:
    for round_length in (20, 40, 80):
        for _ in range(10):
            harness.tg.send_command(CHAT, "/help")
        await harness.settle()
        assert sum(f"try again in {round_length} s" in text
                   for text in texts(harness, CHAT)) == 1
        harness.clock.advance(round_length + 1)


async def test_buttons_are_limited_too_and_every_press_is_answered(harness: Harness) -> None:
    listing_owner = CHAT
    await harness.ask(listing_owner, "/follow cs.LG")
    await harness.ask(listing_owner, "/follow cs.CL")
    listing = await harness.ask(listing_owner, "/list")
    await harness.ask(listing_owner, "/help")  # the fourth command in a row: the last allowed

    remove_first, remove_second = listing.callback_data[:2]
    first = await harness.press(listing_owner, listing.message_id, remove_first)
    assert SLOW_DOWN in (first.text or ""), "the first refusal says when to try again"
    second = await harness.press(listing_owner, listing.message_id, remove_second)
    assert second.text == "⏳ Still limited: 20 s left.", "inside the window it says so"
    harness.clock.advance(5)
    third = await harness.press(listing_owner, listing.message_id, remove_second)
    assert third.text == "⏳ Still limited: 15 s left.", "every press, past the reminder too"
    subscriptions = await harness.services.subscriptions.for_chat(listing_owner)
    assert len(subscriptions) == 2, "neither press removed anything"
    assert len(texts(harness, listing_owner)) == 4

    harness.clock.advance(16)
    removed = await harness.press(listing_owner, listing.message_id, remove_first)
    assert "Removed" in (removed.text or "")


async def test_in_a_group_one_noisy_member_does_not_silence_the_others(harness: Harness) -> None:
    for _ in range(15):
        harness.tg.send_command(GROUP, "/help", user_id=SPAMMER, chat_type="supergroup",
                                title="Reading group")
    await harness.settle()
    assert len(texts(harness, GROUP)) == 6, "four answers, the slow-down reply, the reminder"
    answer = await harness.ask(GROUP, "/stats", user_id=COLLEAGUE, chat_type="supergroup",
                               title="Reading group")
    assert SLOW_DOWN not in answer.text and "arXiv" in answer.text


async def test_a_group_as_a_whole_has_a_budget_of_its_own(harness: Harness) -> None:
    """Many members each within their own budget still cannot flood the group's."""
    for member in range(20):
        for _ in range(2):
            harness.tg.send_command(GROUP, "/help", user_id=10_000 + member,
                                    chat_type="supergroup", title="Big lab")
    await harness.settle()
    replies = texts(harness, GROUP)
    assert len(replies) == 14, "the group's twelve at once, one slow-down reply, one reminder"
    assert sum(SLOW_DOWN in text for text in replies) == 1
    assert sum(STILL_LIMITED in text for text in replies) == 1


async def test_commands_for_other_bots_and_group_chatter_cost_nothing_and_get_no_reply(
        harness: Harness) -> None:
    for _ in range(20):
        harness.tg.send_command(GROUP, "/paper@other_bot 2611.10001", chat_type="supergroup",
                                title="Lab", user_id=COLLEAGUE)
        harness.tg.send_text(GROUP, "has anyone read 2611.10001?", chat_type="supergroup",
                             title="Lab", user_id=COLLEAGUE)
    await harness.settle()
    assert texts(harness, GROUP) == []
    assert harness.arxiv.requests == []
    answer = await harness.ask(GROUP, "/help", chat_type="supergroup", title="Lab",
                               user_id=COLLEAGUE)
    assert "Following papers" in answer.text, "none of the forty was charged"


async def test_the_slow_down_reply_speaks_the_chats_language(harness: Harness) -> None:
    for _ in range(6):
        harness.tg.send_command(CHAT, "/help", language_code="zh-hans")
    await harness.settle()
    replies = texts(harness, CHAT)
    assert sum("秒后再试" in text for text in replies) == 1
    assert sum("仍在限流" in text for text in replies) == 1, "the reminder too"


async def test_a_flood_sent_behind_a_slow_command_is_charged_when_it_arrives(
        harness: Harness) -> None:
    """A chat's updates wait for its slow /paper; the budget must not wait with them, or the
    buckets would refill meanwhile and let the flood through once the turn comes."""
    harness.arxiv.set_api_papers([make_paper(60)])
    harness.arxiv.delay_next(3, path="/api")
    harness.tg.send_command(CHAT, "/paper 2611.10060")
    for _ in range(10):
        harness.tg.send_command(CHAT, "/help")
    slow_down = await harness.tg.wait_for_message(CHAT, SLOW_DOWN)
    assert not any("part 60" in text for text in texts(harness, CHAT)), \
        "told to slow down while the /paper still waited"
    harness.clock.advance(15)  # time passes before the chat's turn comes
    await harness.tg.wait_for_message(CHAT, "part 60", timeout=15)
    await harness.settle()
    replies = texts(harness, CHAT)
    assert sum(HELP in text for text in replies) == 3, "charged at arrival: 1 /paper + 3 /help"
    assert sum(STILL_LIMITED in text for text in replies) == 1
    assert slow_down.text in replies and len(replies) == 6

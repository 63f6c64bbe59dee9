"""Chats are served side by side, and each chat's updates are handled in the order sent."""

from __future__ import annotations

import asyncio

from bot.chat.update_processor import PerChatUpdateProcessor
from tests.conftest import Harness, make_paper

SLOW = 1001
OTHER = 1002


async def test_a_second_chat_is_answered_while_a_look_up_waits_on_a_slow_arxiv(
    harness: Harness,
) -> None:
    harness.arxiv.set_api_papers([make_paper(7)])
    harness.arxiv.delay_next(4.0, path="/api")
    harness.tg.send_command(SLOW, "/paper 2611.10007")
    await asyncio.sleep(0.3)  # the look-up is on its way to arXiv
    reply = await harness.ask(OTHER, "/start")
    assert "/follow" in reply.text
    assert harness.tg.messages(SLOW) == [], "the other chat did not wait for the slow look-up"
    card = await harness.tg.wait_for(lambda: harness.tg.messages(SLOW), timeout=15,
                                     what="the card after arXiv answers")
    assert "2611.10007" in card[0].text


async def test_one_chats_updates_are_answered_in_the_order_sent(harness: Harness) -> None:
    harness.arxiv.set_api_papers([make_paper(7)])
    harness.arxiv.delay_next(2.0, path="/api")
    harness.tg.send_command(SLOW, "/paper 2611.10007")
    harness.tg.send_command(SLOW, "/start")
    harness.tg.send_command(SLOW, "/list")
    replies = await harness.tg.wait_for(lambda: len(m := harness.tg.messages(SLOW)) >= 3 and m,
                                        timeout=15, what="three replies")
    assert "2611.10007" in replies[0].text
    assert "/follow" in replies[1].text
    assert "follow anything yet" in replies[2].text


async def test_chat_locks_are_forgotten_once_a_chats_updates_are_done(harness: Harness) -> None:
    for chat_id in range(2000, 2020):
        harness.tg.send_command(chat_id, "/start")
    await harness.tg.wait_for(lambda: all(harness.tg.messages(c) for c in range(2000, 2020)),
                              what="every chat's reply")
    await harness.settle()
    processor = harness.app.update_processor
    assert isinstance(processor, PerChatUpdateProcessor)
    assert processor.waiting_chats == 0

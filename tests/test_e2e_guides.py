"""AI reading guides, end to end: the real bot against fake Telegram, arXiv and LLM servers."""

from __future__ import annotations

import io
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from bot.config import configure_logging
from tests.conftest import Harness, harness_with, make_paper, make_settings
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.llm_server import FakeLLM
from tests.fakes.telegram_server import FakeTelegram, SentMessage

LAB = 7101
OTHER = 7102
KEY = "sk-test-7Hq2ZpLw9Vd4Rc1Kx"


@pytest.fixture
def fake_llm() -> Iterator[FakeLLM]:
    with FakeLLM() as llm:
        yield llm


@asynccontextmanager
async def running(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
                  llm: FakeLLM | None, **overrides: str) -> AsyncIterator[Harness]:
    if llm is not None:
        overrides = {"LLM_API_URL": llm.api_url, "LLM_API_KEY": KEY,
                     "LLM_MODEL": "fake-model", **overrides}
    async with harness_with(tmp_path, tg, arxiv, **overrides) as harness:
        yield harness


@pytest.fixture
async def harness(tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
                  fake_llm: FakeLLM) -> AsyncIterator[Harness]:
    async with running(tmp_path, fake_telegram, fake_arxiv, fake_llm) as harness:
        yield harness


async def alert_in(harness: Harness, chat_id: int, number: int = 1) -> SentMessage:
    """Follow cs.LG, let a poll deliver paper `number`, and return its alert."""
    reply = await harness.ask(chat_id, "/follow cs.LG")
    assert "Following" in reply.text or "已" in reply.text, reply.text
    harness.serve_feed([make_paper(n) for n in range(1, 4)])
    await harness.poll()
    return next(m for m in harness.tg.messages(chat_id) if f"2611.{10000 + number}v1" in m.text)


def guide_button(message: SentMessage) -> str:
    data = [d for d in message.callback_data if d.startswith("v1:g:")]
    assert len(data) == 1, message.button_texts
    return data[0]


async def press_for_guide(harness: Harness, chat_id: int, message: SentMessage) -> SentMessage:
    """Press 🧠 Guide and return the reply once it is no longer "writing the guide…"."""
    before = len(harness.tg.messages(chat_id))
    await harness.press(chat_id, message.message_id, guide_button(message))
    return await finished_reply(harness, chat_id, before)


async def finished_reply(harness: Harness, chat_id: int, before: int) -> SentMessage:
    tg = harness.tg
    await tg.wait_for(lambda: len(tg.messages(chat_id)) > before, what="the guide's message")
    message_id = tg.messages(chat_id)[before].message_id
    await tg.wait_for(lambda: "Writing the guide" not in tg.message(chat_id, message_id).text
                      and "正在撰写" not in tg.message(chat_id, message_id).text,
                      timeout=15, what="the guide to be written")
    return tg.message(chat_id, message_id)


async def test_a_guide_in_english_replaces_writing_the_guide(harness: Harness,
                                                           fake_llm: FakeLLM) -> None:
    alert = await alert_in(harness, LAB)
    assert "🧠 Guide" in alert.button_texts
    before = len(harness.tg.messages(LAB))
    await harness.press(LAB, alert.message_id, guide_button(alert))
    placeholder = harness.tg.messages(LAB)[before]
    sent = harness.tg.calls_of("sendMessage")[-1].params
    assert "Writing the guide for arXiv:2611.10001v1" in sent["text"]
    assert sent["reply_parameters"]["message_id"] == alert.message_id
    guide = await finished_reply(harness, LAB, before)
    assert guide.message_id == placeholder.message_id and guide.edit_count == 1
    assert "Reading guide" in guide.text and "arXiv:2611.10001v1" in guide.text
    body = guide.text.split("\n\n")[1].splitlines()
    assert 1 <= len(body) <= 5
    assert body[0].startswith("Problem:") and "98.5%" in guide.text
    assert "from the abstract only" in guide.text
    [request] = fake_llm.requests
    assert request.language == "en"
    assert "Sparse attention for long-context models, part 1" in request.user_text
    assert "We study how sparse attention" in request.user_text
    assert request.headers["authorization"] == f"Bearer {KEY}"


async def test_a_guide_in_chinese_for_a_chinese_chat(harness: Harness, fake_llm: FakeLLM) -> None:
    await harness.ask(LAB, "/lang zh")
    await alert_in(harness, LAB)
    before = len(harness.tg.messages(LAB))
    harness.tg.send_command(LAB, "/guide 2611.10002")
    guide = await finished_reply(harness, LAB, before)
    assert "导读" in guide.text and "问题：" in guide.text and "12%" in guide.text
    assert "摘要" in guide.text  # it says it is based on the abstract
    assert [r.language for r in fake_llm.requests] == ["zh"]


async def test_two_presses_in_two_chats_cost_one_call(harness: Harness,
                                                      fake_llm: FakeLLM) -> None:
    await harness.ask(OTHER, "/follow cs.LG")
    alert = await alert_in(harness, LAB)
    other_alert = next(m for m in harness.tg.messages(OTHER) if "2611.10001v1" in m.text)
    first = await press_for_guide(harness, LAB, alert)
    second = await press_for_guide(harness, OTHER, other_alert)
    assert len(fake_llm.requests) == 1
    assert first.text == second.text and "Reading guide" in second.text
    again = await harness.ask(LAB, "/guide 2611.10001")  # a cached guide needs no "writing…"
    assert again.text == first.text and len(fake_llm.requests) == 1


async def test_a_revision_gets_its_own_guide(harness: Harness, fake_llm: FakeLLM) -> None:
    alert = await alert_in(harness, LAB)
    await press_for_guide(harness, LAB, alert)
    harness.serve_feed([make_paper(1, version=2)])
    await harness.poll()
    revised = next(m for m in harness.tg.messages(LAB) if "2611.10001v2" in m.text)
    guide = await press_for_guide(harness, LAB, revised)
    assert "arXiv:2611.10001v2" in guide.text and len(fake_llm.requests) == 2


async def test_the_chat_budget_and_the_global_budget_give_clear_replies(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        fake_llm: FakeLLM) -> None:
    async with running(tmp_path, fake_telegram, fake_arxiv, fake_llm,
                       GUIDE_CHAT_DAILY_LIMIT="1", GUIDE_DAILY_LIMIT="2") as harness:
        await alert_in(harness, LAB)
        first = await harness.ask(LAB, "/guide 2611.10001")
        first = await finished_reply(harness, LAB, len(harness.tg.messages(LAB)) - 1)
        assert "Reading guide" in first.text and first.edit_count == 1  # was "writing…"
        refused = await harness.ask(LAB, "/guide 2611.10002")
        assert "used its 1 new guides" in refused.text and "already written" in refused.text
        cached = await harness.ask(LAB, "/guide 2611.10001")  # the cache is not budgeted
        assert "Reading guide" in cached.text
        await harness.ask(OTHER, "/guide 2611.10002")
        await finished_reply(harness, OTHER, len(harness.tg.messages(OTHER)) - 1)
        third = await harness.ask(7103, "/guide 2611.10003")
        assert "all the guides it may" in third.text
        assert len(fake_llm.requests) == 2
        harness.clock.advance(86400 + 1)  # the budgets count the last 24 hours
        later = await harness.ask(LAB, "/guide 2611.10002")
        assert "Reading guide" in later.text  # written by OTHER already: cached
        await harness.ask(7103, "/guide 2611.10003")
        fresh = await finished_reply(harness, 7103, len(harness.tg.messages(7103)) - 1)
        assert "Reading guide" in fresh.text and len(fake_llm.requests) == 3


FAULTS = {
    "429": (dict(status=429), "busy"),
    "500": (dict(status=500), "failed"),
    "malformed JSON": (dict(status=200, body=b'{"choices": [{"message": '), "could not read"),
    "not chat-completions JSON": (dict(status=200, body=b'{"result": "ok"}'), "could not read"),
    "HTML page": (dict(status=200, body=b"<html>Bad gateway</html>"), "could not read"),
    "empty answer": (dict(status=200, body=None), "empty answer"),
    "slow": (dict(status=0, delay=4.0), "within 30 seconds"),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_each_endpoint_fault_gives_a_clear_message_and_is_not_cached(
        fault: str, tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        fake_llm: FakeLLM, caplog: pytest.LogCaptureFixture) -> None:
    kwargs, expected = FAULTS[fault]
    async with running(tmp_path, fake_telegram, fake_arxiv, fake_llm,
                       LLM_TIMEOUT_SECONDS="2") as harness:
        alert = await alert_in(harness, LAB)
        if fault == "empty answer":
            fake_llm.answer_next("  \n ")
        else:
            fake_llm.fail_next(**kwargs)  # type: ignore[arg-type]
        failed = await press_for_guide(harness, LAB, alert)
        assert failed.text.startswith("⚠️") and expected in failed.text, failed.text
        assert await harness.services.storage.guides.get("2611.10001", 1, "en") is None
        again = await press_for_guide(harness, LAB, alert)
        assert "Reading guide" in again.text
        assert len(fake_llm.requests) == 2
    assert KEY not in caplog.text


async def test_no_endpoint_no_button(tmp_path: Path, fake_telegram: FakeTelegram,
                                     fake_arxiv: FakeArxivServer) -> None:
    async with running(tmp_path, fake_telegram, fake_arxiv, None) as harness:
        alert = await alert_in(harness, LAB)
        assert not [d for d in alert.callback_data if d.startswith("v1:g:")]
        assert "🧠 Guide" not in alert.button_texts
        card = await harness.ask(LAB, "/paper 2611.10002")
        assert "🧠 Guide" not in card.button_texts
        reply = await harness.ask(LAB, "/guide 2611.10002")
        assert "not set up" in reply.text
        assert "guide" not in dict(harness.tg.commands[""])


async def test_paper_cards_carry_the_button_and_stats_count_guides(harness: Harness) -> None:
    await alert_in(harness, LAB)
    card = await harness.ask(LAB, "/paper 2611.10003")
    assert "🧠 Guide" in card.button_texts
    await press_for_guide(harness, LAB, card)
    stats = await harness.ask(LAB, "/stats")
    assert "AI reading guides: +1 in 24 h" in stats.text
    harness.clock.advance(86400 + 1)
    stats = await harness.ask(LAB, "/stats")
    assert "AI reading guides: +0 in 24 h" in stats.text
    assert "guide" in dict(harness.tg.commands[""])


async def test_the_key_never_reaches_the_log(tmp_path: Path, fake_telegram: FakeTelegram,
                                             fake_arxiv: FakeArxivServer,
                                             fake_llm: FakeLLM) -> None:
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, LLM_API_URL=fake_llm.api_url,
                             LLM_API_KEY=KEY, LLM_MODEL="m", LOG_LEVEL="DEBUG")
    root = logging.getLogger()
    saved = root.handlers[:], root.level
    try:
        configure_logging(settings)
        stream = io.StringIO()
        root.handlers[0].stream = stream  # type: ignore[attr-defined]
        logging.getLogger("httpx").info("request with Authorization: Bearer %s", KEY)
        logging.getLogger("bot").warning("settings %r", settings)
        assert KEY not in stream.getvalue() and "***" in stream.getvalue()
        assert KEY not in repr(settings)
    finally:
        root.handlers[:], _ = saved[0], root.setLevel(saved[1])


async def test_a_paper_the_bot_never_saw_is_looked_up_on_arxiv_first(
        harness: Harness, fake_llm: FakeLLM) -> None:
    harness.arxiv.set_api_papers([make_paper(77, title="Diffusion for tabular data")])
    before = len(harness.tg.messages(LAB))
    harness.tg.send_command(LAB, "/guide 2611.10077")
    guide = await finished_reply(harness, LAB, before)
    assert "Diffusion for tabular data" in guide.text and "arXiv:2611.10077v1" in guide.text
    assert "Diffusion for tabular data" in fake_llm.requests[0].user_text
    missing = await harness.ask(LAB, "/guide 2611.99999")
    assert "arXiv has no paper 2611.99999" in missing.text
    assert len(fake_llm.requests) == 1

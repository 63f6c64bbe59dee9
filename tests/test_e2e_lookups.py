"""Look-ups and long work through the real bot: other chats keep being answered while arXiv
hangs, chats are served in turn and batched, misses are remembered, and a long /export shows
its progress."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import bibtexparser
import pytest

from bot.core.clock import ManualClock
from bot.services.container import ProgressPolicy
from tests.conftest import Harness, make_paper, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

NOISY, ALICE, BOB = 9301, 9302, 9303


@pytest.fixture(params=[0.3])
async def gapped(request: pytest.FixtureRequest, tmp_path: Path, fake_telegram: FakeTelegram,
                 fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    """The bot with a real politeness gap (shorter than arXiv's 3 s, to keep tests short)."""
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv,
                             ARXIV_MIN_INTERVAL_SECONDS=str(request.param))
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


def api_requests(harness: Harness) -> list[list[str]]:
    return [r.query["id_list"][0].split(",") for r in harness.arxiv.requests
            if r.path == "/api/query"]


async def test_another_chat_is_answered_while_paper_waits_on_a_hanging_arxiv(
        harness: Harness) -> None:
    harness.arxiv.set_api_papers([make_paper(50)])
    harness.arxiv.delay_next(25, path="/api")  # arXiv takes the request and says nothing
    harness.tg.send_command(ALICE, "/paper 2611.10050")
    await harness.tg.wait_for(lambda: harness.tg.calls_of("sendChatAction"),
                              what="Alice's look-up to start")

    help_reply = await harness.ask(BOB, "/help")
    assert "Following papers" in help_reply.text
    assert not any("slow" in m.text for m in harness.tg.messages(ALICE)), \
        "Bob was answered while Alice's look-up still waited"

    progress = await harness.tg.wait_for_message(ALICE, "Looking up 2611.10050")
    final = await harness.tg.wait_for(
        lambda: "slow" in (m := harness.tg.message(ALICE, progress.message_id)).text and m,
        timeout=15, what="Alice to hear that arXiv is slow")
    assert "arXiv is slow right now; try again in a minute." in final.text
    assert len(harness.tg.messages(ALICE)) == 1, "the progress message became the answer"


async def test_a_second_chats_paper_is_served_before_the_noisy_chats_tenth(
        gapped: Harness) -> None:
    harness = gapped
    harness.arxiv.set_api_papers([make_paper(n) for n in range(1, 40)])
    release = harness.arxiv.hold_next(path="/api")  # the noisy chat's first look-up is slow
    for n in range(1, 11):
        harness.tg.send_command(NOISY, f"/paper 2611.{10000 + n}")
    await harness.tg.wait_for(lambda: harness.arxiv.held == 1,
                              what="the noisy chat's first look-up to reach arXiv")
    harness.tg.send_command(ALICE, "/paper 2611.10030")
    # One chat's commands run one after another: the noisy chat has one look-up out, Alice
    # one queued behind it.
    await harness.tg.wait_for(lambda: harness.services.lookups.waiting() == 2,
                              what="Alice's look-up to wait behind the noisy chat's")
    release.set()
    card = await harness.tg.wait_for_message(ALICE, "part 30", timeout=15)
    assert "⭐ Save" in card.button_texts
    requests = api_requests(harness)
    assert "2611.10030" in requests[1], "Alice's paper went out with the next request"

    await harness.tg.wait_for(
        lambda: sum("part" in m.text for m in harness.tg.messages(NOISY)) == 10, timeout=30,
        what="the noisy chat's ten cards, one after another")
    answers = harness.tg.calls_of("sendMessage") + harness.tg.calls_of("editMessageText")
    alice_at = min(c.at for c in answers if "part 30" in c.params.get("text", ""))
    tenth_at = min(c.at for c in answers if "part 10" in c.params.get("text", ""))
    assert alice_at < tenth_at


@pytest.mark.parametrize("gapped", [1.0], indirect=True)
async def test_look_ups_from_several_chats_share_one_request(
        gapped: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    harness = gapped
    harness.arxiv.set_api_papers([make_paper(n) for n in range(1, 10)])
    await harness.ask(ALICE, "/paper 2611.10009")  # the gap starts now
    # The gap lasts until all five have queued, however slow the machine is to hand the bot
    # their commands (a 1 s gap was not always enough on a loaded one).
    gap_open = True
    monkeypatch.setattr(harness.services.arxiv, "_gap_left", lambda: 0.01 if gap_open else 0.0)
    chats = range(9400, 9405)
    for offset, chat in enumerate(chats, start=1):
        harness.tg.send_command(chat, f"/paper 2611.{10000 + offset}")
    await harness.tg.wait_for(lambda: harness.services.lookups.waiting() == 5,
                              what="the five look-ups to queue")
    gap_open = False
    for offset, chat in enumerate(chats, start=1):
        await harness.tg.wait_for_message(chat, f"part {offset}", timeout=10)
    assert [len(ids) for ids in api_requests(harness)] == [1, 5]


async def test_a_paper_arxiv_does_not_have_is_asked_for_once(harness: Harness) -> None:
    for _ in range(3):
        answer = await harness.ask(ALICE, "/paper 2611.99999")
        assert "arXiv has no paper 2611.99999" in answer.text
    answer = await harness.ask(BOB, "https://arxiv.org/abs/2611.99999")
    assert "no paper" in answer.text
    assert api_requests(harness) == [["2611.99999"]]


async def test_a_long_export_shows_and_edits_its_progress(harness: Harness) -> None:
    harness.services.progress = ProgressPolicy(show_after=0, edit_every=0)
    await harness.ask(ALICE, "/start")
    store = harness.services.storage
    papers = [make_paper(n) for n in range(1, 601)]
    await store.papers.cache_lookups(papers, harness.clock.now())
    for paper in papers:
        await store.saved.save(ALICE, paper.arxiv_id, 1, harness.clock.now())

    harness.tg.send_command(ALICE, "/export")
    [document] = await harness.tg.wait_for(lambda: harness.tg.documents(ALICE),
                                           timeout=30, what="the .bib file")
    assert len(bibtexparser.parse_string(document.content.decode()).entries) == 600
    await harness.settle()

    actions = [c.params["action"] for c in harness.tg.calls_of("sendChatAction")]
    assert "upload_document" in actions
    progress_texts = [c.params["text"] for c in harness.tg.calls_of("sendMessage")
                      if c.params["chat_id"] == ALICE][1:]
    edits = [c.params["text"] for c in harness.tg.calls_of("editMessageText")
             if c.params["chat_id"] == ALICE]
    assert progress_texts == ["📦 Exporting your library: 0/600 papers…"]
    assert edits == [f"📦 Exporting your library: {done}/600 papers…"
                     for done in (250, 500, 600)]
    assert len(harness.tg.messages(ALICE)) == 1, "the progress message is gone with the file"

"""Hugging Face community picks, end to end: the real bot against fake Telegram, arXiv and
Hugging Face servers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.core.clock import ManualClock
from tests.conftest import Harness, make_paper, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.huggingface_server import FakeHuggingFace, daily_entry
from tests.fakes.telegram_server import FakeTelegram, SentMessage

LAB = 7201
GRAPHS = 7202
ADMIN = 1  # conftest's ADMIN_CHAT_IDS


@pytest.fixture
def fake_hf() -> Iterator[FakeHuggingFace]:
    with FakeHuggingFace() as hf:
        yield hf


@pytest.fixture
async def harness(tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
                  fake_hf: FakeHuggingFace) -> AsyncIterator[Harness]:
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, HF_PAPERS_URL=fake_hf.url)
    clock = ManualClock(time.time())
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


def today(harness: Harness) -> str:
    return datetime.fromtimestamp(harness.clock.now(), UTC).date().isoformat()


PAPERS = [
    make_paper(1, title="Sparse routers for long-context attention"),
    make_paper(2, title="Message passing in graph neural networks at scale"),
    make_paper(3, title="Quantized adapters for speech models"),
]
ONLY_ON_HF = make_paper(9, title="Graph neural networks meet diffusion",
                        categories=("cs.CV",))


def serve_picks(harness: Harness, hf: FakeHuggingFace) -> None:
    """Today's list: paper 1 (42 upvotes, code), paper 2 (7), and one arXiv paper the bot has
    never seen (15 upvotes), which only the arXiv API knows."""
    day = today(harness)
    hf.set_day(day, [
        daily_entry(PAPERS[1], upvotes=7, day=day),
        daily_entry(PAPERS[0], upvotes=42, comments=3, day=day,
                    github_repo="https://github.com/example-lab/sparse-router",
                    github_stars=1234, project_page="https://example-lab.github.io/router"),
        daily_entry(ONLY_ON_HF, upvotes=15, day=day),
    ])
    harness.arxiv.set_api_papers([ONLY_ON_HF])


def title_of(message: SentMessage) -> str:
    """The paper's title: the first line, without the 🆕 / 🔄 badge before it."""
    return message.text.splitlines()[0].removeprefix("🆕 ")


def titles(messages: list[SentMessage]) -> list[str]:
    return [title_of(m) for m in messages]


async def test_an_alert_for_a_listed_paper_carries_the_badge(harness: Harness,
                                                             fake_hf: FakeHuggingFace) -> None:
    await harness.ask(LAB, "/follow cs.LG")
    serve_picks(harness, fake_hf)
    report = await harness.services.community.poll()
    assert (report.outcome, report.picks, report.new, report.looked_up) == ("ok", 3, 3, 1)
    assert fake_hf.requests[0].query["date"] == [today(harness)]
    harness.serve_feed(PAPERS)
    await harness.poll()
    alerts = {title_of(m): m for m in harness.tg.messages(LAB) if "arXiv:" in m.text}
    listed = alerts["Sparse routers for long-context attention"]
    assert ("🤗 42 upvotes · 3 comments · code: github.com/example-lab/sparse-router (★ 1,234) "
            "· project page") in listed.text
    assert 'href="https://github.com/example-lab/sparse-router"' in listed.sent_text
    assert "🤗 7 upvotes" in alerts["Message passing in graph neural networks at scale"].text
    assert "🤗" not in alerts["Quantized adapters for speech models"].text


async def test_the_badge_in_chinese(harness: Harness, fake_hf: FakeHuggingFace) -> None:
    await harness.ask(LAB, "/lang zh")
    await harness.ask(LAB, "/follow cs.LG")
    serve_picks(harness, fake_hf)
    await harness.services.community.poll()
    harness.serve_feed(PAPERS[:1])
    await harness.poll()
    [alert] = [m for m in harness.tg.messages(LAB) if "arXiv:" in m.text]
    assert "🤗 42 个赞 · 3 条评论 · 代码： github.com/example-lab/sparse-router" in alert.text


async def test_trending_lists_todays_picks_by_upvotes_with_the_usual_buttons(
        harness: Harness, fake_hf: FakeHuggingFace) -> None:
    harness.serve_feed(PAPERS)
    await harness.poll()
    serve_picks(harness, fake_hf)
    await harness.services.community.poll()
    before = len(harness.tg.messages(LAB))
    harness.tg.send_command(LAB, "/trending")
    messages = await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(LAB)) >= before + 4 and found,
        what="/trending's heading and three cards")
    heading, *cards = messages[before:]
    assert f"Hugging Face community picks · {today(harness)}: 3 of 3" in heading.text
    assert titles(cards) == [
        "Sparse routers for long-context attention", "Graph neural networks meet diffusion",
        "Message passing in graph neural networks at scale"]
    assert "🤗 15 upvotes" in cards[1].text and "arXiv:2611.10009v1" in cards[1].text
    assert "⭐ Save" in cards[0].button_texts and "🌐 arXiv" in cards[0].button_texts
    # The paper only Hugging Face listed was fetched through the arXiv API, then kept.
    assert any(r.path == "/api/query" and "2611.10009" in r.query.get("id_list", [""])[0]
               for r in harness.arxiv.requests)
    stored = await harness.services.storage.papers.get("2611.10009")
    assert stored is not None and stored.categories == ("cs.CV",)
    await harness.press(LAB, cards[1].message_id, "v1:s:2611.10009v1")
    assert await harness.services.storage.saved.count(LAB) == 1


async def test_trending_mine_keeps_the_picks_matching_the_chat(
        harness: Harness, fake_hf: FakeHuggingFace) -> None:
    await harness.ask(GRAPHS, '/follow ti:"graph neural"')
    harness.serve_feed(PAPERS)
    await harness.poll()
    serve_picks(harness, fake_hf)
    await harness.services.community.poll()
    before = len(harness.tg.messages(GRAPHS))
    harness.tg.send_command(GRAPHS, "/trending mine")
    await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(GRAPHS)) >= before + 3 and found,
        what="/trending mine's heading and two cards")
    await harness.settle()
    heading, *cards = harness.tg.messages(GRAPHS)[before:]
    assert "matching your subscriptions" in heading.text and "2 of 2" in heading.text
    assert titles(cards) == ["Graph neural networks meet diffusion",
                             "Message passing in graph neural networks at scale"]
    nothing = await harness.ask(LAB, "/trending mine")  # follows nothing
    assert "None of today's 3 community picks" in nothing.text
    usage = await harness.ask(LAB, "/trending yesterday")
    assert "/trending mine" in usage.text


async def test_stats_count_both_sources(harness: Harness, fake_hf: FakeHuggingFace) -> None:
    harness.serve_feed(PAPERS)
    await harness.poll()
    serve_picks(harness, fake_hf)
    await harness.services.community.poll()
    stats = await harness.ask(LAB, "/stats")
    assert "Last 24 h: +3 new papers" in stats.text
    assert "HF community picks: +3 in 24 h, +3 in 7 days" in stats.text
    assert "daily_papers: last scan" in stats.text
    harness.clock.advance(2 * 86400)
    stats = await harness.ask(LAB, "/stats")
    assert "HF community picks: +0 in 24 h, +3 in 7 days" in stats.text


async def test_an_unchanged_list_costs_a_304(harness: Harness, fake_hf: FakeHuggingFace) -> None:
    serve_picks(harness, fake_hf)
    await harness.services.community.poll()
    again = await harness.services.community.poll()
    assert again.outcome == "not-modified"
    assert fake_hf.requests[-1].headers.get("if-none-match") and \
        fake_hf.requests[-1].status == 304
    source = await harness.services.storage.sources.get(fake_hf.url)
    assert source is not None and source.healthy and source.last_items == 3


async def test_a_failing_hugging_face_shows_in_status_and_arxiv_alerts_still_arrive(
        harness: Harness, fake_hf: FakeHuggingFace) -> None:
    await harness.ask(LAB, "/follow cs.LG")
    fake_hf.fail_next(500, times=3)
    report = await harness.services.community.poll()
    assert report.outcome == "error" and len(fake_hf.requests) == 3
    harness.serve_feed(PAPERS)
    await harness.poll()
    alerts = [m for m in harness.tg.messages(LAB) if "arXiv:" in m.text]
    assert len(alerts) == 3 and not any("🤗" in m.text for m in alerts)
    status = await harness.ask(ADMIN, "/status")
    lines = status.text.splitlines()
    hf_line = next(i for i, line in enumerate(lines) if "daily_papers" in line)
    assert lines[hf_line].startswith("❌")
    assert "HTTP 500" in "\n".join(lines[hf_line:hf_line + 3])
    assert any(line.startswith("✅") and "cs" in line for line in lines)
    # The arXiv poll keeps the Hugging Face record (it forgets only feeds of its own).
    assert await harness.services.storage.sources.get(fake_hf.url) is not None
    # It recovers on the next poll, and the failure clears.
    serve_picks(harness, fake_hf)
    assert (await harness.services.community.poll()).outcome == "ok"
    status = await harness.ask(ADMIN, "/status")
    assert "✅ daily_papers" in status.text


async def test_trending_before_any_pick(harness: Harness) -> None:
    empty = await harness.ask(LAB, "/trending")
    assert "No Hugging Face community picks yet" in empty.text
    assert "trending" in dict(harness.tg.commands[""])


async def test_trending_when_hugging_face_is_turned_off(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, HF_PAPERS_URL="off")
    app = await start_bot(settings, ManualClock(time.time()))
    try:
        harness = Harness(fake_telegram, fake_arxiv, app, ManualClock(time.time()), settings)
        off = await harness.ask(LAB, "/trending")
        assert "turned off" in off.text
        assert "trending" not in dict(fake_telegram.commands[""])
        assert harness.services.community is None
    finally:
        await stop_bot(app)

"""The Mini App's pages over HTTP, in English and Chinese: what each shows, and that each change
goes through the services the chat commands use, so the chat sees it (`/list`, `/saved`)."""

from __future__ import annotations

import html
from collections.abc import AsyncIterator

import pytest

from tests.conftest import ON_BOTH_ENGINES, Harness, make_paper
from tests.fakes.webapp import WebUnderTest, announce_three_papers, web_app

ADA = 7001


@pytest.fixture
async def web(harness: Harness) -> AsyncIterator[WebUnderTest]:
    await announce_three_papers(harness)
    async with web_app(harness) as under_test:
        yield under_test


def text(response) -> str:
    assert response.status_code == 200, response.text
    return html.unescape(response.text)


async def test_front_page_shows_the_days_figures_sources_and_a_chart(web: WebUnderTest) -> None:
    page = text(await web.get("front", web.sign(ADA)))
    assert "+3" in page and "new papers" in page
    assert "<svg" in page and page.count('<rect class="new"') == 14
    assert "cs" in page and "last scan" in page
    # A chat the bot has no record of takes the language of the user's Telegram.
    chinese = text(await web.get("front", web.sign(ADA + 1, language_code="zh-hans")))
    assert "arXiv 速览" in chinese and "新增论文" in chinese


async def test_library_search_filter_sort_card_save_and_bibtex(web: WebUnderTest) -> None:
    harness, init = web.harness, web.sign(ADA)
    for number in (1, 2, 3):
        saved = text(await web.post("save", init, {"id": f"2611.{10000 + number}"}))
        assert "Saved to your library" in saved
        harness.clock.advance(60)
    listed = await harness.ask(ADA, "/saved")
    assert "Sparse attention at scale" in listed.text, "the chat sees the Mini App's saves"
    everything = text(await web.get("library", init))
    assert "3 papers" in everything
    found = text(await web.get("library", init, q="nunez"))
    assert "1 paper" in found and "Graph neural networks" in found
    assert "Sparse attention" not in found
    by_id = text(await web.get("library", init, q="2611.10003"))
    assert "Diffusion with α-divergence" in by_id, "LaTeX shown as in alerts"
    in_category = text(await web.get("library", init, cat="stat"))
    assert "1 paper" in in_category
    oldest_saved_last = text(await web.get("library", init, sort="saved"))
    assert oldest_saved_last.index("Diffusion") < oldest_saved_last.index("Sparse")
    card = text(await web.get("paper", init, id="2611.10002"))
    assert "Graph neural networks for chemistry" in card and "act/unsave" in card
    bibtex = text(await web.get("bibtex", init, q="nunez"))
    assert bibtex.count("@article") + bibtex.count("@misc") == 1
    removed = text(await web.post("unsave", init, {"id": "2611.10002"}))
    assert "Removed from your library" in removed and "act/save" in removed
    listed = await harness.ask(ADA, "/saved")
    assert "Graph neural networks" not in listed.text


async def test_subscriptions_preview_follow_edit_and_remove(web: WebUnderTest) -> None:
    harness, init = web.harness, web.sign(ADA)
    preview = text(await web.post("preview", init, {"query": "ti:sparse"}))
    assert "would have matched 1 paper" in preview and "Sparse attention at scale" in preview
    broken = text(await web.post("preview", init, {"query": "cs.LG AND ("}))
    assert "couldn't read that query" in broken
    followed = text(await web.post("follow", init, {"query": "ti:sparse"}))
    assert "Following #1" in followed
    [sub] = await harness.services.subscriptions.for_chat(ADA)
    assert "1 match this week" in followed
    editing = text(await web.get("subscriptions", init, edit=str(sub.id)))
    assert 'value="ti:sparse"' in editing
    edited = text(await web.post("follow", init, {"query": "ti:graph",
                                                  "replacing": str(sub.id)}))
    assert "Following" in edited
    assert "ti:graph" in (await harness.ask(ADA, "/list")).text
    assert "ti:sparse" not in (await harness.ask(ADA, "/list")).text
    [sub] = await harness.services.subscriptions.for_chat(ADA)
    gone = text(await web.post("unfollow", init, {"id": str(sub.id)}))
    assert "Removed: ti:graph" in gone
    assert "don't follow anything" in (await harness.ask(ADA, "/list")).text


async def test_settings_change_as_the_commands_do(web: WebUnderTest) -> None:
    harness, init = web.harness, web.sign(ADA)
    page = text(await web.post("setting", init, {"setting": "digest", "value": "08:30"}))
    assert "08:30" in page
    record = await harness.services.chats.get(ADA)
    assert record is not None and record.digest_time == "08:30"
    bad = text(await web.post("setting", init, {"setting": "tz", "value": "Mars/Base"}))
    assert "I don't know the time zone" in bad
    text(await web.post("setting", init, {"setting": "tz", "value": "asia/shanghai"}))
    text(await web.post("setting", init, {"setting": "pause"}))
    text(await web.post("setting", init, {"setting": "foryou", "value": "on", "count": "3"}))
    assert await harness.services.chats.for_you(ADA) == 3
    chinese = text(await web.post("setting", init, {"setting": "lang", "value": "zh"}))
    assert "设置" in chinese and "推送已暂停" in chinese
    record = await harness.services.chats.get(ADA)
    assert record is not None and record.timezone == "Asia/Shanghai" and record.paused
    assert "已暂停" in (await harness.ask(ADA, "/pause")).text
    thumbs = text(await web.post("setting", init, {"setting": "thumbs", "value": "off"}))
    assert "新的推送不再带 👍 / 👎 按钮" in thumbs
    record = await harness.services.chats.get(ADA)
    assert record is not None and not record.rating_buttons


async def test_an_edit_at_the_limit_of_fifty_replaces_the_subscription(
        web: WebUnderTest) -> None:
    harness, init = web.harness, web.sign(ADA)
    await harness.ask(ADA, "/start")
    for number in range(50):
        await harness.services.subscriptions.follow(ADA, f"ti:word{number}")
    [first, *_] = await harness.services.subscriptions.for_chat(ADA)
    added = text(await web.post("follow", init, {"query": "ti:another"}))
    assert "the most it can have" in added
    edited = text(await web.post("follow", init, {"query": "ti:another",
                                                  "replacing": str(first.id)}))
    assert "Following #50" in edited
    shown = [s.display for s in await harness.services.subscriptions.for_chat(ADA)]
    assert len(shown) == 50 and "ti:word0" not in shown and shown[-1] == "ti:another"


async def test_a_cards_later_version_says_what_changed(web: WebUnderTest) -> None:
    harness, init = web.harness, web.sign(ADA)
    harness.serve_feed([make_paper(1, version=2, title="Routing attention at scale")])
    await harness.poll()
    card = text(await web.get("paper", init, id="2611.10001"))
    assert "Routing attention at scale" in card and "v2" in card
    assert "Title was: <i>Sparse attention at scale</i>" in card


@ON_BOTH_ENGINES
async def test_a_long_library_lists_its_first_rows_and_reaches_every_paper(
        web: WebUnderTest) -> None:
    """Only the first rows are read and rendered; "Show more" lists the rest. A search finds
    a paper beyond them, by title words, author or arXiv id, on either engine."""
    harness, init = web.harness, web.sign(ADA)
    await harness.ask(ADA, "/start")
    papers = [make_paper(100 + n, title=f"Topic number {n} of many",
                         authors=("Eiko Yoneki", f"Writer{n} Smith")) for n in range(60)]
    await harness.services.storage.papers.upsert_many(papers, harness.clock.now())
    for number, paper in enumerate(papers):
        await harness.services.library.save(ADA, paper.arxiv_id, 1, None)
        harness.clock.advance(1 + number % 2)
    first = text(await web.get("library", init))
    assert "60 papers" in first and first.count('class="title"') == 50
    assert "Topic number 59 of many" in first, "newest save first"
    assert "Topic number 9 of many" not in first and "Show more" in first
    more = text(await web.get("library", init, shown="100"))
    assert more.count('class="title"') == 60 and "Show more" not in more
    assert "Topic number 0 of many" in more
    for typed in ("topic 3", "writer3", "2611.10103", "arXiv:2611.10103v1"):
        found = text(await web.get("library", init, q=typed))
        assert "Topic number 3 of many" in found, typed
    assert "1 paper" in text(await web.get("library", init, q="writer3"))
    assert "10 papers" in text(await web.get("library", init, q="2611.1010")), "an id's start"

"""Inline mode end to end: a researcher types `@bot …` in another chat and shares a paper's
card there; the library comes first, the papers the bot stored lately next."""

from __future__ import annotations

from datetime import UTC, datetime

from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import InlineAnswer
from tests.test_e2e_ranking import day

USER = 7501
LAB_GROUP = -100_7502
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


async def ask_inline(harness: Harness, text: str, user: int = USER) -> InlineAnswer:
    query = harness.tg.inline_query(user, text)
    return await harness.tg.wait_for(lambda: harness.tg.inline_answer(query),
                                     what=f"the answer to the inline query {text!r}")


def titles(answer: InlineAnswer) -> list[str]:
    return [result["title"] for result in answer.results]


async def save(harness: Harness, arxiv_id: str) -> None:
    card = await harness.ask(USER, f"/paper {arxiv_id}")
    button = next(b for b in card.buttons if "Save" in b["text"])
    await harness.press(USER, card.message_id, button["callback_data"])


async def test_words_find_the_library_first_then_the_stored_papers(harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)  # five graph and five quantum papers
    await harness.poll()
    await save(harness, "2611.10009")  # a quantum paper ("... for social networks")

    answer = await ask_inline(harness, "quantum error correc")

    assert answer.is_personal and answer.cache_time == 30
    assert answer.results[0]["id"] == "2611.10009", "the library first"
    assert len(answer.results) == 5 and all("Quantum error correction" in title
                                             for title in titles(answer))
    assert titles(await ask_inline(harness, "graph neural traffic")) == [
        "Graph neural networks for traffic"]
    assert (await ask_inline(harness, "nothing-like-this")).results == []


async def test_an_id_offers_its_card_with_links_only_and_it_lands_in_the_other_chat(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    query = harness.tg.inline_query(USER, "https://arxiv.org/abs/2611.10003")
    answer = await harness.tg.wait_for(lambda: harness.tg.inline_answer(query))
    [result] = answer.results
    assert result["title"] == "Graph neural networks for traffic"

    shared = harness.tg.send_inline_result(LAB_GROUP, query, result["id"])

    assert "Graph neural networks for traffic" in shared.text and "arXiv:2611.10003" in shared.text
    assert "Matched" not in shared.text
    assert [b["text"] for b in shared.buttons] == ["⭐ Save", "🌐 arXiv", "📥 PDF"]
    assert all("callback_data" not in b for b in shared.buttons), "links only in another chat"
    save_link = shared.buttons[0]["url"]
    assert save_link == f"https://t.me/{harness.app.bot.username}?start=paper_2611_10003"

    # The colleague follows the link: the bot opens the paper, whose card saves it.
    card = await harness.ask(7503, "/start paper_2611_10003")
    assert "Graph neural networks for traffic" in card.text
    button = next(b for b in card.buttons if b["text"] == "⭐ Save")
    await harness.press(7503, card.message_id, button["callback_data"])
    assert [p.arxiv_id for p in await harness.services.storage.saved.all(7503)] == [
        "2611.10003"]


async def test_typing_an_unknown_id_costs_arxiv_one_request_for_the_last_keystroke(
        harness: Harness) -> None:
    harness.arxiv.set_api_papers([make_paper(10001, title="Late-breaking sparse routing")])
    typed = "2611.20001"
    queries = [harness.tg.inline_query(USER, typed[:n]) for n in range(4, len(typed) + 1)]

    answers = [await harness.tg.wait_for(lambda q=q: harness.tg.inline_answer(q))
               for q in queries]

    assert titles(answers[-1]) == ["Late-breaking sparse routing"]
    assert all(answer.results == [] for answer in answers[:-1])
    lookups = [r for r in harness.arxiv.requests if "id_list" in r.query]
    assert len(lookups) == 1, lookups
    # Asked again, it is stored: no second request.
    assert titles(await ask_inline(harness, typed)) == ["Late-breaking sparse routing"]
    assert len([r for r in harness.arxiv.requests if "id_list" in r.query]) == 1


async def test_no_text_offers_the_newest_saved_papers_in_the_users_language(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    await save(harness, "2611.10002")
    await harness.ask(USER, "/lang zh")

    answer = await ask_inline(harness, "")

    assert [r["id"] for r in answer.results] == ["2611.10002"]
    buttons = answer.results[0]["reply_markup"]["inline_keyboard"][0]
    assert [b["text"] for b in buttons] == ["⭐ 收藏", "🌐 arXiv 页面", "📥 PDF"]


async def test_a_chinese_user_shares_a_card_in_chinese_and_searches_words(
        harness: Harness) -> None:
    """A researcher whose Telegram is in Chinese, who never wrote to the bot, shares a paper
    into a lab group: the card's buttons and the result's line of authors are in Chinese."""
    harness.serve_feed([*day(), make_paper(30, authors=(
        "Ada Lovelace", "Alan Turing", "Grace Hopper", "Emmy Noether"))],
                       announce_date=DAY1)
    await harness.poll()
    reader = 7601

    query = harness.tg.inline_query(reader, "2611.10030", language_code="zh-hans")
    answer = await harness.tg.wait_for(lambda: harness.tg.inline_answer(query))
    [result] = answer.results
    assert "等" in result["description"], "authors shortened as Chinese writes it"
    shared = harness.tg.send_inline_result(LAB_GROUP, query, result["id"])

    assert "arXiv:2611.10030" in shared.text
    assert [b["text"] for b in shared.buttons] == ["⭐ 收藏", "🌐 arXiv 页面", "📥 PDF"]
    words = harness.tg.inline_query(reader, "graph neural traffic", language_code="zh-hans")
    found = await harness.tg.wait_for(lambda: harness.tg.inline_answer(words))
    assert titles(found) == ["Graph neural networks for traffic"]

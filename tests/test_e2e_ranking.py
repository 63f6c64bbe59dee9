"""The ranker end to end: /similar and the ranking line of /stats, through the fake servers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage
from tests.for_you_setup import TOPICS

CHAT = 7301
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)

SUBJECTS = ("molecules", "citations", "traffic", "proteins", "social networks")
FIRST_NUMBER = {"graph": 200, "quantum": 100}  # the second day's papers, by topic


def second_day(topic: str, subjects: tuple[str, ...]) -> list:
    """The second day's papers of one topic, one a subject, all by one author."""
    title, abstract = TOPICS[topic]
    return [make_paper(FIRST_NUMBER[topic] + n, title=title.format(x=s),
                       abstract=abstract.format(x=s), authors=(f"{topic[0].upper()} Author",))
            for n, s in enumerate(subjects)]


def day() -> list:
    papers, number = [], 1
    for topic, (title, abstract) in TOPICS.items():
        for subject in SUBJECTS:
            papers.append(make_paper(number, title=title.format(x=subject),
                                     abstract=abstract.format(x=subject),
                                     authors=(f"{topic.title()} Author{number}",)))
            number += 1
    return papers


async def next_days_digest(harness: Harness, chat_id: int) -> tuple[SentMessage, list[str]]:
    """The next day's twelve matches, quantum ones first by id (so a digest in arrival order
    would open with them), polled: the digest the chat gets, and its entry lines."""
    subjects = (*SUBJECTS, "sensors")
    harness.serve_feed(second_day("quantum", subjects) + second_day("graph", subjects),
                       announce_date=DAY2)
    before = len(harness.tg.messages(chat_id))
    await harness.poll()
    [digest] = harness.tg.messages(chat_id)[before:]
    return digest, [line for line in digest.text.splitlines() if line.split(".")[0].isdigit()]


async def test_similar_lists_the_papers_on_the_same_topic_first(harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()

    reply = await harness.ask(CHAT, "/similar 2611.10001")

    assert "nearest to 2611.10001" in reply.text
    lines = [line for line in reply.text.splitlines() if line[:2] in {"1.", "2.", "3."}]
    assert len(lines) == 3 and all("Graph neural networks" in line for line in lines), reply.text
    assert "2611.10001" not in reply.text.split("\n", 2)[2], "not the paper itself"

    unknown = await harness.ask(CHAT, "/similar 2611.99999")
    assert "/paper 2611.99999" in unknown.text
    bad = await harness.ask(CHAT, "/similar nonsense")
    assert "doesn't look like an arXiv ID" in bad.text


async def test_stats_counts_labels_and_says_when_the_model_is_on(harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    reply = await harness.ask(CHAT, "/stats")
    assert "Ranking: 0 labels" in reply.text and "5 to go" in reply.text

    for number in range(1, 6):  # the five graph papers, saved as from their cards
        card = await harness.ask(CHAT, f"/paper 2611.1000{number}")
        save = next(b for b in card.buttons if "Save" in b["text"])
        await harness.press(CHAT, card.message_id, save["callback_data"])

    reply = await harness.ask(CHAT, "/stats")
    assert "Ranking: 5 labels" in reply.text and "model is active" in reply.text

    zh = await harness.ask(CHAT, "/lang zh")
    assert zh is not None
    reply = await harness.ask(CHAT, "/stats")
    assert "个性化排序：5 条反馈" in reply.text and "模型已启用" in reply.text


async def test_a_digest_lists_the_chats_kind_of_paper_first_once_it_has_a_model(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    for number in range(1, 6):  # the chat saves the five graph papers
        card = await harness.ask(CHAT, f"/paper 2611.1000{number}")
        save = next(b for b in card.buttons if "Save" in b["text"])
        await harness.press(CHAT, card.message_id, save["callback_data"])
    reply = await harness.ask(CHAT, "/follow cs.LG")
    assert "Following" in reply.text
    digest, entries = await next_days_digest(harness, CHAT)

    assert len(entries) == 12, digest.text
    assert all("Graph neural networks" in line for line in entries[:6]), digest.text
    assert all("Quantum error correction" in line for line in entries[6:]), digest.text
    # Save-by-number follows the shown order: button 1 saves the first graph paper shown.
    first = next(b for b in digest.buttons if b["text"] == "💾 1")
    await harness.press(CHAT, digest.message_id, first["callback_data"])
    saved = await harness.services.storage.saved.all(CHAT)
    assert any(p.title.startswith("Graph neural networks") and p.arxiv_id >= "2611.10200"
               for p in saved)


async def test_the_similar_button_of_a_saved_paper_lists_its_neighbours(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    card = await harness.ask(CHAT, "/paper 2611.10007")  # a quantum paper
    save = next(b for b in card.buttons if "Save" in b["text"])
    await harness.press(CHAT, card.message_id, save["callback_data"])
    library = await harness.ask(CHAT, "/saved")
    assert "🔎 1" in library.button_texts and "✖ 1" in library.button_texts

    similar = next(b for b in library.buttons if b["text"] == "🔎 1")
    await harness.press(CHAT, library.message_id, similar["callback_data"])

    reply = harness.tg.messages(CHAT)[-1]
    assert "nearest to 2611.10007" in reply.text
    entries = [line for line in reply.text.splitlines() if line[:2] in {"1.", "2.", "3."}]
    assert entries and all("Quantum error correction" in line for line in entries), reply.text


async def test_for_you_sends_what_the_subscriptions_missed_with_reasons_once_a_day(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    for number in range(1, 6):  # the chat saves the five graph papers of day one
        card = await harness.ask(CHAT, f"/paper 2611.1000{number}")
        save = next(b for b in card.buttons if "Save" in b["text"])
        await harness.press(CHAT, card.message_id, save["callback_data"])
    reply = await harness.ask(CHAT, "/follow ti:quantum")
    assert "Following" in reply.text
    reply = await harness.ask(CHAT, "/foryou 3")
    assert "For you is on" in reply.text and "up to 3 papers" in reply.text
    # Day two: four graph papers its subscription does not match, four quantum ones it does.
    subjects = ("sensors", "markets", "weather", "power grids")
    quantum = second_day("quantum", subjects)
    graph = second_day("graph", subjects)
    harness.serve_feed(quantum + graph, announce_date=DAY2)
    await harness.poll()
    before = len(harness.tg.messages(CHAT))
    assert await harness.send_for_you() == 0, "not before the chat's hour"

    harness.clock.advance(86_400)
    assert await harness.send_for_you() == 1

    [message] = harness.tg.messages(CHAT)[before:]
    assert "For you" in message.text
    entries = [line for line in message.text.splitlines() if line[:2] in {"1.", "2.", "3."}]
    assert len(entries) == 3, message.text
    assert all("Graph neural networks" in line for line in entries), "only what it missed"
    assert message.text.count("like your saved “Graph neural networks for") == 3, message.text
    assert [b["text"] for b in message.buttons] == ["💾 1", "💾 2", "💾 3"]
    assert await harness.send_for_you() == 0, "once a day"

    # Off means off.
    await harness.ask(CHAT, "/foryou off")
    harness.clock.advance(86_400)
    assert await harness.send_for_you() == 0


async def test_for_you_sends_nothing_on_a_day_nothing_clears_the_threshold(
        harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    for number in range(1, 6):  # graph papers saved
        card = await harness.ask(CHAT, f"/paper 2611.1000{number}")
        save = next(b for b in card.buttons if "Save" in b["text"])
        await harness.press(CHAT, card.message_id, save["callback_data"])
    await harness.ask(CHAT, "/follow ti:graph")
    await harness.ask(CHAT, "/foryou on")
    # Day two: only quantum papers, which the subscription misses and the model scores low.
    quantum = second_day("quantum", ("sensors", "markets", "weather"))
    harness.serve_feed(quantum, announce_date=DAY2)
    await harness.poll()
    before = len(harness.tg.messages(CHAT))
    harness.clock.advance(86_400)

    assert await harness.send_for_you() == 0
    assert len(harness.tg.messages(CHAT)) == before


async def test_foryou_without_enough_labels_says_when_it_starts(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/foryou on")
    assert "up to 5 papers" in reply.text and "5 to go" in reply.text
    reply = await harness.ask(CHAT, "/foryou lots")
    assert "/foryou off" in reply.text

"""A digest's first delivery is one message (DIGEST_MESSAGES): the most relevant entries that
fit, numbered, ending with "+N more" and a "Show more" button whose pages, each one message
with its own button, bring the rest: every match once, also after a restart, whatever order
the chat's ranking put them in. At DIGEST_MESSAGES=3 a day's digest is three messages, as it
was before."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.core.models import Paper
from bot.delivery.callbacks import DigestMore, DigestRest, decode, encode
from bot.delivery.sender import Sender
from bot.services.papers import Papers
from tests.conftest import Harness, digest_entry_ids, make_paper
from tests.fakes.telegram_server import SentMessage

LAB = 7401
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
ALERTS = 50  # a chat following 10 queries on a 2,000-paper day gets about this many


def a_days_papers() -> list[Paper]:
    """Fifty papers with titles and author lists of a real day's length, so that a digest
    takes about three messages to list them all."""
    return [make_paper(
        n, title=f"Sparse attention routers recover dense quality for long-context language "
                 f"models, part {n}",
        authors=("Eiko Yoneki", "Dirk Wübben", "Ada Lovelace", "Alan Turing"))
        for n in range(1, ALERTS + 1)]


ALL_IDS = [f"2611.{10000 + n}v1" for n in range(1, ALERTS + 1)]


async def days_digest(harness: Harness) -> list[SentMessage]:
    """The chat follows cs.LG; a poll brings it the day's fifty papers: the messages it gets."""
    await harness.ask(LAB, "/follow cs.LG")
    harness.serve_feed(a_days_papers(), announce_date=DAY1)
    before = len(harness.tg.messages(LAB))
    await harness.poll()
    return harness.tg.messages(LAB)[before:]


def more_button(message: SentMessage) -> dict | None:
    return next((b for b in message.buttons if b["text"].startswith("Show more")), None)


async def pages_behind(harness: Harness, message: SentMessage) -> list[list[SentMessage]]:
    """Presses "Show more" under `message`, then under the last message of each page it
    brings, until none has the button: the pages' messages, page by page."""
    pages = []
    while (more := more_button(message)) is not None:
        before = len(harness.tg.messages(LAB))
        await harness.press(LAB, message.message_id, more["callback_data"])
        pages.append(harness.tg.messages(LAB)[before:])
        message = pages[-1][-1]
    return pages


def numbers(message: SentMessage) -> list[int]:
    """The entry numbers a digest message shows, as its lines start."""
    return [int(line.split(".")[0]) for line in message.text.splitlines()
            if line.split(".")[0].isdigit()]


async def test_a_chat_with_fifty_alerts_gets_one_message_and_show_more_brings_each_of_the_rest_once(
    harness: Harness,
) -> None:
    [digest] = await days_digest(harness)

    shown = digest_entry_ids([digest])
    assert digest.text.startswith(f"📬 {ALERTS} new matches")
    assert 10 < len(shown) < ALERTS and len(digest.text) <= 4096
    assert numbers(digest) == list(range(1, len(shown) + 1))
    assert digest.text.rstrip().endswith(f"+{ALERTS - len(shown)} more")
    counts = await harness.services.storage.outbox.counts()
    assert counts["sent"] == ALERTS and counts["pending"] == 0, "the rest wait behind More"

    pages = await pages_behind(harness, digest)

    assert len(pages) >= 2 and all(len(page) == 1 for page in pages), "a page is a message"
    messages = [digest, *(page for [page] in pages)]
    assert digest_entry_ids(messages) == ALL_IDS, "every match once, in order"
    assert [n for m in messages for n in numbers(m)] == list(range(1, ALERTS + 1))
    assert all(len(m.text) <= 4096 for m in messages)


async def test_show_more_needs_nothing_but_the_database_so_it_outlives_a_restart(
    harness: Harness,
) -> None:
    [digest] = await days_digest(harness)
    services = harness.services
    # What a restarted bot builds: a new Papers over the same database, nothing else kept.
    restarted = Papers(services.storage, services.lookups, services.ranker, harness.clock,
                       guide=False)

    shown, data = digest_entry_ids([digest]), more_button(digest)["callback_data"]
    while data is not None:
        action = decode(data)
        assert isinstance(action, DigestRest)
        [page] = await restarted.digest_page(LAB, "en", digest.message_id, action)
        buttons = [b.callback_data for row in page.reply_markup.inline_keyboard for b in row]
        shown += [d.split(":")[2] for d in buttons if d.startswith("v1:s:")]
        data = next((d for d in buttons if d.startswith("v1:d:")), None)

    assert shown == ALL_IDS


async def test_the_most_relevant_come_first_and_show_more_brings_the_rest_each_once(
    harness: Harness,
) -> None:
    services = harness.services

    async def later_parts_first(chat_id: int, papers: Sequence[Paper]) -> list[float]:
        """A chat's ranking that likes the later parts best: the reverse of their order."""
        return [float(paper.arxiv_id.split(".")[1]) for paper in papers]

    sender = Sender(harness.app.bot, services.storage, harness.clock, services.pacer,
                    relevance=later_parts_first)
    await harness.ask(LAB, "/follow cs.LG")
    await harness.ask(LAB, "/pause")  # the bot's own drain leaves the day to `sender`
    harness.serve_feed(a_days_papers(), announce_date=DAY1)
    await harness.poll()
    await harness.ask(LAB, "/resume")
    before = len(harness.tg.messages(LAB))
    await sender.drain()
    [digest] = harness.tg.messages(LAB)[before:]

    shown = digest_entry_ids([digest])
    assert shown == ALL_IDS[::-1][:len(shown)], "the most relevant first"
    pages = await pages_behind(harness, digest)
    every = digest_entry_ids([digest, *(m for page in pages for m in page)])
    assert sorted(every) == ALL_IDS and len(every) == ALERTS, "none lost, none twice"


async def test_at_three_digest_messages_a_days_digest_is_three_messages_without_a_button(
    three_message_digests: Harness,
) -> None:
    messages = await days_digest(three_message_digests)

    assert len(messages) == 3 and [m.text[:10] for m in messages] == ["📬 50 new m"] * 3
    assert digest_entry_ids(messages) == ALL_IDS
    assert not any(more_button(m) for m in messages)


async def test_the_older_button_of_a_digest_sent_before_still_brings_its_rest(
    harness: Harness,
) -> None:
    """A digest sent before the rows behind its button were kept apart: all its rows under
    its own message id, and a button that lists them after the first ten."""
    store = harness.services.storage
    await harness.ask(LAB, "/follow cs.LG")
    await harness.ask(LAB, "/pause")
    harness.serve_feed(a_days_papers(), announce_date=DAY1)
    await harness.poll()
    rows = await store.outbox.pending_for_chat(LAB)
    button = InlineKeyboardButton("Show more ▶", callback_data=encode(DigestMore(10)))
    old = await harness.app.bot.send_message(LAB, "📬 50 new matches",
                                             reply_markup=InlineKeyboardMarkup([[button]]))
    assert await store.outbox.claim([r.id for r in rows], harness.clock.now())
    await store.outbox.mark_sent([r.id for r in rows], old.message_id, harness.clock.now())

    pages = await pages_behind(harness, harness.tg.message(LAB, old.message_id))

    assert digest_entry_ids([m for page in pages for m in page]) == ALL_IDS[10:]

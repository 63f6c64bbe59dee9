"""A researcher's alerts, end to end: the real bot against fake arXiv and fake Telegram servers.

Each test serves a day's feed from the fake arXiv, lets the bot poll it and deliver, and looks at
what arrived in each chat as a user would: which papers, how they read, what the buttons do, and
what happens when Telegram pushes back (429, 403, a migrated group, a refused message).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.core.models import AnnounceType, Feedback, Paper
from tests.conftest import ON_BOTH_ENGINES, Harness, make_paper
from tests.fakes.telegram_server import SentMessage, utf16_len

LAB = 7001  # follows cs.LG
YONEKI_FAN = 7002  # follows au:Yoneki
GNN_FAN = 7003  # follows ti:"graph neural"
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
DAY2 = DAY1 + timedelta(days=1)
DAY3 = DAY1 + timedelta(days=2)


@pytest.fixture(autouse=True)
def _timedelta_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    # PTB warns when a RetryAfter is read as an int; the bot opts in to timedelta on import.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


def alerts(harness: Harness, chat_id: int) -> list[SentMessage]:
    """The bot's alert messages in a chat (command replies left out), oldest first."""
    return [m for m in harness.tg.messages(chat_id) if "arXiv:" in m.text]


def ids_in(messages: list[SentMessage]) -> list[str]:
    """The versioned arXiv ids the messages show, in order (duplicates kept)."""
    found = []
    for message in messages:
        for word in message.text.replace("·", " ").split():
            if word.startswith("arXiv:"):
                found.append(word.removeprefix("arXiv:"))
    return found


def button(message: SentMessage, label: str) -> dict:
    """The button whose label contains `label`."""
    matches = [b for b in message.buttons if label in b["text"]]
    assert matches, f"no {label!r} button in {message.button_texts}"
    return matches[0]


async def follow(harness: Harness, chat_id: int, query: str, **kwargs: object) -> None:
    reply = await harness.ask(chat_id, f"/follow {query}", **kwargs)
    assert "Following" in reply.text, reply.text


def day_one() -> list[Paper]:
    """A small announcement day with one paper for each follower and some for nobody."""
    return [
        # cs.LG by Yoneki: the lab and the Yoneki fan.
        make_paper(1, title="Sparse attention for long contexts"),
        # cs.AI, graph neural: only the GNN fan.
        make_paper(2, title="Graph neural networks for molecules", categories=("cs.AI",),
                   authors=("Ann Lee",)),
        # Nobody follows cs.CV or this author.
        make_paper(3, title="Seeing in the dark", categories=("cs.CV",),
                   authors=("Bo Chen",)),
        # A cross-list into cs.LG, graph neural, by E. Yoneki: all three.
        make_paper(4, title="Scaling graph neural networks", categories=("cs.DC", "cs.LG"),
                   authors=("E. Yoneki",), announce_type=AnnounceType.CROSS),
        # An author who only shares a first name: nobody.
        make_paper(5, title="Robotics at home", categories=("cs.RO",),
                   authors=("Eiko Tanaka",)),
    ]


@ON_BOTH_ENGINES
async def test_a_days_feed_reaches_exactly_the_chats_that_follow_it_once(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    await follow(harness, GNN_FAN, 'ti:"graph neural"')
    harness.serve_feed(day_one(), announce_date=DAY1)

    await harness.poll()

    assert ids_in(alerts(harness, LAB)) == ["2611.10001v1", "2611.10004v1"]
    assert ids_in(alerts(harness, YONEKI_FAN)) == ["2611.10001v1", "2611.10004v1"]
    assert ids_in(alerts(harness, GNN_FAN)) == ["2611.10002v1", "2611.10004v1"]
    counts = await harness.services.storage.outbox.counts()
    assert counts == {"pending": 0, "sent": 6, "failed": 0, "held": 0, "sending": 0, "expired": 0}

    # The same feed again (a 304), then re-published with a new date: nothing more arrives.
    await harness.poll()
    harness.serve_feed(day_one(), announce_date=DAY1 + timedelta(hours=1))
    await harness.poll()
    for chat_id in (LAB, YONEKI_FAN, GNN_FAN):
        assert len(alerts(harness, chat_id)) == 2, harness.tg.dump()
    assert len(harness.tg.calls_of("sendMessage", ok_only=True)) == 3 + 6


async def test_an_alert_is_valid_html_with_escaped_title_latex_and_every_button(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    paper = make_paper(7, title=r"Bounds for x<y & z>w in $O(n^2)$: a $1.93\times$ speed-up")
    harness.serve_feed([paper], announce_date=DAY1)

    await harness.poll()

    [alert] = alerts(harness, LAB)
    assert alert.parse_mode == "HTML"
    # The fake parsed the HTML as Telegram does: what the user sees is the title itself.
    assert "Bounds for x<y & z>w in O(n²): a 1.93× speed-up" in alert.text
    assert "x&lt;y &amp; z&gt;w" in alert.sent_text
    assert "🆕" in alert.text
    assert "Matched: cs.LG" in alert.text, "the subscription as the chat typed it"
    assert "Eiko Yoneki, Dirk Wübben" in alert.text
    assert "arXiv:2611.10007v1" in alert.text
    assert alert.params["link_preview_options"] == {"is_disabled": True}
    assert [b["text"] for b in alert.buttons] == [
        "⭐ Save", "👍", "👎", "📄 Full abstract", "🌐 arXiv", "📥 PDF"]
    assert button(alert, "arXiv")["url"] == "https://arxiv.org/abs/2611.10007"
    assert button(alert, "PDF")["url"] == "https://arxiv.org/pdf/2611.10007v1"
    assert all(len(data.encode()) <= 64 for data in alert.callback_data)


@ON_BOTH_ENGINES
async def test_save_toggles_to_saved_and_back_keeping_the_keyboard(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    [alert] = alerts(harness, LAB)
    saved = harness.services.storage.saved

    answer = await harness.press(LAB, alert.message_id, button(alert, "Save")["callback_data"])

    assert "Saved" in (answer.text or "")
    after = harness.tg.message(LAB, alert.message_id)
    assert after.button_texts == ["⭐ Saved", "👍", "👎", "📄 Full abstract", "🌐 arXiv", "📥 PDF"]
    assert after.text == alert.text, "saving edits only the keyboard"
    assert await saved.is_saved(LAB, "2611.10001")

    answer = await harness.press(LAB, alert.message_id, button(after, "Saved")["callback_data"])

    assert "Removed" in (answer.text or "")
    again = harness.tg.message(LAB, alert.message_id)
    assert again.button_texts == ["⭐ Save", "👍", "👎", "📄 Full abstract", "🌐 arXiv", "📥 PDF"]
    assert not await saved.is_saved(LAB, "2611.10001")


async def test_abstract_expands_and_collapses_and_the_keyboard_survives_every_edit(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    abstract = ("We revisit sparse attention. " * 20) + "The final sentence says THE-END."
    harness.serve_feed([make_paper(1, abstract=abstract)], announce_date=DAY1)
    await harness.poll()
    [alert] = alerts(harness, LAB)
    assert "THE-END" not in alert.text, "a collapsed alert shows the first part only"

    await harness.press(LAB, alert.message_id, button(alert, "Full abstract")["callback_data"])

    expanded = harness.tg.message(LAB, alert.message_id)
    assert "THE-END" in expanded.text
    assert "Matched: cs.LG" in expanded.text
    assert expanded.button_texts == ["⭐ Save", "👍", "👎", "🔼 Collapse", "🌐 arXiv", "📥 PDF"]

    # Saving while expanded keeps the full abstract; collapsing keeps the Saved state.
    await harness.press(LAB, alert.message_id, button(expanded, "Save")["callback_data"])
    saved = harness.tg.message(LAB, alert.message_id)
    assert "THE-END" in saved.text
    assert saved.button_texts == ["⭐ Saved", "👍", "👎", "🔼 Collapse", "🌐 arXiv", "📥 PDF"]

    await harness.press(LAB, alert.message_id, button(saved, "Collapse")["callback_data"])

    collapsed = harness.tg.message(LAB, alert.message_id)
    assert collapsed.text == alert.text
    assert collapsed.button_texts == [
        "⭐ Saved", "👍", "👎", "📄 Full abstract", "🌐 arXiv", "📥 PDF"]
    assert collapsed.edit_count == 3


async def test_pressing_twice_quickly_is_harmless(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    abstract = ("We revisit sparse attention. " * 20) + "The final sentence says THE-END."
    harness.serve_feed([make_paper(1, abstract=abstract)], announce_date=DAY1)
    await harness.poll()
    [alert] = alerts(harness, LAB)
    expand = button(alert, "Full abstract")["callback_data"]
    save = button(alert, "Save")["callback_data"]

    # Both presses are on the message as it was before either was handled.
    presses = [harness.tg.press_button(LAB, alert.message_id, data)
               for data in (expand, expand, save, save)]
    await harness.tg.wait_for(
        lambda: {a.callback_query_id for a in harness.tg.callback_answers} >= set(presses),
        what="an answer to every press",
    )
    await harness.settle()

    message = harness.tg.message(LAB, alert.message_id)
    assert "THE-END" in message.text
    is_saved = await harness.services.storage.saved.is_saved(LAB, "2611.10001")
    assert ("⭐ Saved" in message.button_texts) == is_saved, "the keyboard tells the truth"
    assert len(message.buttons) == 6
    assert harness.tg.messages(LAB)[-1].message_id == alert.message_id, "no error message"


async def test_forged_or_stale_buttons_get_a_polite_answer_and_change_nothing(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    [alert] = alerts(harness, LAB)
    others = await harness.services.storage.subscriptions.for_chat(YONEKI_FAN)
    before = harness.tg.message(LAB, alert.message_id)

    for data in ("v1:s:2611.99999v1",  # a paper the bot never saw
                 "v1:a:2611.99999v1:1",
                 "v2:s:2611.10001v1",  # a future (or past) data version
                 "v1:s:2611.10001v1:not-a-number",
                 "'; DROP TABLE saved; --",
                 f"v1:u:{others[0].id}"):  # another chat's subscription
        answer = await harness.forge(LAB, alert.message_id, data)
        assert answer.text, f"the press of {data!r} deserves an answer"
        assert not answer.text.lower().startswith("sorry"), answer.text

    assert await harness.services.storage.subscriptions.for_chat(YONEKI_FAN) == others
    assert await harness.services.storage.saved.count(LAB) == 0
    assert harness.tg.message(LAB, alert.message_id) == before
    assert [m.message_id for m in harness.tg.messages(LAB)][-1] == alert.message_id


async def test_a_429_is_waited_out_and_the_alert_arrives_once(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    harness.tg.fail_next("sendMessage", 429, retry_after=1)

    await harness.poll()

    assert ids_in(alerts(harness, LAB)) == ["2611.10001v1"]
    sends = harness.tg.calls_of("sendMessage")
    assert [c.status for c in sends[-2:]] == [429, 200]
    assert sends[-1].at - sends[-2].at >= 1.0, "the bot waited the retry_after it was given"
    await harness.poll()
    assert len(alerts(harness, LAB)) == 1


@ON_BOTH_ENGINES
async def test_a_chat_that_blocked_the_bot_is_held_no_longer_matched_and_served_when_it_writes(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    store = harness.services.storage
    harness.tg.block_chat(LAB)
    harness.serve_feed([make_paper(1)], announce_date=DAY1)

    await harness.poll()

    assert ids_in(alerts(harness, YONEKI_FAN)) == ["2611.10001v1"], "others still get theirs"
    chat = await store.chats.get(LAB)
    assert chat is not None and not chat.active
    assert await store.outbox.counts() == {
        "pending": 0, "sent": 1, "failed": 0, "held": 1,
        "sending": 0, "expired": 0}

    # Day 2 while still blocked: not matched at all (issue 11), so nothing piles up for a
    # chat that may never come back, and no request is wasted on it.
    harness.serve_feed([make_paper(2)], announce_date=DAY2)
    calls_before = len(harness.tg.calls_of("sendMessage"))
    await harness.poll()
    to_lab = [c for c in harness.tg.calls_of("sendMessage")[calls_before:]
              if c.params["chat_id"] == LAB]
    assert to_lab == []
    assert (await store.outbox.counts())["held"] == 1
    assert ids_in(alerts(harness, YONEKI_FAN)) == ["2611.10001v1", "2611.10002v1"]

    harness.tg.unblock_chat(LAB)
    await harness.ask(LAB, "/list")
    await harness.drain()

    # What was held when it blocked the bot arrives; what was announced meanwhile does not.
    assert ids_in(alerts(harness, LAB)) == ["2611.10001v1"]
    chat = await store.chats.get(LAB)
    assert chat is not None and chat.active
    assert (await store.outbox.counts())["held"] == 0

    # Once back, it is matched again.
    harness.serve_feed([make_paper(3)], announce_date=DAY3)
    await harness.poll()
    assert ids_in(alerts(harness, LAB)) == ["2611.10001v1", "2611.10003v1"]


@ON_BOTH_ENGINES
async def test_a_group_that_became_a_supergroup_gets_its_alerts_at_the_new_id(
    harness: Harness,
) -> None:
    group, supergroup = -4001, -1_000_000_004_001
    harness.tg.set_admins(group, {4242})
    await follow(harness, group, "cs.LG", title="Lab group")
    harness.tg.migrate_chat(group, supergroup)
    harness.serve_feed([make_paper(1)], announce_date=DAY1)

    await harness.poll()
    await harness.drain()  # the drain job picks the moved alert up

    assert ids_in(alerts(harness, supergroup)) == ["2611.10001v1"]
    store = harness.services.storage
    assert await store.chats.get(group) is None
    assert [s.query for s in await store.subscriptions.for_chat(supergroup)] == ["cat:cs.LG"]
    refused = [c for c in harness.tg.calls_of("sendMessage")
               if c.params["chat_id"] == group and c.status == 400]
    assert len(refused) == 1, "the old id is tried once, not again"

    # The next day's matches go to the new id too: the live matcher moved with the chat.
    harness.serve_feed([make_paper(2)], announce_date=DAY2)
    await harness.poll()
    assert ids_in(alerts(harness, supergroup)) == ["2611.10001v1", "2611.10002v1"]


@ON_BOTH_ENGINES
async def test_a_migration_onto_a_supergroup_that_wrote_first_merges_the_two(
    harness: Harness,
) -> None:
    group, supergroup = -4002, -1_000_000_004_002
    harness.tg.set_admins(group, {4242})
    harness.tg.set_admins(supergroup, {4242})
    await follow(harness, group, "cs.LG", title="Lab group")
    await harness.ask(group, "/tz Europe/Berlin", title="Lab group")
    await follow(harness, supergroup, "au:Yoneki", title="Lab group")  # wrote there first
    harness.tg.migrate_chat(group, supergroup)
    harness.serve_feed([make_paper(1)], announce_date=DAY1)

    await harness.poll()
    await harness.drain()

    assert ids_in(alerts(harness, supergroup)) == ["2611.10001v1"]
    store = harness.services.storage
    assert await store.chats.get(group) is None
    merged = await store.chats.get(supergroup)
    assert merged is not None and merged.timezone == "Europe/Berlin"
    assert sorted(s.query for s in await store.subscriptions.for_chat(supergroup)) == [
        "au:yoneki", "cat:cs.LG"]
    harness.serve_feed([make_paper(2, categories=("math.AG",))], announce_date=DAY2)
    await harness.poll()
    assert ids_in(alerts(harness, supergroup)) == ["2611.10001v1", "2611.10002v1"]


async def test_blocking_the_bot_keeps_the_chat_inactive(harness: Harness) -> None:
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    harness.tg.my_chat_member(YONEKI_FAN, "kicked", old_status="member")
    await harness.settle()
    chat = await harness.services.storage.chats.get(YONEKI_FAN)
    assert chat is not None and not chat.active, "a block is news, not a sign of life"
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    assert alerts(harness, YONEKI_FAN) == []
    # A chat that blocked the bot is not matched (issue 11): nothing is queued for it.
    assert sum((await harness.services.storage.outbox.counts()).values()) == 0
    harness.tg.my_chat_member(YONEKI_FAN, "member", old_status="kicked")
    await harness.settle()
    harness.serve_feed([make_paper(2)], announce_date=DAY2)
    await harness.poll()
    assert ids_in(alerts(harness, YONEKI_FAN)) == ["2611.10002v1"]


async def test_an_entity_error_is_retried_once_as_plain_text(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    harness.serve_feed([make_paper(1, title="Tails & <heads>")], announce_date=DAY1)
    harness.tg.fail_next("sendMessage", 400, description=(
        "Bad Request: can't parse entities: Unsupported start tag \"heads\" at byte offset 9"))

    await harness.poll()

    [alert] = alerts(harness, LAB)
    assert alert.parse_mode is None
    assert "Tails & <heads>" in alert.text
    assert "<b>" not in alert.text
    assert len(alert.buttons) == 6, "the plain copy keeps its buttons"
    assert (await harness.services.storage.outbox.counts())["sent"] == 1


async def test_a_persistent_400_fails_the_alert_once_and_never_loops(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    harness.tg.fail_next("sendMessage", 400, description="Bad Request: message is too long",
                         chat_id=LAB, times=100)

    await harness.poll()
    for _ in range(3):
        harness.clock.advance(3600)
        await harness.drain()

    store = harness.services.storage
    assert await store.outbox.counts() == {
        "pending": 0, "sent": 1, "failed": 1, "held": 0,
        "sending": 0, "expired": 0}
    tries = [c for c in harness.tg.calls_of("sendMessage") if c.params["chat_id"] == LAB
             and c.status == 400]
    assert len(tries) == 2, "one HTML attempt, one plain-text attempt, then never again"
    assert ids_in(alerts(harness, YONEKI_FAN)) == ["2611.10001v1"]
    chat = await store.chats.get(LAB)
    assert chat is not None and chat.active, "a refused message is no reason to drop the chat"


@ON_BOTH_ENGINES
async def test_a_revision_of_a_saved_paper_is_announced_with_what_changed(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    await follow(harness, YONEKI_FAN, "au:Yoneki")
    await follow(harness, GNN_FAN, "cs.LG")
    v1 = make_paper(1, title="Sparse attention for long contexts",
                    abstract="We study sparse attention and its cost on long inputs.")
    harness.serve_feed([v1], announce_date=DAY1)
    await harness.poll()
    [first] = alerts(harness, LAB)
    await harness.press(LAB, first.message_id, button(first, "Save")["callback_data"])

    # Version 2 moved out of cs.LG: the lab keeps hearing of it only because it saved it.
    v2 = make_paper(1, version=2, title="Sparse attention for very long contexts",
                    authors=("Eiko Yoneki", "Dirk Wübben", "Mei Sato"), categories=("cs.CL",),
                    abstract="We study sparse attention and its cost on long inputs and show "
                             "a router that halves it.",
                    announce_type=AnnounceType.REPLACE)
    harness.serve_feed([v2], announce_date=DAY2)
    await harness.poll()

    [_, revision] = alerts(harness, LAB)
    assert "🔄 v2 · " in revision.text
    assert "arXiv:2611.10001v2" in revision.text
    assert "Title was: Sparse attention for long contexts" in revision.text
    assert "+Mei Sato" in revision.text
    assert "Abstract: +" in revision.text
    assert "Matched" not in revision.text, "no subscription matched it"
    assert revision.button_texts[0] == "⭐ Saved"

    # A follower whose query matches v2 hears of the revision too, marked v2.
    [_, matched] = alerts(harness, YONEKI_FAN)
    assert "🔄 v2 · " in matched.text and "Matched: au:Yoneki" in matched.text
    # A cs.LG follower who did not save it hears nothing: v2 is no longer in cs.LG.
    assert ids_in(alerts(harness, GNN_FAN)) == ["2611.10001v1"]


@ON_BOTH_ENGINES
async def test_more_than_ten_matches_arrive_as_a_digest_with_save_by_number(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    long_title = ("Scaling laws of sparse mixture-of-experts transformers under data "
                  "constraints, with & without <curriculum> and $\\alpha$-annealing, part ")
    papers = [make_paper(n, title=f"{long_title}{n}",
                         authors=tuple(f"Author{k} Surname{k}" for k in range(12)))
              for n in range(1, 26)]
    harness.serve_feed(papers, announce_date=DAY1)

    await harness.poll()

    # One message, its most relevant entries that fit; "Show more" brings the rest.
    [digest] = harness.tg.messages(LAB)[1:]  # after the /follow reply
    more = next(b for b in digest.buttons if b["text"].startswith("Show more"))
    await harness.press(LAB, digest.message_id, more["callback_data"])
    messages = harness.tg.messages(LAB)[1:]
    assert len(messages) <= 3, harness.tg.dump()
    assert all(utf16_len(m.text) < 4096 for m in messages)
    text = "\n".join(m.text for m in messages)
    for number in range(1, 26):
        assert f"{number}. " in text
        assert f"2611.{10000 + number}v1" in text
    assert "with & without <curriculum> and α-annealing" in text
    labels = [b["text"] for m in messages for b in m.buttons if b["text"].startswith("💾")]
    assert labels == [f"💾 {n}" for n in range(1, 26)]
    assert await harness.services.storage.outbox.counts() == {
        "pending": 0, "sent": 25, "failed": 0, "held": 0, "sending": 0, "expired": 0}

    page = next(m for m in messages if "💾 7" in m.button_texts)
    seven = next(b for b in page.buttons if b["text"] == "💾 7")
    answer = await harness.press(LAB, page.message_id, seven["callback_data"])

    assert "Saved" in (answer.text or "")
    assert await harness.services.storage.saved.is_saved(LAB, "2611.10007")
    assert await harness.services.storage.saved.count(LAB) == 1
    edited = harness.tg.message(LAB, page.message_id)
    assert "✅ 7" in edited.button_texts and edited.text == page.text

    await harness.poll()
    assert len(harness.tg.messages(LAB)) == len(messages) + 1, "nothing is sent twice"


async def test_ten_matches_still_arrive_one_by_one(harness: Harness) -> None:
    await follow(harness, LAB, "cs.LG")
    harness.serve_feed([make_paper(n) for n in range(1, 11)], announce_date=DAY1)

    await harness.poll()

    assert ids_in(alerts(harness, LAB)) == [f"2611.{10000 + n}v1" for n in range(1, 11)]


@ON_BOTH_ENGINES
async def test_a_revision_during_a_pause_shows_both_versions_in_the_catch_up_digest(
    harness: Harness,
) -> None:
    """Found by the soak: the digest showed the latest version twice and never the first."""
    await follow(harness, LAB, "cs.LG")
    await harness.ask(LAB, "/pause")
    harness.serve_feed([make_paper(n) for n in range(1, 12)], announce_date=DAY1)
    await harness.poll()
    harness.serve_feed([make_paper(1, version=2, title="Sparse attention, revised")],
                       announce_date=DAY2)
    await harness.poll()
    await harness.ask(LAB, "/resume")
    await harness.drain()

    digest = [m for m in harness.tg.messages(LAB) if m.callback_data and "v1:s:" in
              " ".join(m.callback_data) and len(m.callback_data) > 4]
    saves = [d for m in digest for d in m.callback_data if d.startswith("v1:s:")]
    shown = [d.split(":")[2] for d in saves]
    assert shown.count("2611.10001v1") == 1 and shown.count("2611.10001v2") == 1
    assert len(shown) == len(set(shown)) == 12


async def test_thumbs_toggle_show_their_state_and_never_touch_the_library(
    harness: Harness,
) -> None:
    await follow(harness, LAB, "cs.LG")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    [alert] = alerts(harness, LAB)
    store = harness.services.storage
    await harness.press(LAB, alert.message_id, button(alert, "Save")["callback_data"])

    answer = await harness.press(LAB, alert.message_id, button(alert, "👍")["callback_data"])

    assert "more like this" in (answer.text or "")
    liked = harness.tg.message(LAB, alert.message_id)
    assert liked.button_texts[:3] == ["⭐ Saved", "👍✓", "👎"]
    assert liked.text == alert.text, "a label edits only the keyboard"
    assert await store.feedback.get(LAB, "2611.10001") == Feedback.MORE
    assert await store.feedback.labelled_at(LAB, "2611.10001") is not None

    # 👎 replaces 👍, and the paper stays saved.
    answer = await harness.press(LAB, alert.message_id, button(liked, "👎")["callback_data"])
    assert "less like this" in (answer.text or "")
    disliked = harness.tg.message(LAB, alert.message_id)
    assert disliked.button_texts[:3] == ["⭐ Saved", "👍", "👎✓"]
    assert await store.feedback.get(LAB, "2611.10001") == Feedback.LESS
    assert await store.saved.is_saved(LAB, "2611.10001"), "👎 never removes a saved paper"

    # Pressing the lit 👎 clears the label.
    answer = await harness.press(LAB, alert.message_id, button(disliked, "👎✓")["callback_data"])
    assert "cleared" in (answer.text or "")
    cleared = harness.tg.message(LAB, alert.message_id)
    assert cleared.button_texts[:3] == ["⭐ Saved", "👍", "👎"]
    assert await store.feedback.get(LAB, "2611.10001") is None

    # Two quick presses of the unlit 👍 both mean "more": it ends lit, not toggled back.
    data = button(cleared, "👍")["callback_data"]
    presses = [harness.tg.press_button(LAB, alert.message_id, data) for _ in range(2)]
    await harness.tg.wait_for(
        lambda: {a.callback_query_id for a in harness.tg.callback_answers} >= set(presses),
        what="an answer to both presses",
    )
    await harness.settle()
    assert await store.feedback.get(LAB, "2611.10001") == Feedback.MORE
    assert harness.tg.message(LAB, alert.message_id).button_texts[1] == "👍✓"

    # The card of /paper shows the chat's label too.
    card = await harness.ask(LAB, "/paper 2611.10001")
    assert card.button_texts[:3] == ["⭐ Saved", "👍✓", "👎"]

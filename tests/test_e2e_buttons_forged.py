"""Forged, stale and doubled button presses: always answered, nothing changes, chats stay apart.

A modified client can send any callback data on a real bot message. Every press gets an
answerCallbackQuery (or the user's client spins), nothing reaches the error handler, and no press
from one chat reads or changes another chat's subscriptions, library or matched queries.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage
from tests.test_e2e_hostile import FAILURE, snapshot

A, B = 9001, 9002
GROUP = -1009001
A_QUERY = "au:\"Dirk Wübben\" OR ti:\"secret project\""  # only chat A may ever see this


async def alert_for(harness: Harness, chat: int, contains: str) -> SentMessage:
    return (await harness.tg.wait_for_messages(chat, contains=contains))[-1]


async def two_chats(harness: Harness) -> dict[str, SentMessage]:
    """A follows everything by Wübben and saved paper 1; B follows only `part 2` papers."""
    await harness.ask(A, f"/follow {A_QUERY}")
    await harness.ask(B, "/follow ti:\"part 2\"")
    harness.serve_feed([make_paper(1), make_paper(2)])
    await harness.poll()
    a_alert = await alert_for(harness, A, "part 1")
    await harness.press(A, a_alert.message_id, "v1:s:2611.10001v1")
    assert await harness.services.storage.saved.count(A) == 1
    return {
        "a_alert": a_alert,
        "a_list": await harness.ask(A, "/list"),
        "a_saved": await harness.ask(A, "/saved"),
        "b_alert": await alert_for(harness, B, "part 2"),
        "b_list": await harness.ask(B, "/list"),
        "b_saved": await harness.ask(B, "/saved"),
    }


def no_failures(harness: Harness, *chats: int) -> None:
    for chat in chats:
        assert not [m for m in harness.tg.messages(chat) if FAILURE in m.text], chat


def polite(text: str | None) -> bool:
    """A short answer, or none (a silent answer still stops the client's spinner)."""
    return text is None or (0 < len(text) <= 200 and FAILURE not in text)


FORGERIES = [
    "", "v1", "v1:", "v1:s", "v1:s:", "v1:s:not-an-id", "v1:s:2611.10001v1:0",
    "v1:s:2611.10001v1:1000", "v1:s:2611.99999v1", "v1:s:2611.10001v999", "v1:s:2611.10001v1 ",
    "v1:s:2611.10001v1\x00", "v2:s:2611.10001v1", "v9:u:1", "V1:u:1", "v1:u:-1", "v1:u:0",
    "v1:u:01", "v1:u:1.0", "v1:u:99999999999999999999", "v1:u:9223372036854775807",
    "v1:p:0", "v1:p:-1", "v1:p:abc", "v1:p:100001", "v1:p:99999", "v1:r:2611.10001",
    "v1:r:2611.10001v1:1", "v1:r:2611.10001:0", "v1:a:2611.10001:1", "v1:a:2611.10001v1:2",
    "v1:a:2611.10001v1", "v1:x:1", "v1:n:extra", "v1:n", "x" * 64, "x" * 65, "v1:u:" + "9" * 60,
    "ü" * 32, "<b>v1:s</b>", "'; DROP TABLE saved; --", "\x00\x01\x02\x7f", "v1:s:../../etc",
    "v1:s:2611.10001v1:7:extra", ":::::", "\u202ev1:u:1",
]


async def test_forged_data_is_answered_and_changes_nothing(harness: Harness,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    views = await two_chats(harness)
    caplog.set_level(logging.ERROR, logger="bot.chat.handlers.basic")
    before = await snapshot(harness)
    shown = {name: harness.tg.message(m.chat_id, m.message_id) for name, m in views.items()}
    for data in FORGERIES:
        for name in ("b_alert", "b_list", "b_saved"):
            view = views[name]
            answer = await harness.forge(view.chat_id, view.message_id, data)
            assert polite(answer.text), (data, answer.text)
    assert await snapshot(harness) == before
    for name, message in shown.items():
        if name.startswith("a_"):
            assert harness.tg.message(A, message.message_id) == message, "A's chat untouched"
    no_failures(harness, A, B)
    assert not caplog.records
    assert "/follow" in (await harness.ask(B, "/start")).text


async def test_another_chats_ids_reach_nothing_of_theirs(harness: Harness) -> None:
    views = await two_chats(harness)
    store = harness.services.storage
    a_sub = (await store.subscriptions.for_chat(A))[0]
    a_before = (await store.subscriptions.for_chat(A), await store.saved.page(A, 0, 10))
    before = await snapshot(harness)
    # Chat A's own, real button data, pressed by a modified client in chat B.
    stolen = [*views["a_list"].callback_data, *views["a_saved"].callback_data,
              *views["a_alert"].callback_data, f"v1:u:{a_sub.id}", "v1:r:2611.10001:1",
              "v1:s:2611.10001v1", "v1:a:2611.10001v1:1"]
    for data in stolen:
        for name in ("b_alert", "b_list", "b_saved"):
            answer = await harness.forge(B, views[name].message_id, data)
            assert polite(answer.text), (data, answer.text)
    assert (await store.subscriptions.for_chat(A), await store.saved.page(A, 0, 10)) == a_before
    assert await snapshot(harness) == before
    for message in harness.tg.messages(B):
        assert "secret project" not in message.text, "nothing of A's subscription reaches B"
    no_failures(harness, A, B)


async def test_expanding_a_paper_another_chat_saved_shows_only_public_data(
        harness: Harness) -> None:
    views = await two_chats(harness)
    harness.serve_feed([make_paper(1, version=2)])
    await harness.poll()  # A saved paper 1: its revision reaches A, with A's query
    b_alert = views["b_alert"]
    await harness.press(B, b_alert.message_id, "v1:a:2611.10002v1:1")
    expanded = harness.tg.message(B, b_alert.message_id)
    assert "part 2" in expanded.text and "router recovers dense quality" in expanded.text
    assert "secret project" not in expanded.text
    assert expanded.button_texts[0] == "⭐ Save", "B's own saved state, not A's"
    await harness.forge(B, b_alert.message_id, "v1:a:2611.10001v2:1")
    shown = harness.tg.message(B, b_alert.message_id)
    assert "secret project" not in shown.text and "Saved" not in " ".join(shown.button_texts)
    assert await harness.services.storage.saved.count(B) == 0
    no_failures(harness, A, B)


async def test_stale_pages_and_removed_items_are_answered(harness: Harness) -> None:
    store = harness.services.storage
    await harness.ask(A, "/start")
    harness.serve_feed([make_paper(n) for n in range(1, 8)])
    await harness.poll()
    for n in range(1, 8):
        harness.clock.advance(1)
        await store.saved.save(A, f"2611.{10000 + n}", 1, harness.clock.now())
    first = await harness.ask(A, "/saved")
    second = await harness.ask(A, "/saved")
    assert "page 1/2" in first.text and "▶" in second.button_texts
    await harness.press(A, first.message_id, "v1:p:2")
    stale = harness.tg.message(A, first.message_id)
    for n in range(1, 6):
        await store.saved.remove(A, f"2611.{10000 + n}")
    # `first` still offers ✖ for papers removed meanwhile, `second` ▶ to a page that is gone.
    before = await snapshot(harness)
    gone = next(d for d in stale.callback_data if d.startswith("v1:r:2611.10002"))
    answer = await harness.press(A, first.message_id, gone)
    assert "not in your library" in (answer.text or "")
    assert "2 saved, page 1/1" in harness.tg.message(A, first.message_id).text
    answer = await harness.press(A, second.message_id, "v1:p:2")
    assert polite(answer.text)
    assert "2 saved, page 1/1" in harness.tg.message(A, second.message_id).text
    assert await snapshot(harness) == before
    # Removed subscriptions: /list drawn before an /unfollow keeps its ✖ buttons.
    await harness.ask(A, "/follow cs.LG")
    await harness.ask(A, "/follow au:Yoneki")
    listings = [await harness.ask(A, "/list") for _ in range(2)]
    await harness.ask(A, "/unfollow all")
    before = await snapshot(harness)
    for listing, data in zip(listings, listings[0].callback_data, strict=True):
        answer = await harness.press(A, listing.message_id, data)
        assert "already gone" in (answer.text or "")
        assert "don't follow anything" in harness.tg.message(A, listing.message_id).text
    assert await snapshot(harness) == before
    no_failures(harness, A)


async def test_a_button_pressed_twice_quickly_acts_once(harness: Harness) -> None:
    store = harness.services.storage
    views = await two_chats(harness)
    b_alert = views["b_alert"]
    # Two presses of Save before the bot answers the first: both users saw "Save".
    first = harness.tg.press_button(B, b_alert.message_id, "v1:s:2611.10002v1")
    second = harness.tg.press_button(B, b_alert.message_id, "v1:s:2611.10002v1")
    await harness.settle()
    answered = {a.callback_query_id for a in harness.tg.callback_answers}
    assert {first, second} <= answered
    assert await store.saved.count(B) == 1, "saved, not toggled back"
    assert harness.tg.message(B, b_alert.message_id).button_texts[0] == "⭐ Saved"
    # And twice on "⭐ Saved": removed once, not saved again.
    first = harness.tg.press_button(B, b_alert.message_id, "v1:s:2611.10002v1")
    second = harness.tg.press_button(B, b_alert.message_id, "v1:s:2611.10002v1")
    await harness.settle()
    assert await store.saved.count(B) == 0
    assert harness.tg.message(B, b_alert.message_id).button_texts[0] == "⭐ Save"

    await harness.ask(B, "/follow cs.LG")
    listing = await harness.ask(B, "/list")
    presses = [harness.tg.press_button(B, listing.message_id, listing.callback_data[0])
               for _ in range(2)]
    await harness.settle()
    answers = {a.callback_query_id: a.text for a in harness.tg.callback_answers}
    assert all(p in answers for p in presses)
    assert [s.query for s in await store.subscriptions.for_chat(B)] == ["cat:cs.LG"]

    for data in ("v1:a:2611.10002v1:1", "v1:a:2611.10002v1:1"):
        harness.tg.press_button(B, b_alert.message_id, data)
    await harness.settle()
    assert "router recovers" in harness.tg.message(B, b_alert.message_id).text
    no_failures(harness, A, B)


async def test_in_a_group_members_cannot_remove_subscriptions(harness: Harness) -> None:
    harness.tg.set_admins(GROUP, {11})
    await harness.ask(GROUP, "/follow cs.LG", user_id=11, title="Lab")
    listing = await harness.ask(GROUP, "/list", user_id=22, title="Lab")
    answer = await harness.press(GROUP, listing.message_id, listing.callback_data[0],
                                 user_id=22)
    assert "administrators" in (answer.text or "") and answer.show_alert
    assert len(await harness.services.storage.subscriptions.for_chat(GROUP)) == 1


@pytest.fixture
def forge_state() -> dict[str, object]:
    return {}


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.lists(
    st.one_of(
        st.binary(min_size=0, max_size=80).map(lambda b: b.decode("latin-1")),
        st.text(max_size=70),
        st.builds(lambda kind, fields: ":".join(["v1", kind, *fields]),
                  st.sampled_from("supran"),
                  st.lists(st.one_of(st.integers(-5, 2**64).map(str),
                                     st.sampled_from(["2611.10001", "2611.10001v1",
                                                      "2611.10002v1", "hep-th/9901001", "",
                                                      "0", "1", "01"])), max_size=3)),
    ),
    min_size=3, max_size=6))
async def test_generated_button_data_is_answered_and_changes_nothing(
        harness: Harness, forge_state: dict[str, object], data: list[str]) -> None:
    if "views" not in forge_state:
        forge_state["views"] = await two_chats(harness)
    views: dict[str, SentMessage] = forge_state["views"]  # type: ignore[assignment]
    offered = {d for view in views.values() for d in view.callback_data}
    before = await snapshot(harness)
    for item in data:
        if item in offered:
            continue  # a real button of the message is not a forgery
        answer = await harness.forge(B, views["b_list"].message_id, item)
        assert polite(answer.text), (item, answer.text)
    assert await snapshot(harness) == before
    no_failures(harness, A, B)

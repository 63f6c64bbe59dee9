"""A group's shared library: anyone saves, the card and /saved name who saved it first, and only
that member or an administrator may remove it; /export gives the group's library."""

from __future__ import annotations

import bibtexparser

from bot.core.models import AnnounceType
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage

GROUP = -100_555
ADMIN, ADA, BOB = 11, 21, 22  # Grace administers the group; Ada and Bob are members
NAMES = {ADMIN: "Grace", ADA: "Ada", BOB: "Bob"}
PRIVATE = 7001


def as_member(user_id: int) -> dict[str, object]:
    return {"user_id": user_id, "first_name": NAMES[user_id]}


def button_data(message: SentMessage, label: str) -> str:
    [data] = [b["callback_data"] for b in message.buttons if label in b["text"]]
    return data


async def group_with_papers(harness: Harness, count: int = 1) -> None:
    harness.tg.set_admins(GROUP, {ADMIN})
    harness.serve_feed([make_paper(n) for n in range(1, count + 1)])
    await harness.poll()


async def card(harness: Harness, number: int, user_id: int = ADA) -> SentMessage:
    return await harness.ask(GROUP, f"/paper 2611.{10000 + number}", title="Lab",
                             **as_member(user_id))


async def save_on_card(harness: Harness, number: int, user_id: int) -> SentMessage:
    shown = await card(harness, number, user_id)
    answer = await harness.press(GROUP, shown.message_id, button_data(shown, "Save"),
                                 **as_member(user_id))
    assert "Saved to your library" in (answer.text or "")
    return harness.tg.message(GROUP, shown.message_id)


async def remove_in_saved(harness: Harness, user_id: int, number: int = 1):
    page = await harness.ask(GROUP, "/saved", **as_member(user_id))
    return await harness.press(GROUP, page.message_id, button_data(page, f"✖ {number}"),
                               **as_member(user_id))


async def test_the_card_and_saved_name_who_saved_and_a_member_cannot_remove_it(
        harness: Harness) -> None:
    await group_with_papers(harness)
    saved_card = await save_on_card(harness, 1, ADA)
    assert "📌 Saved by Ada" in saved_card.text, "the card names who saved it"
    assert "⭐ Saved" in saved_card.button_texts
    page = await harness.ask(GROUP, "/saved", **as_member(BOB))
    assert "Saved by Ada" in page.text

    # Bob is no administrator: neither the card's ⭐ Saved nor /saved's ✖ removes Ada's save.
    answer = await harness.press(GROUP, saved_card.message_id,
                                 button_data(saved_card, "Saved"), **as_member(BOB))
    assert answer.show_alert and "Only Ada, who saved this paper" in (answer.text or "")
    assert harness.tg.message(GROUP, saved_card.message_id).text == saved_card.text
    assert "⭐ Saved" in harness.tg.message(GROUP, saved_card.message_id).button_texts
    answer = await remove_in_saved(harness, BOB)
    assert answer.show_alert and "administrators" in (answer.text or "")
    assert await harness.services.storage.saved.is_saved(GROUP, "2611.10001"), "still saved"

    # Ada may remove her own save.
    answer = await remove_in_saved(harness, ADA)
    assert "Removed" in (answer.text or "")
    assert not await harness.services.storage.saved.is_saved(GROUP, "2611.10001")


async def test_an_administrator_removes_a_members_save(harness: Harness) -> None:
    await group_with_papers(harness, 2)
    saved_card = await save_on_card(harness, 1, ADA)
    await save_on_card(harness, 2, BOB)
    # The name beside a save follows a rename once the member writes in the group.
    page = await harness.ask(GROUP, "/saved", user_id=ADA, first_name="Adaline")
    assert "Saved by Adaline" in page.text and "Saved by Bob" in page.text

    answer = await harness.press(GROUP, saved_card.message_id,
                                 button_data(saved_card, "Saved"), **as_member(ADMIN))
    assert "Removed" in (answer.text or "")
    unsaved = harness.tg.message(GROUP, saved_card.message_id)
    assert "Saved by" not in unsaved.text and "⭐ Save" in unsaved.button_texts
    answer = await remove_in_saved(harness, ADMIN)  # Bob's paper, the only one left
    assert "Removed" in (answer.text or "")
    assert await harness.services.storage.saved.count(GROUP) == 0


async def test_a_save_from_before_savers_were_kept_names_nobody_and_only_admins_remove_it(
        harness: Harness) -> None:
    await group_with_papers(harness)
    await harness.ask(GROUP, "/start", title="Lab", **as_member(ADMIN))
    store = harness.services.storage
    await store.saved.save(GROUP, "2611.10001", 1, harness.clock.now())  # no saver known
    shown = await card(harness, 1, BOB)
    page = await harness.ask(GROUP, "/saved", **as_member(BOB))
    assert "⭐ Saved" in shown.button_texts
    assert "Saved by" not in shown.text and "Saved by" not in page.text, "no guess"

    answer = await remove_in_saved(harness, BOB)
    assert answer.show_alert
    assert answer.text == "Only the group's administrators can remove this paper."
    assert await store.saved.is_saved(GROUP, "2611.10001")
    answer = await remove_in_saved(harness, ADMIN)
    assert "Removed" in (answer.text or "")


async def test_export_in_a_group_is_the_groups_library_and_counts_as_its_labels(
        harness: Harness) -> None:
    await group_with_papers(harness, 3)
    await save_on_card(harness, 1, ADA)
    await save_on_card(harness, 2, BOB)
    await harness.ask(PRIVATE, "/start")
    await harness.services.storage.saved.save(PRIVATE, "2611.10003", 1, harness.clock.now())

    harness.tg.send_command(GROUP, "/export", **as_member(BOB))
    [document] = await harness.tg.wait_for(lambda: harness.tg.documents(GROUP))
    library = bibtexparser.parse_string(document.content.decode("utf-8"))
    assert sorted(e.fields_dict["eprint"].value for e in library.entries) == [
        "2611.10001", "2611.10002"], "both members' saves, nobody else's"
    # The ranker learns from the group's saves, whoever made them.
    labels = await harness.services.ranker.labels(GROUP)
    assert labels.positives == {"2611.10001", "2611.10002"}


async def test_a_revision_of_the_groups_saved_paper_names_who_saved_it(harness: Harness) -> None:
    await group_with_papers(harness)
    await save_on_card(harness, 1, ADA)
    harness.serve_feed([make_paper(1, version=2, title="A new title",
                                   announce_type=AnnounceType.REPLACE)])
    await harness.poll()
    revision = harness.tg.messages(GROUP)[-1]
    assert "🔄 v2" in revision.text and "📌 Saved by Ada" in revision.text


async def test_a_private_chat_shows_no_saver(harness: Harness) -> None:
    harness.serve_feed([make_paper(1)])
    await harness.poll()
    shown = await harness.ask(PRIVATE, "/paper 2611.10001")
    await harness.press(PRIVATE, shown.message_id, button_data(shown, "Save"))
    after = harness.tg.message(PRIVATE, shown.message_id)
    assert after.text == shown.text and after.edit_count == 1, "only the keyboard changes"
    page = await harness.ask(PRIVATE, "/saved")
    assert "Saved by" not in page.text and "📌" not in page.text

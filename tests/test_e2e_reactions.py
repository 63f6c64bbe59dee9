"""Reactions as feedback, end to end: a researcher reacts to alerts in the chat instead of
tapping 👍 / 👎, and the next digest reads the labels the same way."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.core.models import Feedback
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage
from tests.test_e2e_ranking import day, next_days_digest

CHAT = 7401
GROUP = -100_7402
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


def alerts_of(harness: Harness, chat_id: int, title: str) -> list[SentMessage]:
    return [m for m in harness.tg.messages(chat_id) if "arXiv:" in m.text and title in m.text]


async def handled(harness: Harness, chat_id: int) -> None:
    """Wait until the chat's earlier updates are handled: its updates are handled in order, so
    once a later command is answered, every reaction before it was taken."""
    await harness.ask(chat_id, "/list")


async def test_liking_alerts_by_reaction_puts_their_kind_first_in_the_next_digest(
        harness: Harness) -> None:
    assert "Following" in (await harness.ask(CHAT, "/follow cs.LG")).text
    harness.serve_feed(day(), announce_date=DAY1)  # five graph and five quantum papers
    await harness.poll()
    graph = alerts_of(harness, CHAT, "Graph neural networks")
    assert len(graph) == 5
    for alert, emoji in zip(graph, ("👍", "❤", "🔥", "👏", "❤️"), strict=True):
        harness.tg.react(CHAT, alert.message_id, (emoji,))
    await handled(harness, CHAT)
    stats = await harness.ask(CHAT, "/stats")
    assert "Ranking: 5 labels" in stats.text and "model is active" in stats.text

    digest, entries = await next_days_digest(harness, CHAT)

    assert len(entries) == 12, digest.text
    assert all("Graph neural networks" in line for line in entries[:6]), digest.text

    # Taking the reactions back takes the labels back.
    for alert in graph:
        harness.tg.react(CHAT, alert.message_id, (), old=("👍",))
    await handled(harness, CHAT)
    assert "Ranking: 0 labels" in (await harness.ask(CHAT, "/stats")).text


async def test_a_dislike_replaces_a_like_and_other_reactions_leave_the_label(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    alert = alerts_of(harness, CHAT, "Quantum error correction")[0]
    paper = next(word.removeprefix("arXiv:").split("v")[0] for word in alert.text.split()
                 if word.startswith("arXiv:"))
    feedback = harness.services.storage.feedback

    harness.tg.react(CHAT, alert.message_id, ("👍",))
    await handled(harness, CHAT)
    assert await feedback.get(CHAT, paper) == Feedback.MORE
    harness.tg.react(CHAT, alert.message_id, ("👍", "😂"), old=("👍",))
    harness.tg.react(CHAT, alert.message_id, ("😂",), old=("👍", "😂"))  # 👍 taken back
    await handled(harness, CHAT)
    assert await feedback.get(CHAT, paper) is None
    harness.tg.react(CHAT, alert.message_id, ("👎",), old=("😂",))
    await handled(harness, CHAT)
    assert await feedback.get(CHAT, paper) == Feedback.LESS
    # The latest of button and reaction wins.
    like = next(b for b in alert.buttons if b["text"].startswith("👍"))
    await harness.press(CHAT, alert.message_id, like["callback_data"])
    assert await feedback.get(CHAT, paper) == Feedback.MORE


async def test_a_reaction_on_a_message_of_many_papers_labels_none_of_them(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    listing = await harness.ask(CHAT, "/list")
    harness.tg.react(CHAT, listing.message_id, ("👍",))
    await handled(harness, CHAT)
    assert "Ranking: 0 labels" in (await harness.ask(CHAT, "/stats")).text


async def test_in_a_group_reactions_count_where_the_bot_is_an_admin(harness: Harness) -> None:
    member = 7403
    harness.tg.set_admins(GROUP, {member})
    reply = await harness.ask(GROUP, "/follow cs.LG", chat_type="supergroup", title="Lab",
                              user_id=member)
    assert "Following" in reply.text, reply.text
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    first, second = alerts_of(harness, GROUP, "Graph neural networks")[:2]

    # Telegram tells a bot of reactions in a group only when it is an administrator there.
    assert harness.tg.react(GROUP, first.message_id, ("👍",)) is None
    harness.tg.set_admins(GROUP, {member, harness.tg.bot_id})
    assert harness.tg.react(GROUP, second.message_id, ("👍",)) is not None
    await handled(harness, GROUP)

    labels = await harness.services.ranker.labels(GROUP)
    assert len(labels.positives) == 1


async def test_help_says_reactions_rate_and_in_groups_only_where_the_bot_is_an_admin(
        harness: Harness) -> None:
    private = (await harness.ask(CHAT, "/help")).text
    assert "as buttons or reactions" in private
    group = (await harness.ask(GROUP, "/help", chat_type="supergroup", title="Lab")).text
    assert "if the bot is an admin here" in group


async def test_a_chat_that_rates_by_reaction_may_leave_the_buttons_out(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    asked = await harness.ask(CHAT, "/thumbs")
    assert "buttons are shown" in asked.text
    assert "without 👍 / 👎 buttons" in (await harness.ask(CHAT, "/thumbs off")).text
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()

    alert = alerts_of(harness, CHAT, "Graph neural networks")[0]
    assert alert.button_texts[0] == "⭐ Save"
    assert not any(b["text"].startswith(("👍", "👎")) for b in alert.buttons)
    card = await harness.ask(CHAT, "/paper 2611.10001")
    assert not any(b["text"].startswith(("👍", "👎")) for b in card.buttons)
    harness.tg.react(CHAT, alert.message_id, ("🔥",))
    await handled(harness, CHAT)
    assert await harness.services.storage.feedback.get(CHAT, "2611.10001") == Feedback.MORE

    assert "back" in (await harness.ask(CHAT, "/thumbs on")).text
    card = await harness.ask(CHAT, "/paper 2611.10001")
    assert [b["text"] for b in card.buttons][:3] == ["⭐ Save", "👍✓", "👎"]


async def test_in_a_group_only_admins_switch_the_buttons(harness: Harness) -> None:
    admin, member = 7404, 7405
    harness.tg.set_admins(GROUP, {admin})
    refused = await harness.ask(GROUP, "/thumbs off", chat_type="supergroup", title="Lab",
                                user_id=member)
    assert "Only this group's administrators" in refused.text
    assert "without 👍 / 👎" in (await harness.ask(GROUP, "/thumbs off", user_id=admin)).text


async def test_a_reaction_shows_its_label_on_the_alerts_buttons_as_a_tap_would(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()
    alert = alerts_of(harness, CHAT, "Graph neural networks")[0]
    assert [b["text"] for b in alert.buttons][:3] == ["⭐ Save", "👍", "👎"]

    harness.tg.react(CHAT, alert.message_id, ("❤",))
    await handled(harness, CHAT)
    shown = harness.tg.message(CHAT, alert.message_id)
    assert [b["text"] for b in shown.buttons][:3] == ["⭐ Save", "👍✓", "👎"]
    harness.tg.react(CHAT, alert.message_id, ("👎",), old=("❤",))
    await handled(harness, CHAT)
    assert [b["text"] for b in harness.tg.message(CHAT, alert.message_id).buttons][:3] == [
        "⭐ Save", "👍", "👎✓"]
    # The buttons drawn after a reaction are the ones a tap gives: tapping 👎✓ clears it.
    lit = next(b for b in harness.tg.message(CHAT, alert.message_id).buttons
               if b["text"] == "👎✓")
    await harness.press(CHAT, alert.message_id, lit["callback_data"])
    assert await harness.services.storage.feedback.get(CHAT, alert_paper(alert)) is None
    harness.tg.react(CHAT, alert.message_id, (), old=("👎",))  # nothing left to clear
    await handled(harness, CHAT)
    assert [b["text"] for b in harness.tg.message(CHAT, alert.message_id).buttons][:3] == [
        "⭐ Save", "👍", "👎"]


def alert_paper(alert: SentMessage) -> str:
    return next(word.removeprefix("arXiv:").split("v")[0] for word in alert.text.split()
                if word.startswith("arXiv:"))


async def test_a_reaction_on_a_papers_card_rates_it_as_on_an_alert(harness: Harness) -> None:
    harness.serve_feed(day(), announce_date=DAY1)
    await harness.poll()  # stored; the chat follows nothing, so no alert
    card = await harness.ask(CHAT, "/paper 2611.10001")
    assert [b["text"] for b in card.buttons][:3] == ["⭐ Save", "👍", "👎"]

    harness.tg.react(CHAT, card.message_id, ("🔥",))
    await handled(harness, CHAT)
    feedback = harness.services.storage.feedback
    assert await feedback.get(CHAT, "2611.10001") == Feedback.MORE
    assert [b["text"] for b in harness.tg.message(CHAT, card.message_id).buttons][:3] == [
        "⭐ Save", "👍✓", "👎"]
    harness.tg.react(CHAT, card.message_id, (), old=("🔥",))
    await handled(harness, CHAT)
    assert await feedback.get(CHAT, "2611.10001") is None


async def test_after_a_reaction_an_expanded_alert_still_offers_to_collapse(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)  # an abstract of 450 characters
    await harness.poll()
    alert = alerts_of(harness, CHAT, "Sparse attention")[0]
    expand = next(b for b in alert.buttons if b["text"] == "📄 Full abstract")
    await harness.press(CHAT, alert.message_id, expand["callback_data"])
    assert "🔼 Collapse" in harness.tg.message(CHAT, alert.message_id).button_texts

    harness.tg.react(CHAT, alert.message_id, ("👍",))
    await handled(harness, CHAT)
    texts = harness.tg.message(CHAT, alert.message_id).button_texts
    assert "👍✓" in texts and "🔼 Collapse" in texts, texts

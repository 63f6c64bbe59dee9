"""Following, listing and unfollowing, as a researcher does it in the chat."""

from __future__ import annotations

from bot.arxiv.taxonomy import CATEGORIES
from tests.conftest import Harness, make_paper

CHAT = 6001


async def test_follow_confirms_the_query_as_typed_with_its_number(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow au:Yoneki  AND cat:cs.lg")
    assert "#1: au:Yoneki AND cat:cs.lg\n" in reply.text, "trimmed, spaces collapsed"
    assert (await harness.services.storage.subscriptions.for_chat(CHAT))[0].query == \
        "au:yoneki cat:cs.LG", "the canonical form is kept for matching"
    second = await harness.ask(CHAT, "/follow ti:\"graph neural\"")
    assert "#2" in second.text


async def test_the_same_query_written_differently_is_a_duplicate(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:Yoneki AND cat:cs.lg")
    reply = await harness.ask(CHAT, "/follow cat:cs.LG au:yoneki")
    assert "already follow" in reply.text and "#1" in reply.text
    assert "au:Yoneki AND cat:cs.lg" in reply.text, "the existing one, as it was typed"
    assert len(await harness.services.storage.subscriptions.for_chat(CHAT)) == 1


async def test_a_bad_query_says_where_and_why_and_adds_nothing(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow (cs.LG OR au:Hinton")
    assert "column" in reply.text and "parenthes" in reply.text
    assert "^" in reply.text
    assert await harness.services.storage.subscriptions.for_chat(CHAT) == []


async def test_queries_matching_nearly_everything_are_refused(harness: Harness) -> None:
    for query in ("NOT cs.LG", "-survey", "*"):
        reply = await harness.ask(CHAT, f"/follow {query}")
        assert "couldn't read" in reply.text or "too broad" in reply.text.lower() or \
            "match" in reply.text.lower(), reply.text
    assert await harness.services.storage.subscriptions.for_chat(CHAT) == []


async def test_follow_without_a_query_explains_how(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow")
    assert "/follow cs.LG" in reply.text


async def test_an_overlong_query_is_refused(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow " + "word " * 80)
    assert "too long" in reply.text
    assert await harness.services.storage.subscriptions.for_chat(CHAT) == []


async def test_hostile_text_is_echoed_escaped_and_markup_refused(harness: Harness) -> None:
    refused = await harness.ask(CHAT, "/follow \"<b>bold</b>\" '; DROP TABLE subscriptions; --")
    # The fake rejects broken HTML like Telegram does, so arriving at all proves the escaping.
    assert refused.parse_mode == "HTML" and "<b>bold</b>" in refused.text
    assert "'<' at column 2" in refused.text, "the reply names the character and where it is"
    assert await harness.services.storage.subscriptions.count() == 0

    stored = await harness.ask(CHAT, "/follow \"bold\" DROP TABLE")
    assert "Following #1" in stored.text
    subs = await harness.services.storage.subscriptions.for_chat(CHAT)
    assert len(subs) == 1 and "drop" in subs[0].query and "table" in subs[0].query


async def test_list_shows_numbered_subscriptions_with_remove_buttons(harness: Harness) -> None:
    empty = await harness.ask(CHAT, "/list")
    assert "/follow cs.LG" in empty.text
    await harness.ask(CHAT, "/follow cs.LG")
    await harness.ask(CHAT, "/follow au:Yoneki")
    listing = await harness.ask(CHAT, "/list")
    assert "1. cs.LG\n2. au:Yoneki" in listing.text, "each as it was typed"
    assert listing.button_texts == ["✖ 1", "✖ 2"]

    answer = await harness.press(CHAT, listing.message_id, listing.callback_data[0])
    assert "Removed" in (answer.text or "")
    edited = await harness.tg.wait_for(
        lambda: (m := harness.tg.message(CHAT, listing.message_id)).edit_count and m,
        what="the list redrawn")
    assert "cs.LG" not in edited.text and edited.button_texts == ["✖ 1"]
    remaining = await harness.services.storage.subscriptions.for_chat(CHAT)
    assert [s.query.lower() for s in remaining] == ["au:yoneki"]


async def test_a_chat_cannot_remove_another_chats_subscription(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    theirs = (await harness.services.storage.subscriptions.for_chat(CHAT))[0]
    other = 6002
    await harness.ask(other, "/follow au:Hinton")
    listing = await harness.ask(other, "/list")
    answer = await harness.forge(other, listing.message_id, f"v1:u:{theirs.id}")
    # Data that is not on the pressed message is refused before anything is looked up.
    assert "expired" in (answer.text or "")
    assert [s.id for s in await harness.services.storage.subscriptions.for_chat(CHAT)] == [
        theirs.id]


async def test_unfollow_by_number_and_all(harness: Harness) -> None:
    for query in ("cs.LG", "au:Yoneki", "ti:transformer"):
        await harness.ask(CHAT, f"/follow {query}")
    reply = await harness.ask(CHAT, "/unfollow 2")
    assert "Removed #2" in reply.text
    missing = await harness.ask(CHAT, "/unfollow 7")
    assert "no subscription with that number" in missing.text
    nonsense = await harness.ask(CHAT, "/unfollow two")
    assert "no subscription with that number" in nonsense.text
    everything = await harness.ask(CHAT, "/unfollow all")
    assert "Removed 2 subscriptions" in everything.text
    assert await harness.services.storage.subscriptions.for_chat(CHAT) == []


async def test_fifty_subscriptions_is_the_limit(harness: Harness) -> None:
    await harness.ask(CHAT, "/start")  # the chat exists before it can subscribe
    for n in range(50):
        await harness.services.subscriptions.follow(CHAT, f"ti:topic{n}")
    reply = await harness.ask(CHAT, "/follow ti:one-more")
    assert "50" in reply.text and "/unfollow" in reply.text


async def test_in_groups_only_administrators_change_subscriptions(harness: Harness) -> None:
    group = -100123
    harness.tg.set_admins(group, {11})
    refused = await harness.ask(group, "/follow cs.LG", user_id=22, title="Lab")
    assert "administrators" in refused.text
    accepted = await harness.ask(group, "/follow cs.LG", user_id=11, title="Lab")
    assert "#1" in accepted.text


async def test_follow_previews_matches_of_the_last_week(harness: Harness) -> None:
    harness.serve_feed([make_paper(1), make_paper(2, categories=("math.AG",)),
                        make_paper(3, title="Graph neural networks for molecules")])
    await harness.poll()
    reply = await harness.ask(CHAT, "/follow ti:\"graph neural\"")
    assert "would have matched 1 paper" in reply.text
    reply = await harness.ask(CHAT, "/follow au:Yoneki")
    assert "would have matched 3 papers" in reply.text


async def test_a_new_subscription_matches_the_next_poll(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:\"E. Yoneki\"")
    harness.serve_feed([make_paper(1), make_paper(2, authors=("Someone Else",))])
    await harness.poll()
    alerts = await harness.tg.wait_for_messages(CHAT, contains="Sparse attention")
    assert len(alerts) == 1 and "part 1" in alerts[0].text


async def test_a_long_query_survives_a_restart(harness: Harness) -> None:
    categories = sorted(c for c in CATEGORIES if c.startswith("cs."))
    query = " OR ".join(categories)[:270].rsplit(" OR ", 1)[0]
    assert len(query) + len("/follow () ti:quantum") <= 300
    reply = await harness.ask(CHAT, f"/follow ({query}) ti:quantum")
    assert "Following #1" in reply.text
    stored = (await harness.services.storage.subscriptions.for_chat(CHAT))[0].query
    assert len(stored) > len(query), "the canonical form spells out cat: on every term"
    # A restart compiles the matcher from the stored canonical texts.
    assert await harness.services.subscriptions.load() == 1
    assert harness.services.subscriptions.followed_sources() >= {"cs.LG", "cs.DS"}

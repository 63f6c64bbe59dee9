"""A lab's forum group: each topic gets the alerts of the subscriptions made in it."""

from __future__ import annotations

import pytest

from bot.core.models import Paper
from tests.conftest import ON_BOTH_ENGINES, Harness, make_paper
from tests.fakes.telegram_server import DEFAULT_GROUP_USER_ID, SentMessage

FORUM = -1001500000001


def alerts_in(harness: Harness, thread: int | None) -> list[SentMessage]:
    """The bot's alerts in one topic (None: General), answers to commands left out."""
    return [m for m in harness.tg.messages_in(FORUM, thread) if "arXiv:" in m.text]


def ids_in(messages: list[SentMessage]) -> list[str]:
    """The versioned arXiv ids the alerts among `messages` show, in order."""
    return [word.removeprefix("arXiv:") for m in messages
            for word in m.text.replace("·", " ").split() if word.startswith("arXiv:")]


async def forum(harness: Harness, *names: str) -> list[int]:
    """A forum group whose members are admins, with these topics; their thread ids."""
    harness.tg.set_admins(FORUM, {DEFAULT_GROUP_USER_ID})
    threads = [harness.tg.create_topic(FORUM, name, title="Lab") for name in names]
    await harness.settle()  # the bot has read each topic's name
    return threads


async def follow(harness: Harness, query: str, thread: int | None = None) -> SentMessage:
    reply = await harness.ask(FORUM, f"/follow {query}", thread_id=thread)
    assert "Following" in reply.text, reply.text
    assert reply.message_thread_id == thread, "a command is answered where it was sent"
    return reply


async def announce(harness: Harness, papers: list[Paper]) -> None:
    harness.serve_feed(papers)
    await harness.poll()


@ON_BOTH_ENGINES
async def test_each_topic_receives_its_own_subscriptions_alerts_once(harness: Harness) -> None:
    methods, theory = await forum(harness, "Methods", "Theory")
    reply = await follow(harness, "cs.LG", methods)
    assert "Its alerts come to this topic." in reply.text
    await follow(harness, "au:Yoneki", theory)
    await follow(harness, "cs.CV")  # in General

    await announce(harness, [
        make_paper(1),  # cs.LG by Yoneki: both topics, once each
        make_paper(2, categories=("cs.AI",)),  # Yoneki: Theory
        make_paper(3, authors=("Ann Lee",)),  # cs.LG: Methods
        make_paper(4, categories=("cs.CV",), authors=("Bo Chen",)),  # General
    ])

    assert ids_in(harness.tg.messages_in(FORUM, methods)) == ["2611.10001v1", "2611.10003v1"]
    assert ids_in(harness.tg.messages_in(FORUM, theory)) == ["2611.10001v1", "2611.10002v1"]
    assert ids_in(harness.tg.messages_in(FORUM, None)) == ["2611.10004v1"]

    here = await harness.ask(FORUM, "/list", thread_id=theory)
    assert here.message_thread_id == theory
    assert "Subscriptions in Theory (1)" in here.text
    assert "au:Yoneki" in here.text and "cs.LG" not in here.text
    everywhere = await harness.ask(FORUM, "/list")
    assert everywhere.message_thread_id is None
    lines = everywhere.text.splitlines()
    assert lines[1:10] == ["", "General", "3. cs.CV", "", "Methods", "1. cs.LG",
                           "", "Theory", "2. au:Yoneki"], everywhere.text
    assert "/move" in lines[-1]


@ON_BOTH_ENGINES
async def test_a_busy_topic_gets_its_own_digest(harness: Harness) -> None:
    [busy] = await forum(harness, "Busy")
    await follow(harness, "cs.LG", busy)
    await follow(harness, "cs.CV")

    await announce(harness, [make_paper(n) for n in range(1, 12)]
                   + [make_paper(20 + n, categories=("cs.CV",)) for n in range(2)])

    [_, digest] = harness.tg.messages_in(FORUM, busy)  # the answer to /follow, the digest
    assert "11 new matches" in digest.text
    assert ids_in(harness.tg.messages_in(FORUM, None)) == ["2611.10020v1", "2611.10021v1"]


@pytest.mark.parametrize("gone", ["deleted", "closed"])
@ON_BOTH_ENGINES
async def test_a_gone_topic_falls_back_to_general_once_and_loses_nothing(
        harness: Harness, gone: str) -> None:
    [papers] = await forum(harness, "Papers")
    await follow(harness, "cs.LG", papers)
    if gone == "deleted":
        harness.tg.delete_topic(FORUM, papers)
    else:
        harness.tg.close_topic(FORUM, papers)

    await announce(harness, [make_paper(1), make_paper(2)])
    await announce(harness, [make_paper(3)])

    general = harness.tg.messages_in(FORUM, None)
    notices = [m for m in general if "no longer takes messages" in m.text]
    assert len(notices) == 1, harness.tg.dump()
    assert "Papers" in notices[0].text and "cs.LG" in notices[0].text
    assert ids_in(general) == ["2611.10001v1", "2611.10002v1", "2611.10003v1"]
    assert ids_in(harness.tg.messages_in(FORUM, papers)) == []
    refused = [c for c in harness.tg.calls_of("sendMessage") if c.status == 400]
    assert len(refused) == 1, "the topic was tried once, then its binding was cleared"
    listed = await harness.ask(FORUM, "/list")
    assert listed.text.splitlines()[1:4] == ["", "General", "1. cs.LG"], listed.text


@ON_BOTH_ENGINES
async def test_move_rebinds_a_subscription_to_the_topic_it_is_sent_in(
        harness: Harness) -> None:
    [reading] = await forum(harness, "Reading group")
    await follow(harness, "cs.LG")

    moved = await harness.ask(FORUM, "/move 1", thread_id=reading)
    await announce(harness, [make_paper(1)])

    assert moved.message_thread_id == reading
    assert "Moved #1 cs.LG to Reading group" in moved.text
    assert ids_in(harness.tg.messages_in(FORUM, reading)) == ["2611.10001v1"]
    assert ids_in(harness.tg.messages_in(FORUM, None)) == []
    back = await harness.ask(FORUM, "/move 1")
    assert "to General" in back.text
    missing = await harness.ask(FORUM, "/move 7", thread_id=reading)
    assert "no subscription with that number" in missing.text
    plain_group = await harness.ask(-100600, "/move 1", title="No topics")
    assert "groups with topics" in plain_group.text


@ON_BOTH_ENGINES
async def test_a_revision_replies_to_the_first_alert_in_the_same_topic(
        harness: Harness) -> None:
    [methods] = await forum(harness, "Methods")
    await follow(harness, "cs.LG", methods)
    await follow(harness, "au:Yoneki")  # the same paper in General too
    await announce(harness, [make_paper(1, title="Routing attention")])
    [first_here] = alerts_in(harness, methods)
    [first_general] = alerts_in(harness, None)

    await announce(harness, [make_paper(1, version=2, title="Routing attention at scale")])

    [_, revision_here] = alerts_in(harness, methods)
    [_, revision_general] = alerts_in(harness, None)
    assert ids_in([revision_here, revision_general]) == ["2611.10001v2"] * 2
    assert revision_here.reply_to_message_id == first_here.message_id
    assert revision_general.reply_to_message_id == first_general.message_id
    assert "Title was: Routing attention" in revision_here.text


@ON_BOTH_ENGINES
async def test_help_in_a_forum_explains_move_and_a_private_chat_is_spared_it(
    harness: Harness,
) -> None:
    [methods] = await forum(harness, "Methods")
    in_topic = await harness.ask(FORUM, "/help", thread_id=methods)
    assert in_topic.message_thread_id == methods
    assert "/move" in in_topic.text
    assert "/move" not in (await harness.ask(5001, "/help")).text

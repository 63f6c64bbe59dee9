"""A paper's revisions arrive as replies to its first alert, so the chat reads v1 → v2 → v3."""

from __future__ import annotations

from bot.core.models import Paper
from tests.conftest import ON_BOTH_ENGINES, Harness, make_paper
from tests.fakes.telegram_server import SentMessage

LAB = 7101


def arriving(harness: Harness, chat_id: int, version_id: str) -> SentMessage:
    [message] = [m for m in harness.tg.messages(chat_id) if f"arXiv:{version_id}" in m.text]
    return message


def reply_asked(message: SentMessage) -> int | None:
    """The message the bot asked to reply to; only ever allowed to go without it."""
    reply = message.reply_parameters
    if reply is None:
        return None
    assert reply["allow_sending_without_reply"] is True, reply
    return reply["message_id"]


async def announce(harness: Harness, papers: list[Paper]) -> None:
    harness.serve_feed(papers)
    await harness.poll()


@ON_BOTH_ENGINES
async def test_each_revision_replies_to_the_first_alert_and_says_what_changed(
        harness: Harness) -> None:
    await harness.ask(LAB, "/follow cs.LG")
    await announce(harness, [make_paper(1, title="Routing attention")])
    first = arriving(harness, LAB, "2611.10001v1")
    assert first.reply_to_message_id is None

    await announce(harness, [make_paper(1, version=2, title="Routing attention at scale")])
    second = arriving(harness, LAB, "2611.10001v2")
    await announce(harness, [make_paper(1, version=3, title="Routing attention, revisited")])
    third = arriving(harness, LAB, "2611.10001v3")

    assert reply_asked(second) == first.message_id
    assert second.reply_to_message_id == first.message_id
    assert "Title was: Routing attention" in second.text, "it still says what changed"
    assert third.reply_to_message_id == first.message_id, "the thread is v1 → v2 → v3"
    assert "Title was: Routing attention at scale" in third.text


@ON_BOTH_ENGINES
async def test_a_deleted_first_alert_lets_the_revision_arrive_on_its_own(
        harness: Harness) -> None:
    await harness.ask(LAB, "/follow cs.LG")
    await announce(harness, [make_paper(2)])
    first = arriving(harness, LAB, "2611.10002v1")
    await harness.app.bot.delete_message(LAB, first.message_id)  # someone tidied the chat

    await announce(harness, [make_paper(2, version=2, title="A second look")])

    revision = arriving(harness, LAB, "2611.10002v2")
    assert reply_asked(revision) == first.message_id
    assert revision.reply_to_message_id is None
    assert all(c.status == 200 for c in harness.tg.calls_of("sendMessage"))


@ON_BOTH_ENGINES
async def test_a_paper_first_seen_in_a_digest_threads_from_its_first_own_alert(
        harness: Harness) -> None:
    await harness.ask(LAB, "/follow cs.LG")
    # Eleven at once come as a digest: a reply to it would quote a list of other papers.
    await announce(harness, [make_paper(n) for n in range(10, 21)])
    [digest] = [m for m in harness.tg.messages(LAB) if "2611.10010" in m.text]
    assert "2611.10011" in digest.text

    await announce(harness, [make_paper(10, version=2, title="Revised once")])
    second = arriving(harness, LAB, "2611.10010v2")
    await announce(harness, [make_paper(10, version=3, title="Revised twice")])
    third = arriving(harness, LAB, "2611.10010v3")

    assert reply_asked(second) is None
    assert third.reply_to_message_id == second.message_id

"""Revisions say what changed, including what only the API knows: the comment."""

from __future__ import annotations

from tests.conftest import Harness, make_paper

CHAT = 9301


async def test_a_saved_papers_revision_shows_the_new_comment_from_the_api(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    v1 = make_paper(1, title="Routing attention")
    harness.serve_feed([v1])
    await harness.poll()
    card = await harness.ask(CHAT, "/paper 2611.10001")
    await harness.press(CHAT, card.message_id, card.callback_data[0])  # Save
    assert await harness.services.storage.saved.count(CHAT) == 1

    v2 = make_paper(1, version=2, title="Routing attention at scale")
    harness.arxiv.set_api_papers([
        v1, make_paper(1, version=2, title="Routing attention at scale",
                       comment="Accepted at NeurIPS 2026; 12 pages")])
    harness.serve_feed([v2])
    await harness.poll()
    alert = await harness.tg.wait_for_message(CHAT, contains="at scale")
    assert "v2" in alert.text
    assert "Accepted at NeurIPS 2026" in alert.text
    assert "Routing attention" in alert.text  # the old title, shown as what changed
    looked_up = [r for r in harness.arxiv.requests if r.path.endswith("/api/query")]
    assert len(looked_up) == 1, "one batched API request for the poll's revisions"


async def test_a_failing_api_does_not_hold_back_the_revision(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:Yoneki")
    harness.serve_feed([make_paper(2)])
    await harness.poll()
    harness.arxiv.fail_next(status=400, times=10, path="/api/query")  # not retried: fast
    harness.serve_feed([make_paper(2, version=2, title="A second look")])
    await harness.poll()
    alert = await harness.tg.wait_for_message(CHAT, contains="A second look")
    assert "v2" in alert.text
    api = [r for r in harness.arxiv.requests if r.path.endswith("/api/query")]
    assert [r.status for r in api] == [400], "the look-up failed, and the alert still came"

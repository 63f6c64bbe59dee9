"""Real arXiv data through the whole bot: affiliations in author strings, queries shown as typed."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Harness, make_paper

CHAT = 13001
REAL_AUTHORS = json.loads((Path(__file__).parent / "fixtures" / "real-author-strings.json")
                          .read_text(encoding="utf-8"))


def _real(query: str) -> dict[str, str]:
    return next(case for case in REAL_AUTHORS if case["query"] == query)


def _alerts(harness: Harness) -> list:
    return [m for m in harness.tg.messages(CHAT) if "arXiv:" in m.text]


async def test_an_author_written_with_an_affiliation_gets_the_alert(harness: Harness) -> None:
    gahler = _real("au:Gahler")
    assert "(" in gahler["string"], "the real string carries an affiliation"
    reply = await harness.ask(CHAT, "/follow au:Gahler")
    assert "Following #1: au:Gahler" in reply.text

    # The feed's dc:creator holds arXiv's string as written, affiliation and its comma included.
    harness.serve_feed([
        make_paper(1, authors=(gahler["string"], "Eiko Yoneki")),
        make_paper(2, authors=("Universität Stuttgart",)),
    ])
    await harness.poll()

    [alert] = _alerts(harness)
    assert "arXiv:2611.10001v1" in alert.text
    assert "Franz Gähler, Eiko Yoneki\n" in alert.text, "the name without its affiliation"
    assert "Matched: au:Gahler" in alert.text
    stored = await harness.services.storage.papers.get("2611.10001")
    assert stored is not None and stored.authors == ("Franz Gähler", "Eiko Yoneki")


async def test_subscriptions_are_listed_and_matched_exactly_as_typed(harness: Harness) -> None:
    phrase = await harness.ask(CHAT, '/follow   "on-policy   distillation" ')
    assert 'Following #1: "on-policy distillation"\n' in phrase.text
    author = await harness.ask(CHAT, "/follow au:Yoneki")
    assert "Following #2: au:Yoneki\n" in author.text

    listing = await harness.ask(CHAT, "/list")
    assert '1. "on-policy distillation"\n2. au:Yoneki' in listing.text

    again = await harness.ask(CHAT, '/follow "On Policy Distillation"')
    assert "already follow" in again.text and '#1: "on-policy distillation"' in again.text
    assert len(await harness.services.storage.subscriptions.for_chat(CHAT)) == 2

    harness.serve_feed([make_paper(1, title="Faster on-policy distillation for small models",
                                   authors=("Eiko Yoneki",))])
    await harness.poll()
    [alert] = _alerts(harness)
    # The matched queries take one line on a phone: the first as typed, then how many more.
    assert '🔎 Matched: "on-policy distillation" +1\n' in alert.text


async def test_markup_is_refused_naming_the_character_and_the_list_is_unchanged(
        harness: Harness) -> None:
    await harness.ask(CHAT, "/follow au:Yoneki")
    before = await harness.ask(CHAT, "/list")

    refused = await harness.ask(CHAT, "/follow <b>x</b>")

    assert "couldn't read" in refused.text and "'<' at column 1" in refused.text
    assert "<b>x</b>" in refused.text, "echoed as text, escaped"
    after = await harness.ask(CHAT, "/list")
    assert after.text == before.text
    assert [s.display for s in await harness.services.storage.subscriptions.for_chat(CHAT)] == [
        "au:Yoneki"]


async def test_newlines_and_tabs_in_a_query_are_spaces(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow cs.LG\n\tau:Yoneki\r\nOR  ti:routing")
    assert "Following #1: cs.LG au:Yoneki OR ti:routing\n" in reply.text
    [sub] = await harness.services.storage.subscriptions.for_chat(CHAT)
    assert sub.query == "au:yoneki cat:cs.LG OR ti:routing"


async def test_paper_links_with_a_query_or_a_fragment_and_authors_with_affiliations(
        harness: Harness) -> None:
    pham = _real("au:pham")
    paper = make_paper(1, authors=(pham["string"], "Dirk Wübben"))
    paper = type(paper)(**{**{f: getattr(paper, f) for f in paper.__slots__},
                           "arxiv_id": "2401.01234", "version": 2})
    harness.arxiv.set_api_papers([paper])
    for link in ("https://arxiv.org/abs/2401.01234v2?context=cs",
                 "https://arxiv.org/pdf/2401.01234v2.pdf?download=1#page=3",
                 "arxiv.org/html/2401.01234v2#S2"):
        card = await harness.ask(CHAT, f"/paper {link}")
        assert "arXiv:2401.01234v2" in card.text, link
        assert "Quang-Cuong Pham, Dirk Wübben\n" in card.text, "the API name without affiliation"

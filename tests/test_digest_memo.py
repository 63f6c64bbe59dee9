"""A drain composes hundreds of chats' digests of one day's papers at once: each paper version
is read from the store once and its entry rendered once for all of them, and every digest is
what it would be on its own."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence

import pytest

from bot.core.models import Alert, AlertKind, Chat, DeliveryMode, OutboxRow, OutboxStatus, Paper
from bot.delivery import render
from bot.delivery.compose import DigestMemo, compose_for_chat
from tests.fakes.feedgen import synth_papers

CHATS = 100
PER_CHAT = 45


class CountingPapers:
    """A day's papers, counting each version asked for."""

    def __init__(self, papers: Sequence[Paper]) -> None:
        self._papers = {(p.arxiv_id, p.version): p for p in papers}
        self.asked: Counter[tuple[str, int]] = Counter()

    async def get_versions(self, keys: Sequence[tuple[str, int]]
                           ) -> dict[tuple[str, int], Paper]:
        self.asked.update(keys)
        await asyncio.sleep(0)  # a read lets the other chats' workers run, as the database's does
        return {key: self._papers[key] for key in keys if key in self._papers}


class DayStore:
    def __init__(self, papers: Sequence[Paper]) -> None:
        self.papers = CountingPapers(papers)


def chat(chat_id: int) -> Chat:
    return Chat(chat_id, "private", None, "en", False, "UTC", DeliveryMode.DIGEST, "08:00",
                None, False, None)


def pending(chat_id: int, papers: Sequence[Paper]) -> list[OutboxRow]:
    return [OutboxRow(chat_id * 1000 + n, Alert(chat_id, p.arxiv_id, p.version, AlertKind.NEW,
                                                (1,), ("cat:cs.LG",)),
                      OutboxStatus.PENDING, 0, 0.0, None)
            for n, p in enumerate(papers)]


async def test_a_hundred_chats_digests_at_once_read_and_render_each_paper_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    day = synth_papers(60, seed=5)
    rng = random.Random(5)
    rows = {chat_id: pending(chat_id, rng.sample(day, PER_CHAT)) for chat_id in range(1, CHATS + 1)}
    rendered: Counter[str] = Counter()
    render_entry = render._entry_parts

    def counted(paper: Paper, kind: AlertKind | str, lang: str) -> render._EntryParts:
        rendered[paper.versioned_id] += 1
        return render_entry(paper, kind, lang)

    monkeypatch.setattr(render, "_entry_parts", counted)
    store = DayStore(day)
    memo = DigestMemo(store)  # type: ignore[arg-type]

    together = await asyncio.gather(*(
        compose_for_chat(store, chat(chat_id), chat_rows, digest_run=True,  # type: ignore[arg-type]
                         memo=memo)
        for chat_id, chat_rows in rows.items()))

    assert set(store.papers.asked.values()) == {1}, "each version read once for all chats"
    assert rendered and set(rendered.values()) == {1}, "each entry rendered once"
    alone = [await compose_for_chat(DayStore(day), chat(chat_id), chat_rows,  # type: ignore
                                    digest_run=True)
             for chat_id, chat_rows in rows.items()]
    assert [[m.message for m in c.messages] for c in together] == \
        [[m.message for m in c.messages] for c in alone], "the same digests as on their own"


async def test_the_memo_keeps_a_bounded_number_of_papers_and_reads_again_what_it_let_go() -> None:
    day = synth_papers(30, seed=6)
    store = DayStore(day)
    memo = DigestMemo(store, capacity=10)  # type: ignore[arg-type]
    keys = [(p.arxiv_id, p.version) for p in day]

    assert len(await memo.versions(keys)) == 30
    assert len(await memo.versions(keys[-10:])) == 10
    assert set(store.papers.asked.values()) == {1}, "the last ten were kept"
    assert (await memo.versions(keys[:1]))[keys[0]] == day[0]
    assert store.papers.asked[keys[0]] == 2, "the first was let go, and read again"

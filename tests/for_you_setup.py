"""Chats whose For-you message is due: shared by the For-you delivery tests (in-process) and the
crash test (a `python -m bot` started on the seeded database).

Each chat saved the five graph papers of two days ago (enough for a model) and turned For you
on then; the last hour brought four graph papers and four quantum ones, which no chat was
alerted to. Its For-you time (09:00 UTC) has passed since, so a round now picks the graph ones.
"""

from __future__ import annotations

from bot.core.constants import DAY
from bot.core.models import Paper
from bot.storage import Storage
from tests.conftest import make_paper

FOR_YOU_COUNT = 3
FOR_YOU_HEADER = "✨ For you · "  # not "✨ For you is on", the reply to /foryou

TOPICS = {
    "graph": ("Graph neural networks for {x}",
              "We train message passing graph neural networks on {x} graphs; node embeddings "
              "and graph pooling improve link prediction and node classification."),
    "quantum": ("Quantum error correction with {x}",
                "We study surface codes and logical qubits; a {x} decoder lowers the logical "
                "error rate of fault-tolerant quantum computation."),
}
EARLIER = ("molecules", "citations", "traffic", "proteins", "social networks")
LATEST = ("sensors", "markets", "weather", "power grids")


def topic_papers(topic: str, first: int, subjects: tuple[str, ...]) -> list[Paper]:
    title, abstract = TOPICS[topic]
    return [make_paper(first + n, title=title.format(x=s), abstract=abstract.format(x=s),
                       authors=(f"{topic.title()} Author{first + n}",))
            for n, s in enumerate(subjects)]


SAVED = topic_papers("graph", 1, EARLIER)
EARLIER_PAPERS = SAVED + topic_papers("quantum", 6, EARLIER)
LATEST_GRAPH = topic_papers("graph", 200, LATEST)
LATEST_PAPERS = LATEST_GRAPH + topic_papers("quantum", 100, LATEST)


async def seed_for_you(store: Storage, chat_ids: list[int], now: float, *,
                       paused: tuple[int, ...] = ()) -> None:
    """The papers, and each chat with its saved papers and For you on since two days ago."""
    await store.papers.upsert_many(EARLIER_PAPERS, now - 2 * DAY)
    await store.papers.upsert_many(LATEST_PAPERS, now - 3600)
    for chat_id in chat_ids:
        await store.chats.record(chat_id, "private", f"chat {chat_id}", "en", now - 2 * DAY)
        await store.saved.save_many(chat_id, [(p.arxiv_id, p.version) for p in SAVED],
                                    now - 2 * DAY)
        await store.rankings.set_for_you(chat_id, FOR_YOU_COUNT, now - 2 * DAY)
        if chat_id in paused:
            await store.chats.set_paused(chat_id, True)


async def next_day(store: Storage, now: float, day: int) -> None:
    """Another day's graph papers, first seen an hour before `now` (the `day`-th after the
    seeded one): what that day's round picks from."""
    await store.papers.upsert_many(topic_papers("graph", 200 + 10 * day, LATEST), now - 3600)


def is_for_you(text: str) -> bool:
    return text.startswith(FOR_YOU_HEADER)


def suggested(text: str) -> list[str]:
    """The numbered entries of a For-you message."""
    return [line for line in text.splitlines() if line.split(".")[0].isdigit()]

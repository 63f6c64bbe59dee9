"""The full-text index behind inline search: it follows every change of the papers table."""

from __future__ import annotations

from pathlib import Path

from bot.library import search as library_search
from bot.query.text import words
from bot.storage import open_storage
from tests.conftest import make_paper

WEEK = 7 * 86400.0


async def ids(storage, *words: str, since: float = 0.0) -> list[str]:
    return [paper.arxiv_id for paper in await storage.papers.search(words, since, 20)]


async def test_the_index_follows_new_versions_and_pruning(database_url: str) -> None:
    storage = await open_storage(database_url)
    try:
        papers = [make_paper(n, title=f"Graph neural networks for {subject}")
                  for n, subject in enumerate(("molecules", "traffic", "proteins"), 1)]
        await storage.papers.upsert_many(papers, 1000.0)
        assert sorted(await ids(storage, "graph", "neur")) == [
            "2611.10001", "2611.10002", "2611.10003"]
        assert await ids(storage, "traffic") == ["2611.10002"]

        # A new version with another title: the old words no longer find it.
        await storage.papers.upsert_many(
            [make_paper(2, version=2, title="Road networks under load")], 2000.0)
        assert await ids(storage, "traffic") == []
        assert await ids(storage, "road") == ["2611.10002"]
        # Only papers first stored since the given time.
        await storage.papers.upsert_many([make_paper(9, title="Graph transformers")], 5000.0)
        assert await ids(storage, "graph", since=3000.0) == ["2611.10009"]

        # Pruned papers leave the index.
        assert await storage.papers.prune(1500.0) == 2
        assert await ids(storage, "graph") == ["2611.10009"]
        assert await ids(storage, "road") == ["2611.10002"]
    finally:
        await storage.close()


async def test_on_sqlite_accents_fold_and_a_vacuum_keeps_the_index(tmp_path: Path) -> None:
    storage = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await storage.papers.upsert_many(
            [make_paper(1, title="Graph codes"), make_paper(2, title="Road codes")], 1.0)
        await storage.papers.upsert_many([make_paper(3, title="Sparse codes")], 5.0)
        assert await ids(storage, "Wübben") == await ids(storage, "wubben") != []
        assert await storage.papers.prune(2.0) == 2  # frees pages: the VACUUM has work to do
        # A VACUUM may renumber the papers table's rowids; the index's own ids stay.
        assert await storage.db.vacuum_if_worth(min_share=0.0) is not None
        assert await ids(storage, "codes") == ["2611.10003"]
        assert await ids(storage, "sparse", "co") == ["2611.10003"]
    finally:
        await storage.close()


async def test_a_query_of_any_text_is_words_never_search_syntax(database_url: str) -> None:
    storage = await open_storage(database_url)
    try:
        await storage.papers.upsert_many([make_paper(1, title='NEAR "quoted" OR AND')], 1.0)
        assert await ids(storage, "near", '"quoted"', "or") == ["2611.10001"]
        assert await ids(storage, "and*", "(") == ["2611.10001"], "read as the word and"
    finally:
        await storage.close()


def test_a_library_is_searched_by_folded_words_the_last_half_typed() -> None:
    papers = [make_paper(1, title="Graph neural networks for molecules", authors=("A. Lee",)),
              make_paper(2, title="Sparse attention", abstract="Graph neural routing.",
                         authors=("A. Lee",)),
              make_paper(3, title="Quantum codes", authors=("Dirk Wübben",))]
    assert [p.arxiv_id for p in library_search.find(papers, ("graph", "neu"))] == [
        "2611.10001"], "titles and authors: the stored papers' index reads abstracts"
    assert [p.arxiv_id for p in library_search.find(papers, ("lee", "graph"))] == ["2611.10001"]
    assert [p.arxiv_id for p in library_search.find(papers, words("WUBB"))] == ["2611.10003"]
    assert library_search.find(papers, ("neural", "x")) == []

"""The full-text index behind inline search: it follows every change of the papers table."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.core.models import Feedback, GroupMember, LibraryLabel, LibraryQuery, LibrarySort
from bot.library import search as library_search
from bot.query.text import words
from bot.storage import open_storage
from tests.conftest import make_paper

WEEK = 7 * 86400.0


def day(number: int) -> datetime:
    return datetime(2026, 11, number, tzinfo=UTC)


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


async def test_a_library_is_searched_filtered_sorted_and_paged_by_the_engine(
        database_url: str) -> None:
    """The Mini App's library query (`saved.select`): words at the start of words of titles
    and authors (not abstracts), arXiv ids by their start, an archive's categories, labels,
    savers, three orders, pages; and the filters' facets."""
    storage = await open_storage(database_url)
    try:
        papers = [
            make_paper(1, title="Graph neural networks for molecules", authors=("Ada Lee",),
                       categories=("cs.LG", "stat.ML"), published=day(5), updated=day(9)),
            make_paper(2, title="Sparse attention", abstract="Graph neural routing.",
                       authors=("Bo Chen",), categories=("stat.ML",), published=day(7),
                       updated=day(7)),
            make_paper(3, title="Quantum codes", authors=("Ada Lee", "Ca Wu"),
                       categories=("quant-ph",), published=day(1), updated=day(8)),
            make_paper(4, title="Unrelated words", authors=("Di Fox",),
                       categories=("cs.CL",), published=day(3), updated=day(3)),
        ]
        await storage.papers.upsert_many(papers, 1.0)
        await storage.papers.upsert_many([make_paper(9, title="Graph neural unsaved")], 1.0)
        await storage.chats.record(-100, "supergroup", "lab", "en", 1.0)
        ada, bo = GroupMember(11, "Ada"), GroupMember(12, "Bo")
        for number, saver in ((1, ada), (2, bo), (3, ada), (4, bo)):
            await storage.saved.save(-100, f"2611.1000{number}", 1, 10.0 + number, saver)
        await storage.feedback.set(-100, "2611.10001", Feedback.MORE, 1.0)
        await storage.feedback.set(-100, "2611.10002", Feedback.LESS, 1.0)

        async def found(**query: object) -> list[str]:
            matches = await storage.saved.select(-100, LibraryQuery(**query))  # type: ignore
            assert matches.matching >= len(matches.entries)
            return [entry.paper.arxiv_id[-1] for entry in matches.entries]

        assert await found() == ["4", "3", "2", "1"], "newest save first"
        assert await found(words=("graph", "neu")) == ["1"], "titles, not abstracts"
        assert await found(words=("lee",)) == ["3", "1"], "authors"
        assert await found(words=("lee", "quantum")) == ["3"]
        assert await found(words=("gra", "x")) == []
        assert await found(words=("c",)) == [], "a single letter is a whole word"
        assert await found(id_prefixes=("2611.1000",)) == ["4", "3", "2", "1"]
        assert await found(id_prefixes=("2611.10003",)) == ["3"]
        assert await found(id_prefixes=("2611.10003",), words=("graph",)) == []
        assert await found(category="stat") == ["2", "1"], "an archive takes its categories"
        assert await found(category="stat.ML") == ["2", "1"]
        assert await found(category="cs.LG") == ["1"]
        assert await found(category="st") == [], "not a category's first letters"
        assert await found(label=LibraryLabel.MORE) == ["1"]
        assert await found(label=LibraryLabel.LESS) == ["2"]
        assert await found(label=LibraryLabel.NONE) == ["4", "3"]
        assert await found(saver=11) == ["3", "1"]
        assert await found(sort=LibrarySort.UPDATED) == ["1", "3", "2", "4"]
        assert await found(sort=LibrarySort.PUBLISHED) == ["2", "1", "4", "3"]
        page = await storage.saved.select(-100, LibraryQuery(offset=1, limit=2))
        assert [e.paper.arxiv_id[-1] for e in page.entries] == ["3", "2"]
        assert page.matching == 4 and page.entries[0].saver == ada
        beyond = await storage.saved.select(-100, LibraryQuery(offset=9, limit=2))
        assert beyond.entries == [] and beyond.matching == 4
        facets = await storage.saved.facets(-100)
        assert facets.total == 4
        assert facets.categories == ["cs.CL", "cs.LG", "quant-ph", "stat.ML"], "primary ones"
        assert facets.savers == [(11, "Ada"), (12, "Bo")]
        assert (await storage.saved.facets(-999)).total == 0
    finally:
        await storage.close()


async def test_on_sqlite_a_library_search_folds_accents(tmp_path: Path) -> None:
    storage = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await storage.papers.upsert_many([make_paper(1, authors=("Ana Núñez",))], 1.0)
        await storage.chats.record(5, "private", "Ana", "en", 1.0)
        await storage.saved.save(5, "2611.10001", 1, 2.0)
        for typed in ("nunez", "núñez", "NUÑ"):
            matches = await storage.saved.select(5, LibraryQuery(words=tuple(words(typed))))
            assert matches.matching == 1, typed
    finally:
        await storage.close()

"""What a revision changed, as a saved-paper alert summarises it."""

from __future__ import annotations

from dataclasses import replace
from unicodedata import normalize

from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.models import Paper
from bot.delivery.diff import EXCERPT_CHARS, describe_changes

V1 = Paper(
    arxiv_id="2611.11450",
    version=1,
    title="Sparse Attention for Long Documents",
    authors=("Eiko Yoneki", "Alan Turing"),
    abstract="We propose a sparse attention mechanism that scales linearly with length.",
    categories=("cs.LG", "cs.CL"),
)


def test_identical_versions_show_no_change() -> None:
    diff = describe_changes(V1, replace(V1, version=2))
    assert diff.is_empty
    assert (diff.old_version, diff.new_version) == (1, 2)


def test_title_change_keeps_old_and_new() -> None:
    v2 = replace(V1, version=2, title="Sparse Attention for Very Long Documents")
    diff = describe_changes(V1, v2)
    assert diff.title == ("Sparse Attention for Long Documents",
                          "Sparse Attention for Very Long Documents")
    assert not diff.is_empty


def test_reflowed_title_is_not_a_change() -> None:
    v2 = replace(V1, version=2, title="Sparse  Attention for\n Long Documents")
    assert describe_changes(V1, v2).title is None


def test_comment_added_says_accepted() -> None:
    v2 = replace(V1, version=2, comment="Accepted at NeurIPS 2026")
    diff = describe_changes(V1, v2)
    assert diff.comment == (None, "Accepted at NeurIPS 2026")


def test_comment_changed_and_removed() -> None:
    v1 = replace(V1, comment="10 pages")
    assert describe_changes(v1, replace(v1, version=2, comment="12 pages, camera-ready")).comment \
        == ("10 pages", "12 pages, camera-ready")
    assert describe_changes(v1, replace(v1, version=2, comment=None)).comment == ("10 pages", None)


def test_authors_added_and_removed_in_order() -> None:
    v2 = replace(V1, version=2, authors=("Eiko Yoneki", "Grace Hopper", "Ada Lovelace"))
    diff = describe_changes(V1, v2)
    assert diff.authors_added == ("Grace Hopper", "Ada Lovelace")
    assert diff.authors_removed == ("Alan Turing",)


def test_author_case_and_spacing_are_not_changes() -> None:
    v2 = replace(V1, version=2, authors=("EIKO  YONEKI", "alan turing"))
    diff = describe_changes(V1, v2)
    assert diff.authors_added == () and diff.authors_removed == ()


def test_abstract_change_counts_words_and_quotes_inserted_text() -> None:
    v2 = replace(V1, version=2, abstract=(
        "We propose a sparse attention mechanism that scales linearly with length "
        "and beats dense attention on five benchmarks."))
    diff = describe_changes(V1, v2)
    # "length." became "length" plus seven new words.
    assert diff.abstract_words_added == 8
    assert diff.abstract_words_removed == 1
    assert "beats dense attention on five benchmarks." in diff.abstract_excerpt


def test_long_insertions_give_a_short_excerpt() -> None:
    v2 = replace(V1, version=2, abstract=V1.abstract + " " + "more words here " * 100)
    diff = describe_changes(V1, v2)
    assert diff.abstract_words_added == 300
    assert len(diff.abstract_excerpt) <= EXCERPT_CHARS + 1
    assert diff.abstract_excerpt.endswith("…")


def test_huge_abstracts_are_compared_without_alignment() -> None:
    old = replace(V1, abstract="alpha " * 4000)
    new = replace(V1, version=2, abstract="alpha " * 3990 + "omega " * 5)
    diff = describe_changes(old, new)
    assert (diff.abstract_words_added, diff.abstract_words_removed) == (5, 10)
    assert diff.abstract_excerpt.startswith("omega")


papers = st.builds(
    Paper,
    arxiv_id=st.just("2611.11450"),
    version=st.integers(1, 9),
    title=st.text(max_size=200),
    authors=st.lists(st.text(max_size=30), max_size=20).map(tuple),
    abstract=st.text(max_size=2000),
    categories=st.just(("cs.LG",)),
    comment=st.none() | st.text(max_size=100),
)


@settings(max_examples=200, deadline=None)
@given(papers, papers)
def test_describe_changes_never_raises_and_is_empty_only_for_equal_text(a: Paper,
                                                                       b: Paper) -> None:
    diff = describe_changes(a, b)
    assert diff.abstract_words_added >= 0 and diff.abstract_words_removed >= 0
    assert len(diff.abstract_excerpt) <= EXCERPT_CHARS + 1
    if normalize("NFC", a.abstract).split() != normalize("NFC", b.abstract).split():
        assert diff.abstract_changed
    assert describe_changes(a, a).is_empty

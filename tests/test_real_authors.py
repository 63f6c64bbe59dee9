"""Real arXiv author strings: each parses into clean names, and a surname query finds it.

`fixtures/real-author-strings.json` holds author strings exactly as arXiv wrote them (sources in
`fixtures/README.md`): affiliations in parentheses, TeX accents, particles, hyphens, suffixes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.authors import clean_author, split_authors
from bot.core.models import Paper
from bot.delivery.bibtex import bibtex_author
from bot.query.matcher import Matcher, evaluate
from bot.query.parser import parse

CASES = json.loads((Path(__file__).parent / "fixtures" / "real-author-strings.json")
                   .read_text(encoding="utf-8"))


def _paper(authors: tuple[str, ...]) -> Paper:
    return Paper(arxiv_id="0704.0001", version=1, title="A title", authors=authors,
                 abstract="An abstract.", categories=("hep-ph",))


def test_the_fixture_holds_at_least_fifty_real_strings_with_affiliations_among_them() -> None:
    strings = {case["string"] for case in CASES}
    assert len(strings) >= 50
    assert sum("(" in s for s in strings) >= 5
    assert all(case["source"] for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c['query']}" for c in CASES])
def test_a_surname_query_finds_the_author_of_a_real_string(case: dict[str, str]) -> None:
    names = split_authors(case["string"])

    assert case["author"] in names, "the name comes out whole, without its affiliation"
    assert not any(ch in name for name in names for ch in "()"), names
    query = parse(case["query"])
    assert evaluate(query, _paper(names))
    assert Matcher.build([(1, 1, query)]).matching(_paper(names)) == {1}, "the index agrees"
    assert not evaluate(query, _paper(("Ada Lovelace",)))


@pytest.mark.parametrize("case", [c for c in CASES if "<author><name>" in c["source"]],
                         ids=lambda c: c["string"])
def test_api_names_are_kept_as_written(case: dict[str, str]) -> None:
    assert clean_author(case["string"]) == case["string"]


def test_affiliations_go_however_they_are_written() -> None:
    creator = ("A. Lee (1), B. Chen (1 and 2), C. Dall'Aglio (3) ((1) MIT, (2) CERN, (3) "
               "Universit\\`a di Padova (Italy)); (4 - Swarthmore College; 5 - Vanderbilt)")

    assert split_authors(creator) == ("A. Lee", "B. Chen", "C. Dall'Aglio")


def test_a_collaboration_stays_an_author() -> None:
    assert split_authors("ATLAS Collaboration") == ("ATLAS Collaboration",)
    assert split_authors("G. Aad et al. (for the ATLAS Collaboration)") == (
        "G. Aad", "ATLAS Collaboration")


def test_particles_and_capitalised_particles_match() -> None:
    names = split_authors("G. Trambly De Laissardi\\`ere (LEPES, CNRS Grenoble), D. Mayou")

    assert names == ("G. Trambly De Laissardière", "D. Mayou")
    assert evaluate(parse('au:"de laissardiere"'), _paper(names))
    assert evaluate(parse("au:Laissardiere"), _paper(names))


@pytest.mark.parametrize(("name", "bibtex"), [
    ("Martin Luther King, Jr.", "King, Jr., Martin Luther"),
    ("Neal J. Evans II", "Evans, II, Neal J."),
    ("Sean van der Merwe", "van der Merwe, Sean"),
    ("Franz Gähler", 'G{\\"a}hler, Franz'),
])
def test_bibtex_writes_suffixes_in_their_own_field(name: str, bibtex: str) -> None:
    assert bibtex_author(name) == bibtex


_NAME_PIECES = st.one_of(
    st.sampled_from(["Franz", "Gähler", "A.", "van der", "Dall'Aglio", "Jr.", "III", "and",
                     ",", ";", "(", ")", "(1, 2)", "((1) MIT, (2) CERN)", "\\'e", "{\\l}",
                     "ATLAS Collaboration", "et al.", "&", "%", "\\", "$x$"]),
    st.text(max_size=6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_NAME_PIECES, max_size=20).map(" ".join))
def test_any_author_line_splits_into_clean_names(creator: str) -> None:
    names = split_authors(creator)

    for name in names:
        assert name == name.strip() and "  " not in name
        assert any(ch.isalpha() for ch in name), names
        assert not (set("()") & set(name)) or "\\" in creator or "$" in creator, names
    assert split_authors(", ".join(names)) == names or "\\" in creator or "$" in creator

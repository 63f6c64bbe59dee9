"""The one normalisation that queries and papers share: words and author names."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.query.text import split_name, words


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Graph-Neural Networks", ["graph", "neural", "networks"]),
        ("Müller ÉCOLE naïve", ["muller", "ecole", "naive"]),
        ("Straße Łódź Ærø Øystein", ["strasse", "lodz", "aero", "oystein"]),
        (r"M\"uller and M\"{u}ller", ["muller", "and", "muller"]),
        (r"Przemys{\l}aw {\'E}cole \v{S}ime", ["przemyslaw", "ecole", "sime"]),
        (r"$\alpha$-stable and α-stable", ["alpha", "stable", "and", "alpha", "stable"]),
        (r"\emph{heavy} tails in $\mathcal{O}(n)$", ["heavy", "tails", "in", "o", "n"]),
        ("$ω$Test: WebView", ["omega", "test", "webview"]),
        ("Promises &amp; Perils <b>now</b>", ["promises", "perils", "b", "now", "b"]),
        ("50% of x_i", ["50", "of", "x", "i"]),
        ("ﬁne-tuning ²", ["fine", "tuning", "2"]),
        ("", []),
        ("... --- !!!", []),
    ],
)
def test_words_fold_case_accents_latex_and_punctuation(text: str, expected: list[str]) -> None:
    assert words(text) == expected


@pytest.mark.parametrize("broken", ["unbalanced { $ \\", "\\", "{{{", "\\\"", "\\v{", "&#xffffff;"])
def test_broken_latex_or_html_never_raises(broken: str) -> None:
    assert isinstance(words(broken), list)


@given(st.text())
@settings(max_examples=300)
def test_every_word_is_its_own_normal_form(text: str) -> None:
    # The parser stores normalised words and re-normalises them when reading canonical text.
    for word in words(text):
        assert words(word) == [word]


@pytest.mark.parametrize(
    ("name", "given", "surname"),
    [
        ("Eiko Yoneki", "eiko", "yoneki"),
        ("Yoneki, Eiko", "eiko", "yoneki"),
        ("E. Yoneki", "e.", "yoneki"),
        ("E.Y. Yoneki", "e. y.", "yoneki"),
        ("Jan van der Berg", "jan", "van der berg"),
        ("Berg, Jan van der", "jan", "van der berg"),
        ("Vânia de Oliveira Neves", "vania", "de oliveira neves"),
        ("Ludwig von Beethoven", "ludwig", "von beethoven"),
        ("Martin Luther King Jr.", "martin luther", "king"),
        ("J.-M. Azaïs", "j. m.", "azais"),
        (r"Przemys{\l}aw M\"uller", "przemyslaw", "muller"),
        ("Plato", "", "plato"),
    ],
)
def test_split_name_finds_given_names_and_surname(name: str, given: str, surname: str) -> None:
    parts = split_name(name)
    assert parts is not None
    assert " ".join(f"{p.text}." if p.abbreviated else p.text for p in parts.given) == given
    assert " ".join(parts.surname) == surname


def test_a_name_without_letters_has_no_parts() -> None:
    assert split_name(" .,- ") is None


@pytest.mark.parametrize(
    ("query", "author", "expected"),
    [
        ("Yoneki", "Eiko Yoneki", True),
        ("E. Yoneki", "Eiko Yoneki", True),
        ("Eiko Yoneki", "E. Yoneki", True),
        ("Eiko Yoneki", "Emma Yoneki", False),
        ("E. Yoneki", "Mark Yoneki", False),
        ("wubben", "Dirk Wübben", True),
        ("D. Wübben", "Dirk Wübben", True),
        ("Berg", "Jan van der Berg", True),
        ("van der Berg", "Jan van der Berg", True),
        ("Jan van der Berg", "Jan van der Berg", True),
        ("van der Berg", "Anna Berg", False),
        ("J. van der Berg", "Berg, Jan van der", True),
        ("Neves", "Vânia de Oliveira Neves", True),
        ("Oliveira Neves", "Vânia de Oliveira Neves", True),
        ("J.-M. Azaïs", "Jean-Marc Azaïs", True),
        ("J. A. Smith", "John Smith", False),
        ("John Smith", "John Adam Smith", True),
        ("Yoneki", "Yonekura", False),
    ],
)
def test_author_names_match_like_a_reader_expects(query: str, author: str, expected: bool) -> None:
    wanted, listed = split_name(query), split_name(author)
    assert wanted is not None and listed is not None
    assert wanted.matches(listed) is expected


_PLAIN_WORDS = st.sampled_from(["a", "e", "ei", "eiko", "yoneki", "van", "der", "de", "la",
                                "jr", "ii", "iii", "Jan", "BERG", "Smith", "Al", "st"])


@given(st.lists(_PLAIN_WORDS, min_size=1, max_size=6),
       st.lists(st.sampled_from([" ", "  ", " "]), min_size=6, max_size=6),
       st.sampled_from(["", " "]))
def test_plain_names_split_as_the_general_path_splits_them(
        words: list[str], gaps: list[str], edge: str) -> None:
    # ASCII letters and spaces take a short path in split_name; it must agree with the long one.
    from bot.query.text import _split_any

    name = edge + "".join(word + gap for word, gap in zip(words, gaps, strict=False)) + edge
    assert split_name(name) == _split_any(name)

"""What a query may contain: markup-like characters are refused, naming the character and where."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.query.parser import QueryError, canonical, parse

# Text that parses on its own: ASCII words, spaces and punctuation that NFKC leaves alone.
_PLAIN = st.text(alphabet="abcdefghij klmno.,'", min_size=1, max_size=40).filter(
    lambda s: any(ch.isalpha() for ch in s))
_MARKUP = st.sampled_from(["<", ">", "|", "`", "🧪", "©", "→", "♥"])


def test_a_tag_is_refused_at_its_first_character() -> None:
    with pytest.raises(QueryError) as refused:
        parse("<b>x</b>")
    assert refused.value.position == 1 and refused.value.values["character"] == "<"
    assert "'<' at column 1" in refused.value.message


@given(_PLAIN, _MARKUP, _PLAIN)
def test_any_markup_character_is_named_with_its_column(before: str, char: str,
                                                       after: str) -> None:
    with pytest.raises(QueryError) as refused:
        parse(f"{before}{char}{after}")
    assert refused.value.position == len(before) + 1
    assert refused.value.values["character"] == char


@pytest.mark.parametrize(("query", "expected"), [
    ("ti:C++", "ti:c"),
    ('"O(n^2) time"', '"o n 2 time"'),
    ("abs:$\\alpha$-stable", 'abs:"alpha stable"'),
    ('au:"M\\"uller"', "au:muller"),
    ("R&D cs.SE", '"r d" cat:cs.SE'),
    ("ti:what's", 'ti:"what s"'),
])
def test_common_punctuation_and_math_signs_are_welcome(query: str, expected: str) -> None:
    assert canonical(parse(query)) == expected

"""Finding papers in a library by the words typed into inline mode, on every keystroke.

A library is small enough to read whole, so it needs no index; only titles and authors are read
(an abstract is ten times longer, and the full-text index of the stored papers reads those).
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import Paper
from bot.query.text import words as words_of


def _hold(have: set[str], wanted: Sequence[str]) -> bool:
    """Every word of `wanted` is in `have`, the last one as a prefix (it may be half typed)."""
    *whole, last = wanted
    return all(word in have for word in whole) and any(word.startswith(last) for word in have)


def find(papers: Sequence[Paper], wanted: Sequence[str]) -> list[Paper]:
    """The papers whose title and authors hold `wanted` (folded words, as `bot.query.text.words`
    gives them), in their order, those whose title alone holds them first."""
    if not wanted:
        return list(papers)
    in_title, with_authors = [], []
    for paper in papers:
        title = set(words_of(paper.title))
        if _hold(title, wanted):
            in_title.append(paper)
        elif _hold(title | set(words_of(" ".join(paper.authors))), wanted):
            with_authors.append(paper)
    return in_title + with_authors

"""The library page's selection: search by title, author or arXiv id, filter by category, label
and saver, sort by version update, saved date or first publication. Plain functions over the
entries the library service returns, so the BibTeX of a selection is exactly what is listed."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from functools import lru_cache

from bot.core.models import Feedback, LibraryEntry

_OLDEST = datetime.min.replace(tzinfo=UTC)
# Papers whose folded title and authors are kept between searches (a search of a library
# folds every one of its papers; most are the same paper, search after search).
HAYSTACKS = 50_000


class Sort(StrEnum):
    SAVED = "saved"  # newest saves first: the order the library keeps
    UPDATED = "updated"  # newest version first
    PUBLISHED = "published"  # newest first version first


class Label(StrEnum):
    UP = "up"
    DOWN = "down"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Selection:
    """What the library page was asked to show; every field from the request, checked."""

    query: str = ""
    category: str = ""
    label: Label | None = None
    saver: int | None = None
    sort: Sort = Sort.SAVED

    @classmethod
    def from_arguments(cls, get: Mapping[str, str]) -> Selection:
        label = get.get("label", "")
        saver = get.get("saver", "")
        sort = get.get("sort", "")
        return cls(
            query=" ".join(get.get("q", "").split())[:200],
            category=get.get("cat", "").strip()[:40],
            label=Label(label) if label in Label.__members__.values() else None,
            saver=int(saver) if saver.isdecimal() and len(saver) < 20 else None,
            sort=Sort(sort) if sort in Sort.__members__.values() else Sort.SAVED,
        )

    def arguments(self) -> dict[str, str]:
        """The selection as query arguments (for links that keep it)."""
        found = {"q": self.query, "cat": self.category,
                 "label": self.label.value if self.label else "",
                 "saver": str(self.saver) if self.saver is not None else "",
                 "sort": self.sort.value}
        return {key: value for key, value in found.items() if value}


def folded(text: str) -> str:
    """Case and accents ignored, as the query matcher ignores them: "Wübben" finds "wubben"."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


@lru_cache(maxsize=HAYSTACKS)
def _haystack(arxiv_id: str, title: str, authors: tuple[str, ...]) -> str:
    return folded(" ".join((title, " ".join(authors), arxiv_id)))


def _matches_text(entry: LibraryEntry, words: Sequence[str]) -> bool:
    paper = entry.paper
    haystack = _haystack(paper.arxiv_id, paper.title, paper.authors)
    return all(word in haystack for word in words)


def _in_category(entry: LibraryEntry, category: str) -> bool:
    # An archive ("cs") takes its categories ("cs.LG"), as `cat:cs` does in a query.
    return any(c == category or c.startswith(category + ".") for c in entry.paper.categories)


def select(entries: Sequence[LibraryEntry], selection: Selection,
           labels: Mapping[str, Feedback]) -> list[LibraryEntry]:
    """The entries the selection asks for, in its order."""
    words = folded(selection.query).split()
    wanted = {Label.UP: Feedback.MORE, Label.DOWN: Feedback.LESS}
    chosen = []
    for entry in entries:
        if words and not _matches_text(entry, words):
            continue
        if selection.category and not _in_category(entry, selection.category):
            continue
        if selection.label is Label.NONE and entry.paper.arxiv_id in labels:
            continue
        if selection.label in wanted and labels.get(entry.paper.arxiv_id) != wanted[
                selection.label]:
            continue
        if selection.saver is not None and (entry.saver is None
                                            or entry.saver.user_id != selection.saver):
            continue
        chosen.append(entry)
    if selection.sort is Sort.UPDATED:
        chosen.sort(key=lambda e: e.paper.updated or e.paper.published or _OLDEST,
                    reverse=True)
    elif selection.sort is Sort.PUBLISHED:
        chosen.sort(key=lambda e: e.paper.published or e.paper.updated or _OLDEST,
                    reverse=True)
    return chosen


def categories(entries: Sequence[LibraryEntry]) -> list[str]:
    """The primary categories in the library, most common first (the filter's choices)."""
    counts: dict[str, int] = {}
    for entry in entries:
        if entry.paper.categories:
            primary = entry.paper.categories[0]
            counts[primary] = counts.get(primary, 0) + 1
    return sorted(counts, key=lambda c: (-counts[c], c))

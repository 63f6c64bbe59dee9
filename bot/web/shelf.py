"""The library page's selection: search by title, author or arXiv id, filter by category, label
and saver, sort by version update, saved date or first publication. Read from the request and
handed to the storage engine as a `LibraryQuery` (its full-text index finds the words), so the
BibTeX of a selection is exactly what is listed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from bot.core.models import ArxivId, LibraryLabel, LibraryQuery, LibrarySort
from bot.query.text import words as words_of

Sort = LibrarySort
MAX_WORDS = 12  # as inline mode: more words than this find nothing more
# The start of an arXiv id as typed while searching for one: "2611.1", "2611.11450v", "hep-th/99".
_ID_START = re.compile(r"(?:arxiv:)?(\d{4}\.\d{0,5}|[a-z-]+(?:\.[a-z]{2})?/\d{0,7})(?:v\d*)?",
                       re.IGNORECASE)


class Label(StrEnum):
    UP = "up"
    DOWN = "down"
    NONE = "none"


_LABELS = {Label.UP: LibraryLabel.MORE, Label.DOWN: LibraryLabel.LESS,
           Label.NONE: LibraryLabel.NONE}


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

    def library_query(self, limit: int | None = None) -> LibraryQuery:
        """The selection as the storage engine reads it: each typed arXiv id (or its start,
        or a link) a prefix of the id, the rest folded words (`bot.query.text.words`) found in
        titles and authors, each the start of a word ("graph neu", "nunez")."""
        id_prefixes: list[str] = []
        text: list[str] = []
        for token in self.query.split():
            parsed = ArxivId.parse(token)
            if parsed is not None:
                id_prefixes.append(parsed.base)
            elif (start := _ID_START.fullmatch(token)) is not None:
                id_prefixes.append(start.group(1).lower())
            else:
                text += words_of(token)
        return LibraryQuery(
            words=tuple(dict.fromkeys(text))[:MAX_WORDS], id_prefixes=tuple(id_prefixes),
            category=self.category, label=_LABELS[self.label] if self.label else None,
            saver=self.saver, sort=self.sort, limit=limit)

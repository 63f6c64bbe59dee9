"""What changed between two versions of a paper, summarised compactly for a revision alert."""

from __future__ import annotations

import difflib
import unicodedata
from collections import Counter
from dataclasses import dataclass

from bot.core.models import Paper

EXCERPT_CHARS = 120
# difflib is quadratic in the worst case; real abstracts are under 300 words.
_MAX_DIFF_WORDS = 3000


@dataclass(frozen=True, slots=True)
class PaperDiff:
    """Changes from `old_version` to `new_version`; empty fields mean "unchanged"."""

    old_version: int
    new_version: int
    title: tuple[str, str] | None = None  # (old, new)
    authors_added: tuple[str, ...] = ()
    authors_removed: tuple[str, ...] = ()
    comment: tuple[str | None, str | None] | None = None  # (old, new)
    journal_ref: tuple[str | None, str | None] | None = None
    abstract_words_added: int = 0
    abstract_words_removed: int = 0
    abstract_excerpt: str = ""  # some of the inserted words, for a taste of the change

    @property
    def abstract_changed(self) -> bool:
        return bool(self.abstract_words_added or self.abstract_words_removed)

    @property
    def is_empty(self) -> bool:
        """True when nothing shown to readers changed (e.g. only the PDF was replaced)."""
        return not (self.title or self.authors_added or self.authors_removed or self.comment
                    or self.journal_ref or self.abstract_changed)


def describe_changes(old: Paper, new: Paper) -> PaperDiff:
    """Compare two versions of one paper: title, authors, comment, journal ref and abstract."""
    added, removed, excerpt = _abstract_change(old.abstract, new.abstract)
    return PaperDiff(
        old_version=old.version,
        new_version=new.version,
        title=_changed(old.title, new.title),
        authors_added=_missing_from(new.authors, old.authors),
        authors_removed=_missing_from(old.authors, new.authors),
        comment=_changed_optional(old.comment, new.comment),
        journal_ref=_changed_optional(old.journal_ref, new.journal_ref),
        abstract_words_added=added,
        abstract_words_removed=removed,
        abstract_excerpt=excerpt,
    )


def _normal(text: str | None) -> str:
    return " ".join(unicodedata.normalize("NFC", text or "").split())


def _changed(old: str, new: str) -> tuple[str, str] | None:
    return None if _normal(old) == _normal(new) else (_normal(old), _normal(new))


def _changed_optional(old: str | None, new: str | None) -> tuple[str | None, str | None] | None:
    before, after = _normal(old), _normal(new)
    if before == after:
        return None
    return (before or None, after or None)


def _missing_from(names: tuple[str, ...], others: tuple[str, ...]) -> tuple[str, ...]:
    """Names in `names` but not in `others`, comparing case- and spacing-insensitively."""
    known = {_normal(name).casefold() for name in others}
    return tuple(_normal(n) for n in names if _normal(n) and _normal(n).casefold() not in known)


def _abstract_change(old: str, new: str) -> tuple[int, int, str]:
    """Words inserted, words deleted, and an excerpt of the inserted text."""
    old_words, new_words = _normal(old).split(), _normal(new).split()
    if old_words == new_words:
        return 0, 0, ""
    if len(old_words) + len(new_words) > _MAX_DIFF_WORDS:
        return _bag_change(old_words, new_words)
    matcher = difflib.SequenceMatcher(None, old_words, new_words, autojunk=False)
    added = removed = 0
    inserted: list[str] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            removed += i2 - i1
        if tag in ("replace", "insert"):
            added += j2 - j1
            inserted.append(" ".join(new_words[j1:j2]))
    return added, removed, _excerpt(inserted)


def _bag_change(old_words: list[str], new_words: list[str]) -> tuple[int, int, str]:
    """Too long to align word by word: compare as bags of words instead."""
    before, after = Counter(old_words), Counter(new_words)
    gained, lost = after - before, before - after
    inserted = [w for w in new_words if gained[w] > 0]
    return sum(gained.values()), sum(lost.values()), _excerpt([" ".join(inserted)])


def _excerpt(chunks: list[str]) -> str:
    text = " … ".join(chunk for chunk in chunks if chunk)
    if len(text) <= EXCERPT_CHARS:
        return text
    cut = text[:EXCERPT_CHARS]
    if " " in cut[EXCERPT_CHARS // 2:]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip() + "…"

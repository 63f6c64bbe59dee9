"""The saved library as BibTeX: pure (papers in, `.bib` text out), written with bibtexparser."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

import bibtexparser
from bibtexparser.model import Entry, Field
from pylatexenc.latexencode import UnicodeToLatexEncoder

from bot.core.authors import split_suffix
from bot.core.models import Paper
from bot.delivery.latex import latex_to_unicode
from bot.query.text import PARTICLES

# Non-ASCII letters become LaTeX accents ({\"u}), and LaTeX's specials (& % $ # _ { } ~ ^ \)
# are escaped, so the file works with classic BibTeX as well as biber.
_ENCODER = UnicodeToLatexEncoder(
    non_ascii_only=False, replacement_latex_protection="braces-all", unknown_char_policy="keep"
)
_STOP_WORDS = frozenset({"a", "an", "the", "on", "of", "and", "for", "in", "to", "with", "from",
                         "towards", "toward", "via", "is", "are", "at", "by"})


def escape(text: str) -> str:
    """Unicode text as BibTeX-safe LaTeX."""
    return _ENCODER.unicode_to_latex(text)


def _ascii_letters(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if ch.isascii() and ch.isalnum()).lower()


def split_author(name: str) -> tuple[str, str, str]:
    """(surname, given names, suffix) of a display name; particles (`van der`) stay with the
    surname, and `Jr.` or `III` is the suffix whether or not a comma precedes it."""
    name, suffix = split_suffix(name)
    if "," in name:
        surname, _, given = name.partition(",")
        return surname.strip(), given.strip(), suffix
    words = name.split(" ")
    if len(words) == 1:
        return words[0], "", suffix
    start = len(words) - 1
    for index in range(1, len(words) - 1):
        if words[index].lower() in PARTICLES:
            start = index
            break
    return " ".join(words[start:]), " ".join(words[:start]), suffix


def bibtex_author(name: str) -> str:
    """`Last, First`, or BibTeX's `Last, Jr., First` for a suffix, with LaTeX escapes."""
    surname, given, suffix = split_author(name)
    if suffix:
        return escape(f"{surname}, {suffix}, {given}".rstrip())
    return escape(f"{surname}, {given}" if given else surname)


def protect_capitals(title: str) -> str:
    """Escape the title and brace every word holding a capital, so styles keep its case."""
    pieces = []
    for token in re.split(r"(\s+)", title):
        if not token or token.isspace():
            pieces.append(token)
            continue
        escaped = escape(token)
        pieces.append(f"{{{escaped}}}" if any(ch.isupper() for ch in token) else escaped)
    return "".join(pieces)


def year_of(paper: Paper) -> str | None:
    """The year of the first version: from its date, else from a new-style id (`2611.` → 2026)."""
    when = paper.published or paper.updated
    if when is not None:
        return str(when.year)
    match = re.match(r"(\d{2})(\d{2})\.", paper.arxiv_id) or re.search(r"/(\d{2})(\d{2})",
                                                                          paper.arxiv_id)
    if match is None:
        return None
    yy = int(match.group(1))
    return str(2000 + yy if yy < 91 else 1900 + yy)


def citation_key(paper: Paper) -> str:
    """`yu2026howmuch`: first author's surname, year, first two meaningful title words."""
    surname = split_author(paper.authors[0])[0] if paper.authors else "anon"
    title_words = [_ascii_letters(w) for w in latex_to_unicode(paper.title).split()]
    title_words = [w for w in title_words if w]
    meaningful = [w for w in title_words if w not in _STOP_WORDS] or title_words
    return (_ascii_letters(surname) or "anon") + (year_of(paper) or "") + "".join(meaningful[:2])


# What bibtexparser writes between two entries: parts written apart join into the same document.
PART_SEPARATOR = "\n\n"


def to_bibtex(papers: Sequence[Paper], used: set[str] | None = None) -> str:
    """A `.bib` document with one entry per paper, keys stable and unique within the file.

    A large library can be written in parts: pass the same `used` set to each (it collects the
    keys taken) and join them with PART_SEPARATOR, and the document is the same.
    """
    library = bibtexparser.Library()
    used = set() if used is None else used
    for paper in papers:
        base_key = citation_key(paper)
        key, suffix = base_key, 0
        while key in used:
            suffix += 1
            key = base_key + _letters(suffix)
        used.add(key)
        title = latex_to_unicode(paper.title)
        fields = [
            Field("author", " and ".join(bibtex_author(a) for a in paper.authors) or "Anonymous"),
            Field("title", protect_capitals(title)),
            Field("eprint", paper.arxiv_id),
            Field("archivePrefix", "arXiv"),
        ]
        if paper.primary_category:
            fields.append(Field("primaryClass", paper.primary_category))
        if (year := year_of(paper)) is not None:
            fields.append(Field("year", year))
        fields.append(Field("url", paper.abs_url))
        if paper.doi:
            # doi and url are verbatim fields: no LaTeX escapes, only what breaks the braces.
            fields.append(Field("doi", re.sub(r"[{}\\\s]", "", paper.doi)))
        if paper.journal_ref:
            fields.append(Field("journal", escape(paper.journal_ref)))
        if paper.comment:
            fields.append(Field("note", escape(paper.comment)))
        library.add(Entry("article" if paper.journal_ref else "misc", key, fields))
    return bibtexparser.write_string(library)


def _letters(number: int) -> str:
    """1 → a, 2 → b, … 26 → z, 27 → aa: suffixes that keep colliding keys unique."""
    out = ""
    while number > 0:
        number, rest = divmod(number - 1, 26)
        out = chr(ord("a") + rest) + out
    return out

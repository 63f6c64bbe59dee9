"""Author names as arXiv writes them: one-line lists, affiliations, TeX accents and suffixes.

arXiv stores each paper's authors as the one line the submitter typed, e.g.
`Franz G\\"ahler (Institut f\\"ur Theoretische Physik, Universit\\"at Stuttgart), A. B. Smith, Jr.`
or `A. Lee (1), B. Chen (1 and 2) ((1) MIT, (2) CERN)`. Feeds, the API, stored papers and the
BibTeX export all read names through this module, so a name is cleaned the same way wherever it
enters. It lives at the ground of the package because `arxiv/` (parsing), `storage/` (the
migration that re-cleans stored names), `query/` (matching) and `delivery/` (BibTeX) need it.
"""

from __future__ import annotations

import logging
import re
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text

log = logging.getLogger(__name__)

# Generational suffixes, lower-case and without the dot: `Jr.`, `Sr.`, `II`, `III`, `IV`.
NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv"})

_SPACES = re.compile(r"\s+")
# Between names: a comma or semicolon (with an optional "and" after it), "and", or "&".
_AUTHOR_SPLIT = re.compile(r"\s*[,;]\s*(?:and\s+)?|\s+and\s+|\s+&\s+")
_COLLABORATION = re.compile(r"\b(?:collaboration|consortium|team|group)\b", re.IGNORECASE)
_FOR_THE = re.compile(r"^(?:on behalf of|for)\s+(?:the\s+)?", re.IGNORECASE)
_LEADING_AND = re.compile(r"^(?:and(?:\s+|$))+")  # "A and and B", "A, and and B"
_ET_AL = re.compile(r"(?:^|\s+)(?:et\.?\s+al\.?\s*)+$", re.IGNORECASE)
_latex = LatexNodes2Text(math_mode="verbatim", strict_latex_spaces=True)


def _tidy(piece: str) -> str:
    """One piece between separators: spaces collapsed, a doubled `and` and `et al.` gone."""
    return _ET_AL.sub("", _LEADING_AND.sub("", clean_space(piece)))


def _has_letter(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def is_suffix(word: str) -> bool:
    """Whether `word` is a generational suffix (`Jr.`, `jr`, `III`)."""
    return word.strip().rstrip(".").lower() in NAME_SUFFIXES


def split_suffix(name: str) -> tuple[str, str]:
    """(the name without its suffix, the suffix or "") for `John Smith, Jr.` or `Neal Evans II`."""
    name = clean_space(name)
    head, comma, tail = name.rpartition(",")
    if comma and is_suffix(tail):
        return head.strip(), tail.strip()
    words = name.split(" ")
    if len(words) > 2 and is_suffix(words[-1]):
        return " ".join(words[:-1]), words[-1]
    return name, ""


def clean_space(text: str) -> str:
    """Whitespace collapsed to single spaces, trimmed."""
    return _SPACES.sub(" ", text).strip()


def _outside_parentheses(text: str) -> tuple[str, list[str]]:
    """The text with every parenthesised group removed (nested ones too), and the groups.

    A group left open runs to the end of the text (a cut-off affiliation list); a stray `)` is
    dropped. Each removed group leaves a space, so `Smith(1)` still ends the name.
    """
    kept: list[str] = []
    groups: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = index
                kept.append(" ")
            depth += 1
        elif char == ")":
            if depth == 1:
                groups.append(text[start + 1:index])
            depth = max(depth - 1, 0)
        elif depth == 0:
            kept.append(char)
    if depth > 0:
        groups.append(text[start + 1:])
    return "".join(kept), groups


def _collaborations(group: str) -> list[str]:
    """`(for the ATLAS Collaboration)` names an author of its own; an affiliation does not."""
    inner, nested = _outside_parentheses(group)
    if nested or any(ch.isdigit() for ch in inner) or not _COLLABORATION.search(inner):
        return []
    pieces = (_FOR_THE.sub("", _tidy(piece)) for piece in _AUTHOR_SPLIT.split(inner))
    return [piece for piece in pieces
            if _COLLABORATION.search(piece) and len(piece.split()) <= 6
            and piece[0].isalnum()]


def split_authors(creator: str) -> tuple[str, ...]:
    """Split arXiv's one-line author list into clean names, without their affiliations.

    Separators are `,`, `;`, `and`, `, and` and `&`. Parenthesised affiliations go wherever they
    stand and however they nest (`(LAAS)`, `(1, 2)`, `((1) MIT, (2) CERN)`), so the commas
    inside them no longer cut names apart; a collaboration in parentheses stays as an author.
    Suffixes stay with their name (`Martin Luther King, Jr.`), TeX accents become Unicode.
    """
    outside, groups = _outside_parentheses(creator)
    names: list[str] = []
    for part in _AUTHOR_SPLIT.split(outside):
        name = _tidy(part)
        if not _has_letter(name):
            continue  # a footnote marker or an empty piece between separators
        if names and is_suffix(name):
            names[-1] = f"{names[-1]}, {name}"
        elif _has_letter(readable := detex_name(name)):  # `0\A` has no letter once read
            names.append(readable)
    names += [name for group in groups for name in _collaborations(group) if name not in names]
    return tuple(names)


def clean_author(name: str) -> str:
    """One author's name (from the API's `<name>`) without affiliations, TeX or extra spaces."""
    outside, _groups = _outside_parentheses(name)
    cleaned = clean_space(outside)
    return detex_name(cleaned) if _has_letter(cleaned) else clean_space(name)


def reclean(names: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Names stored by an older parser (possibly cut apart inside an affiliation), re-split.

    Joining with ", " and splitting again restores what the old parser cut at a comma inside
    parentheses; names that were already clean come back unchanged.
    """
    return split_authors(", ".join(names))


@lru_cache(maxsize=8192)  # the same authors recur across a feed and across days
def detex_name(name: str) -> str:
    """Turn TeX accents in a name (`Przemys{\\l}aw`, `G\\"unter`) into Unicode; else keep it."""
    if "\\" not in name and "{" not in name:
        return name
    try:
        # "%" starts a TeX comment and would swallow the rest of the name.
        text = _latex.latex_to_text(name.replace("%", r"\%"))
    except Exception:  # pylatexenc is lenient, but a name is never worth a failed poll
        log.debug("could not convert TeX in author name %r", name)
        return name
    text = clean_space(text)
    return text if text else name

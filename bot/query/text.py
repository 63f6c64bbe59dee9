"""Text normalisation shared by the query parser and the matcher.

One function decides what a "word" is, so a query and a paper always agree: LaTeX accents and
HTML entities are decoded, accents are dropped, letters are case-folded and everything that is
not a letter or digit breaks words. Greek letters become their names (`$\\alpha$` and `α` both
give the word `alpha`).
"""

from __future__ import annotations

import html
import re
import sys
import unicodedata
from dataclasses import dataclass
from functools import cache

from bot.core.authors import NAME_SUFFIXES, split_suffix

# A word is a run of letters and digits; `_` counts as punctuation (LaTeX subscripts).
_WORD_RE = re.compile(r"[^\W_]+")
_NAME_TOKEN_RE = re.compile(r"([^\W_]+)(\.)?")

# One pass over LaTeX: a control word (`\alpha`, `\l`, `\v`) is a maximal run of letters and
# eats the spaces after it, as in TeX; any other backslash escapes one character (`\"`, `\%`).
_LATEX_RE = re.compile(r"\\(?:([A-Za-z]+)\s*|(.))", re.DOTALL)
# Accents are dropped by folding anyway, so accent commands simply vanish: `M\"{u}ller`.
_ACCENT_MACROS = frozenset("vuHckrbdt")
_SPECIAL_LETTERS = {"ss": "ss", "ae": "ae", "AE": "AE", "oe": "oe", "OE": "OE", "aa": "a",
                    "AA": "A", "i": "i", "j": "j", "l": "l", "L": "L", "o": "o", "O": "O"}
_KEPT_ESCAPES = frozenset("%&$_#{}")
# Formatting and reference macros carry no words of their own; other macro names (\alpha, \log,
# \infty) are kept as words because they are what a reader would search for.
_SILENT_MACROS = frozenset(
    [
        "emph", "textbf", "textit", "texttt", "textrm", "textsf", "textsc", "textsl", "text",
        "mathrm", "mathbf", "mathit", "mathcal", "mathbb", "mathsf", "mathfrak", "mathtt",
        "mathscr", "boldsymbol", "bm", "operatorname", "mbox", "hbox", "rm", "bf", "it", "tt", "sf",
        "cal", "frac", "dfrac", "tfrac", "left", "right", "big", "Big", "bigg", "Bigg", "cite",
        "citep", "citet", "ref", "eqref", "url", "href", "footnote", "label", "noindent", "newline",
        "linebreak", "hspace", "vspace", "quad", "qquad", "displaystyle", "scriptstyle",
        "textstyle", "limits", "nolimits", "underline", "overline", "widehat", "widetilde", "hat",
        "tilde", "bar", "vec", "dot", "ddot", "sqrt",
    ]
)

# Letters that NFKD does not decompose into a base letter plus marks.
_LETTER_FOLDS = {
    "ß": "ss", "ẞ": "ss", "ø": "o", "Ø": "o", "ł": "l", "Ł": "l", "æ": "ae", "Æ": "ae",
    "œ": "oe", "Œ": "oe", "đ": "d", "Đ": "d", "ð": "d", "Ð": "d", "þ": "th", "Þ": "th",
    "ı": "i", "ŀ": "l", "Ŀ": "l", "ħ": "h", "Ħ": "h", "ŧ": "t", "Ŧ": "t", "ƒ": "f",
    "ĸ": "k", "ŉ": "n", "ſ": "s",
}


def _greek_names() -> dict[str, str]:
    table: dict[str, str] = {}
    for code in range(0x0391, 0x03FF):
        char = chr(code)
        name = unicodedata.name(char, "")
        for prefix in ("GREEK SMALL LETTER ", "GREEK CAPITAL LETTER "):
            if name.startswith(prefix) and " " not in name[len(prefix):]:
                table[char] = f" {name[len(prefix):].lower()} "
    table["ϵ"] = " epsilon "
    table["ϑ"] = " theta "
    table["ϕ"] = " phi "
    table["ϱ"] = " rho "
    table["ϖ"] = " pi "
    table["µ"] = " mu "  # MICRO SIGN, common in physics abstracts
    return table


_TRANSLATE = str.maketrans({**_LETTER_FOLDS, **_greek_names()})
# `\varepsilon` etc. should give the same word as the letter.
_VAR_GREEK = {"varepsilon": "epsilon", "vartheta": "theta", "varphi": "phi", "varrho": "rho",
              "varpi": "pi", "varsigma": "sigma", "varkappa": "kappa"}


def _latex(match: re.Match[str]) -> str:
    name = match.group(1)
    if name is None:
        char = match.group(2)
        if char in _KEPT_ESCAPES:
            return char
        return "" if char in "\"'`^~=." else " "  # an accent vanishes, `\\` or `\,` is a space
    if name in _SPECIAL_LETTERS:
        return _SPECIAL_LETTERS[name]
    if name in _ACCENT_MACROS:
        return ""
    if name in _SILENT_MACROS:
        return " "
    return f" {_VAR_GREEK.get(name, name)} "


def _decode_latex(text: str) -> str:
    text = _LATEX_RE.sub(_latex, text)
    # Braces group letters inside one word (`Przemys{\l}aw`), so they vanish without a break.
    return text.replace("{", "").replace("}", "")


@cache
def _combining_marks() -> re.Pattern[str]:
    """A pattern for every combining mark, built on first use (it scans all of Unicode once)."""
    ranges: list[str] = []
    start = previous = -2
    for code in range(sys.maxunicode + 1):
        if not unicodedata.combining(chr(code)):
            continue
        if code != previous + 1:
            if start >= 0:
                ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
            start = code
        previous = code
    ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
    return re.compile(f"[{''.join(ranges)}]+")


def fold(text: str) -> str:
    """Decode LaTeX and HTML, drop accents and case-fold; punctuation is kept."""
    if "\\" in text or "{" in text:
        text = _decode_latex(text)
    if "&" in text:
        text = html.unescape(text)
    if text.isascii():
        return text.lower()  # most abstracts: nothing to decompose, and casefold is lower
    text = unicodedata.normalize("NFKD", text.translate(_TRANSLATE))
    text = _combining_marks().sub("", text).casefold()
    # Case folding and compatibility forms can expose new foldable letters; one more pass settles.
    return unicodedata.normalize("NFKD", text.translate(_TRANSLATE))


def normalise_input(text: str) -> str:
    """What a person typed, in its compatibility form (NFKC).

    A Chinese or Japanese input method types full-width punctuation by default: `－survey`,
    `au：Yoneki`, `（a OR b）` and the ideographic space must mean what their ASCII forms mean.
    """
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


# Han (with extensions and compatibility ideographs), kana and Hangul: the scripts a CJK input
# method types, which arXiv's English titles and abstracts almost never contain.
_CJK_RE = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
                     "\uf900-\ufaff\U00020000-\U0003134f]")


def has_cjk(text: str) -> bool:
    """Whether `text` holds a Chinese, Japanese or Korean letter."""
    return _CJK_RE.search(text) is not None


# For ASCII text, `_WORD_RE` is "[a-z0-9]+" once folded: every other character breaks words.
_ASCII_BREAKS = str.maketrans({chr(code): " " for code in range(128) if not chr(code).isalnum()})


def word_text(text: str) -> str:
    """`text` folded so that its words, `words(text)`, are exactly its runs of ASCII letters and
    digits and non-ASCII characters: what a batch splits as bytes (`bot.query.matcher`)."""
    folded = fold(text)
    return folded if folded.isascii() else " ".join(_WORD_RE.findall(folded))


def words(text: str) -> list[str]:
    """The normalised words of `text`, in order (`"Graph-Neural Nets"` → graph, neural, nets)."""
    folded = fold(text)
    if folded.isascii():
        # Most abstracts: a translation and a split in C, twice as fast as the pattern.
        return folded.translate(_ASCII_BREAKS).split()
    return _WORD_RE.findall(folded)


# Lower-case particles that start a surname when they follow a given name ("Jan van der Berg").
PARTICLES = frozenset(
    [
        "van", "von", "der", "den", "de", "del", "della", "dei", "degli", "di", "da", "das", "dos",
        "du", "des", "la", "le", "lo", "ten", "ter", "te", "zu", "zur", "af", "av", "bin", "ibn",
        "al", "el", "st",
    ]
)


@dataclass(frozen=True, slots=True)
class NamePart:
    """One given name (or particle), normalised; `abbreviated` for initials like `E.`."""

    text: str
    abbreviated: bool = False

    def agrees(self, other: NamePart) -> bool:
        """Whether two name parts can denote the same name (`E.` agrees with `Eiko`)."""
        if self.abbreviated or other.abbreviated:
            shorter, longer = sorted((self.text, other.text), key=len)
            return longer.startswith(shorter)
        return self.text == other.text


@dataclass(frozen=True, slots=True)
class PersonName:
    """A person's name split into given names and a surname (particles included)."""

    given: tuple[NamePart, ...]
    surname: tuple[str, ...]

    @property
    def key(self) -> str:
        """The last word of the surname: every matching pair of names shares it."""
        return self.surname[-1]

    def leading(self) -> tuple[NamePart, ...]:
        """Every name part before the surname's last word (given names, then particles)."""
        return self.given + tuple(NamePart(word) for word in self.surname[:-1])

    def matches(self, author: PersonName) -> bool:
        """Whether this query name denotes `author`.

        The last surname words must be equal; every other word of the query must then appear in
        the author's name, in order, where an initial agrees with any name starting with it. So
        `Yoneki`, `E. Yoneki` and `Eiko Yoneki` all match "Eiko Yoneki", `Emma Yoneki` does not;
        `Berg`, `van der Berg` and `Jan van der Berg` all match "Jan van der Berg", while
        `van der Berg` does not match "Anna Berg". A query naming a middle name (`J. A. Smith`)
        needs it in the author's name too.
        """
        if self.key != author.key:
            return False
        wanted = self.leading()
        if not wanted:
            return True
        position = 0
        available = author.leading()
        for part in wanted:
            while position < len(available) and not part.agrees(available[position]):
                position += 1
            if position == len(available):
                return False
            position += 1
        return True

    def __str__(self) -> str:
        given = " ".join(f"{p.text}." if p.abbreviated else p.text for p in self.given)
        return f"{given} {' '.join(self.surname)}".strip()


def _name_tokens(text: str) -> list[NamePart]:
    parts = []
    for word, dot in _NAME_TOKEN_RE.findall(fold(text)):
        abbreviated = len(word) == 1 or (bool(dot) and len(word) <= 3 and word not in NAME_SUFFIXES)
        parts.append(NamePart(word, abbreviated))
    return parts


def split_name(name: str) -> PersonName | None:
    """Split an author name ("Eiko Yoneki", "Yoneki, E.", "Jan van der Berg") into its parts.

    Returns None when the name has no letters or digits at all.
    """
    plain = plain_name(name)
    if plain is None:
        return _split_any(name)
    parts, start = plain
    return PersonName(tuple(NamePart(word, len(word) == 1) for word in parts[:start]),
                      tuple(parts[start:]))


def plain_name(name: str) -> tuple[list[str], int] | None:
    """For the commonest names, ASCII letters and spaces, what `split_name` makes of them
    without building it: the normalised words (the suffix dropped) and where the surname
    starts; given names of one letter are initials. None for any other name.

    It does what `_split_any` does with such a name, without the passes it needs not (LaTeX,
    commas, dots).
    """
    if not name.isascii() or not name.replace(" ", "").isalpha():
        return None
    parts = name.lower().split()
    if len(parts) > 2 and parts[-1] in NAME_SUFFIXES:
        parts.pop()
    start = len(parts) - 1
    for index in range(1, len(parts) - 1):
        word = parts[index]
        if word in PARTICLES and len(word) > 1:
            start = index
            break
    return parts, start


def _split_any(name: str) -> PersonName | None:
    name, _suffix = split_suffix(name)
    if "," in name:
        # "Surname, Given[, Jr.]" is read as "Given Surname", so both spellings split alike.
        surname_text, _, given_text = name.partition(",")
        given = [p for p in _name_tokens(given_text) if p.text not in NAME_SUFFIXES]
        surname = [NamePart(p.text) for p in _name_tokens(surname_text)]
        parts = given + surname if surname else given
    else:
        parts = _name_tokens(name)
    if not parts:
        return None
    start = len(parts) - 1
    for index in range(1, len(parts) - 1):
        if parts[index].text in PARTICLES and not parts[index].abbreviated:
            start = index
            break
    return PersonName(tuple(parts[:start]), tuple(p.text for p in parts[start:]))

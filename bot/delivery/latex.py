"""Basic LaTeX in arXiv titles and abstracts rendered as plain Unicode text for display."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import Any

from pylatexenc import latexwalker
from pylatexenc.latex2text import LatexNodes2Text, MacroTextSpec, get_default_latex_context_db
from pylatexenc.macrospec import MacroSpec

log = logging.getLogger(__name__)

# Without one of these characters pylatexenc has nothing to do, and skipping it keeps plain
# titles byte-for-byte (e.g. `--` stays as typed).
_LATEX_MARKERS = frozenset("\\$")

_SUPERSCRIPTS = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyz",
                         "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻ", strict=True))
_SUBSCRIPTS = dict(zip("0123456789+-=()aeoxhklmnpstijruv", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼᵣᵤᵥ",
                       strict=True))
# Macros authors define for themselves, common enough in arXiv abstracts to render: number
# sets, astronomers' units and symbols. Any other unknown macro is shown as written (`\XQM`).
_AUTHOR_MACROS = (
    ("R", "ℝ"), ("N", "ℕ"), ("Z", "ℤ"), ("Q", "ℚ"), ("C", "ℂ"), ("micron", "µm"),
    ("sun", "☉"), ("odot", "☉"), ("Msun", "M☉"), ("Lsun", "L☉"), ("arcsec", "″"),
    ("arcmin", "′"), ("degr", "°"), ("colon", ":"),
    # Delimiter sizes carry no content; `\\left(` reads `(`.
    ("left", ""), ("right", ""), ("middle", ""), ("bigl", ""), ("bigr", ""), ("Bigl", ""),
    ("Bigr", ""), ("biggl", ""), ("biggr", ""), ("big", ""), ("Big", ""), ("bigg", ""),
    ("Bigg", ""), ("binom", "(%(1)s choose %(2)s)"),
)

# `$…$`, `\(…\)` and `\[…\]`: where `^2` means a superscript rather than a caret.
_MATH_SEGMENT = re.compile(r"(?<!\\)\$[^$]*(?<!\\)\$|\\\(.*?\\\)|\\\[.*?\\\]", re.DOTALL)
_SCRIPT = re.compile(r"([\^_])(?:\{([^{}\\]*)\}|([0-9a-zA-Z+\-=()]))")
_CONTROL_WORD = re.compile(r"\\[A-Za-z]+")
# A citation is only a reference: it goes with the space before it (`shown \\cite{x}.`).
_CITATION = re.compile(r"\s*\\cite[tp]?\s*(?:\[[^\]]*\])?\{[^{}]*\}")
# Arguments that are meant to vanish from display (a link target, a citation key).
_DROPPED_ARGUMENT = re.compile(r"\\(?:href|url|cite[tp]?|ref|eqref|label)\s*\{[^{}]*\}")
# A control word swallows the space after it (`\\alpha and` → "αand"); an empty group keeps it.
_SPACE_AFTER_WORD = re.compile(r"(\\[A-Za-z]+)(?=\s+[^\s{\[])")
# A control word right before a script ends there (`\\alpha_p`): once `_p` becomes `ₚ`, an
# empty group keeps the converter from reading one unknown macro `\\alphaₚ` and dropping it.
_WORD_BEFORE_SCRIPT = re.compile(r"(\\[A-Za-z]+)(?=[_^])")
_OPERATORS = ("log", "ln", "exp", "sin", "cos", "tan", "max", "min", "arg", "det", "dim",
              "lim", "sup", "inf", "Pr", "gcd", "deg")


def has_latex(text: str | None) -> bool:
    """Whether `latex_to_unicode` treats `text` as LaTeX (and so renders `--` as a dash)."""
    return bool(text) and not _LATEX_MARKERS.isdisjoint(text)


def latex_to_unicode(text: str, *, as_latex: bool = False) -> str:
    """Render basic LaTeX as Unicode with collapsed whitespace; never raises, never eats text.

    Only the runs of words that hold LaTeX go through the converter: it costs several
    microseconds a character, and most of an abstract is plain words it would leave as they are.
    `as_latex` converts TeX typography (`--`, `~`) even in a text without `\\` or `$`: for an
    excerpt of a text that has them, so the excerpt reads as the whole text does.
    """
    if not as_latex and _LATEX_MARKERS.isdisjoint(text):
        # Nothing to convert: cleaned here, not kept. Only texts with LaTeX take room in the
        # cache, where a day's thousands of author names and plain titles pushed out the
        # abstracts that a drain renders for chat after chat.
        return _cleaned(text)
    return _converted(text, as_latex=as_latex)


def _cleaned(text: str) -> str:
    try:
        return clean_text(text)
    except Exception:
        return ""


@lru_cache(maxsize=4096)  # one paper is rendered for many chats, and again on each press
def _converted(text: str, *, as_latex: bool = False) -> str:
    raw = _cleaned(text)
    if not raw:
        return ""
    if not as_latex and not _LATEX_MARKERS.intersection(raw):
        return raw
    raw = _CITATION.sub("", raw)
    runs = _runs(raw)
    converted = iter(_convert_all([run for has_latex, run in runs if has_latex]))
    parts = (next(converted) if has_latex else run for has_latex, run in runs)
    return " ".join(part for part in parts if part)  # a dropped `\cite{…}` leaves no gap


# Joins a text's LaTeX runs so they go through the converter in one call (its fixed cost per
# call dominates short runs); a private-use character passes through untouched.
_SEPARATOR = "\ue000"


def _convert_all(runs: list[str]) -> list[str]:
    """Convert several LaTeX runs in one converter call; run by run if that goes wrong."""
    if len(runs) > 1 and not any(_SEPARATOR in run for run in runs):
        try:
            joined = f" {_SEPARATOR} ".join(_protect(run) for run in runs)
            parts = _converter().latex_to_text(joined, latex_context=_walker_db()).split(
                _SEPARATOR)
        except Exception:
            parts = []
        if len(parts) == len(runs):
            return [converted if _looks_complete(run, converted) else run
                    for run, converted in zip(runs, map(clean_text, parts), strict=True)]
    return [_convert(run) for run in runs]


def _runs(raw: str) -> list[tuple[bool, str]]:
    """Split text at spaces outside math and braces into runs of plain and of LaTeX words.

    A word holds LaTeX if it has a backslash, `$`, a brace, or TeX typography (`--`, `~`,
    ``` `` ```) that the converter would render; math (`$…$`, `\\(…\\)`, `\\[…\\]`) and brace
    groups are never split.
    """
    runs: list[tuple[bool, list[str]]] = []
    in_math, depth = False, 0
    word_start, word_has_latex = 0, False
    text = raw + " "
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\":
            follower = text[index + 1] if index + 1 < len(raw) else ""
            if follower in "[(":
                in_math = True
            elif follower in "])":
                in_math = False
            word_has_latex = True
            index += 2
            continue
        if char == "$":
            in_math, word_has_latex = not in_math, True
        elif char in "{}":
            depth = depth + 1 if char == "{" else max(depth - 1, 0)
            word_has_latex = True
        elif char == "~" or (char in "-`'" and text[index + 1] == char):
            word_has_latex = True
        elif char == " " and not in_math and depth == 0:
            word = raw[word_start:index]
            if word:
                if runs and runs[-1][0] == word_has_latex:
                    runs[-1][1].append(word)
                else:
                    runs.append((word_has_latex, [word]))
            word_start, word_has_latex = index + 1, False
        index += 1
    if word_start < len(raw):  # an unpaired `$` or `{` runs to the end: convert all of it
        rest = raw[word_start:]
        if runs and runs[-1][0]:
            runs[-1][1].append(rest)
        else:
            runs.append((True, [rest]))
    return [(has_latex, " ".join(words)) for has_latex, words in runs]


def _convert(raw: str) -> str:
    try:
        rendered = _converter().latex_to_text(_protect(raw), latex_context=_walker_db())
        converted = clean_text(rendered)
    except Exception:  # pylatexenc has thrown IndexError/RecursionError on odd input
        log.debug("LaTeX conversion failed, showing raw text: %r", raw[:200])
        return raw
    return converted if _looks_complete(raw, converted) else raw


# Control characters (category Cc) that are not whitespace, and lone surrogates (Cs).
_INVISIBLE_JUNK = re.compile("[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f\ud800-\udfff]")


def clean_text(text: str) -> str:
    """Drop control characters and lone surrogates, collapse whitespace (no LaTeX handling)."""
    return " ".join(_INVISIBLE_JUNK.sub("", text).split())


def _protect(text: str) -> str:
    """Escape what LaTeX would swallow but a title means literally: `%`, `&`, a lone `$`, `~`."""
    text = re.sub(r"(?<!\\)%", r"\\%", text)  # a comment would eat the rest of the line
    text = re.sub(r"(?<!\\)&", r"\\&", text)  # an alignment tab would become spaces
    # `~5%` (approximately) is meant literally; `Fig.~1` is a non-breaking space.
    text = re.sub(r"(?:(?<=\s)|^)~", r"\\textasciitilde{}", text)
    text = re.sub(r"(?<!\\)\$\$", "$", text)
    dollars = [m.start() for m in re.finditer(r"(?<!\\)\$", text)]
    if len(dollars) % 2:  # an unpaired `$` is a currency sign, not math
        amounts = [pos for pos in dollars if text[pos + 1 : pos + 2].isdigit()]
        lone = amounts[0] if amounts else dollars[-1]
        text = text[:lone] + "\\" + text[lone:]
    text = _escape_currency_pairs(text)
    text = _SPACE_AFTER_WORD.sub(r"\1{}", text)
    text = _WORD_BEFORE_SCRIPT.sub(r"\1{}", text)
    return _MATH_SEGMENT.sub(lambda m: _SCRIPT.sub(_script_to_unicode, m.group(0)), text)


def _escape_currency_pairs(text: str) -> str:
    """Escape `$…$` pairs that read as two dollar amounts (`$5 and $6`) rather than math."""
    out = []
    position = 0
    for match in re.finditer(r"(?<!\\)\$([^$]*)(?<!\\)\$", text):
        body = match.group(1)
        if body[:1].isdigit() and body[-1:].isspace():
            out.append(text[position : match.start()])
            out.append("\\$" + body + "\\$")
            position = match.end()
    out.append(text[position:])
    return "".join(out)


def _script_to_unicode(match: re.Match[str]) -> str:
    table = _SUPERSCRIPTS if match.group(1) == "^" else _SUBSCRIPTS
    body = match.group(2) if match.group(2) is not None else match.group(3)
    if body and all(ch in table for ch in body):
        return "".join(table[ch] for ch in body)
    return match.group(0)


def _looks_complete(raw: str, converted: str) -> bool:
    """False when conversion lost most of the words (e.g. an unknown macro ate its argument)."""
    source = _CONTROL_WORD.sub("", _DROPPED_ARGUMENT.sub("", raw))
    wanted = sum(ch.isalnum() for ch in source)
    kept = sum(ch.isalnum() for ch in converted)
    if wanted == 0:
        # Only markup that is meant to vanish (`\\cite{…}`, `\\label{…}`) may convert to nothing.
        return bool(converted) or not _DROPPED_ARGUMENT.sub("", raw).strip(" {}~")
    return kept * 2 >= wanted


@cache
def _converter() -> LatexNodes2Text:
    db = get_default_latex_context_db()
    keep = [
        MacroTextSpec(name, discard=False)
        for name in ("mbox", "hbox", "fbox", "texttt", "textsf", "textup", "textmd",
                     "textnormal", "boldsymbol", "bm", "operatorname", "ensuremath")
    ]
    literal = [
        MacroTextSpec(name, simplify_repl=text)
        for name, text in (
            ("LaTeX", "LaTeX"), ("TeX", "TeX"), ("today", "today"), ("ne", "≠"),
            ("neq", "≠"), ("cite", ""), ("citet", ""), ("citep", ""), ("ref", ""),
            ("eqref", ""), ("label", ""), ("url", "%s"), ("href", "%(2)s"),
        )
    ]
    literal += [MacroTextSpec(name, simplify_repl=_operator(name)) for name in _OPERATORS]
    literal += [MacroTextSpec(name, simplify_repl=text) for name, text in _AUTHOR_MACROS]
    db.add_context_category("arxiv-display", macros=keep + literal, prepend=True)
    # A macro the converter does not know stays visible as written: a reader would rather see
    # `\XQM` than nothing.
    db.set_unknown_macro_spec(MacroTextSpec("", simplify_repl=_as_written))
    return LatexNodes2Text(latex_context=db, math_mode="text")


def _as_written(node: Any) -> str:
    return "\\" + node.macroname


def _operator(name: str) -> Callable[[Any], str]:
    """`n\\log n` reads "n log n": a space before the operator name when a letter precedes it."""

    def render(node: Any) -> str:
        source = node.parsing_state.s
        before = source[node.pos - 1] if node.pos > 0 else " "
        return f" {name}" if before.isalnum() else name

    return render


def prepare() -> None:
    """Load pylatexenc's tables of macros and build the converter now (a tenth of a second of
    CPU, once a process) rather than within the first request that shows LaTeX."""
    latex_to_unicode(r"$\alpha$ \emph{prepared}")


@cache
def _walker_db() -> object:
    db = latexwalker.get_default_latex_context_db()
    db.add_context_category("arxiv-display", macros=[MacroSpec("href", "{{"),
                                                     MacroSpec("binom", "{{")], prepend=True)
    return db

"""The Chinese glossary, read from the header comment of the zh catalogue (its one home).

Each glossary line reads `English = 中文 ; never X, Y`; a "never" term may carry an exception,
`never 摘要 unless the English says "abstract"` (摘要 is right for an abstract, wrong for a
digest). Used by the catalogue test and by the end-to-end test of a Chinese chat.
"""

from __future__ import annotations

import html
import re
import string
from dataclasses import dataclass
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po

ZH_CATALOG = Path(__file__).resolve().parents[1] / "bot" / "locales" / "zh" / "LC_MESSAGES" / \
    "bot.po"
_LINE = re.compile(r"^#?\s*(?P<english>[^=#]+?)\s*=\s*(?P<chinese>[^;]+?)\s*(?:;\s*never\s+"
                   r"(?P<never>.+))?$")
_TAG = re.compile(r"</?[A-Za-z][^<>]*>")
_EXCEPTION = re.compile(r'^(?P<term>\S+)\s+unless the English says "(?P<english>[^"]+)"$')


@dataclass(frozen=True, slots=True)
class Forbidden:
    """A term a translation must not use (unless its English says `unless`)."""

    term: str
    concept: str
    unless: str | None = None

    def breaks(self, translation: str, english: str) -> bool:
        if self.term not in translation:
            return False
        return self.unless is None or self.unless.lower() not in english.lower()


def load_catalog() -> Catalog:
    with ZH_CATALOG.open("rb") as po_file:
        return read_po(po_file, locale="zh", domain="bot")


def forbidden_terms(catalog: Catalog | None = None) -> list[Forbidden]:
    """Every "never" term of the glossary in the catalogue's header comment."""
    header = (catalog or load_catalog()).header_comment
    lines = header.split("Glossary:", 1)[1].splitlines() if "Glossary:" in header else []
    found: list[Forbidden] = []
    for line in lines:
        entry = _LINE.match(line.strip())
        if entry is None or not entry.group("never"):
            continue
        for item in entry.group("never").split(","):
            item = item.strip()
            exception = _EXCEPTION.match(item)
            if exception:
                found.append(Forbidden(exception.group("term"), entry.group("english"),
                                       exception.group("english")))
            elif item:
                found.append(Forbidden(item, entry.group("english")))
    return found


def _literal_pieces(text: str) -> list[str]:
    return [literal for literal, *_ in string.Formatter().parse(text) if literal.strip()]


def violations_in_chat_text(text: str, catalog: Catalog | None = None) -> list[str]:
    """The forbidden terms in what the bot wrote in a Chinese chat.

    A term with an exception is allowed where it comes from a translation whose English says
    the exception (the 摘要 of "📄 展开摘要" renders "Full abstract"): those pieces are removed
    before looking.
    """
    catalog = catalog or load_catalog()
    terms = forbidden_terms(catalog)
    for term in (f for f in terms if f.unless):
        for message in catalog:
            if not message.id:
                continue
            english = message.id if isinstance(message.id, str) else " ".join(message.id)
            if term.unless.lower() not in english.lower():
                continue
            strings = message.string if isinstance(message.string, tuple) else (message.string,)
            for translation in strings:
                # As the chat shows it: no tags, entities decoded, line by line.
                shown = html.unescape(_TAG.sub("", translation or ""))
                for piece in _literal_pieces(shown):
                    for line in piece.splitlines():
                        if term.term in line:
                            text = text.replace(line.strip(), "")
    return sorted({f.term for f in terms if f.term in text})

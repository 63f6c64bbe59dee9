"""Reading an import: an upload or a message → the arXiv IDs it names, and what was skipped.

BibTeX exports carry arXiv in several ways, each recognised here:
- `eprint = {2211.00593}` with `archivePrefix = {arXiv}` (Zotero's Better BibTeX, JabRef,
  arXiv's own export) or `eprinttype = {arXiv}` (biblatex, DBLP);
- `doi = {10.48550/arXiv.2211.00593}` (arXiv's DataCite DOIs, Zotero since 2022);
- `url = {http://arxiv.org/abs/1809.02922}` (Zotero);
- `journal = {arXiv preprint arXiv:1706.03762}` (Google Scholar), `note = {arXiv:2306.06918
  [cs]}` and `number = {arXiv:1809.02922}` (Zotero), `journal = {CoRR}` with
  `volume = {abs/1903.11508}` (DBLP);
- old-style IDs (`hep-th/9901001`) and version suffixes (`1706.03762v5`) in any of them.
An entry with only another DOI is skipped for now (resolving DOIs to arXiv is not done yet).
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from enum import StrEnum

import bibtexparser
from bibtexparser.model import Entry

from bot.arxiv.taxonomy import ARCHIVES, SUBSUMED
from bot.core.models import ArxivId

MAX_IMPORT_BYTES = 1024 * 1024  # 1 MB: a Zotero export of some 700 papers with abstracts
MAX_IMPORT_ENTRIES = 500  # BibTeX entries, or IDs in a list, in one import


class ImportProblem(StrEnum):
    """Why an upload is refused as a whole (nothing is imported from it)."""

    TOO_LARGE = "too-large"  # over MAX_IMPORT_BYTES
    BINARY = "binary"  # not text at all (a PDF, an image, an archive)
    UNRECOGNISED = "unrecognised"  # text, but neither BibTeX entries nor an arXiv ID
    TOO_MANY = "too-many"  # over MAX_IMPORT_ENTRIES


class ImportRefused(Exception):
    """The upload cannot be imported; `problem` says why."""

    def __init__(self, problem: ImportProblem) -> None:
        super().__init__(problem.value)
        self.problem = problem


class SourceKind(StrEnum):
    BIBTEX = "bibtex"
    ID_LIST = "id-list"
    ZOTERO = "zotero"  # a linked Zotero library's items (bot/services/zotero.py)


@dataclass(frozen=True, slots=True)
class ImportSource:
    """What an upload or message names: distinct arXiv papers, in the order first named."""

    kind: SourceKind
    ids: tuple[ArxivId, ...]
    not_arxiv: int = 0  # entries (or lines of a list) that name no arXiv paper
    doi_only: int = 0  # BibTeX entries with a DOI but no arXiv ID: skipped for now
    unreadable: int = 0  # BibTeX blocks the parser could not read
    repeated: int = 0  # entries naming a paper named before

    @property
    def skipped(self) -> int:
        return self.not_arxiv + self.doi_only + self.unreadable


# --------------------------------------------------------------------------- arXiv IDs

_NEW_STYLE = re.compile(r"(\d{2})(\d{2})\.(\d{4,5})")
_OLD_STYLE = re.compile(r"([a-z][a-z\-]*)(?:\.[A-Z]{2})?/(\d{2})(\d{2})(\d{3})")
_OLD_ARCHIVES = ARCHIVES | frozenset(SUBSUMED)


def is_valid_arxiv_id(arxiv_id: ArxivId) -> bool:
    """Whether arXiv could have issued this ID: new style from 0704 with a real month (four
    digits until 1412, five from 1501), old style with a known archive from 9108 to 0703."""
    if arxiv_id.version is not None and arxiv_id.version < 1:
        return False
    if match := _NEW_STYLE.fullmatch(arxiv_id.base):
        year, month, number = int(match[1]), int(match[2]), match[3]
        digits = 5 if year >= 15 else 4
        return (1 <= month <= 12 and (year, month) >= (7, 4) and len(number) == digits
                and int(number) > 0)
    if match := _OLD_STYLE.fullmatch(arxiv_id.base):
        year, month, number = int(match[2]), int(match[3]), int(match[4])
        in_range = (year, month) >= (91, 8) if year >= 91 else (year, month) <= (7, 3)
        return match[1] in _OLD_ARCHIVES and 1 <= month <= 12 and in_range and number > 0
    return False


def _valid(candidate: str) -> ArxivId | None:
    parsed = ArxivId.parse(candidate)
    return parsed if parsed is not None and is_valid_arxiv_id(parsed) else None


_ID_SHAPE = r"(?:\d{4}\.\d{4,5}|[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7})(?:v\d+)?"
# An ID inside other text: not glued to letters, digits or a dot on either side.
_ID_IN_TEXT = re.compile(rf"(?<![\w.])({_ID_SHAPE})(?![\w.])")
_ARXIV_DOI = re.compile(rf"10\.48550/arxiv\.({_ID_SHAPE})", re.IGNORECASE)
_ARXIV_URL = re.compile(rf"arxiv\.org/(?:abs|pdf|html)/({_ID_SHAPE})", re.IGNORECASE)


def _from_link(text: str) -> ArxivId | None:
    """An arXiv ID from an ID, an arXiv link or an arXiv DOI (bare or as a doi.org link)."""
    text = text.strip()
    if doi := _ARXIV_DOI.search(text):
        return _valid(doi[1])
    if found := _valid(text):
        return found
    if url := _ARXIV_URL.search(text):
        return _valid(url[1])
    return None


def _in_text(text: str) -> ArxivId | None:
    """The first arXiv ID written inside free text (`arXiv preprint arXiv:1706.03762`)."""
    for match in _ID_IN_TEXT.finditer(text):
        if found := _valid(match[1]):
            return found
    return None


# --------------------------------------------------------------------------- BibTeX

# Fields where exports write "arXiv:ID" in prose; read only when they mention arXiv.
_PROSE_FIELDS = ("journal", "journaltitle", "note", "number", "howpublished", "eid", "pages",
                 "booktitle", "institution", "publisher", "series", "annote", "addendum")


def arxiv_id_of_entry(fields: dict[str, str]) -> ArxivId | None:
    """The arXiv ID a BibTeX entry names (its fields keyed in lower case), or None."""
    prefix = (fields.get("archiveprefix") or fields.get("eprinttype") or "").strip().lower()
    eprint = fields.get("eprint", "")
    if eprint and prefix in ("", "arxiv") and (found := _from_link(eprint) or _in_text(eprint)):
        return found
    for name in ("doi", "url"):
        if (value := fields.get(name)) and (found := _from_link(value)):
            return found
    for name in _PROSE_FIELDS:
        value = fields.get(name, "")
        if "arxiv" in value.lower() and (found := _in_text(value)):
            return found
    venue = (fields.get("journal") or fields.get("booktitle") or "").strip().lower()
    if venue == "corr" and (found := _in_text(fields.get("volume", ""))):
        return found  # DBLP: journal = {CoRR}, volume = {abs/1903.11508}
    return None


_BIBTEX_START = re.compile(r"@\s*[A-Za-z]+\s*[{(]")


def _entries(text: str) -> tuple[list[Entry], int]:
    """The entries of a BibTeX text, and how many blocks could not be read."""
    library = bibtexparser.parse_string(text)
    entries = list(library.entries)
    unreadable = 0
    for block in library.failed_blocks:
        # A duplicate key or field still holds a whole entry: read it as one.
        kept = getattr(block, "ignore_error_block", None)
        if isinstance(kept, Entry):
            entries.append(kept)
        else:
            unreadable += 1
    return entries, unreadable


def read_bibtex(text: str) -> ImportSource | None:
    """The arXiv papers of a BibTeX text; None if it holds no entry (it is not BibTeX)."""
    entries, unreadable = _entries(text)
    if not entries:
        return None
    if len(entries) + unreadable > MAX_IMPORT_ENTRIES:
        raise ImportRefused(ImportProblem.TOO_MANY)
    found: list[ArxivId] = []
    not_arxiv = doi_only = 0
    for entry in entries:
        fields = {field.key.lower(): str(field.value) for field in entry.fields}
        arxiv_id = arxiv_id_of_entry(fields)
        if arxiv_id is not None:
            found.append(arxiv_id)
        elif fields.get("doi", "").strip():
            doi_only += 1
        else:
            not_arxiv += 1
    ids, repeated = _distinct(found)
    return ImportSource(SourceKind.BIBTEX, ids, not_arxiv=not_arxiv, doi_only=doi_only,
                        unreadable=unreadable, repeated=repeated)


# --------------------------------------------------------------------------- ID lists

_TOKEN_SEPARATORS = re.compile(r"[\s,;|]+")
_WRAPPING = "<>()[]{}\"'`.,;:!?*"


def read_id_list(text: str) -> ImportSource:
    """The arXiv IDs, links and arXiv DOIs in a text, one or more a line; a non-empty line
    without any counts as not arXiv. The result may name no paper at all."""
    found: list[ArxivId] = []
    not_arxiv = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        on_line = [arxiv_id for token in _TOKEN_SEPARATORS.split(line)
                   if (arxiv_id := _from_link(token.strip(_WRAPPING)))]
        if not on_line:
            not_arxiv += 1
        found.extend(on_line)
    if len(found) > MAX_IMPORT_ENTRIES:
        raise ImportRefused(ImportProblem.TOO_MANY)
    ids, repeated = _distinct(found)
    return ImportSource(SourceKind.ID_LIST, ids, not_arxiv=not_arxiv, repeated=repeated)


def _distinct(found: list[ArxivId]) -> tuple[tuple[ArxivId, ...], int]:
    """Each paper once (the first mention), and how many mentions repeated one."""
    seen: dict[str, ArxivId] = {}
    for arxiv_id in found:
        seen.setdefault(arxiv_id.base, arxiv_id)
    return tuple(seen.values()), len(found) - len(seen)


# --------------------------------------------------------------------------- uploads


def read_text(text: str) -> ImportSource:
    """An uploaded text: BibTeX if it holds entries, else a list of IDs. Raises
    ImportRefused when it names no arXiv paper and is not BibTeX, or has too many entries."""
    if _BIBTEX_START.search(text) and (source := read_bibtex(text)) is not None:
        return source
    source = read_id_list(text)
    if not source.ids:
        raise ImportRefused(ImportProblem.UNRECOGNISED)
    return source


def read_upload(data: bytes) -> ImportSource:
    """An uploaded file's bytes: size and text checked first, then `read_text`."""
    if len(data) > MAX_IMPORT_BYTES:
        raise ImportRefused(ImportProblem.TOO_LARGE)
    return read_text(decode_text(data))


_TEXT_CONTROLS = frozenset("\t\n\r\f\v")


def decode_text(data: bytes) -> str:
    """The text of an upload: UTF-8 (with or without a BOM), UTF-16 with a BOM (Windows
    exports), else Windows-1252 or Latin-1 (older JabRef files). Raises ImportRefused for
    binary data: a NUL byte, or more than 1 % control characters."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            text = data.decode("utf-16")
        except UnicodeDecodeError:
            raise ImportRefused(ImportProblem.BINARY) from None
    elif b"\x00" in data:
        raise ImportRefused(ImportProblem.BINARY)
    else:
        text = _first_decoding(data)
    controls = sum(1 for char in text
                   if (ord(char) < 32 or 127 <= ord(char) < 160) and char not in _TEXT_CONTROLS)
    if controls * 100 > len(text) or "\x00" in text:
        raise ImportRefused(ImportProblem.BINARY)
    return text


def _first_decoding(data: bytes) -> str:
    for encoding in ("utf-8-sig", "cp1252"):
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:
            continue
    return data.decode("latin-1")  # decodes any bytes

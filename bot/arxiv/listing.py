"""Parse arXiv's announcement listing page (`/list/{category}/new`) into entries.

The page is read only when a feed is stale (see `bot/arxiv/freshness.py`). It has a date heading
("Showing new listings for Wednesday, 12 August 2026"), one heading per section with its
counts ("New submissions (showing 2 of 2 entries)", "Cross submissions …", "Replacement
submissions …"), and `<dt>`/`<dd>` pairs: the id and links in `<dt>`; title, authors, comments,
journal reference, subjects and abstract in `<dd>`. The standard library's HTML parser reads it;
nothing here trusts a page whose counts disagree with what was parsed.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass
from datetime import date, datetime
from html.parser import HTMLParser

from bot.arxiv.errors import ListingError
from bot.arxiv.feeds import readable
from bot.core.models import AnnounceType, ArxivId, Paper

_DATE_HEADING = re.compile(r"showing new listings for \w+,?\s+(\d{1,2} \w+ \d{4})", re.I)
_SECTION_HEADING = re.compile(
    r"^(new|cross|replacement)\b[^(]*\(showing (?:first )?(\d+) of (\d+) entr", re.I)
_SECTION_KINDS = {"new": AnnounceType.NEW, "cross": AnnounceType.CROSS,
                  "replacement": AnnounceType.REPLACE}
_FIELDS = {"list-title": "title", "list-authors": "authors", "list-comments": "comment",
           "list-journal-ref": "journal_ref", "list-subjects": "subjects"}
_DESCRIPTOR = re.compile(r"^\s*(?:title|authors?|comments|journal-ref|subjects):\s*", re.I)
_HTML_VERSION = re.compile(r"/html/(\S+?v\d+)/?$")
_CATEGORY = re.compile(r"\(([a-z][a-z\-]*(?:\.[A-Za-z\-]+)?)\)")
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class ListingEntry:
    """One paper of a listing: what the page shows (the version only when it links one)."""

    arxiv_id: str
    version: int | None
    kind: AnnounceType
    title: str
    authors: tuple[str, ...]
    categories: tuple[str, ...]  # primary first
    abstract: str
    comment: str | None = None
    journal_ref: str | None = None

    def paper(self, version: int) -> Paper:
        """This entry as a feed would announce it, at `version`."""
        return readable(Paper(self.arxiv_id, version, self.title, self.authors, self.abstract,
                              self.categories, comment=self.comment,
                              journal_ref=self.journal_ref, announce_type=self.kind))


@dataclass(frozen=True, slots=True)
class SectionCount:
    kind: AnnounceType
    shown: int
    total: int


@dataclass(frozen=True, slots=True)
class Listing:
    """One listing page: its announcement date, section counts and entries."""

    announced_on: date
    sections: tuple[SectionCount, ...]
    entries: tuple[ListingEntry, ...]

    @property
    def truncated(self) -> bool:
        """True when a section shows fewer entries than it has (ask again with `show`)."""
        return any(s.shown < s.total for s in self.sections)

    @property
    def largest_section(self) -> int:
        return max((s.total for s in self.sections), default=0)


def parse_listing(body: bytes) -> Listing:
    """Parse a listing page; raise `ListingError` unless every section's count is matched."""
    if not isinstance(body, bytes | bytearray):
        raise TypeError("parse a response body as bytes")
    page = _ListingPage()
    try:
        page.feed(bytes(body).decode("utf-8", errors="replace"))
        page.close()
    except AssertionError as exc:  # HTMLParser's last resort on hopeless markup
        raise ListingError(f"listing page could not be parsed: {exc}") from exc
    if page.announced_on is None:
        raise ListingError("listing page without a 'Showing new listings for …' heading")
    sections: list[SectionCount] = []
    entries: list[ListingEntry] = []
    for heading, raw_entries in page.sections:
        match = _SECTION_HEADING.match(heading)
        if match is None:
            if raw_entries:
                raise ListingError(f"entries under an unknown heading {heading[:80]!r}")
            continue
        kind = _SECTION_KINDS[match.group(1).lower()]
        shown, total = int(match.group(2)), int(match.group(3))
        if len(raw_entries) != shown:
            raise ListingError(f"listing section {heading[:60]!r} shows {shown} entries, "
                               f"{len(raw_entries)} parsed")
        sections.append(SectionCount(kind, shown, total))
        entries.extend(_entry(raw, kind) for raw in raw_entries)
    if page.orphans:
        raise ListingError(f"{page.orphans} listing entries outside any section")
    return Listing(page.announced_on, tuple(sections), tuple(entries))


def _entry(raw: dict[str, object], section: AnnounceType) -> ListingEntry:
    abs_id = raw.get("abs_id")
    parsed = ArxivId.parse(str(abs_id)) if abs_id else None
    if parsed is None:
        raise ListingError(f"listing entry without a usable arXiv id ({str(abs_id)[:40]!r})")
    version = parsed.version
    html_id = ArxivId.parse(str(raw.get("html_id") or ""))
    if version is None and html_id is not None and html_id.base == parsed.base:
        version = html_id.version
    marker = _clean(str(raw.get("dt_text", ""))).lower()
    kind = section
    if section is AnnounceType.REPLACE and "cross-list" in marker:
        kind = AnnounceType.REPLACE_CROSS
    subjects = _clean(str(raw.get("subjects", "")))
    title = _DESCRIPTOR.sub("", _clean(str(raw.get("title", ""))))
    authors = tuple(a for a in (_clean(str(name)) for name in raw.get("author_names", ()))  # type: ignore[attr-defined]
                    if a)
    if not title or not authors:
        raise ListingError(f"listing entry {parsed.base} lacks a title or authors")
    return ListingEntry(
        arxiv_id=parsed.base,
        version=version,
        kind=kind,
        title=title,
        authors=authors,
        categories=tuple(dict.fromkeys(_CATEGORY.findall(_DESCRIPTOR.sub("", subjects)))),
        abstract=_clean(str(raw.get("abstract", ""))),
        comment=_DESCRIPTOR.sub("", _clean(str(raw.get("comment", "")))) or None,
        journal_ref=_DESCRIPTOR.sub("", _clean(str(raw.get("journal_ref", "")))) or None,
    )


def _clean(text: str) -> str:
    return _SPACES.sub(" ", text).strip()


class _ListingPage(HTMLParser):
    """Collects the date heading, the section headings and each entry's raw fields."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.announced_on: date | None = None
        self.sections: list[tuple[str, list[dict[str, object]]]] = []
        self.orphans = 0
        self._entry: dict[str, object] | None = None
        self._field: str | None = None  # what the text being read belongs to
        self._field_tag = ""
        self._depth = 0  # nested tags of the same name inside the field's element
        self._text: list[str] = []
        self._in_author = False
        self._author: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        classes = attributes.get("class", "").split()
        if self._field is not None:
            if tag == self._field_tag:
                self._depth += 1
            if tag == "a" and self._field == "dt" and self._entry is not None:
                href = attributes.get("href", "").strip()
                if href.startswith("/abs/") and "abs_id" not in self._entry:
                    self._entry["abs_id"] = href.removeprefix("/abs/")
                elif (found := _HTML_VERSION.search(href)) is not None:
                    self._entry["html_id"] = found.group(1)
            if tag == "a" and self._field == "authors":
                self._in_author, self._author = True, []
            return
        if tag == "h3":
            self._open("h3", tag)
        elif tag == "dt":
            self._entry = {"author_names": []}
            if self.sections:
                self.sections[-1][1].append(self._entry)
            else:
                self.orphans += 1
            self._open("dt", tag)
        elif self._entry is not None and tag == "div":
            for css, name in _FIELDS.items():
                if css in classes:
                    self._open(name, tag)
                    break
        elif self._entry is not None and tag == "p" and "mathjax" in classes:
            self._open("abstract", tag)

    def handle_endtag(self, tag: str) -> None:
        closes_author = tag == "a" and self._in_author
        if self._field is None or (tag != self._field_tag and not closes_author):
            return
        if closes_author:
            self._in_author = False
            if self._entry is not None:
                self._entry["author_names"].append("".join(self._author))  # type: ignore[attr-defined]
            if tag != self._field_tag:
                return
        if self._depth:
            self._depth -= 1
            return
        text = _clean("".join(self._text))
        field, self._field = self._field, None
        if field == "h3":
            found = _DATE_HEADING.search(text)
            if found is not None:
                with contextlib.suppress(ValueError):  # an unreadable date is no date
                    self.announced_on = datetime.strptime(found.group(1), "%d %B %Y").date()
            else:
                self.sections.append((text, []))
        elif self._entry is not None:
            self._entry["dt_text" if field == "dt" else field] = text

    def handle_data(self, data: str) -> None:
        if self._field is not None:
            self._text.append(data)
            if self._in_author:
                self._author.append(data)

    def _open(self, field: str, tag: str) -> None:
        self._field, self._field_tag, self._depth, self._text = field, tag, 0, []

"""Parse arXiv's announcement RSS and API Atom responses into `Paper` values.

feedparser does the XML work; this module knows arXiv's quirks: the `arxiv:` namespace that
feedparser flattens into `arxiv_*` keys, the description prefix, author lists in one
`dc:creator`, TeX escapes in names and the "error feeds" arXiv serves with status 200 or 400.
"""

from __future__ import annotations

import html
import io
import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import feedparser

from bot.arxiv.errors import ApiError, FeedError
from bot.core.authors import clean_author, clean_space, split_authors
from bot.core.models import AnnounceType, ArxivId, Paper
from bot.core.text import visible

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class RssFeed:
    """One parsed announcement feed."""

    papers: tuple[Paper, ...]
    title: str
    skip_days: tuple[str, ...] = ()
    build_date: datetime | None = None  # <lastBuildDate>
    pub_date: datetime | None = None  # <pubDate>: the announcement day
    skipped: int = 0  # items present but unusable (no id or version); logged when parsed


@dataclass(frozen=True, slots=True)
class ApiResult:
    """One page of arXiv API results."""

    papers: tuple[Paper, ...]
    total_results: int
    start_index: int = 0
    items_per_page: int = 0
    skipped: int = 0


_ANNOUNCE_PREFIX = re.compile(
    r"^\s*arXiv:\S+\s+Announce Type:\s*[\w-]*\s*(?:Abstract:\s*)?", re.IGNORECASE)
_DESCRIPTION_ID = re.compile(r"^\s*arXiv:(\S+)", re.IGNORECASE)
_GUID_ID = re.compile(r"^oai:arXiv\.org:(\S+)$", re.IGNORECASE)
_API_ENTRY_ID = re.compile(r"^https?://(?:www\.|export\.)?arxiv\.org/abs/(\S+)$", re.IGNORECASE)
_SKIP_DAYS = re.compile(rb"<skipDays>(.*?)</skipDays>", re.DOTALL | re.IGNORECASE)
_DAY = re.compile(rb"<day>\s*([A-Za-z]+)\s*</day>", re.IGNORECASE)
_RSS_ERROR_TITLE = "feed error for query"


def parse_rss(body: bytes) -> RssFeed:
    """Parse an rss.arxiv.org announcement feed; raise `FeedError` for anything but a real feed."""
    parsed = _feedparse(body)
    if not parsed.get("version", "").startswith("rss"):
        raise FeedError("not an RSS feed (HTML page or garbage?)")
    channel = parsed.feed
    title = clean_space(_text(channel.get("title")))
    if title.lower().startswith(_RSS_ERROR_TITLE):
        detail = clean_space(_text(channel.get("subtitle"))) or title
        raise FeedError(f"arXiv feed error: {detail}", retryable=False)
    if parsed.bozo and (not parsed.entries or not body.rstrip().endswith(b"</rss>")):
        # A cut-off download parses loosely into the first items only; take none of it.
        raise FeedError(f"malformed feed: {parsed.get('bozo_exception')}")
    if parsed.bozo:
        log.warning("feed is not well-formed XML, parsed leniently: %s",
                    parsed.get("bozo_exception"))

    papers, skipped = _papers(parsed.entries, _rss_paper)
    if skipped:
        log.warning("skipped %d of %d feed items without a usable arXiv id", skipped,
                    len(parsed.entries))
        if not papers:
            raise FeedError(f"none of the {skipped} feed items has a usable arXiv id")
    return RssFeed(
        papers=tuple(papers),
        title=title,
        skip_days=_skip_days(body),
        build_date=_date(channel.get("updated_parsed")),
        pub_date=_date(channel.get("published_parsed")),
        skipped=skipped,
    )


def parse_api(body: bytes) -> ApiResult:
    """Parse an export.arxiv.org API response; raise `ApiError` for arXiv's error entries."""
    parsed = _feedparse(body)
    if not parsed.get("version", "").startswith("atom"):
        raise FeedError("not an arXiv API response (HTML page or garbage?)")
    if parsed.bozo and not body.rstrip().endswith(b"</feed>"):
        raise FeedError(f"malformed API response: {parsed.get('bozo_exception')}")
    for entry in parsed.entries:
        if "/api/errors" in str(entry.get("id", "")):
            message = clean_space(_text(entry.get("summary"))) or "unknown arXiv API error"
            raise ApiError(message)
    papers, skipped = _papers(parsed.entries, _api_paper)
    if skipped:
        log.warning("skipped %d API entries without a usable arXiv id", skipped)
    feed = parsed.feed
    return ApiResult(
        papers=tuple(papers),
        total_results=_int(feed.get("opensearch_totalresults"), default=len(papers)),
        start_index=_int(feed.get("opensearch_startindex")),
        items_per_page=_int(feed.get("opensearch_itemsperpage")),
        skipped=skipped,
    )


def _feedparse(body: bytes) -> Any:
    if not isinstance(body, bytes | bytearray):
        raise TypeError("parse a response body as bytes")
    # arXiv writes plain text (TeX included) into titles, abstracts and names, escaped once. The
    # RSS convention feedparser follows reads <description> (and any title that "looks like
    # HTML") as escaped markup, so "$x&lt;y$" would lose "<y$" as a tag. Escaping every "&" once
    # more makes feedparser hand the text back still escaped, and `_text` unescapes it exactly.
    escaped = bytes(body).replace(b"&", b"&amp;")
    try:
        # A stream, never bytes: feedparser would open() bytes that spell a local file path.
        return feedparser.parse(io.BytesIO(escaped), resolve_relative_uris=False,
                                sanitize_html=False)
    except Exception as exc:  # feedparser is meant to be total; stay total if it is not
        raise FeedError(f"feed could not be parsed: {exc!r}") from exc


def _papers(entries: Sequence[Mapping[str, Any]],
            convert: Callable[[Mapping[str, Any]], Paper | None]) -> tuple[list[Paper], int]:
    """The entries that make a Paper, and how many did not (no usable id or version)."""
    papers = [readable(paper) for paper in map(convert, entries) if paper is not None]
    return papers, len(entries) - len(papers)


def readable(paper: Paper) -> Paper:
    """The paper without the invisible characters that could make its text display spoofed.

    Every paper arXiv's feeds, API and listing pages yield passes through here, so what is stored
    and sent is clean; an author left with no visible name is dropped.
    """
    return replace(
        paper,
        title=visible(paper.title),
        authors=tuple(name for name in map(visible, paper.authors) if name),
        abstract=visible(paper.abstract),
        comment=visible(paper.comment or "") or None,
        journal_ref=visible(paper.journal_ref or "") or None,
    )


def _rss_paper(entry: Mapping[str, Any]) -> Paper | None:
    description = _text(entry.get("summary"))
    arxiv_id = _rss_id(str(entry.get("id", "")), description)
    if arxiv_id is None or arxiv_id.version is None:
        return None
    announce = _announce_type(entry.get("arxiv_announce_type"))
    creator = _text(entry.get("author"))
    return Paper(
        arxiv_id=arxiv_id.base,
        version=arxiv_id.version,
        title=clean_space(_text(entry.get("title"))),
        authors=split_authors(creator),
        abstract=clean_space(_ANNOUNCE_PREFIX.sub("", description, count=1)),
        categories=_categories(entry.get("tags")),
        journal_ref=_optional(entry.get("arxiv_journal_reference")),
        doi=_optional(entry.get("arxiv_doi")),
        updated=_date(entry.get("published_parsed")),
        announce_type=announce,
        license=_optional(entry.get("rights")),
    )


def _api_paper(entry: Mapping[str, Any]) -> Paper | None:
    match = _API_ENTRY_ID.match(str(entry.get("id", "")).strip())
    arxiv_id = ArxivId.parse(match.group(1)) if match else None
    if arxiv_id is None:
        return None
    primary = entry.get("arxiv_primary_category")
    primary_term = primary.get("term") if isinstance(primary, Mapping) else None
    categories = _categories(entry.get("tags"))
    if primary_term:
        categories = (primary_term, *(c for c in categories if c != primary_term))
    authors = tuple(
        clean_author(str(a.get("name", "")))
        for a in entry.get("authors", ())
        if isinstance(a, Mapping) and clean_space(str(a.get("name", "")))
    )
    return Paper(
        arxiv_id=arxiv_id.base,
        version=arxiv_id.version or 1,
        title=clean_space(_text(entry.get("title"))),
        authors=authors,
        abstract=clean_space(_text(entry.get("summary"))),
        categories=categories,
        comment=_optional(entry.get("arxiv_comment")),
        journal_ref=_optional(entry.get("arxiv_journal_ref")),
        doi=_optional(entry.get("arxiv_doi")),
        published=_date(entry.get("published_parsed")),
        updated=_date(entry.get("updated_parsed")),
    )


def _rss_id(guid: str, description: str) -> ArxivId | None:
    for pattern, text in ((_GUID_ID, guid.strip()), (_DESCRIPTION_ID, description)):
        match = pattern.match(text)
        if match:
            parsed = ArxivId.parse(match.group(1))
            if parsed is not None:
                return parsed
    return None


def _announce_type(value: Any) -> AnnounceType | None:
    try:
        return AnnounceType(str(value).strip().lower())
    except ValueError:
        if value:
            log.warning("unknown arXiv announce type %r", value)
        return None


def _categories(tags: Any) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for tag in tags or ():
        term = clean_space(str(tag.get("term") or "")) if isinstance(tag, Mapping) else ""
        if term:
            seen.setdefault(term, None)
    return tuple(seen)


def _skip_days(body: bytes) -> tuple[str, ...]:
    # feedparser keeps only the last <day> of <skipDays>, so read the few bytes ourselves.
    match = _SKIP_DAYS.search(body)
    if match is None:
        return ()
    return tuple(day.decode("ascii").capitalize() for day in _DAY.findall(match.group(1)))


def _text(value: Any) -> str:
    return html.unescape(value) if isinstance(value, str) else ""


def _optional(value: Any) -> str | None:
    return clean_space(_text(value)) or None


def _date(value: Any) -> datetime | None:
    if not isinstance(value, time.struct_time):
        return None
    try:
        return datetime(*value[:6], tzinfo=UTC)
    except (ValueError, OverflowError):
        return None


def _int(value: Any, default: int = 0) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


"""Hugging Face daily papers, the second source: fetch politely, parse, store what the community
made of each paper (upvotes, comments, code, stars, project page).

Hugging Face lists papers by arXiv id, so a pick the store does not know yet is looked up through
the arXiv API client before it is shown: every card keeps real arXiv metadata.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

import httpx

from bot.arxiv.client import ArxivClient
from bot.arxiv.errors import ArxivError
from bot.core.clock import Clock
from bot.core.http import RetryPolicy, SleepFn, Transient, polite_client, refusal, with_retries
from bot.core.models import ArxivId, CommunityPick, Paper, SourceOutcome
from bot.core.text import visible
from bot.storage import Storage

log = logging.getLogger(__name__)

DEFAULT_URL = "https://huggingface.co/api/daily_papers"
MAX_PICKS = 500  # a day's list holds a few dozen; this bounds a hostile answer


class HuggingFaceError(Exception):
    """The daily list could not be fetched or read; `status` is the HTTP status if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class HFPoll:
    """What one poll of the daily list did."""

    outcome: SourceOutcome  # ok, not-modified or error
    picks: int = 0
    new: int = 0
    looked_up: int = 0
    error: str | None = None


def _count(value: Any) -> int:
    """A non-negative whole number from the JSON, 0 for anything else (absent, text, bool)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(0, min(value, 10**9))


def _url(value: Any, *, github: bool = False) -> str | None:
    if not isinstance(value, str) or len(value) > 500:
        return None
    value = value.strip()
    prefixes = ("https://github.com/",) if github else ("https://", "http://")
    return value if value.startswith(prefixes) and len(value) > len(prefixes[0]) else None


def _day(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value[:10]).isoformat()
    except ValueError:
        return None


def parse_daily_papers(body: bytes, listed_on: str) -> list[CommunityPick]:
    """The picks in a `daily_papers` answer (a JSON list of entries, each with `paper`).

    Entries without a usable arXiv id are skipped; a body that is not such a list raises
    HuggingFaceError, so a changed API is reported rather than read as an empty day.
    """
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise HuggingFaceError("the daily papers answer is not JSON") from None
    if not isinstance(data, list):
        raise HuggingFaceError("the daily papers answer is not a list of papers")
    picks: dict[str, CommunityPick] = {}
    for entry in data[:MAX_PICKS]:
        paper = entry.get("paper") if isinstance(entry, dict) else None
        if not isinstance(paper, dict) or not isinstance(paper.get("id"), str):
            continue
        arxiv_id = ArxivId.parse(paper["id"][:40])
        if arxiv_id is None:
            continue
        title = paper.get("title") or entry.get("title")
        stars = paper.get("githubStars")
        pick = CommunityPick(
            arxiv_id=arxiv_id.base,
            listed_on=(_day(entry.get("submittedOnDailyAt"))
                       or _day(paper.get("submittedOnDailyAt")) or listed_on),
            title=visible(" ".join(title.split()))[:500] if isinstance(title, str) else "",
            upvotes=_count(paper.get("upvotes", entry.get("upvotes"))),
            comments=_count(entry.get("numComments", paper.get("numComments"))),
            github_repo=_url(paper.get("githubRepo"), github=True),
            github_stars=_count(stars) if stars is not None else None,
            project_page=_url(paper.get("projectPage")),
        )
        kept = picks.get(pick.arxiv_id)
        if kept is None or pick.upvotes > kept.upvotes:
            picks[pick.arxiv_id] = pick
    if data and not picks:
        raise HuggingFaceError("no entry of the daily papers answer has an arXiv id")
    return list(picks.values())


class CommunityPicks:
    """Polls the daily list into storage and serves today's picks with their papers."""

    def __init__(self, url: str, storage: Storage, arxiv: ArxivClient, clock: Clock, *,
                 timeout: float = 20.0, max_attempts: int = 3, backoff_base: float = 2.0,
                 max_backoff: float = 60.0, max_retry_after: float = 60.0,
                 sleep: SleepFn = asyncio.sleep) -> None:
        self.url = url
        self._store = storage
        self._arxiv = arxiv
        self._clock = clock
        self._retry = RetryPolicy(max_attempts, backoff_base, max_backoff, max_retry_after)
        self._sleep = sleep
        self._lock = asyncio.Lock()
        self._http = polite_client(headers={"Accept": "application/json"}, timeout=timeout,
                                   follow_redirects=True)

    async def aclose(self) -> None:
        await self._http.aclose()

    def url_for(self, day: str) -> str:
        return f"{self.url}{'&' if '?' in self.url else '?'}date={day}"

    async def poll(self, day: str | None = None) -> HFPoll:
        """Fetch one day's list (default: today in UTC), store it, look up unknown papers.

        Health is kept on the source record of the base URL, which /status shows beside the
        arXiv feeds; a failure there touches nothing of arXiv's.
        """
        async with self._lock:
            day = day or datetime.fromtimestamp(self._clock.now(), UTC).date().isoformat()
            source = await self._store.sources.get(self.url)
            try:
                status, body, etag, last_modified = await self._fetch(
                    self.url_for(day), source.etag if source else None,
                    source.last_modified if source else None)
                picks = [] if status == 304 else parse_daily_papers(body, day)
            except HuggingFaceError as exc:
                await self._store.sources.record_failure(self.url, self._clock.now(), str(exc),
                                                         exc.status)
                log.warning("Hugging Face daily papers failed: %s", exc)
                return HFPoll(SourceOutcome.ERROR, error=str(exc))
            now = self._clock.now()
            if status == 304:
                await self._store.sources.record_success(self.url, now, 304, None, None, None)
                return HFPoll(SourceOutcome.NOT_MODIFIED)
            new = await self._store.community.upsert(picks, now)
            looked_up = await self._look_up_missing([p.arxiv_id for p in picks])
            await self._store.sources.record_success(self.url, now, status, len(picks), etag,
                                                     last_modified, clear_validators=not picks)
            log.info("Hugging Face daily papers %s: %d picks, %d new, %d looked up on arXiv",
                     day, len(picks), new, looked_up)
            return HFPoll(SourceOutcome.OK, picks=len(picks), new=new, looked_up=looked_up)

    async def today(self) -> list[tuple[CommunityPick, Paper]]:
        """The latest day's picks with their arXiv papers, most upvoted first."""
        picks = await self._store.community.latest_day()
        await self._look_up_missing([p.arxiv_id for p in picks])
        papers = await self._store.papers.get_many([p.arxiv_id for p in picks])
        return [(pick, papers[pick.arxiv_id]) for pick in picks if pick.arxiv_id in papers]

    async def _look_up_missing(self, arxiv_ids: list[str]) -> int:
        """Fetch from the arXiv API the papers the store lacks; best effort."""
        known = await self._store.papers.get_many(arxiv_ids)
        missing = [i for i in arxiv_ids if i not in known]
        if not missing:
            return 0
        try:
            papers = await self._arxiv.lookup_ids(missing)
        except ArxivError as exc:
            log.warning("arXiv look-up of %d Hugging Face picks failed: %s", len(missing), exc)
            return 0
        if papers:
            await self._store.papers.cache_lookups(papers, self._clock.now())
        return len(papers)

    async def _fetch(self, url: str, etag: str | None, last_modified: str | None
                     ) -> tuple[int, bytes, str | None, str | None]:
        """GET with validators; 429, 5xx, timeouts and connection errors are tried again
        (the one retry policy of `core.http`, Retry-After honoured up to a minute)."""
        headers = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified

        async def attempt(number: int) -> tuple[int, bytes, str | None, str | None]:
            tries = f" after {number} attempts" if number > 1 else ""
            try:
                response = await self._http.get(url, headers=headers)
            except httpx.TimeoutException:
                raise Transient(HuggingFaceError(
                    f"Hugging Face did not answer in time ({url}){tries}")) from None
            except httpx.HTTPError as exc:
                raise Transient(HuggingFaceError(
                    f"cannot reach Hugging Face: {type(exc).__name__}{tries}")) from None
            status = response.status_code
            if status in (200, 304):
                return (status, response.content, response.headers.get("ETag"),
                        response.headers.get("Last-Modified"))
            raise refusal(status, response.headers, HuggingFaceError(
                f"Hugging Face answered HTTP {status} ({url}){tries}", status))

        return await with_retries(attempt, self._retry, what="Hugging Face", sleep=self._sleep)

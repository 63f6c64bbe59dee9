"""The one HTTP client for all arXiv traffic: polite pacing, conditional GET, bounded retries."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from urllib.parse import urlencode, urljoin

import httpx

from bot.arxiv.errors import (
    ApiError,
    ArxivError,
    FeedError,
    FetchTimeoutError,
    HTTPStatusError,
    ListingError,
    NetworkError,
    RateLimitedError,
)
from bot.arxiv.feeds import ApiResult, RssFeed, parse_api, parse_rss
from bot.arxiv.listing import Listing, parse_listing
from bot.core.http import (
    RETRY_STATUSES,
    RetryPolicy,
    SleepFn,
    Transient,
    polite_client,
    refusal,
    with_retries,
)
from bot.core.models import ArxivId, Paper

__all__ = [
    "INTERACTIVE",
    "ApiError",
    "ArxivClient",
    "ArxivError",
    "FeedError",
    "FetchResult",
    "FetchTimeoutError",
    "HTTPStatusError",
    "ListingError",
    "NetworkError",
    "RateLimitedError",
    "RequestPolicy",
    "RssFetch",
]

DEFAULT_RSS_URL = "https://rss.arxiv.org/rss"
DEFAULT_API_URL = "https://export.arxiv.org/api/query"
DEFAULT_LISTING_URL = "https://arxiv.org/list"  # robots.txt allows /list
# arXiv's API terms of use: "make no more than one request every three seconds, and limit
# requests to a single connection at a time." The feeds are served by the same people, so all
# arXiv traffic shares this one gap.
DEFAULT_MIN_INTERVAL = 3.0
_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_MAX_REDIRECTS = 3
_ID_BATCH = 100

@dataclass(frozen=True, slots=True)
class RequestPolicy:
    """How hard one request tries: attempts, the time each may take, the longest Retry-After
    worth waiting for (a longer one fails the request at once)."""

    attempts: int
    timeout: float
    max_retry_after: float


# A person is waiting for the answer (`/paper`, a button's fallback): one try, a short timeout,
# no waiting out arXiv's Retry-After. They are told to try again; ingest keeps its patience.
INTERACTIVE = RequestPolicy(attempts=1, timeout=8.0, max_retry_after=0.0)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """One completed GET: the body (empty on 304) and the validators for the next request."""

    url: str
    status: int
    body: bytes
    etag: str | None
    last_modified: str | None
    not_modified: bool
    attempts: int


@dataclass(frozen=True, slots=True)
class RssFetch:
    """A feed request and, unless arXiv answered 304 Not Modified, the parsed feed."""

    result: FetchResult
    feed: RssFeed | None


class ArxivClient:
    """Talks to rss.arxiv.org and the arXiv API over one connection, one request at a time."""

    def __init__(
        self,
        *,
        rss_url: str = DEFAULT_RSS_URL,
        api_url: str = DEFAULT_API_URL,
        listing_url: str = DEFAULT_LISTING_URL,
        contact: str = "",
        min_interval: float = DEFAULT_MIN_INTERVAL,
        timeout: float = 30.0,
        max_attempts: int = 4,
        backoff_base: float = 2.0,
        max_backoff: float = 60.0,
        max_retry_after: float = 300.0,
        max_body_bytes: int = 64 * 1024 * 1024,
        sleep: SleepFn = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if min_interval < 0 or timeout <= 0:
            raise ValueError("min_interval must be >= 0 and timeout > 0")
        self.rss_url = rss_url.rstrip("/")
        self.api_url = api_url
        self.listing_url = listing_url.rstrip("/")
        self._min_interval = min_interval
        self._backoff_base = backoff_base
        self._max_backoff = max_backoff
        self._max_body_bytes = max_body_bytes
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._policy = RequestPolicy(max_attempts, timeout, max_retry_after)
        self._gate = asyncio.Lock()
        self._last_request_end: float | None = None
        # Scheduled ingest comes first: interactive requests wait while a poll runs, so a poll
        # is delayed by at most the one interactive request already at the gate.
        self._ingesting = 0
        self._ingest_idle = asyncio.Event()
        self._ingest_idle.set()
        self._http = polite_client(
            contact=contact,
            timeout=timeout,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            # Redirects are followed by hand so that each hop waits its turn at the gate.
            follow_redirects=False,
        )

    async def __aenter__(self) -> ArxivClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close the connection pool."""
        await self._http.aclose()

    @asynccontextmanager
    async def ingest(self) -> AsyncIterator[None]:
        """Mark a scheduled poll in progress: interactive requests wait until it ends."""
        self._ingesting += 1
        self._ingest_idle.clear()
        try:
            yield
        finally:
            self._ingesting -= 1
            if not self._ingesting:
                self._ingest_idle.set()

    async def interactive_turn(self) -> None:
        """Return once an interactive request could be sent at once: no poll running and the
        politeness gap over. Look-up queues wait here, so what arrives meanwhile joins one batch.
        """
        while True:
            await self._ingest_idle.wait()
            wait = self._gap_left()
            if wait <= 0 and not self._gate.locked():
                return
            await asyncio.sleep(max(wait, 0.05))

    def _gap_left(self) -> float:
        if self._last_request_end is None:
            return 0.0
        return self._last_request_end + self._min_interval - time.monotonic()

    async def fetch(self, url: str, etag: str | None = None,
                    last_modified: str | None = None) -> FetchResult:
        """GET `url` (conditionally, given validators); retry transient faults, then raise."""
        return await self._fetch(url, etag=etag, last_modified=last_modified)

    async def fetch_rss(self, url: str, etag: str | None = None,
                        last_modified: str | None = None) -> RssFetch:
        """Fetch and parse one announcement feed; `feed` is None when arXiv answered 304."""
        result = await self._fetch(url, etag=etag, last_modified=last_modified)
        if result.not_modified:
            return RssFetch(result, None)
        try:
            # A full feed is megabytes of XML: parse it off the event loop.
            feed = await asyncio.to_thread(parse_rss, result.body)
        except ArxivError as exc:
            exc.url = url
            exc.attempts = result.attempts
            raise
        return RssFetch(result, feed)

    async def fetch_listing(self, name: str) -> Listing:
        """The announcement listing `{listing_url}/{name}/new`, every section in full.

        A page that shows only part of a section is asked for again with all its entries; if
        it still is partial, or its counts disagree with its entries, `ListingError` is raised.
        """
        url = f"{self.listing_url}/{name}/new"
        listing = await self._listing(url)
        if listing.truncated:
            listing = await self._listing(f"{url}?skip=0&show={listing.largest_section}")
            if listing.truncated:
                raise ListingError("listing page still shows part of a section", url=url)
        return listing

    async def _listing(self, url: str) -> Listing:
        result = await self._fetch(url)
        try:
            return await asyncio.to_thread(parse_listing, result.body)
        except ArxivError as exc:
            exc.url = url
            exc.attempts = result.attempts
            raise

    async def lookup_ids(self, ids: Iterable[str], *,
                         policy: RequestPolicy | None = None) -> list[Paper]:
        """The papers with these ids (latest version unless given); unknown ids are left out.

        `policy` defaults to the client's own (ingest's); interactive callers pass INTERACTIVE.
        """
        wanted: list[str] = []
        for raw in ids:
            parsed = ArxivId.parse(raw)
            if parsed is None:
                raise ValueError(f"not an arXiv id: {raw[:60]!r}")
            wanted.append(str(parsed))
        papers: list[Paper] = []
        for start in range(0, len(wanted), _ID_BATCH):
            batch = wanted[start:start + _ID_BATCH]
            query = {"id_list": ",".join(batch), "max_results": str(len(batch))}
            result = await self._api(query, policy)
            papers.extend(result.papers)
        return papers

    async def _api(self, params: dict[str, str],
                   policy: RequestPolicy | None = None) -> ApiResult:
        url = f"{self.api_url}?{urlencode(params, safe=',:/')}"
        # arXiv's API reports bad queries as an Atom error entry with HTTP 400.
        result = await self._fetch(url, extra_ok=frozenset({400}), policy=policy)
        try:
            parsed = await asyncio.to_thread(parse_api, result.body)
        except ArxivError as exc:
            exc.url = url
            exc.attempts = result.attempts
            if result.status == 400 and not isinstance(exc, ApiError):
                raise HTTPStatusError(400, url=url, attempts=result.attempts) from exc
            raise
        if result.status == 400:
            raise HTTPStatusError(400, url=url, attempts=result.attempts)
        return parsed

    async def _fetch(self, url: str, *, etag: str | None = None,
                     last_modified: str | None = None,
                     extra_ok: frozenset[int] = frozenset(),
                     policy: RequestPolicy | None = None) -> FetchResult:
        policy = policy or self._policy
        interactive = policy is not self._policy
        headers: dict[str, str] = {}
        if etag:
            headers["If-None-Match"] = etag
        if last_modified:
            headers["If-Modified-Since"] = last_modified

        async def attempt(number: int) -> FetchResult:
            return await self._attempt(url, headers, number, policy, interactive=interactive,
                                       etag=etag, last_modified=last_modified,
                                       extra_ok=extra_ok)

        def too_long(transient: Transient) -> bool:
            # A person waiting is not kept for a long Retry-After; ingest waits it out (capped).
            return (interactive and transient.retry_after is not None
                    and transient.retry_after > policy.max_retry_after)

        retry = RetryPolicy(policy.attempts, self._backoff_base, self._max_backoff,
                            self._policy.max_retry_after)
        return await with_retries(attempt, retry, what="arXiv", sleep=self._sleep,
                                  rng=self._rng, give_up=too_long)

    async def _attempt(self, url: str, headers: dict[str, str], number: int,
                       policy: RequestPolicy, *, interactive: bool, etag: str | None,
                       last_modified: str | None, extra_ok: frozenset[int]) -> FetchResult:
        """One attempt, redirects included; a failure worth another try is `Transient`."""
        redirects = 0
        while True:
            try:
                status, response_headers, body = await self._send(
                    url, headers, timeout=policy.timeout, interactive=interactive)
            except (httpx.TimeoutException, TimeoutError) as exc:
                raise Transient(FetchTimeoutError(
                    f"arXiv did not answer in time ({type(exc).__name__})", url=url,
                    attempts=number)) from exc
            except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
                raise ArxivError(f"bad arXiv URL: {exc}", url=url, attempts=number) from exc
            except httpx.RequestError as exc:  # refused, reset, cut short, undecodable
                raise Transient(NetworkError(
                    f"connection to arXiv failed ({type(exc).__name__})", url=url,
                    attempts=number)) from exc
            if status in _REDIRECT_STATUSES and "location" in response_headers:
                redirects += 1
                if redirects > _MAX_REDIRECTS:
                    raise HTTPStatusError(status, "too many redirects", url=url,
                                          attempts=number)
                url = urljoin(url, response_headers["location"])
                continue
            if status == 304 or 200 <= status < 300 or status in extra_ok:
                return FetchResult(
                    url=url,
                    status=status,
                    body=b"" if status == 304 else body,
                    etag=response_headers.get("etag") or (etag if status == 304 else None),
                    last_modified=response_headers.get("last-modified")
                    or (last_modified if status == 304 else None),
                    not_modified=status == 304,
                    attempts=number,
                )
            error_type = RateLimitedError if status == 429 else HTTPStatusError
            raise refusal(status, response_headers, error_type(
                status, url=url, attempts=number, retryable=status in RETRY_STATUSES))

    async def _send(self, url: str, headers: dict[str, str], *, timeout: float,
                    interactive: bool = False) -> tuple[int, httpx.Headers, bytes]:
        if interactive:
            await self._ingest_idle.wait()
        async with self._gate:
            if self._last_request_end is not None:
                wait = self._last_request_end + self._min_interval - time.monotonic()
                if wait > 0:
                    # Always a real sleep: the gap is a promise to arXiv, not a test knob.
                    await asyncio.sleep(wait)
            try:
                # httpx's timeout bounds each read; a person waiting gets a bound on the whole
                # response, so a server trickling bytes cannot keep them (and the gate) long.
                async with asyncio.timeout(timeout if interactive else None), self._http.stream(
                        "GET", url, headers=headers, timeout=timeout) as response:
                    chunks: list[bytes] = []
                    size = 0
                    async for chunk in response.aiter_bytes():
                        size += len(chunk)
                        if size > self._max_body_bytes:
                            raise FeedError(f"response larger than {self._max_body_bytes} bytes",
                                            url=url, retryable=False)
                        chunks.append(chunk)
                    return response.status_code, response.headers, b"".join(chunks)
            finally:
                # Measured from the end of each request, so arXiv sees the gap between
                # arrivals even when a response is slow.
                self._last_request_end = time.monotonic()

"""A fake arXiv (RSS feeds + API) on a real loopback HTTP server, for tests and soak runs.

It runs `http.server.ThreadingHTTPServer` in a background thread, so async tests in this process
and a bot started as a subprocess can both talk to it:

    with FakeArxivServer() as server:
        server.set_feed("cs", rss_feed(papers, names=("cs",)))
        server.fail_next(503, times=2)
        ...  # point ARXIV_RSS_URL at server.rss_url, ARXIV_API_URL at server.api_url
        assert [r.status for r in server.requests] == [503, 503, 200]

An arXiv that hangs until the test has seen what happens meanwhile:

        release = server.hold_next(path="/api")
        ...  # wait for `server.held`, look around
        release.set()  # the held request is answered normally
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import hashlib
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from bot.core.models import ArxivId, Paper
from tests.fakes.feedgen import api_error_feed, api_feed
from tests.fakes.loopback import FakeHandler, LoopbackServer

MAX_DELAY = 30.0  # a forgotten delay must not hang a test run
MAX_FAULTS = 1000


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request as the server saw it; `time` is `time.monotonic()` on arrival."""

    time: float
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    status: int
    client_port: int

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int | None  # None: answer normally (after `delay`)
    retry_after: str | None
    delay: float
    body: bytes | None
    path: str | None
    content_type: str
    hold: threading.Event | None = None  # set: the held request goes on (after `delay`)


@dataclass(slots=True)
class _Resource:
    body: bytes
    status: int = 200
    etag: str = ""
    last_modified: str = ""
    last_modified_ts: float = 0.0
    content_type: str = "application/rss+xml; charset=utf-8"


@dataclass(slots=True)
class _State:
    feeds: dict[str, _Resource] = field(default_factory=dict)
    default_feed: _Resource | None = None
    # What each feed served before its latest body: served instead while `stale` is on.
    previous_feeds: dict[str | None, _Resource] = field(default_factory=dict)
    stale: bool = False
    listings: dict[str, _Resource] = field(default_factory=dict)
    api_papers: dict[str, list[Paper]] = field(default_factory=dict)
    api_raw: dict[str, _Resource] = field(default_factory=dict)
    api_default: _Resource | None = None
    faults: deque[_Fault] = field(default_factory=deque)
    holds: list[threading.Event] = field(default_factory=list)  # every `hold_next` event
    held: int = 0  # requests hanging on one right now
    log: list[RecordedRequest] = field(default_factory=list)


class FakeArxivServer(LoopbackServer):
    """Serves `/rss/<names>` and `/api/query` on 127.0.0.1 at a random free port."""

    _thread_name = "fake-arxiv"

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._state = _State()
        super().__init__(_make_handler, host, port)

    # addresses -------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return self.root

    @property
    def rss_url(self) -> str:
        return f"{self.base_url}/rss"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/query"

    @property
    def listing_url(self) -> str:
        return f"{self.base_url}/list"

    def feed_url(self, names: str) -> str:
        return f"{self.rss_url}/{names}"

    # content ---------------------------------------------------------------------------------

    def set_feed(self, path: str | None, body: bytes, *, status: int = 200,
                 content_type: str = "application/rss+xml; charset=utf-8") -> None:
        """Serve `body` at `/rss/<path>` (`"cs+math"`, or a full `/rss/...` path); None or "*"
        sets the feed served for any path without its own. A new body gets new validators."""
        resource = _resource(body, status, content_type)
        with self._lock:
            if path in (None, "*"):
                if self._state.default_feed is not None:
                    self._state.previous_feeds[None] = self._state.default_feed
                self._state.default_feed = resource
            else:
                key = _feed_key(path)
                if key in self._state.feeds:
                    self._state.previous_feeds[key] = self._state.feeds[key]
                self._state.feeds[key] = resource

    def set_stale(self, stale: bool = True) -> None:
        """The "stale" switch: while on, every feed serves the body it had before its latest
        `set_feed`, unchanged (its old validators too), as rss.arxiv.org did on 2026-08-12
        (ZJU-REAL/Polaris #414): yesterday's announcement under a current lastBuildDate."""
        with self._lock:
            self._state.stale = stale

    def set_listing(self, name: str, body: bytes, *, status: int = 200) -> None:
        """Serve `body` (an HTML listing page) at `/list/<name>/new`, whatever the query."""
        with self._lock:
            self._state.listings[name] = _resource(body, status, "text/html; charset=utf-8")

    def set_api_papers(self, papers: Iterable[Paper]) -> None:
        """Papers the API knows: id_list look-ups return them (latest version unless given)."""
        with self._lock:
            for paper in papers:
                versions = self._state.api_papers.setdefault(paper.arxiv_id, [])
                versions[:] = [p for p in versions if p.version != paper.version] + [paper]
                versions.sort(key=lambda p: p.version)

    def forget_day(self) -> None:
        """Drop the listing pages and the API's papers: what a stale day served, once the
        feeds have caught up (in a long bench they are memory of the process it measures)."""
        with self._lock:
            self._state.listings.clear()
            self._state.api_papers.clear()

    def set_api_response(self, key: str | None, body: bytes, *, status: int = 200) -> None:
        """A raw API body for one `id_list` or `search_query` value, or for any query (None)."""
        resource = _resource(body, status, "application/atom+xml; charset=utf-8")
        with self._lock:
            if key is None:
                self._state.api_default = resource
            else:
                self._state.api_raw[key] = resource

    # faults ----------------------------------------------------------------------------------

    def fail_next(self, status: int | None = 503, times: int = 1, *,
                  retry_after: float | str | None = None, delay: float = 0.0,
                  body: bytes | None = None, path: str | None = None,
                  content_type: str = "text/html; charset=utf-8") -> None:
        """The next `times` requests (under `path`, e.g. "/rss", if given) get `status` with
        `body`; status None answers normally. `delay` seconds pass first (to cause timeouts)."""
        if times < 0 or times > MAX_FAULTS:
            raise ValueError(f"times must be within 0..{MAX_FAULTS}")
        fault = _Fault(
            status=status,
            retry_after=None if retry_after is None else str(retry_after),
            delay=min(max(delay, 0.0), MAX_DELAY),
            body=body,
            path=path,
            content_type=content_type,
        )
        with self._lock:
            self._state.faults.extend([fault] * times)

    def delay_next(self, seconds: float, times: int = 1, *, path: str | None = None) -> None:
        """The next `times` requests answer normally, but only after `seconds`."""
        self.fail_next(None, times, delay=seconds, path=path)

    def hold_next(self, times: int = 1, *, path: str | None = None) -> threading.Event:
        """The next `times` requests (under `path`) hang until the returned event is set, then
        answer normally: an arXiv that hangs for exactly as long as a test needs. A forgotten
        event lets them go after MAX_DELAY, and so does `stop()`."""
        if times < 0 or times > MAX_FAULTS:
            raise ValueError(f"times must be within 0..{MAX_FAULTS}")
        release = threading.Event()
        fault = _Fault(status=None, retry_after=None, delay=0.0, body=None, path=path,
                       content_type="", hold=release)
        with self._lock:
            self._state.faults.extend([fault] * times)
            self._state.holds.append(release)
        return release

    @property
    def held(self) -> int:
        """Requests hanging on a `hold_next` event now (they have arrived, unanswered)."""
        with self._lock:
            return self._state.held

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            holds = list(self._state.holds)
        for release in holds:
            release.set()
        super().stop()

    def clear_faults(self) -> None:
        with self._lock:
            self._state.faults.clear()

    # request log -----------------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            # Appended when answered; a delayed answer arrives late, so order by arrival.
            return sorted(self._state.log, key=lambda request: request.time)

    def clear_requests(self) -> None:
        with self._lock:
            self._state.log.clear()

    # request handling (called from handler threads) ------------------------------------------

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for index, fault in enumerate(self._state.faults):
                if fault.path is None or path.startswith(fault.path):
                    del self._state.faults[index]
                    return fault
        return None

    def _hold(self, release: threading.Event) -> bool:
        """Hang until `release` is set; False if the server is stopping meanwhile."""
        with self._lock:
            self._state.held += 1
        try:
            release.wait(MAX_DELAY)
        finally:
            with self._lock:
                self._state.held -= 1
        return not self._stopping.is_set()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._state.log.append(request)

    def _route(self, path: str, query: dict[str, list[str]], headers: dict[str, str]
               ) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/rss/"):
            with self._lock:
                key = _feed_key(path)
                own = key in self._state.feeds
                resource = self._state.feeds.get(key, self._state.default_feed)
                if self._state.stale:
                    resource = self._state.previous_feeds.get(key if own else None, resource)
            if resource is None:
                return 404, {"Content-Type": "text/plain"}, b"no feed set for this path\n"
            return _conditional(resource, headers)
        if path == "/api/query":
            return self._api(query)
        if path.startswith("/list/") and path.endswith("/new"):
            with self._lock:
                listing = self._state.listings.get(path.removeprefix("/list/")[:-len("/new")])
            if listing is None:
                return 404, {"Content-Type": "text/html"}, _error_page(404)
            return listing.status, {"Content-Type": listing.content_type}, listing.body
        return 404, {"Content-Type": "text/plain"}, b"not found\n"

    def _api(self, query: dict[str, list[str]]) -> tuple[int, dict[str, str], bytes]:
        id_list = query.get("id_list", [""])[0]
        search = query.get("search_query", [""])[0]
        atom = {"Content-Type": "application/atom+xml; charset=utf-8"}
        with self._lock:
            raw = self._state.api_raw.get(id_list or search) or self._state.api_default
            known = {key: list(versions) for key, versions in self._state.api_papers.items()}
        if raw is not None:
            return raw.status, {"Content-Type": raw.content_type}, raw.body
        max_results = _int(query.get("max_results", ["10"])[0], 10)
        if id_list:
            found: list[Paper] = []
            for raw_id in id_list.split(","):
                parsed = ArxivId.parse(raw_id)
                if parsed is None:
                    return 400, atom, api_error_feed(f"incorrect id format for {raw_id}")
                versions = known.get(parsed.base, [])
                match = [p for p in versions if parsed.version in (None, p.version)]
                if match:
                    found.append(match[-1])
            return 200, atom, api_feed(found[:max_results], query=f"id_list={id_list}")
        everything = [versions[-1] for versions in known.values()]
        return 200, atom, api_feed(everything[:max_results], query=f"search_query={search}",
                                   total_results=len(everything))


def _make_handler(server: FakeArxivServer) -> type[FakeHandler]:
    class Handler(FakeHandler):  # keep-alive, like arXiv

        def do_GET(self) -> None:
            arrived = time.monotonic()
            split = urlsplit(self.path)
            path = unquote(split.path)
            query = parse_qs(split.query, keep_blank_values=True)
            headers = {name.lower(): value for name, value in self.headers.items()}
            fault = server._take_fault(path)
            if fault is not None and ((fault.hold is not None and not server._hold(fault.hold))
                                      or (fault.delay and server._stopping.wait(fault.delay))):
                self.close_connection = True  # stopping: the client sees the connection end
                return
            if fault is not None and fault.status is not None:
                status = fault.status
                response_headers = {"Content-Type": fault.content_type}
                if fault.retry_after is not None:
                    response_headers["Retry-After"] = fault.retry_after
                body = fault.body if fault.body is not None else _error_page(status)
            else:
                status, response_headers, body = server._route(path, query, headers)
            server._record(RecordedRequest(
                time=arrived, method="GET", path=path, query=query, headers=headers,
                status=status, client_port=self.client_address[1]))
            self.respond(status, response_headers, body)

    return Handler


def _resource(body: bytes, status: int, content_type: str) -> _Resource:
    if not isinstance(body, bytes):
        raise TypeError("body must be bytes")
    now = time.time()
    return _Resource(
        body=body,
        status=status,
        etag='"' + hashlib.sha256(body).hexdigest()[:20] + '"',
        last_modified=email.utils.formatdate(now, usegmt=True),
        last_modified_ts=float(int(now)),
        content_type=content_type,
    )


def _conditional(resource: _Resource, headers: dict[str, str]
                 ) -> tuple[int, dict[str, str], bytes]:
    validators = {"ETag": resource.etag, "Last-Modified": resource.last_modified}
    if resource.status == 200:
        if_none_match = headers.get("if-none-match")
        if if_none_match is not None:
            tags = {tag.strip().removeprefix("W/") for tag in if_none_match.split(",")}
            if resource.etag in tags or "*" in tags:
                return 304, validators, b""
        elif headers.get("if-modified-since"):
            try:
                since = email.utils.parsedate_to_datetime(headers["if-modified-since"])
            except (TypeError, ValueError):
                since = None
            if since is not None and since.timestamp() >= resource.last_modified_ts:
                return 304, validators, b""
    return resource.status, {"Content-Type": resource.content_type, **validators}, resource.body


def _feed_key(path: str) -> str:
    return unquote(path).removeprefix("/rss/").strip("/")


def _error_page(status: int) -> bytes:
    return (f"<!DOCTYPE html><html><head><title>{status}</title></head>"
            f"<body><h1>Error {status}</h1></body></html>").encode()


def _int(text: str, default: int) -> int:
    try:
        return max(0, int(text))
    except ValueError:
        return default


@pytest.fixture
def arxiv_server() -> Iterator[FakeArxivServer]:
    """A started fake arXiv, stopped after the test (import it into a test module or conftest)."""
    with FakeArxivServer() as server:
        yield server


def main(argv: list[str] | None = None) -> None:
    """Serve feed files by hand: `python -m tests.fakes.arxiv_server --feed cs=cs.xml`."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--feed", action="append", default=[],
                        help="NAMES=FILE, or FILE alone for any path")
    args = parser.parse_args(argv)
    with FakeArxivServer(port=args.port) as server:
        for spec in args.feed:
            names, _, file = spec.rpartition("=")
            server.set_feed(names or None, Path(file).read_bytes())
        print(f"ARXIV_RSS_URL={server.rss_url}\nARXIV_API_URL={server.api_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main()

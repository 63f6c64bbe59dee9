"""A fake Hugging Face `api/daily_papers` endpoint on a real loopback HTTP server.

    with FakeHuggingFace() as hf:
        hf.set_day("2026-11-30", [daily_entry(paper, upvotes=42, github_repo=...)])
        hf.fail_next(500)                       # or 429, body=b"[{", delay=5
        ...  # point HF_PAPERS_URL at hf.url
        assert hf.requests[-1].query["date"] == ["2026-11-30"]

The answer's shape follows the real API (see tests/fixtures/README.md): a JSON list of entries,
each with the paper (`paper.id`, `paper.title`, `paper.upvotes`, `paper.githubRepo` …) and the
entry's own fields (`numComments`, `submittedOnDailyAt`, `submittedBy` …). Each body carries an
ETag, and a matching If-None-Match gets 304.
"""

from __future__ import annotations

import hashlib
import json
from collections import deque
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bot.core.models import Paper
from tests.fakes.loopback import FakeHandler, LoopbackServer

MAX_DELAY = 30.0


@dataclass(frozen=True, slots=True)
class HFRequest:
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # lower-case names
    status: int


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int  # 0: answer normally after `delay`
    body: bytes | None
    delay: float
    retry_after: str | None


def daily_entry(paper: Paper, *, upvotes: int = 0, comments: int = 0,
                github_repo: str | None = None, github_stars: int | None = None,
                project_page: str | None = None, day: str = "2026-11-30",
                ai_summary: str | None = None) -> dict[str, Any]:
    """One entry of the list, as Hugging Face serves it, for `paper`."""
    submitted = f"{day}T09:12:44.000Z"
    published = (paper.published.strftime("%Y-%m-%dT%H:%M:%S.000Z")
                 if paper.published else f"{day}T00:00:00.000Z")
    inner: dict[str, Any] = {
        "id": paper.arxiv_id,
        "authors": [{"_id": f"6740{n:020x}", "name": name, "hidden": False}
                    for n, name in enumerate(paper.authors)],
        "publishedAt": published,
        "submittedOnDailyAt": submitted,
        "title": paper.title,
        "summary": paper.abstract,
        "upvotes": upvotes,
        "discussionId": hashlib.sha1(paper.arxiv_id.encode()).hexdigest()[:24],
        "ai_summary": ai_summary or f"A summary of {paper.title}.",
        "ai_keywords": ["sparse attention", "long context"],
        "submittedOnDailyBy": {"_id": "60f1abe7544c2adfd699860c", "fullname": "AK",
                               "user": "akhaliq", "type": "user"},
    }
    if github_repo is not None:
        inner["githubRepo"] = github_repo
    if github_stars is not None:
        inner["githubStars"] = github_stars
    if project_page is not None:
        inner["projectPage"] = project_page
    return {
        "paper": inner,
        "publishedAt": published,
        "title": paper.title,
        "summary": paper.abstract,
        "thumbnail": f"https://cdn-thumbnails.huggingface.co/social-thumbnails/papers/"
                     f"{paper.arxiv_id}.png",
        "numComments": comments,
        "submittedBy": {"_id": "60f1abe7544c2adfd699860c", "fullname": "AK",
                        "name": "akhaliq", "type": "user"},
        "isAuthorParticipating": False,
        "mediaUrls": [],
    }


class FakeHuggingFace(LoopbackServer):
    """Serves GET `/api/daily_papers?date=YYYY-MM-DD` on 127.0.0.1 at a free port."""

    _thread_name = "fake-huggingface"

    def __init__(self) -> None:
        self._days: dict[str, bytes] = {}
        self._faults: deque[_Fault] = deque()
        self._requests: list[HFRequest] = []
        super().__init__(_make_handler)

    @property
    def url(self) -> str:
        return f"{self.root}/api/daily_papers"

    def set_day(self, day: str, entries: list[dict[str, Any]]) -> None:
        """The list served for `date=day` (any day without one gets `[]`)."""
        with self._lock:
            self._days[day] = json.dumps(entries).encode()

    def fail_next(self, status: int = 500, *, body: bytes | None = None, delay: float = 0.0,
                  times: int = 1, retry_after: str | None = None) -> None:
        """The next `times` requests get `status` (200 with `body` for malformed answers)."""
        with self._lock:
            self._faults.extend([_Fault(status, body, min(delay, MAX_DELAY), retry_after)]
                                * times)

    @property
    def requests(self) -> list[HFRequest]:
        with self._lock:
            return list(self._requests)

    def _respond(self, path: str, query: dict[str, list[str]], headers: dict[str, str]
                 ) -> tuple[int, dict[str, str], bytes]:
        with self._lock:
            fault = self._faults.popleft() if self._faults else None
            body = self._days.get(query.get("date", [""])[0], b"[]")
        if fault is not None and fault.delay and self._stopping.wait(fault.delay):
            return 503, {}, b""
        if fault is not None and fault.status:
            extra = {"Retry-After": fault.retry_after} if fault.retry_after else {}
            return fault.status, extra, fault.body if fault.body is not None else json.dumps(
                {"error": f"fake error {fault.status}"}).encode()
        if path != "/api/daily_papers":
            return 404, {}, b'{"error": "Not Found"}'
        etag = 'W/"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        if headers.get("if-none-match") == etag:
            return 304, {"ETag": etag}, b""
        return 200, {"ETag": etag}, body


def _make_handler(server: FakeHuggingFace) -> type[FakeHandler]:
    class Handler(FakeHandler):

        def do_GET(self) -> None:
            split = urlsplit(self.path)
            query = parse_qs(split.query)
            headers = {name.lower(): value for name, value in self.headers.items()}
            status, extra, body = server._respond(split.path, query, headers)
            with server._lock:
                server._requests.append(HFRequest(split.path, query, headers, status))
            self.respond(status, {"Content-Type": "application/json; charset=utf-8", **extra}, body)

    return Handler

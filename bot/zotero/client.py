"""A small asynchronous client of Zotero's Web API v3: the requests the Zotero link makes, and
nothing more.

Why not pyzotero, the well-kept client the issue names: pyzotero 1.16 is synchronous (its own
`httpx2.Client`) and waits out Zotero's `Backoff` with `time.sleep`, which would stall the
bot's event loop, and every chat with it; it cannot take our `httpx.AsyncClient` (the one
polite client, `bot/core/http.py`); and it requires `bibtexparser<2`, while the importer is
built on bibtexparser 2. So this module speaks the API itself, from Zotero's documentation
(https://www.zotero.org/support/dev/web_api/v3/basics, …/write_requests, …/syncing):

- every request carries `Zotero-API-Version: 3` and the key in `Zotero-API-Key` (never in a
  URL, so that no request line or log of one holds it);
- `Backoff: N` on any response: no request to Zotero for N seconds; a 429 or a 503 is tried
  again after its `Retry-After` (else the `Backoff`, else exponential backoff);
- reads of many objects page with `start`/`limit` (at most 100) and follow `Link: rel="next"`
  until there is none (`Total-Results` says how many in all);
- `If-Modified-Since-Version` makes an unchanged library cost one request, a 304;
- writes of new objects go as a JSON array with `Zotero-Write-Token`, so a write that is
  retried is made at most once; an item is updated with PATCH and
  `If-Unmodified-Since-Version` (a 412 says it changed meanwhile).

A 403 (the key was revoked, or lost its access) is `KeyRejected`: the caller unlinks.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from bot.core.http import RetryPolicy, Transient, polite_client, retry_after_seconds, with_retries
from bot.core.models import ZoteroLibraryKind

TIMEOUT = 30.0
PAGE = 100  # the most objects one read returns
MAX_PAGES = 200  # 20,000 items: a library larger than that is read in part, the rest next day
MAX_BACKOFF = 3600.0  # a Backoff or Retry-After longer than this is taken as this
RETRYABLE = frozenset({429, 500, 502, 503, 504})
_NEXT = re.compile(r'<([^>]+)>\s*;\s*rel="?next"?')

SleepFn = Callable[[float], Awaitable[object]]


class ZoteroError(Exception):
    """Zotero did not do what was asked; the message is for the log (it never holds a key)."""


class KeyRejected(ZoteroError):
    """403: the key is invalid, revoked, or may not reach this library (or write to it)."""


class NotFound(ZoteroError):
    """404: the object (or library) is not there."""


class PreconditionFailed(ZoteroError):
    """412: the object changed since the version given, or the write token was used already."""


class ZoteroUnavailable(ZoteroError):
    """No answer, or only answers that said "not now", after every attempt."""


@dataclass(frozen=True, slots=True)
class Library:
    """One Zotero library, as its URL prefix names it."""

    kind: ZoteroLibraryKind
    id: int

    @property
    def prefix(self) -> str:
        return f"/{'users' if self.kind is ZoteroLibraryKind.USER else 'groups'}/{self.id}"


@dataclass(frozen=True, slots=True)
class KeyAccess:
    """What a key may do (GET /keys/current): its user's library, and which groups'."""

    user_id: int
    user_library: bool
    user_write: bool
    all_groups: bool  # every group of the user (Zotero's "all" entry)
    all_groups_write: bool
    groups: Mapping[int, bool]  # group id → may write

    def reaches(self, library: Library) -> bool:
        if library.kind is ZoteroLibraryKind.USER:
            return library.id == self.user_id and self.user_library
        return self.all_groups or library.id in self.groups

    def writes(self, library: Library) -> bool:
        if library.kind is ZoteroLibraryKind.USER:
            return self.user_write
        return self.groups.get(library.id, self.all_groups and self.all_groups_write)


@dataclass(frozen=True, slots=True)
class Changes:
    """What changed in a library since a version: top-level items changed (their `data`,
    trashed ones with `deleted` set), keys of items deleted, and the library's version now."""

    version: int
    items: tuple[dict[str, Any], ...]
    deleted: tuple[str, ...]


class ZoteroClient:
    """Talks to one Zotero API server for every chat; owns its `httpx.AsyncClient`."""

    def __init__(self, api_url: str, *, contact: str = "", sleep: SleepFn = asyncio.sleep,
                 policy: RetryPolicy | None = None,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        self._root = api_url.rstrip("/")
        self._http = polite_client(contact=contact, timeout=TIMEOUT,
                                   headers={"Zotero-API-Version": "3"})
        self._sleep = sleep
        self._policy = policy or RetryPolicy(attempts=4, backoff_base=2.0, max_backoff=60.0,
                                             max_retry_after=MAX_BACKOFF)
        self._monotonic = monotonic
        self._quiet_until = 0.0  # Zotero's last Backoff: no request before this
        self._turn = asyncio.Lock()  # one request at a time: a Backoff then holds them all

    async def aclose(self) -> None:
        await self._http.aclose()

    # ------------------------------------------------------------------ requests

    async def _request(self, method: str, path: str, key: str, *,
                       params: Mapping[str, Any] | None = None,
                       headers: Mapping[str, str] | None = None,
                       body: Any = None, expect: tuple[int, ...] = (200,)) -> httpx.Response:
        """One API call, tried again as the policy says while Zotero says "not now"."""
        url = path if path.startswith("http") else self._root + path
        sent_headers = {"Zotero-API-Key": key, **(headers or {})}
        content = None
        if body is not None:
            content = json.dumps(body).encode()
            sent_headers["Content-Type"] = "application/json"

        async def attempt(_: int) -> httpx.Response:
            async with self._turn:
                wait = self._quiet_until - self._monotonic()
                if wait > 0:
                    await self._sleep(wait)
                try:
                    response = await self._http.request(method, url, params=params,
                                                        headers=sent_headers, content=content)
                except httpx.HTTPError as exc:
                    raise Transient(ZoteroUnavailable(
                        f"{method} {path}: {type(exc).__name__}")) from None
                backoff = retry_after_seconds(response.headers.get("backoff"))
                if backoff:
                    self._quiet_until = self._monotonic() + min(backoff, MAX_BACKOFF)
            status = response.status_code
            if status in expect:
                return response
            failure = _failure(method, path, status)
            if status in RETRYABLE:
                retry_after = retry_after_seconds(response.headers.get("retry-after"))
                raise Transient(failure, retry_after if retry_after is not None else backoff)
            raise failure

        return await with_retries(attempt, self._policy, what="Zotero", sleep=self._sleep)

    async def _pages(self, path: str, key: str, params: dict[str, Any],
                     headers: Mapping[str, str] | None = None
                     ) -> tuple[list[Any], httpx.Response] | None:
        """Every page of a multi-object read (None: 304, nothing changed), and the first
        response (its Last-Modified-Version is the library's)."""
        first = await self._request("GET", path, key, params={**params, "limit": PAGE},
                                    headers=headers, expect=(200, 304))
        if first.status_code == 304:
            return None
        found = list(first.json())
        response = first
        for _ in range(MAX_PAGES - 1):
            following = _next_link(response.headers.get("link", ""))
            if following is None:
                break
            response = await self._request("GET", following, key)
            found.extend(response.json())
        return found, first

    # ------------------------------------------------------------------ reads

    async def key_access(self, key: str) -> KeyAccess:
        """What `key` may reach; KeyRejected when Zotero does not know it."""
        answer = (await self._request("GET", "/keys/current", key)).json()
        access = answer.get("access") or {}
        user = access.get("user") or {}
        groups = access.get("groups") or {}
        every = groups.get("all") or {}
        return KeyAccess(
            user_id=int(answer["userID"]), user_library=bool(user.get("library")),
            user_write=bool(user.get("write")), all_groups="all" in groups,
            all_groups_write=bool(every.get("write")),
            groups={int(group): bool((rights or {}).get("write"))
                    for group, rights in groups.items() if group != "all"})

    async def library_reachable(self, key: str, library: Library) -> bool:
        """Whether the library answers with this key (a group that does not exist: no)."""
        try:
            await self._request("GET", f"{library.prefix}/items/top", key,
                                params={"limit": 1, "format": "versions"})
        except (NotFound, KeyRejected):
            return False
        return True

    async def changes(self, key: str, library: Library, since: int) -> Changes | None:
        """What changed since library version `since` (0: everything); None when nothing did
        (one request, answered 304)."""
        params: dict[str, Any] = {"format": "json", "includeTrashed": 1}
        headers = None
        if since:
            params["since"] = since
            headers = {"If-Modified-Since-Version": str(since)}
        read = await self._pages(f"{library.prefix}/items/top", key, params, headers)
        if read is None:
            return None
        items, first = read
        version = int(first.headers.get("last-modified-version", since))
        deleted: list[str] = []
        if since:
            gone = (await self._request("GET", f"{library.prefix}/deleted", key,
                                        params={"since": since})).json()
            deleted = [str(item) for item in gone.get("items", ())]
        return Changes(version, tuple(item["data"] for item in items if "data" in item),
                       tuple(deleted))

    async def find_collection(self, key: str, library: Library, name: str) -> str | None:
        """The key of the library's top-level collection called `name`, if there is one."""
        read = await self._pages(f"{library.prefix}/collections/top", key, {"format": "json"})
        for collection in read[0] if read else ():
            if collection.get("data", {}).get("name") == name:
                return str(collection["key"])
        return None

    async def collection_items(self, key: str, library: Library,
                               collection: str) -> list[dict[str, Any]]:
        """The `data` of every top-level item in a collection."""
        read = await self._pages(f"{library.prefix}/collections/{collection}/items/top", key,
                                 {"format": "json"})
        return [item["data"] for item in read[0]] if read else []

    async def item(self, key: str, library: Library, item_key: str) -> dict[str, Any]:
        return (await self._request("GET", f"{library.prefix}/items/{item_key}", key)).json()

    # ------------------------------------------------------------------ writes

    async def create(self, key: str, library: Library, kind: str, obj: dict[str, Any],
                     write_token: str) -> tuple[str, int]:
        """Create one object (`kind`: "items" or "collections"); its key and version.
        PreconditionFailed when the write token was used already."""
        response = await self._request(
            "POST", f"{library.prefix}/{kind}", key, body=[obj],
            headers={"Zotero-Write-Token": write_token})
        answer = response.json()
        made = (answer.get("successful") or {}).get("0")
        if made is None:
            failed = (answer.get("failed") or {}).get("0") or {}
            raise ZoteroError(f"POST {library.prefix}/{kind} refused: "
                              f"{failed.get('code')} {failed.get('message', '')}"[:300])
        version = made.get("version") or response.headers.get("last-modified-version") or 0
        return str(made["key"]), int(version)

    async def update_item(self, key: str, library: Library, item_key: str, version: int,
                          changes: dict[str, Any]) -> int:
        """Change some fields of an item last seen at `version`; its new version.
        PreconditionFailed when it changed since."""
        response = await self._request(
            "PATCH", f"{library.prefix}/items/{item_key}", key, body=changes,
            headers={"If-Unmodified-Since-Version": str(version)}, expect=(204,))
        return int(response.headers.get("last-modified-version", version))


def _next_link(header: str) -> str | None:
    match = _NEXT.search(header)
    return match[1] if match else None


def _failure(method: str, path: str, status: int) -> ZoteroError:
    what = f"{method} {path.split('?', 1)[0]} answered {status}"
    if status == 403:
        return KeyRejected(what)
    if status == 404:
        return NotFound(what)
    if status == 412:
        return PreconditionFailed(what)
    if status in RETRYABLE:
        return ZoteroUnavailable(what)
    return ZoteroError(what)

"""A fake Zotero Web API v3 on a real loopback HTTP server: keys, libraries with versions,
items and collections, as https://www.zotero.org/support/dev/web_api/v3/ documents them.

    with FakeZotero() as zotero:
        zotero.add_key(KEY, user_id=8123456)           # write access to the user's library
        zotero.add_items("/users/8123456", items)      # item JSON (tests/fixtures/zotero)
        zotero.backoff_next(5)                         # the next answer carries Backoff: 5
        zotero.fail_next(429, retry_after=3)
        zotero.revoke(KEY)                             # from now on: 403 Forbidden
        ...  # point ZOTERO_API_URL at zotero.root

What it checks as Zotero does: `Zotero-API-Key` (403 without a key that reaches the library,
or without write access for a write), `If-Modified-Since-Version` (304), `since`,
`includeTrashed`, paging (`start`, `limit` ≤ 100, `Link: rel="next"`, `Total-Results`),
`Zotero-Write-Token` (412 when used twice), `If-Unmodified-Since-Version` (412 when the object
changed), an item's fields against its type's template (400 for an unknown field).
Every write gives the library a new version, and the objects written that version.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections import deque
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

from bot.zotero.items import PREPRINT_TEMPLATE
from tests.fakes.loopback import FakeHandler, LoopbackServer

_KEY_ALPHABET = "23456789ABCDEFGHIJKLMNPQRSTUVWXYZ"
MAX_LIMIT = 100
# Fields any item may carry beside its type's (Web API v3 item JSON).
_ITEM_COMMON = {"key", "version", "itemType", "tags", "collections", "relations", "dateAdded",
                "dateModified", "deleted", "parentItem"}
_TEMPLATES = {"preprint": set(PREPRINT_TEMPLATE)}


@dataclass
class _Library:
    version: int = 0
    items: dict[str, dict[str, Any]] = field(default_factory=dict)  # key → item JSON
    collections: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: dict[str, int] = field(default_factory=dict)  # item key → version deleted at


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: Any
    status: int


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int
    headers: dict[str, str]


class FakeZotero(LoopbackServer):
    """Serves the Web API on 127.0.0.1 at a free port."""

    _thread_name = "fake-zotero"

    def __init__(self, *, page_limit: int = MAX_LIMIT) -> None:
        # Zotero returns at most 100 objects a request; a test may cap pages lower, so that a
        # library of 50 items pages.
        self._page_limit = page_limit
        self._keys: dict[str, dict[str, Any]] = {}
        self._libraries: dict[str, _Library] = {}
        self._tokens: set[str] = set()
        self._faults: deque[_Fault] = deque()
        self._backoff: deque[int] = deque()
        self._requests: list[Request] = []
        self._counter = itertools.count(1)
        super().__init__(_make_handler)

    # ------------------------------------------------------------------ set-up

    def add_key(self, key: str, user_id: int, *, write: bool = True,
                groups: dict[int, bool] | None = None, username: str = "researcher") -> None:
        """A key of user `user_id` with access to their library (and these groups, each
        with write access or not)."""
        with self._lock:
            access: dict[str, Any] = {"user": {"library": True, "files": True, "notes": True,
                                               "write": write}}
            if groups:
                access["groups"] = {str(g): {"library": True, "write": w}
                                    for g, w in groups.items()}
            self._keys[key] = {"key": key, "userID": user_id, "username": username,
                               "displayName": "", "access": access}
            self._libraries.setdefault(f"/users/{user_id}", _Library())
            for group in groups or {}:
                self._libraries.setdefault(f"/groups/{group}", _Library())

    def revoke(self, key: str) -> None:
        with self._lock:
            self._keys.pop(key, None)

    def add_items(self, prefix: str, items: list[dict[str, Any]]) -> None:
        """Items (Web API item JSON, as in tests/fixtures/zotero) added in one write."""
        with self._lock:
            library = self._libraries[prefix]
            library.version += 1
            for item in items:
                item = copy.deepcopy(item)
                item["version"] = item["data"]["version"] = library.version
                library.items[item["key"]] = item

    def trash(self, prefix: str, item_key: str) -> None:
        """Move an item to the trash (it stays, with `deleted` set)."""
        with self._lock:
            library = self._libraries[prefix]
            library.version += 1
            item = library.items[item_key]
            item["data"]["deleted"] = 1
            item["version"] = item["data"]["version"] = library.version

    def delete(self, prefix: str, item_key: str) -> None:
        with self._lock:
            library = self._libraries[prefix]
            library.version += 1
            del library.items[item_key]
            library.deleted[item_key] = library.version

    def edit(self, prefix: str, item_key: str, **fields: Any) -> None:
        """Someone edits the item in Zotero (its version moves on)."""
        with self._lock:
            library = self._libraries[prefix]
            library.version += 1
            item = library.items[item_key]
            item["data"].update(fields)
            item["version"] = item["data"]["version"] = library.version

    def fail_next(self, status: int, *, retry_after: float | None = None,
                  backoff: float | None = None, times: int = 1) -> None:
        headers = {}
        if retry_after is not None:
            headers["Retry-After"] = f"{retry_after:g}"
        if backoff is not None:
            headers["Backoff"] = f"{backoff:g}"
        with self._lock:
            self._faults.extend([_Fault(status, headers)] * times)

    def backoff_next(self, seconds: int) -> None:
        """The next answer (whatever it is) carries `Backoff: seconds`."""
        with self._lock:
            self._backoff.append(seconds)

    # ------------------------------------------------------------------ what it saw

    @property
    def requests(self) -> list[Request]:
        with self._lock:
            return list(self._requests)

    def clear_requests(self) -> None:
        with self._lock:
            self._requests.clear()

    def items(self, prefix: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._libraries[prefix].items)

    def collections(self, prefix: str) -> dict[str, dict[str, Any]]:
        with self._lock:
            return copy.deepcopy(self._libraries[prefix].collections)

    def version(self, prefix: str) -> int:
        with self._lock:
            return self._libraries[prefix].version

    # ------------------------------------------------------------------ answers

    def _new_key(self) -> str:
        n = next(self._counter) * 104729
        return "".join(_KEY_ALPHABET[(n // len(_KEY_ALPHABET) ** i) % len(_KEY_ALPHABET)]
                       for i in range(8))

    def answer(self, method: str, target: str, headers: dict[str, str], body: Any
               ) -> tuple[int, dict[str, str], Any]:
        parts = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        with self._lock:
            status, out_headers, payload = self._route(method, parts.path, query, headers, body)
            if self._backoff:
                out_headers["Backoff"] = str(self._backoff.popleft())
            self._requests.append(Request(method, parts.path, query, headers, body, status))
        return status, out_headers, payload

    def _route(self, method: str, path: str, query: dict[str, str], headers: dict[str, str],
               body: Any) -> tuple[int, dict[str, str], Any]:
        if self._faults:
            fault = self._faults.popleft()
            return fault.status, dict(fault.headers), "Fake fault"
        if headers.get("zotero-api-version") != "3":
            return 400, {}, "This fake speaks API version 3 only"
        key = self._keys.get(headers.get("zotero-api-key", ""))
        if path == "/keys/current":
            return (200, {}, key) if key is not None else (403, {}, "Forbidden")
        segments = path.strip("/").split("/")
        if len(segments) < 3 or segments[0] not in ("users", "groups"):
            return 404, {}, "Not found"
        prefix = f"/{segments[0]}/{segments[1]}"
        library = self._libraries.get(prefix)
        if library is None:
            return 404, {}, "Not found"
        if key is None or not self._reaches(key, segments[0], int(segments[1]),
                                            write=method != "GET"):
            return 403, {}, "Forbidden"
        rest = segments[2:]
        version = {"Last-Modified-Version": str(library.version)}
        if method == "GET":
            return self._read(library, prefix, rest, query, headers, version)
        if method == "POST" and rest in (["items"], ["collections"]):
            return self._create(library, prefix, rest[0], headers, body)
        if method == "PATCH" and len(rest) == 2 and rest[0] == "items":
            return self._patch(library, rest[1], headers, body)
        return 405, {}, "Method not allowed"

    def _reaches(self, key: dict[str, Any], kind: str, library_id: int, *, write: bool) -> bool:
        access = key["access"]
        if kind == "users":
            rights = access.get("user", {}) if library_id == key["userID"] else {}
        else:
            groups = access.get("groups", {})
            rights = groups.get(str(library_id), groups.get("all", {}))
        return bool(rights.get("library")) and (not write or bool(rights.get("write")))

    def _read(self, library: _Library, prefix: str, rest: list[str], query: dict[str, str],
              headers: dict[str, str], version: dict[str, str]
              ) -> tuple[int, dict[str, str], Any]:
        since = int(query.get("since", "0"))
        if rest == ["deleted"]:
            return 200, version, {"collections": [], "searches": [], "tags": [], "settings": [],
                                  "items": [k for k, v in library.deleted.items() if v > since]}
        if len(rest) == 2 and rest[0] == "items" and rest[1] != "top":
            item = library.items.get(rest[1])
            return (200, {"Last-Modified-Version": str(item["version"])}, item) if item else (
                404, {}, "Not found")
        if rest in (["items"], ["items", "top"]):
            objects = list(library.items.values())
        elif len(rest) == 4 and rest[0] == "collections" and rest[2:] == ["items", "top"]:
            objects = [item for item in library.items.values()
                       if rest[1] in item["data"].get("collections", ())]
        elif rest in (["collections"], ["collections", "top"]):
            objects = list(library.collections.values())
        else:
            return 404, {}, "Not found"
        modified_since = headers.get("if-modified-since-version")
        if modified_since is not None and library.version <= int(modified_since):
            return 304, version, None
        objects = [o for o in objects if o["version"] > since]
        if rest[0] == "items" and query.get("includeTrashed") != "1":
            objects = [o for o in objects if not o["data"].get("deleted")]
        if query.get("format") == "versions":
            return 200, version, {o["key"]: o["version"] for o in objects}
        start = int(query.get("start", "0"))
        limit = min(int(query.get("limit", "25")), self._page_limit)
        page = objects[start:start + limit]
        out = {**version, "Total-Results": str(len(objects))}
        if start + limit < len(objects):
            following = {**query, "start": str(start + limit), "limit": str(limit)}
            link = "&".join(f"{k}={v}" for k, v in following.items())
            out["Link"] = (f'<{self.root}/{"/".join([prefix.strip("/"), *rest])}?{link}>; '
                           'rel="next"')
        return 200, out, page

    def _create(self, library: _Library, prefix: str, kind: str, headers: dict[str, str],
                body: Any) -> tuple[int, dict[str, str], Any]:
        token = headers.get("zotero-write-token")
        if token is not None:
            if token in self._tokens:
                return 412, {}, "Write token already used"
            self._tokens.add(token)
        if not isinstance(body, list) or not 1 <= len(body) <= 50:
            return 400, {}, "Body must be a JSON array of 1 to 50 objects"
        successful, success, failed = {}, {}, {}
        library.version += 1
        for index, data in enumerate(body):
            problem = self._problem(kind, data)
            if problem is not None:
                failed[str(index)] = {"key": "", "code": 400, "message": problem}
                continue
            key = self._new_key()
            data = {**copy.deepcopy(data), "key": key, "version": library.version}
            obj = {"key": key, "version": library.version,
                   "library": {"type": prefix.split("/")[1].rstrip("s"),
                               "id": int(prefix.split("/")[2])},
                   "meta": {}, "data": data}
            (library.items if kind == "items" else library.collections)[key] = obj
            successful[str(index)] = obj
            success[str(index)] = key
        return 200, {"Last-Modified-Version": str(library.version)}, {
            "successful": successful, "success": success, "unchanged": {}, "failed": failed}

    def _problem(self, kind: str, data: Any) -> str | None:
        if not isinstance(data, dict):
            return "not an object"
        if kind == "collections":
            return None if isinstance(data.get("name"), str) and data["name"] else "no name"
        template = _TEMPLATES.get(data.get("itemType", ""))
        if template is None:
            return f"this fake knows no template for {data.get('itemType')!r}"
        unknown = set(data) - template - _ITEM_COMMON
        if unknown:
            return f"'{sorted(unknown)[0]}' is not a valid field for type '{data['itemType']}'"
        for creator in data.get("creators", ()):
            if not (("lastName" in creator and "firstName" in creator) or "name" in creator):
                return "a creator needs firstName and lastName, or name"
        return None

    def _patch(self, library: _Library, item_key: str, headers: dict[str, str],
               body: Any) -> tuple[int, dict[str, str], Any]:
        item = library.items.get(item_key)
        if item is None:
            return 404, {}, "Not found"
        expected = headers.get("if-unmodified-since-version")
        if expected is None:
            return 428, {}, "If-Unmodified-Since-Version not provided"
        if int(expected) != item["version"]:
            return 412, {"Last-Modified-Version": str(item["version"])}, \
                f"Item has been modified since specified version (expected {expected}, " \
                f"found {item['version']})"
        problem = self._problem("items", {**item["data"], **body})
        if problem is not None:
            return 400, {}, problem
        library.version += 1
        item["data"].update(body)
        item["version"] = item["data"]["version"] = library.version
        return 204, {"Last-Modified-Version": str(library.version)}, None


def _make_handler(server: FakeZotero) -> type[FakeHandler]:
    class Handler(FakeHandler):

        def _handle(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                self.respond(400, {}, b"Invalid JSON")
                return
            status, out, payload = server.answer(self.command, self.path, headers, body)
            if payload is None or status in (204, 304):
                self.respond(status, out, b"")
            elif isinstance(payload, str):
                self.respond(status, {**out, "Content-Type": "text/plain"}, payload.encode())
            else:
                self.respond(status, {**out, "Content-Type": "application/json"},
                             json.dumps(payload).encode())

        do_GET = do_POST = do_PATCH = _handle

    return Handler


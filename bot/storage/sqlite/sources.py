"""Sources: one record per feed URL, with conditional-GET validators and health."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import fields
from datetime import date
from typing import Any

from bot.core.models import FeedState, Freshness, Source
from bot.storage.sqlite.db import Database

_STATE_FIELDS = tuple(f.name for f in fields(FeedState))
_DATE_FIELDS = frozenset({"announced_on", "expected_on", "filled_on"})


def _source(row: Mapping[str, Any]) -> Source:
    values = dict(row)
    state: dict[str, Any] = {}
    for name in _STATE_FIELDS:
        value = values.pop(name, None)
        if value is not None and name in _DATE_FIELDS:
            value = date.fromisoformat(value)
        elif value is not None and name == "freshness":
            value = Freshness(value)
        state[name] = value
    return Source(**values, state=FeedState(**state))


class SourceRepository:
    """Reads and writes the `sources` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def get(self, url: str) -> Source | None:
        row = await self._db.fetchone("SELECT * FROM sources WHERE url = ?", (url,))
        return None if row is None else _source(row)

    async def all(self) -> list[Source]:
        rows = await self._db.fetchall("SELECT * FROM sources ORDER BY url")
        return [_source(r) for r in rows]

    async def record_success(
        self, url: str, now: float, status: int, items: int | None,
        etag: str | None, last_modified: str | None, *, clear_validators: bool = False,
    ) -> None:
        """A fetch that parsed: store validators, reset failures. `items` None keeps the last.

        `clear_validators` forgets the stored ETag/Last-Modified so the next request is a
        full GET (after an empty feed, which must not be trusted through a 304).
        """
        if clear_validators:
            await self._db.execute(
                "UPDATE sources SET etag = NULL, last_modified = NULL WHERE url = ?", (url,)
            )
        await self._db.execute(
            """
            INSERT INTO sources (url, etag, last_modified, last_attempt_at, last_success_at,
                consecutive_failures, last_error, last_status, last_items)
            VALUES (?, ?, ?, ?, ?, 0, NULL, ?, ?)
            ON CONFLICT (url) DO UPDATE SET
                etag = COALESCE(excluded.etag, sources.etag),
                last_modified = COALESCE(excluded.last_modified, sources.last_modified),
                last_attempt_at = excluded.last_attempt_at,
                last_success_at = excluded.last_success_at,
                consecutive_failures = 0, last_error = NULL,
                last_status = excluded.last_status,
                last_items = COALESCE(excluded.last_items, sources.last_items)
            """,
            (url, etag, last_modified, now, now, status, items),
        )

    async def record_failure(self, url: str, now: float, error: str,
                             status: int | None = None) -> None:
        """A fetch or parse that failed: validators are kept, so nothing is marked as seen."""
        await self._db.execute(
            """
            INSERT INTO sources (url, last_attempt_at, consecutive_failures, last_error,
                last_status)
            VALUES (?, ?, 1, ?, ?)
            ON CONFLICT (url) DO UPDATE SET
                last_attempt_at = excluded.last_attempt_at,
                consecutive_failures = sources.consecutive_failures + 1,
                last_error = excluded.last_error, last_status = excluded.last_status
            """,
            (url, now, error[:500], status),
        )

    async def record_state(self, url: str, state: FeedState) -> None:
        """Store the calendar's view of a feed (after its fetch was recorded)."""
        values = [getattr(state, name) for name in _STATE_FIELDS]
        values = [v.isoformat() if isinstance(v, date) else v for v in values]
        columns = ", ".join(_STATE_FIELDS)
        marks = ", ".join("?" * len(_STATE_FIELDS))
        updates = ", ".join(f"{name} = excluded.{name}" for name in _STATE_FIELDS)
        await self._db.execute(
            f"INSERT INTO sources (url, {columns}) VALUES (?, {marks}) "
            f"ON CONFLICT (url) DO UPDATE SET {updates}",
            (url, *values),
        )

    async def forget_others(self, urls: Collection[str], under: str = "") -> int:
        """Delete the records of feed URLs the plan no longer has (follows changed the URLs),
        which /stats and /status would otherwise show as scans that stopped days ago.
        With `under`, only URLs starting with it are considered: other sources keep theirs."""
        marks = ",".join("?" * len(urls))
        kept = f" AND url NOT IN ({marks})" if urls else ""
        return await self._db.execute(
            f"DELETE FROM sources WHERE substr(url, 1, ?) = ?{kept}", (len(under), under, *urls))

"""The outbox: every alert is stored before it is sent and marked sent once Telegram accepts it.

A poll's plain alerts (new papers, due at once) are stored first in `outbox_staged`: one row
per chat and poll transaction, its alerts in one compact text. A row per alert, with the
outbox's unique key and indexes, was most of a big poll's store (516,668 alerts: 47 s;
docs/performance.md, "The store"). A chat's staged rows are unpacked into ordinary `outbox`
rows (`unpack_staged`), and deleted, in one transaction, before anything reads or changes
that chat's alerts, so every reader below sees the outbox as if they had been there all along.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from operator import itemgetter
from typing import ClassVar, Generic, TypeVar

import aiosqlite

from bot.core.constants import DAY
from bot.core.models import Alert, AlertKind, OutboxRow, OutboxStatus, PlainAlerts
from bot.storage.interfaces import StagedAlerts
from bot.storage.sqlite.db import Database, in_chunks

# Alerts held for a chat that blocked the bot expire after this many days: it gets what is
# newer when it comes back (a digest, capped), not months of old news.
HELD_ALERT_DAYS = 14
# The tables of messages queued for a chat: held, released and moved with it alike.
DELIVERY_TABLES = ("outbox", "foryou_outbox")
# A poll's plain alerts, one row per chat and transaction, until the chat's outbox is read.
STAGED_TABLE = "outbox_staged"
UNPACK_CHATS = 50  # chats whose staged alerts one transaction unpacks, when many are asked for
# The papers of staged alerts, as a subquery (`s` the staged row): what must not be pruned,
# and what a chat has had an alert for. PostgreSQL's says it its own way.
STAGED_PAPERS = f"SELECT j.value FROM {STAGED_TABLE} s, json_each(s.alerts, '$.papers') j"
STAGED_PAPERS_PG = (f"SELECT j.value FROM {STAGED_TABLE} s, "
                    f"json_array_elements_text(s.alerts::json -> 'papers') AS j(value)")


@lru_cache(maxsize=4096)
def _json_tuple(text: str) -> tuple:
    """A JSON list as a tuple, decoded once: a chat's rows share a few subscription and query
    lists (a digest's 45 rows, two or three), and decoding them was a seventh of composing a
    digest."""
    return tuple(json.loads(text))


def _row(row: sqlite3.Row) -> OutboxRow:
    return OutboxRow(
        id=row["id"],
        alert=Alert(
            chat_id=row["chat_id"],
            arxiv_id=row["arxiv_id"],
            version=row["version"],
            kind=AlertKind(row["kind"]),
            subscription_ids=_json_tuple(row["subscription_ids"]),
            matched_queries=_json_tuple(row["matched_queries"]),
            saved_revision=bool(row["saved_revision"]),
            topic_id=row["topic_id"],
        ),
        status=OutboxStatus(row["status"]),
        attempts=row["attempts"],
        created_at=row["created_at"],
        message_id=row["message_id"],
    )


def _json_once() -> Callable[[tuple], str]:
    """A JSON encoder of tuples that encodes each distinct tuple once. A subscription's
    alerts share their tuples (one per chat and paper in a big poll): 516,668 alerts have
    about 100,000."""
    encoded: dict[tuple, str] = {}

    def encode(values: tuple) -> str:
        text = encoded.get(values)
        if text is None:
            text = encoded[values] = json.dumps(list(values))
        return text

    return encode


def _outbox_rows(alerts: Sequence[Alert], now: float, revisions_due: float) -> list[tuple]:
    """Insert parameters, by chat: the (chat_id, …) index takes them page after page instead
    of at random. The sort is stable, so a chat's alerts keep their order (their ids)."""
    encode = _json_once()
    return sorted((
        (a.chat_id, a.arxiv_id, a.version, a.kind, encode(a.subscription_ids),
         encode(a.matched_queries), int(a.saved_revision), now,
         revisions_due if a.kind == AlertKind.REVISION else now, a.topic_id, a.chat_id)
        for a in alerts
    ), key=itemgetter(0))


def _is_plain(alert: Alert) -> bool:
    """A new paper's alert, due at once: staged. Revisions (which wait for their details and
    are released by `release_revisions`) and saved papers' revisions go to `outbox` as they
    are: they are few."""
    return alert.kind == AlertKind.NEW and not alert.saved_revision


def _staged_rows(plain: PlainAlerts, now: float) -> list[tuple]:
    """One row per chat: (chat_id, created_at, alert_count, alerts as JSON, chat_id).

    The JSON holds columns, not an object per alert: the papers (a list `prune` and For you
    read in SQL), their versions and topics, and for each alert the index of its
    (subscription ids, matched queries) pair in `matches`, which a chat's alerts share a lot
    (a chat's few subscriptions match many papers): `PlainAlerts`' own columns, sliced.

    The text is `json.dumps`' (default separators), put together from pieces: each paper id
    and each pair object is encoded once, and a list of ints is its `repr`, which is its
    JSON. A `json.dumps` a chat cost more than the rest of the store's Python (73,000 chats'
    rows for a big poll: 1.1 s)."""
    quote = encode_basestring_ascii
    quoted = {arxiv_id: quote(arxiv_id) for arxiv_id in set(plain.arxiv_ids)}
    papers = [quoted[arxiv_id] for arxiv_id in plain.arxiv_ids]
    encoded: dict[int, str] = {}  # a pair's JSON, by the pair object: shared by its alerts
    pairs = []
    for pair in plain.pairs:
        text = encoded.get(id(pair))
        if text is None:
            subs, queries = pair
            text = encoded[id(pair)] = (f"[{list(subs)!r}, "
                                        f"[{', '.join(map(quote, queries))}]]")
        pairs.append(text)
    rows = []
    bounds, pair_bounds = plain.bounds, plain.pair_bounds
    versions, topics, picks = plain.versions, plain.topics, plain.picks
    for i, chat_id in enumerate(plain.chats):
        start, end = bounds[i], bounds[i + 1]
        text = (f'{{"papers": [{", ".join(papers[start:end])}], '
                f'"versions": {versions[start:end]!r}, "topics": {topics[start:end]!r}, '
                f'"match": {picks[start:end]!r}, '
                f'"matches": [{", ".join(pairs[pair_bounds[i]:pair_bounds[i + 1]])}]}}')
        rows.append((chat_id, now, end - start, text, chat_id))
    return rows


def _prepared(plain: PlainAlerts, now: float) -> StagedAlerts:
    rows = _staged_rows(plain, now)
    return StagedAlerts(now, tuple(rows), tuple(plain.chats),
                        tuple(row[2] for row in rows))


def _unstaged(chat_id: int, text: str) -> list[Alert]:
    """A staged row's alerts, in the order they were staged."""
    data = json.loads(text)
    matches = [(tuple(subs), tuple(queries)) for subs, queries in data["matches"]]
    return [
        Alert(chat_id, arxiv_id, version, AlertKind.NEW, *matches[pick], topic_id=topic_id)
        for arxiv_id, version, topic_id, pick in zip(
            data["papers"], data["versions"], data["topics"], data["match"], strict=True)
    ]


async def unpack_staged(conn: aiosqlite.Connection, chat_ids: Iterable[int]) -> int:
    """Turn these chats' staged alerts into ordinary `outbox` rows and delete the staged rows,
    inside the caller's transaction; how many staged rows there were.

    A version the chat already has in `outbox` (sent or queued, for the same topic) is not
    added again: the unique key ignores it, as it did when alerts went to `outbox` at once.
    The rows are pending, or held if the chat blocks the bot by now. Both engines' writer
    connections take these statements alike (few rows: one chat's alerts)."""
    unpacked = 0
    for chunk, marks in in_chunks(chat_ids):
        cursor = await conn.execute(
            f"SELECT id, chat_id, created_at, alerts FROM {STAGED_TABLE} "
            f"WHERE chat_id IN ({marks}) ORDER BY id", chunk)
        staged = await cursor.fetchall()
        if not staged:
            continue
        cursor = await conn.execute(
            f"SELECT id FROM chats WHERE id IN ({marks}) AND inactive_since IS NOT NULL", chunk)
        blocked = {r["id"] for r in await cursor.fetchall()}
        rows = []
        encode = _json_once()
        for row in staged:
            status = "held" if row["chat_id"] in blocked else "pending"
            created = row["created_at"]
            for a in _unstaged(row["chat_id"], row["alerts"]):
                rows.append((a.chat_id, a.arxiv_id, a.version, encode(a.subscription_ids),
                             encode(a.matched_queries), status, created, created, a.topic_id))
        await conn.executemany(
            """
            INSERT INTO outbox (chat_id, arxiv_id, version, kind, subscription_ids,
                matched_queries, saved_revision, status, created_at, due_at, topic_id)
            VALUES (?, ?, ?, 'new', ?, ?, 0, ?, ?, ?, ?)
            ON CONFLICT (chat_id, topic_id, arxiv_id, version) DO NOTHING
            """,
            rows,
        )
        await conn.execute(f"DELETE FROM {STAGED_TABLE} WHERE chat_id IN ({marks})", chunk)
        unpacked += len(staged)
    return unpacked


async def has_staged(db: Database, chat_id: int) -> bool:
    """Whether the chat has staged alerts: a read through the chat's index, which finds none
    most of the time."""
    return await db.fetchval(f"SELECT 1 FROM {STAGED_TABLE} WHERE chat_id = ? LIMIT 1",
                             (chat_id,)) is not None


Row = TypeVar("Row")  # what a queue's table row decodes to


class NotAllPending(Exception):
    """Some of the rows to claim were no longer pending: the claim is rolled back."""


# A row Telegram accepted: (message_id, sent_at) are its parameters.
_SENT = ("status = 'sent', message_id = ?, sent_at = ?, claimed_at = NULL, "
         "attempts = attempts + 1, last_error = NULL")


class DeliveryQueue(Generic[Row]):
    """The delivery states of a table of queued messages (`outbox`'s alerts, `foryou_outbox`'s
    For-you messages): pending, claimed (`sending`) just before the request, then sent, pending
    again for a later retry, or failed; held while the chat blocks the bot."""

    _table: ClassVar[str]
    # `+status`: SQLite's way of saying "not through the status index" (see pending_for_chat).
    _PENDING: ClassVar[str] = "+status = 'pending'"

    def __init__(self, db: Database) -> None:
        self._db = db

    @staticmethod
    def _decode(row: sqlite3.Row) -> Row:
        raise NotImplementedError

    async def _read_pending(self, chat_id: int, sql: str, params: Sequence[object]
                            ) -> list[sqlite3.Row]:
        """A chat's pending rows as `sql` selects them, as last committed (the outbox
        unpacks the chat's staged alerts first)."""
        return await self._db.fetchall(sql, params)

    async def pending_for_chat(self, chat_id: int, now: float | None = None) -> list[Row]:
        """A chat's pending rows (due by `now` when given), oldest first."""
        # `+status`: found through the chat's own rows, never by walking every pending row of
        # every chat (outbox_due): after a big poll that is half a million, 70 ms for each
        # chat's /resume and each chat of a drain, instead of 3 ms.
        sql = f"SELECT * FROM {self._table} WHERE chat_id = ? AND {self._PENDING}"
        params: list[object] = [chat_id]
        if now is not None:
            sql += " AND due_at <= ?"
            params.append(now)
        rows = await self._read_pending(chat_id, sql + " ORDER BY id", params)
        return [self._decode(r) for r in rows]

    async def pending_ids(self, chat_ids: Iterable[int], now: float | None = None
                          ) -> dict[int, set[int]]:
        """Many chats' pending rows (due by `now` when given), as their ids by chat (chats
        with none left out): a few statements for thousands of chats, where `pending_for_chat`
        a chat at a time waits its turn behind a drain's traffic each time."""
        found: dict[int, set[int]] = {}
        for chunk, marks in in_chunks(chat_ids):
            await self._collect_pending(found, chunk, marks, now)
        return found

    def _pending_ids_sql(self, marks: str, now: float | None) -> tuple[str, list[object]]:
        sql = (f"SELECT chat_id, id FROM {self._table} "
               f"WHERE chat_id IN ({marks}) AND {self._PENDING}")
        return (sql + " AND due_at <= ?", [now]) if now is not None else (sql, [])

    async def _collect_pending(self, found: dict[int, set[int]], chunk: list[int], marks: str,
                               now: float | None) -> None:
        sql, extra = self._pending_ids_sql(marks, now)
        for row in await self._db.fetchall(sql, [*chunk, *extra]):
            found.setdefault(row["chat_id"], set()).add(row["id"])

    async def due_chats(self, now: float) -> list[int]:
        """Chats with pending rows due now that can receive them (active, not paused)."""
        rows = await self._db.fetchall(
            f"""
            SELECT DISTINCT o.chat_id FROM {self._table} o JOIN chats c ON c.id = o.chat_id
            WHERE o.status = 'pending' AND o.due_at <= ? AND c.inactive_since IS NULL
              AND c.paused = 0
            ORDER BY o.chat_id
            """,
            (now,),
        )
        return [r["chat_id"] for r in rows]

    async def claim(self, row_ids: Sequence[int], now: float) -> bool:
        """Mark pending rows `sending` just before their request; False (and nothing claimed)
        if any of them is no longer pending (held meanwhile, or claimed by someone else)."""
        # One conditional UPDATE, rolled back unless it claimed them all: no count first.
        try:
            async with self._db.transaction() as conn:
                claimed = 0
                for chunk, marks in in_chunks(row_ids):
                    cursor = await conn.execute(
                        f"UPDATE {self._table} SET status = 'sending', claimed_at = ? "
                        f"WHERE id IN ({marks}) AND status = 'pending'", (now, *chunk))
                    claimed += cursor.rowcount
                if claimed != len(row_ids):
                    raise NotAllPending
        except NotAllPending:
            return False
        return True

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False, hidden: Sequence[int] = (),
                        hidden_message_id: int | None = None) -> None:
        """Telegram accepted the message (`alone` matters only to alerts' threads); the rows
        `hidden` behind its More button under `hidden_message_id`, in the same transaction."""
        async with self._db.transaction() as conn:
            await self._mark_sent_in(conn, row_ids, message_id, now, hidden, hidden_message_id)

    async def _mark_sent_in(self, conn: aiosqlite.Connection, row_ids: Sequence[int],
                            message_id: int, now: float, hidden: Sequence[int],
                            hidden_message_id: int | None) -> None:
        await self._set_claimed_in(conn, row_ids, _SENT, (message_id, now))
        if hidden:
            if hidden_message_id is None:
                raise ValueError("rows behind a More button need the id they are recorded under")
            await self._set_claimed_in(conn, hidden, _SENT, (hidden_message_id, now))

    async def unclaim(self, row_ids: Sequence[int]) -> None:
        """Telegram refused the request before taking it (a 429): the rows wait again."""
        await self._set_claimed(row_ids, "status = 'pending', claimed_at = NULL",
                                only_sending=True)

    async def requeue_claimed(self) -> int:
        """At start-up: rows claimed by a process that died are uncertain (Telegram may or may
        not have taken them; it has no idempotency key to ask). Send them again."""
        return await self._db.execute(
            f"UPDATE {self._table} SET status = 'pending', claimed_at = NULL "
            f"WHERE status = 'sending'"
        )

    async def retry_later(self, row_ids: Sequence[int], due_at: float, error: str,
                          max_attempts: int) -> None:
        """Try again at `due_at`; once `max_attempts` have failed, the rows fail for good."""
        await self._set_claimed(
            row_ids,
            "status = CASE WHEN attempts + 1 >= ? THEN 'failed' ELSE 'pending' END, "
            "due_at = ?, attempts = attempts + 1, last_error = ?, claimed_at = NULL",
            (max_attempts, due_at, error[:500]), only_sending=True)

    async def mark_failed(self, row_ids: Sequence[int], error: str) -> None:
        await self._set_claimed(
            row_ids, "status = 'failed', attempts = attempts + 1, last_error = ?, "
                     "claimed_at = NULL", (error[:500],))

    async def _set_claimed(self, row_ids: Sequence[int], assignments: str,
                           params: Sequence[object] = (), *, only_sending: bool = False) -> None:
        # A claimed row held meanwhile (the chat blocked the bot) stays held, unless Telegram
        # accepted it after all (mark_sent) or it failed for good.
        async with self._db.transaction() as conn:
            await self._set_claimed_in(conn, row_ids, assignments, params,
                                       only_sending=only_sending)

    async def _set_claimed_in(self, conn: aiosqlite.Connection, row_ids: Sequence[int],
                              assignments: str, params: Sequence[object] = (), *,
                              only_sending: bool = False) -> None:
        where = " AND status = 'sending'" if only_sending else ""
        for chunk, marks in in_chunks(row_ids):
            await conn.execute(
                f"UPDATE {self._table} SET {assignments} WHERE id IN ({marks}){where}",
                (*params, *chunk))

    async def expire_held(self, now: float) -> int:
        """Rows held longer than HELD_ALERT_DAYS expire (at the daily upkeep)."""
        return await self._db.execute(
            f"UPDATE {self._table} SET status = 'expired' WHERE status = 'held' "
            f"AND created_at < ?",
            (now - HELD_ALERT_DAYS * DAY,),
        )

    async def prune(self, before: float) -> int:
        """Forget sent, failed and expired rows older than `before` (pending, sending and
        held are kept)."""
        return await self._db.execute(
            f"DELETE FROM {self._table} WHERE status IN ('sent', 'failed', 'expired') "
            f"AND created_at < ?",
            (before,)
        )


class OutboxInTransaction:
    """The outbox as one open transaction writes and reads it (see `SqliteStorage.transaction`)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def enqueue(self, alerts: Sequence[Alert], now: float, *,
                      revisions_due_at: float | None = None,
                      staged: StagedAlerts | None = None) -> int:
        """Store alerts inside the transaction: a poll's plain alerts (new papers, due now)
        staged, one row per chat (`_staged_rows`), and `staged`'s rows, encoded beforehand,
        as they are; revisions straight into `outbox`, where a version already queued for the
        same chat and topic is skipped. A staged alert for a version the chat already has is
        dropped when its chat's alerts are unpacked.

        Returns how many were stored (staged ones all count). Alerts for chats the bot has
        never seen are dropped, so the caller passes only known chats. Revisions are due at
        `revisions_due_at` when given: they wait for their details (`release_revisions`).
        """
        stored = 0
        if staged is not None and staged.rows:
            if staged.now != now:
                raise ValueError(f"alerts staged at {staged.now} stored at {now}")
            stored += await self._stage(staged.rows, staged.alert_count)
        plain = [a for a in alerts if _is_plain(a)]
        if plain:
            rows = await asyncio.to_thread(
                lambda: _staged_rows(PlainAlerts.from_alerts(plain), now))
            stored += await self._stage(rows, len(plain))
        if len(plain) == len(alerts):
            return stored
        return stored + await self._insert([a for a in alerts if not _is_plain(a)], now,
                                           revisions_due_at=revisions_due_at)

    async def _stage(self, rows: Sequence[tuple], alerts: int) -> int:
        """Insert staged rows (`_staged_rows`) holding `alerts` alerts; how many were stored
        (a chat the bot has never seen drops its row)."""
        before = self._conn.total_changes
        await self._conn.executemany(
            f"INSERT INTO {STAGED_TABLE} (chat_id, created_at, alert_count, alerts) "
            f"SELECT ?, ?, ?, ? FROM chats WHERE id = ?", rows)
        if self._conn.total_changes - before == len(rows):
            return alerts
        # Some chats were unknown (their rows dropped): count the alerts of the others.
        known: set[int] = set()
        for chunk, marks in in_chunks([r[0] for r in rows]):
            cursor = await self._conn.execute(
                f"SELECT id FROM chats WHERE id IN ({marks})", chunk)
            known.update(r["id"] for r in await cursor.fetchall())
        return sum(r[2] for r in rows if r[0] in known)

    async def _insert(self, alerts: Sequence[Alert], now: float, *,
                     revisions_due_at: float | None = None) -> int:
        """Store alerts as `outbox` rows at once, none staged; how many were new (a version
        already queued for the same chat and topic is skipped)."""
        revisions_due = now if revisions_due_at is None else revisions_due_at
        # Hundreds of thousands of rows after a big poll: encoded off the event loop.
        rows = await asyncio.to_thread(_outbox_rows, alerts, now, revisions_due)
        before = self._conn.total_changes
        await self._conn.executemany(
            """
            INSERT INTO outbox (chat_id, arxiv_id, version, kind, subscription_ids,
                matched_queries, saved_revision, status, created_at, due_at, topic_id)
            SELECT ?, ?, ?, ?, ?, ?, ?,
                   CASE WHEN c.inactive_since IS NULL THEN 'pending' ELSE 'held' END, ?, ?, ?
            FROM chats c WHERE c.id = ?
            ON CONFLICT (chat_id, topic_id, arxiv_id, version) DO NOTHING
            """,
            rows,
        )
        return self._conn.total_changes - before

    async def first_topics(self, chats_by_paper: Mapping[str, Sequence[int]]
                           ) -> dict[tuple[int, str], int]:
        """The topic where each (chat, paper) pair's first own alert went, for the revision
        of a saved paper that no subscription matched: it joins the paper's thread."""
        found: dict[tuple[int, str], int] = {}
        for chunk, marks in in_chunks(list(chats_by_paper)):
            cursor = await self._conn.execute(
                f"SELECT chat_id, arxiv_id, topic_id FROM alert_threads "
                f"WHERE arxiv_id IN ({marks}) ORDER BY sent_at DESC", chunk)
            found.update({(r["chat_id"], r["arxiv_id"]): r["topic_id"]
                          for r in await cursor.fetchall()})
        return found


class OutboxRepository(DeliveryQueue[OutboxRow]):
    """Reads and writes the `outbox` table."""

    _table = "outbox"
    _decode = staticmethod(_row)

    async def release_revisions(self, arxiv_ids: Iterable[str], now: float) -> int:
        """Make the waiting revision alerts of these papers due now (their details are in)."""
        released = 0
        async with self._db.transaction() as conn:
            for chunk, marks in in_chunks(arxiv_ids):
                cursor = await conn.execute(
                    f"UPDATE outbox SET due_at = ? WHERE status = 'pending' AND due_at > ? "
                    f"AND attempts = 0 AND kind = 'revision' AND arxiv_id IN ({marks})",
                    (now, now, *chunk),
                )
                released += cursor.rowcount
        return released

    async def prepare_staged(self, alerts: PlainAlerts, now: float) -> StagedAlerts:
        """Encode plain alerts for staging, in a worker thread and outside any transaction:
        see `OutboxInTransaction.enqueue`'s `staged`."""
        return await asyncio.to_thread(_prepared, alerts, now)

    async def enqueue(self, alerts: Sequence[Alert], now: float) -> int:
        """Store alerts in their own transaction as `outbox` rows, none staged (a few at a
        time, outside a poll): how many were new."""
        async with self._db.transaction() as conn:
            return await OutboxInTransaction(conn)._insert(alerts, now)

    async def _read_pending(self, chat_id: int, sql: str, params: Sequence[object]
                            ) -> list[sqlite3.Row]:
        """The chat's staged alerts become outbox rows, then its pending rows are read in
        the same transaction. Not on a reader: SQLite's one reader connection, which the
        drain's workers share, keeps the snapshot of its oldest open statement, so a read
        just after the unpack's commit could still miss the rows it made (a drain then
        passed over 2 of 40 chats, their alerts left pending)."""
        if not await has_staged(self._db, chat_id):
            return await super()._read_pending(chat_id, sql, params)
        async with self._db.transaction() as conn:
            await unpack_staged(conn, [chat_id])
            cursor = await conn.execute(sql, params)
            return list(await cursor.fetchall())

    async def _collect_pending(self, found: dict[int, set[int]], chunk: list[int], marks: str,
                               now: float | None) -> None:
        """As `_read_pending` does for one chat: the chats' staged alerts become rows first,
        and the rows are read in the same transaction (`UNPACK_CHATS` chats a transaction, so
        that no command waits long behind one)."""
        staged = {r["chat_id"] for r in await self._db.fetchall(
            f"SELECT DISTINCT chat_id FROM {STAGED_TABLE} WHERE chat_id IN ({marks})", chunk)}
        if not staged:
            await super()._collect_pending(found, chunk, marks, now)
            return
        for start in range(0, len(chunk), UNPACK_CHATS):
            part = chunk[start:start + UNPACK_CHATS]
            part_marks = ",".join("?" * len(part))
            if staged.isdisjoint(part):
                await super()._collect_pending(found, part, part_marks, now)
                continue
            sql, extra = self._pending_ids_sql(part_marks, now)
            async with self._db.transaction() as conn:
                await unpack_staged(conn, [chat_id for chat_id in part if chat_id in staged])
                cursor = await conn.execute(sql, [*part, *extra])
                for row in await cursor.fetchall():
                    found.setdefault(row["chat_id"], set()).add(row["id"])

    async def due_chats(self, now: float) -> list[int]:
        """Chats with pending rows due now, or staged alerts, that can receive them (active,
        not paused)."""
        rows = await self._db.fetchall(
            f"""
            SELECT o.chat_id FROM outbox o JOIN chats c ON c.id = o.chat_id
            WHERE o.status = 'pending' AND o.due_at <= :now AND c.inactive_since IS NULL
              AND c.paused = 0
            UNION
            SELECT s.chat_id FROM {STAGED_TABLE} s JOIN chats c ON c.id = s.chat_id
            WHERE s.created_at <= :now AND c.inactive_since IS NULL AND c.paused = 0
            ORDER BY 1
            """,
            {"now": now},
        )
        return [r["chat_id"] for r in rows]

    async def expire_held(self, now: float) -> int:
        """Rows held longer than HELD_ALERT_DAYS expire (at the daily upkeep); the staged
        alerts of chats that block the bot are unpacked (held) first."""
        rows = await self._db.fetchall(
            f"SELECT DISTINCT s.chat_id FROM {STAGED_TABLE} s JOIN chats c ON c.id = s.chat_id "
            f"WHERE c.inactive_since IS NOT NULL")
        if rows:
            async with self._db.transaction() as conn:
                await unpack_staged(conn, [r["chat_id"] for r in rows])
        return await super().expire_held(now)

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False, hidden: Sequence[int] = (),
                        hidden_message_id: int | None = None) -> None:
        """Telegram accepted the message. One alert sent `alone` (not in a digest) starts its
        paper's thread in the chat's topic, unless an earlier message did. The rows `hidden`
        behind its More button are recorded under `hidden_message_id`, in the same
        transaction."""
        async with self._db.transaction() as conn:
            await self._mark_sent_in(conn, row_ids, message_id, now, hidden, hidden_message_id)
            if alone and len(row_ids) == 1:
                await conn.execute(
                    "INSERT INTO alert_threads (chat_id, topic_id, arxiv_id, message_id, sent_at) "
                    "SELECT chat_id, topic_id, arxiv_id, ?, ? FROM outbox WHERE id = ? "
                    "ON CONFLICT (chat_id, topic_id, arxiv_id) DO NOTHING",
                    (message_id, now, row_ids[0]))

    async def thread_starts(self, chat_id: int, topic_id: int,
                            arxiv_ids: Iterable[str]) -> dict[str, int]:
        """The message that first showed each of these papers on its own in the chat's topic,
        by id: what a revision replies to. Papers never shown alone there are left out."""
        starts: dict[str, int] = {}
        for chunk, marks in in_chunks(list(dict.fromkeys(arxiv_ids))):
            rows = await self._db.fetchall(
                f"SELECT arxiv_id, message_id FROM alert_threads WHERE chat_id = ? "
                f"AND topic_id = ? AND arxiv_id IN ({marks})", (chat_id, topic_id, *chunk))
            starts.update({r["arxiv_id"]: r["message_id"] for r in rows})
        return starts

    async def prune_threads(self, before: float) -> int:
        """Forget where papers first went that were first sent before `before`."""
        return await self._db.execute("DELETE FROM alert_threads WHERE sent_at < ?", (before,))

    async def by_message(self, chat_id: int, message_id: int) -> OutboxRow | None:
        """The alert behind a message the bot sent (for re-rendering on a button press)."""
        row = await self._db.fetchone(
            "SELECT * FROM outbox WHERE chat_id = ? AND message_id = ? ORDER BY id LIMIT 1",
            (chat_id, message_id),
        )
        return None if row is None else _row(row)

    async def rows_of_message(self, chat_id: int, message_id: int) -> list[OutboxRow]:
        """Every alert a message delivered (a digest's, with any it did not show), in order."""
        rows = await self._db.fetchall(
            "SELECT * FROM outbox WHERE chat_id = ? AND message_id = ? ORDER BY id",
            (chat_id, message_id),
        )
        return [_row(r) for r in rows]

    async def counts(self) -> dict[str, int]:
        """Alerts by status; staged ones count as pending (held for a chat that blocks the
        bot), without being unpacked."""
        rows = await self._db.fetchall("SELECT status, COUNT(*) AS n FROM outbox GROUP BY status")
        counts = {status.value: 0 for status in OutboxStatus}
        counts.update({r["status"]: int(r["n"]) for r in rows})
        staged = await self._db.fetchone(
            f"SELECT SUM(CASE WHEN c.inactive_since IS NULL THEN s.alert_count ELSE 0 END) "
            f"AS pending, SUM(CASE WHEN c.inactive_since IS NULL THEN 0 ELSE s.alert_count "
            f"END) AS held FROM {STAGED_TABLE} s JOIN chats c ON c.id = s.chat_id")
        if staged is not None:
            counts["pending"] += int(staged["pending"] or 0)
            counts["held"] += int(staged["held"] or 0)
        return counts

    async def last_failure(self) -> str | None:
        """The error of the alert that failed last, for /status."""
        return await self._db.fetchval(
            "SELECT last_error FROM outbox WHERE status = 'failed' ORDER BY id DESC LIMIT 1")

    async def chat_matches_since(self, chat_id: int, since: float) -> int:
        """The chat's alerts created since `since`, its staged ones included (not unpacked:
        one already delivered and matched again counts twice until they are)."""
        return int(await self._db.fetchval(
            f"SELECT (SELECT COUNT(*) FROM outbox WHERE chat_id = :chat AND created_at >= :since)"
            f" + (SELECT COALESCE(SUM(alert_count), 0) FROM {STAGED_TABLE} "
            f"WHERE chat_id = :chat AND created_at >= :since)",
            {"chat": chat_id, "since": since}))

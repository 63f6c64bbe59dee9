"""The outbox: every alert is stored before it is sent and marked sent once Telegram accepts it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from typing import ClassVar, Generic, TypeVar

import aiosqlite

from bot.core.constants import DAY
from bot.core.models import Alert, AlertKind, OutboxRow, OutboxStatus
from bot.storage.sqlite.db import Database, in_chunks

# Alerts held for a chat that blocked the bot expire after this many days: it gets what is
# newer when it comes back (a digest, capped), not months of old news.
HELD_ALERT_DAYS = 14
# The tables of messages queued for a chat: held, released and moved with it alike.
DELIVERY_TABLES = ("outbox", "foryou_outbox")


def _row(row: sqlite3.Row) -> OutboxRow:
    return OutboxRow(
        id=row["id"],
        alert=Alert(
            chat_id=row["chat_id"],
            arxiv_id=row["arxiv_id"],
            version=row["version"],
            kind=AlertKind(row["kind"]),
            subscription_ids=tuple(json.loads(row["subscription_ids"])),
            matched_queries=tuple(json.loads(row["matched_queries"])),
            saved_revision=bool(row["saved_revision"]),
            topic_id=row["topic_id"],
        ),
        status=OutboxStatus(row["status"]),
        attempts=row["attempts"],
        created_at=row["created_at"],
        message_id=row["message_id"],
    )


def _outbox_rows(alerts: Sequence[Alert], now: float, revisions_due: float) -> list[tuple]:
    """Insert parameters, by chat: the (chat_id, …) index takes them page after page instead
    of at random. The sort is stable, so a chat's alerts keep their order (their ids)."""
    # A subscription's alerts share their tuples (one per chat and paper in a big poll), so
    # each distinct tuple is encoded once: 516,668 alerts have about 100,000.
    encoded: dict[tuple, str] = {}

    def encode(values: tuple) -> str:
        text = encoded.get(values)
        if text is None:
            text = encoded[values] = json.dumps(list(values))
        return text

    return sorted((
        (a.chat_id, a.arxiv_id, a.version, a.kind, encode(a.subscription_ids),
         encode(a.matched_queries), int(a.saved_revision), now,
         revisions_due if a.kind == AlertKind.REVISION else now, a.topic_id, a.chat_id)
        for a in alerts
    ), key=itemgetter(0))


Row = TypeVar("Row")  # what a queue's table row decodes to

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
        rows = await self._db.fetchall(sql + " ORDER BY id", params)
        return [self._decode(r) for r in rows]

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
        async with self._db.transaction() as conn:
            pending = 0
            for chunk, marks in in_chunks(row_ids):
                cursor = await conn.execute(
                    f"SELECT COUNT(*) FROM {self._table} WHERE status = 'pending' "
                    f"AND id IN ({marks})", chunk)
                pending += (await cursor.fetchone())[0]
            if pending != len(row_ids):
                return False
            for chunk, marks in in_chunks(row_ids):
                await conn.execute(
                    f"UPDATE {self._table} SET status = 'sending', claimed_at = ? "
                    f"WHERE id IN ({marks})", (now, *chunk))
        return True

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False) -> None:
        """Telegram accepted the message (`alone` matters only to alerts' threads)."""
        await self._set_claimed(row_ids, _SENT, (message_id, now))

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
                      revisions_due_at: float | None = None) -> int:
        """Store alerts inside the transaction; a version already queued for the same chat
        and topic is skipped.

        Returns how many were new. Alerts for chats the bot has never seen are dropped by the
        foreign key check, so the caller passes only known chats. Revisions are due at
        `revisions_due_at` when given: they wait for their details (`release_revisions`).
        """
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

    async def enqueue(self, alerts: Sequence[Alert], now: float) -> int:
        """Store alerts in their own transaction; see `OutboxInTransaction.enqueue`."""
        async with self._db.transaction() as conn:
            return await OutboxInTransaction(conn).enqueue(alerts, now)

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False) -> None:
        """Telegram accepted the message. One alert sent `alone` (not in a digest) starts its
        paper's thread in the chat's topic, unless an earlier message did."""
        async with self._db.transaction() as conn:
            await self._set_claimed_in(conn, row_ids, _SENT, (message_id, now))
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
        rows = await self._db.fetchall("SELECT status, COUNT(*) AS n FROM outbox GROUP BY status")
        counts = {status.value: 0 for status in OutboxStatus}
        counts.update({r["status"]: int(r["n"]) for r in rows})
        return counts

    async def last_failure(self) -> str | None:
        """The error of the alert that failed last, for /status."""
        return await self._db.fetchval(
            "SELECT last_error FROM outbox WHERE status = 'failed' ORDER BY id DESC LIMIT 1")

    async def chat_matches_since(self, chat_id: int, since: float) -> int:
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM outbox WHERE chat_id = ? AND created_at >= ?", (chat_id, since)
        ))

"""The outbox: every alert is stored before it is sent and marked sent once Telegram accepts it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import aiosqlite

from bot.models import Alert, AlertKind, OutboxStatus
from bot.storage.db import Database, in_chunks


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A stored alert with its delivery state."""

    id: int
    alert: Alert
    status: OutboxStatus
    attempts: int
    created_at: float
    message_id: int | None


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
        ),
        status=OutboxStatus(row["status"]),
        attempts=row["attempts"],
        created_at=row["created_at"],
        message_id=row["message_id"],
    )


def _outbox_rows(alerts: Sequence[Alert], now: float, revisions_due: float) -> list[tuple]:
    return [
        (a.chat_id, a.arxiv_id, a.version, a.kind, json.dumps(list(a.subscription_ids)),
         json.dumps(list(a.matched_queries)), int(a.saved_revision), now,
         revisions_due if a.kind == AlertKind.REVISION else now, a.chat_id)
        for a in alerts
    ]


class OutboxRepository:
    """Reads and writes the `outbox` table."""

    def __init__(self, db: Database) -> None:
        self._db = db

    @staticmethod
    async def enqueue_in(
        conn: aiosqlite.Connection, alerts: Sequence[Alert], now: float,
        *, revisions_due_at: float | None = None,
    ) -> int:
        """Store alerts inside the caller's transaction; a version already queued is skipped.

        Returns how many were new. Alerts for chats the bot has never seen are dropped by the
        foreign key check, so the caller passes only known chats. Revisions are due at
        `revisions_due_at` when given: they wait for their details (`release_revisions`).
        """
        revisions_due = now if revisions_due_at is None else revisions_due_at
        # Hundreds of thousands of rows after a big poll: encoded off the event loop.
        rows = await asyncio.to_thread(_outbox_rows, alerts, now, revisions_due)
        before = conn.total_changes
        await conn.executemany(
            """
            INSERT INTO outbox (chat_id, arxiv_id, version, kind, subscription_ids,
                matched_queries, saved_revision, status, created_at, due_at)
            SELECT ?, ?, ?, ?, ?, ?, ?,
                   CASE WHEN c.inactive_since IS NULL THEN 'pending' ELSE 'held' END, ?, ?
            FROM chats c WHERE c.id = ?
            ON CONFLICT (chat_id, arxiv_id, version) DO NOTHING
            """,
            rows,
        )
        return conn.total_changes - before

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
        async with self._db.transaction() as conn:
            return await self.enqueue_in(conn, alerts, now)

    async def due_chats(self, now: float) -> list[int]:
        """Chats with pending alerts due now that can receive them (active, not paused)."""
        rows = await self._db.fetchall(
            """
            SELECT DISTINCT o.chat_id FROM outbox o JOIN chats c ON c.id = o.chat_id
            WHERE o.status = 'pending' AND o.due_at <= ? AND c.inactive_since IS NULL
              AND c.paused = 0
            ORDER BY o.chat_id
            """,
            (now,),
        )
        return [r["chat_id"] for r in rows]

    async def pending_for_chat(self, chat_id: int, now: float | None = None) -> list[OutboxRow]:
        """A chat's pending alerts (due by `now` when given), oldest first."""
        sql = "SELECT * FROM outbox WHERE chat_id = ? AND status = 'pending'"
        params: list[object] = [chat_id]
        if now is not None:
            sql += " AND due_at <= ?"
            params.append(now)
        rows = await self._db.fetchall(sql + " ORDER BY id", params)
        return [_row(r) for r in rows]

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float,
                        digest_id: int | None = None) -> None:
        async with self._db.transaction() as conn:
            await conn.executemany(
                "UPDATE outbox SET status = 'sent', message_id = ?, sent_at = ?, digest_id = ?, "
                "attempts = attempts + 1, last_error = NULL WHERE id = ?",
                [(message_id, now, digest_id, row_id) for row_id in row_ids],
            )

    async def retry_later(self, row_ids: Sequence[int], due_at: float, error: str) -> None:
        async with self._db.transaction() as conn:
            await conn.executemany(
                "UPDATE outbox SET due_at = ?, attempts = attempts + 1, last_error = ? "
                "WHERE id = ?",
                [(due_at, error[:500], row_id) for row_id in row_ids],
            )

    async def mark_failed(self, row_ids: Sequence[int], error: str) -> None:
        async with self._db.transaction() as conn:
            await conn.executemany(
                "UPDATE outbox SET status = 'failed', attempts = attempts + 1, last_error = ? "
                "WHERE id = ?",
                [(error[:500], row_id) for row_id in row_ids],
            )

    async def by_message(self, chat_id: int, message_id: int) -> OutboxRow | None:
        """The alert behind a message the bot sent (for re-rendering on a button press)."""
        row = await self._db.fetchone(
            "SELECT * FROM outbox WHERE chat_id = ? AND message_id = ? ORDER BY id LIMIT 1",
            (chat_id, message_id),
        )
        return None if row is None else _row(row)

    async def counts(self) -> dict[str, int]:
        rows = await self._db.fetchall("SELECT status, COUNT(*) AS n FROM outbox GROUP BY status")
        counts = {status.value: 0 for status in OutboxStatus}
        counts.update({r["status"]: int(r["n"]) for r in rows})
        return counts

    async def chat_matches_since(self, chat_id: int, since: float) -> int:
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM outbox WHERE chat_id = ? AND created_at >= ?", (chat_id, since)
        ))

    async def prune(self, before: float) -> int:
        """Forget sent and failed alerts older than `before` (pending and held are kept)."""
        return await self._db.execute(
            "DELETE FROM outbox WHERE status IN ('sent', 'failed') AND created_at < ?", (before,)
        )

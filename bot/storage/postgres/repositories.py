"""The repositories on PostgreSQL: SQLite's, whose SQL both engines read alike, with what
PostgreSQL says otherwise (or does faster) overridden here.

What differs: the batch inserts are one statement over arrays (`unnest`) instead of a statement
per row; a claim is one conditional UPDATE (rows are locked by it, so two processes can never
both claim a row); new ids come back with RETURNING; `json_each` is
`json_array_elements_text`; SQLite's "not through this index" hint and its LIMIT -1 have no
counterpart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from bot.core.models import Alert, ForYouRow, GroupMember, OutboxRow, Paper
from bot.storage.postgres.db import Connection
from bot.storage.postgres.lock import fencing_term, leading
from bot.storage.sqlite.cards import CardRepository
from bot.storage.sqlite.chats import ChatRepository, ChatsInTransaction
from bot.storage.sqlite.community import CommunityRepository
from bot.storage.sqlite.feedback import FeedbackRepository
from bot.storage.sqlite.foryou_outbox import ForYouOutboxRepository as SqliteForYouOutbox
from bot.storage.sqlite.guides import GuideRepository as SqliteGuides
from bot.storage.sqlite.heartbeats import HeartbeatRepository
from bot.storage.sqlite.outbox import (
    STAGED_PAPERS_PG,
    STAGED_TABLE,
    DeliveryQueue,
    NotAllPending,
    _outbox_rows,
)
from bot.storage.sqlite.outbox import OutboxInTransaction as SqliteOutboxInTransaction
from bot.storage.sqlite.outbox import OutboxRepository as SqliteOutbox
from bot.storage.sqlite.paid_broadcasts import PaidBroadcastRepository
from bot.storage.sqlite.papers import RANKED_MATCHES, PapersInTransaction, paper_from_row
from bot.storage.sqlite.papers import PaperRepository as SqlitePapers
from bot.storage.sqlite.rankings import RankingRepository as SqliteRankings
from bot.storage.sqlite.saved import SavedInTransaction
from bot.storage.sqlite.saved import SavedRepository as SqliteSaved
from bot.storage.sqlite.sources import SourceRepository
from bot.storage.sqlite.subscriptions import SubscriptionRepository as SqliteSubscriptions
from bot.storage.sqlite.topics import TopicRepository
from bot.storage.sqlite.zotero import ZoteroRepository

BATCH = 20_000  # rows per array statement: big polls store half a million alerts


async def inserted_id(conn: Connection, sql: str, params: Sequence[Any]) -> int:
    """Run one INSERT inside a transaction; the new row's id."""
    row = await (await conn.execute(f"{sql} RETURNING id", params)).fetchone()
    return int(row["id"]) if row else 0


# A statement's fence: true only while the term it names is the database's current one, so a
# leader a successor has replaced can neither claim a row nor change a claimed one.
_FENCE = " AND (SELECT term FROM bot_leadership WHERE id = 1) = ?"


class _Claims:
    """A claim as one UPDATE of pending rows: it locks them, so of two processes claiming the
    same rows one waits, then finds them claimed and claims nothing.

    In a process that leads (`bot.storage.postgres.lock`), a claim is refused at once when its
    lease has run out, and every claim and change of claimed rows carries its term, which the
    statement checks against the current one."""

    _table: str
    _db: Any
    _PENDING = "status = 'pending'"  # PostgreSQL's planner needs no hint

    async def claim(self, row_ids: Sequence[int], now: float) -> bool:
        if not leading():
            return False
        term = fencing_term()
        fence, fence_args = (_FENCE.replace("?", "$3"), [term]) if term is not None else ("", [])
        try:
            async with self._db.transaction() as conn:
                claimed = await conn.raw.fetchval(
                    f"WITH claimed AS (UPDATE {self._table} SET status = 'sending', "
                    f"claimed_at = $1 WHERE id = ANY($2::bigint[]) AND status = 'pending'"
                    f"{fence} RETURNING 1) SELECT COUNT(*) FROM claimed",
                    now, list(row_ids), *fence_args)
                if claimed != len(row_ids):
                    raise NotAllPending
        except NotAllPending:
            return False
        return True

    async def _set_claimed_in(self, conn: Connection, row_ids: Sequence[int],  # type: ignore[override]
                              assignments: str, params: Sequence[object] = (), *,
                              only_sending: bool = False) -> None:
        term = fencing_term()
        where = " AND status = 'sending'" if only_sending else ""
        fence, fence_args = (_FENCE, [term]) if term is not None else ("", [])
        await conn.execute(
            f"UPDATE {self._table} SET {assignments} WHERE id = ANY(?::bigint[]){where}{fence}",
            (*params, list(row_ids), *fence_args))

    async def requeue_claimed(self) -> int:
        term = fencing_term()
        fence, fence_args = (_FENCE, (term,)) if term is not None else ("", ())
        return await self._db.execute(
            f"UPDATE {self._table} SET status = 'pending', claimed_at = NULL "
            f"WHERE status = 'sending'{fence}", fence_args)


class OutboxRepository(_Claims, SqliteOutbox):
    async def enqueue(self, alerts: Sequence[Alert], now: float) -> int:
        async with self._db.transaction() as conn:
            return await OutboxInTransaction(conn)._insert(alerts, now)


class ForYouOutboxRepository(_Claims, SqliteForYouOutbox):
    pass


class OutboxInTransaction(SqliteOutboxInTransaction):
    _conn: Connection  # type: ignore[assignment]

    async def _stage(self, rows: Sequence[tuple], alerts: int) -> int:
        staged = 0
        for start in range(0, len(rows), BATCH):
            chats, created, counts, texts, _ = zip(*rows[start:start + BATCH], strict=True)
            staged += int(await self._conn.raw.fetchval(
                f"""
                WITH staged AS (
                    INSERT INTO {STAGED_TABLE} (chat_id, created_at, alert_count, alerts)
                    SELECT a.chat_id, $4, a.alert_count, a.alerts
                    FROM unnest($1::bigint[], $2::int[], $3::text[]) WITH ORDINALITY
                         AS a(chat_id, alert_count, alerts, n)
                    JOIN chats c ON c.id = a.chat_id
                    ORDER BY a.n
                    RETURNING alert_count)
                SELECT COALESCE(SUM(alert_count), 0) FROM staged
                """,
                list(chats), list(counts), list(texts), created[0]))
        return staged

    async def _insert(self, alerts: Sequence[Alert], now: float, *,
                     revisions_due_at: float | None = None) -> int:
        revisions_due = now if revisions_due_at is None else revisions_due_at
        rows = await asyncio.to_thread(_outbox_rows, alerts, now, revisions_due)
        added = 0
        for start in range(0, len(rows), BATCH):
            # Columns of the chat-sorted rows; inserted in that order, so ids follow it.
            (chats, ids, versions, kinds, subs, queries, saved, _, due, topics,
             _) = zip(*rows[start:start + BATCH], strict=True)
            status = await self._conn.raw.execute(
                """
                INSERT INTO outbox (chat_id, arxiv_id, version, kind, subscription_ids,
                    matched_queries, saved_revision, status, created_at, due_at, topic_id)
                SELECT a.chat_id, a.arxiv_id, a.version, a.kind, a.subs, a.queries, a.saved,
                       CASE WHEN c.inactive_since IS NULL THEN 'pending' ELSE 'held' END,
                       $10, a.due_at, a.topic_id
                FROM unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::text[],
                            $6::text[], $7::int[], $8::float8[], $9::bigint[])
                     WITH ORDINALITY AS a(chat_id, arxiv_id, version, kind, subs, queries,
                                          saved, due_at, topic_id, n)
                JOIN chats c ON c.id = a.chat_id
                ORDER BY a.n
                ON CONFLICT (chat_id, topic_id, arxiv_id, version) DO NOTHING
                """,
                list(chats), list(ids), list(versions), [str(k) for k in kinds], list(subs),
                list(queries), list(saved), list(due), list(topics), now)
            added += int(status.rsplit(" ", 1)[-1])
        return added


class PaperRepository(SqlitePapers):
    _STAGED_PAPERS = STAGED_PAPERS_PG

    async def search(self, words: Sequence[str], since: float, limit: int) -> list[Paper]:
        if not words:
            return []
        lexemes = ["'" + word.replace("'", "''") + "'" for word in words]
        lexemes[-1] += ":*"
        # As on SQLite: the newest matches are ranked, not every match of a common word.
        rows = await self._db.fetchall(
            """
            SELECT * FROM (
                SELECT p.*, ts_rank(to_tsvector('simple', p.title || ' ' || p.authors || ' '
                                                || p.abstract), q.query) AS score
                FROM papers p, to_tsquery('simple', :query) AS q(query)
                WHERE to_tsvector('simple', p.title || ' ' || p.authors || ' ' || p.abstract)
                      @@ q.query AND p.first_seen_at >= :since
                ORDER BY p.first_seen_at DESC LIMIT :ranked
            ) newest ORDER BY score DESC LIMIT :limit
            """,
            {"query": " & ".join(lexemes), "since": since, "ranked": RANKED_MATCHES,
             "limit": limit},
        )
        return [paper_from_row(row) for row in rows]

    async def ingest_counts(self, since: float, ai_categories: Sequence[str]) -> dict[str, int]:
        row = await self._db.fetchone(
            """
            SELECT SUM(CASE WHEN v.version = 1 OR v.announce_type IN ('new', 'cross')
                       THEN 1 ELSE 0 END) AS new,
                   SUM(CASE WHEN NOT (v.version = 1 OR v.announce_type IN ('new', 'cross'))
                       THEN 1 ELSE 0 END) AS revised,
                   SUM(CASE WHEN EXISTS (SELECT 1 FROM json_array_elements_text(
                                            v.categories::json) AS c(value)
                                         WHERE c.value = ANY(:ai::text[]))
                       THEN 1 ELSE 0 END) AS ai
            FROM paper_versions v WHERE v.seen_at >= :since
            """,
            {"ai": list(ai_categories), "since": since},
        )
        assert row is not None
        return {k: int(row[k] or 0) for k in ("new", "revised", "ai")}


class RankingRepository(SqliteRankings):
    _STAGED_PAPERS = STAGED_PAPERS_PG


class SavedRepository(SqliteSaved):
    _NO_LIMIT = None  # LIMIT NULL: every row
    _IN_CATEGORY = ("EXISTS (SELECT 1 FROM json_array_elements_text(p.categories::json) "
                    "AS c(value) WHERE c.value = :category OR c.value LIKE :archive "
                    "ESCAPE '\\')")
    _FIRST_CATEGORY = "(p.categories::json ->> 0)"

    @staticmethod
    def _text_match(words: Sequence[str], params: dict[str, Any]) -> str:
        """Papers whose title or authors have a word starting with each of `words` (a single
        letter: that word), case folded; accents are not (authors are stored as JSON, "Núñez"
        as "N\\u00fa\\u00f1ez"). Not through the GIN index of inline search (upgrade 17): it
        holds the abstracts too, and PostgreSQL, planning from the library's rows, computes
        to_tsvector of each paper instead (186 ms for a thousand, bench/webapp.py); a pattern
        over the library's own titles and authors costs what the library's size does."""
        conditions = []
        for number, word in enumerate(words):
            escaped = "".join(ch if ch.isalnum() else "\\" + ch for ch in word)
            params[f"word{number}"] = r"\m" + escaped + ("" if len(word) > 1 else r"\M")
            conditions.append(f"(p.title || ' ' || p.authors) ~* :word{number}")
        return " AND ".join(conditions)

    async def save_many(self, chat_id: int, papers: Iterable[tuple[str, int]], now: float,
                        saver: GroupMember | None = None) -> int:
        pairs = list(papers)
        if not pairs:
            return 0
        async with self._db.transaction() as conn:
            status = await conn.raw.execute(
                """
                INSERT INTO saved (chat_id, arxiv_id, saved_version, saved_at, saved_by,
                                   saved_by_name)
                SELECT $1, p.arxiv_id, p.version, $4, $5, $6
                FROM unnest($2::text[], $3::int[]) WITH ORDINALITY AS p(arxiv_id, version, n)
                ORDER BY p.n
                ON CONFLICT (chat_id, arxiv_id) DO NOTHING
                """,
                chat_id, [a for a, _ in pairs], [v for _, v in pairs], now,
                saver.user_id if saver else None, saver.first_name if saver else None)
        return int(status.rsplit(" ", 1)[-1])


class SubscriptionRepository(SqliteSubscriptions):
    _inserted_id = staticmethod(inserted_id)  # type: ignore[assignment]


class GuideRepository(SqliteGuides):
    _inserted_id = staticmethod(inserted_id)  # type: ignore[assignment]


__all__ = [
    "CardRepository", "ChatRepository", "ChatsInTransaction", "CommunityRepository",
    "DeliveryQueue",
    "FeedbackRepository", "ForYouOutboxRepository", "ForYouRow", "GuideRepository",
    "HeartbeatRepository", "OutboxInTransaction", "OutboxRepository", "OutboxRow",
    "PaidBroadcastRepository",
    "PaperRepository", "PapersInTransaction", "RankingRepository", "SavedInTransaction",
    "SavedRepository", "SourceRepository", "SubscriptionRepository", "TopicRepository",
    "ZoteroRepository",
]

"""What the ranker keeps: the fitted vocabulary, each chat's model and the labels it learns from."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Sequence
from itertools import islice
from sqlite3 import Row

from bot.core.models import GENERAL, Feedback, Paper
from bot.storage.interfaces import ForYouSetting, LabelIds, StoredModel, StoredVocabulary
from bot.storage.sqlite.db import Database, in_chunks
from bot.storage.sqlite.outbox import STAGED_PAPERS
from bot.storage.sqlite.papers import paper_from_row


class RankingRepository:
    """Reads and writes `ranking_vocabulary` and `chat_models`; reads the labels."""

    _STAGED_PAPERS = STAGED_PAPERS  # the papers of staged alerts, in this engine's SQL

    def __init__(self, db: Database) -> None:
        self._db = db

    async def vocabulary(self) -> StoredVocabulary | None:
        row = await self._db.fetchone(
            "SELECT fingerprint, terms, papers, fitted_at FROM ranking_vocabulary WHERE id = 1")
        return None if row is None else StoredVocabulary(*row)

    async def put_vocabulary(self, stored: StoredVocabulary) -> None:
        await self._db.execute(
            "INSERT INTO ranking_vocabulary (id, fingerprint, terms, papers, fitted_at) "
            "VALUES (1, ?, ?, ?, ?) ON CONFLICT (id) DO UPDATE SET "
            "fingerprint = excluded.fingerprint, terms = excluded.terms, "
            "papers = excluded.papers, fitted_at = excluded.fitted_at",
            (stored.fingerprint, stored.terms, stored.papers, stored.fitted_at))

    async def models_of(self, chat_ids: Iterable[int]) -> dict[int, StoredModel]:
        """These chats' stored models, by chat (chats without one left out)."""
        found: dict[int, StoredModel] = {}
        for chunk, marks in in_chunks(chat_ids):
            rows = await self._db.fetchall(
                "SELECT chat_id, vocabulary, labels, weights, trained_at FROM chat_models "
                f"WHERE chat_id IN ({marks})", chunk)
            found.update((row[0], StoredModel(*row)) for row in rows)
        return found

    async def models(self) -> list[StoredModel]:
        rows = await self._db.fetchall(
            "SELECT chat_id, vocabulary, labels, weights, trained_at FROM chat_models "
            "ORDER BY chat_id")
        return [StoredModel(*row) for row in rows]

    async def put_models(self, models: Sequence[StoredModel]) -> None:
        """Store these models (replacing the chats' old ones), in one transaction."""
        await self._db.executemany(
            "INSERT INTO chat_models (chat_id, vocabulary, labels, weights, trained_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (chat_id) DO UPDATE SET "
            "vocabulary = excluded.vocabulary, labels = excluded.labels, "
            "weights = excluded.weights, trained_at = excluded.trained_at",
            [(m.chat_id, m.vocabulary, m.labels, m.weights, m.trained_at) for m in models])

    async def drop_model(self, chat_id: int) -> None:
        # Looked for first: most chats a digest ranks have none, and a delete is a write
        # transaction, which each digest of a drain paid for.
        if await self._db.fetchval("SELECT 1 FROM chat_models WHERE chat_id = ?",
                                   (chat_id,)) is not None:
            await self._db.execute("DELETE FROM chat_models WHERE chat_id = ?", (chat_id,))

    async def labels_of(self, chat_ids: Sequence[int]) -> dict[int, LabelIds]:
        """These chats' labels, by chat (every chat given, with none or some)."""
        saved: dict[int, list[str]] = {}
        more: dict[int, list[str]] = {}
        less: dict[int, list[str]] = {}
        for chunk, marks in in_chunks(chat_ids):
            for row in await self._db.fetchall(
                    f"SELECT chat_id, arxiv_id FROM saved WHERE chat_id IN ({marks}) "
                    "ORDER BY chat_id, arxiv_id", chunk):
                saved.setdefault(row[0], []).append(row[1])
            for row in await self._db.fetchall(
                    f"SELECT chat_id, arxiv_id, label FROM feedback WHERE chat_id IN ({marks}) "
                    "ORDER BY chat_id, arxiv_id", chunk):
                (more if row[2] == Feedback.MORE else less).setdefault(row[0], []).append(row[1])
        return {chat_id: LabelIds(tuple(saved.get(chat_id, ())), tuple(more.get(chat_id, ())),
                                  tuple(less.get(chat_id, ())))
                for chat_id in chat_ids}

    async def labelled_chats(self) -> list[int]:
        rows = await self._db.fetchall(
            "SELECT chat_id FROM saved UNION SELECT chat_id FROM feedback ORDER BY 1")
        return [r[0] for r in rows]

    async def for_you(self, chat_id: int) -> ForYouSetting | None:
        row = await self._db.fetchone(
            "SELECT chat_id, count, enabled_at, last_sent_at FROM foryou WHERE chat_id = ?",
            (chat_id,))
        return None if row is None else ForYouSetting(*row)

    async def for_you_chats(self) -> list[ForYouSetting]:
        rows = await self._db.fetchall(
            "SELECT chat_id, count, enabled_at, last_sent_at FROM foryou ORDER BY chat_id")
        return [ForYouSetting(*row) for row in rows]

    async def set_for_you(self, chat_id: int, count: int | None, now: float,
                          topic_id: int = GENERAL) -> None:
        """Turn For you on with `count` papers a day in forum topic `topic_id` (keeping when it
        was last sent), or off. The day is marked sent as its message is queued
        (`ForYouOutboxRepository.enqueue`)."""
        if count is None:
            await self._db.execute("DELETE FROM foryou WHERE chat_id = ?", (chat_id,))
            return
        await self._db.execute(
            "INSERT INTO foryou (chat_id, count, enabled_at, topic_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (chat_id) DO UPDATE SET count = excluded.count, "
            "topic_id = excluded.topic_id",
            (chat_id, count, now, topic_id))

    async def unmatched_by_chat(self, chat_ids: Sequence[int], since: float, limit: int
                                ) -> AsyncIterator[tuple[int, list[str]]]:
        """For each chat, as they are read: the papers announced since `since` that it never
        got an alert for, nor saved nor labelled (what its subscriptions missed), newest first,
        at most `limit`. The day's papers are read once, then what each chunk of chats got,
        saved or labelled of them, in four statements: a statement a chat waits its turn
        behind an evening's drain each time, 20,000 times for a For-you round at 100,000
        chats. Chats are yielded in the order given."""
        day = [row[0] for row in await self._db.fetchall(
            "SELECT arxiv_id FROM papers WHERE first_seen_at >= ? AND from_feed = 1 "
            "ORDER BY first_seen_at DESC, arxiv_id", (since,))]
        if not day:
            for chat_id in chat_ids:
                yield chat_id, []
            return
        of_day = ("arxiv_id IN (SELECT arxiv_id FROM papers "
                  "WHERE first_seen_at >= ? AND from_feed = 1)")
        staged = "SELECT s.chat_id, j.value" + self._STAGED_PAPERS.removeprefix("SELECT j.value")
        for chunk, marks in in_chunks(chat_ids):
            seen: dict[int, set[str]] = {chat_id: set() for chat_id in chunk}
            for sql, params in (
                *((f"SELECT chat_id, arxiv_id FROM {table} WHERE chat_id IN ({marks}) "
                   f"AND {of_day}", [*chunk, since]) for table in ("outbox", "saved", "feedback")),
                (f"{staged} WHERE s.chat_id IN ({marks})", chunk),
            ):
                for row in await self._db.fetchall(sql, params):
                    seen[row[0]].add(row[1])
            for chat_id in chunk:
                excluded = seen[chat_id]
                yield chat_id, list(islice((i for i in day if i not in excluded), limit))

    async def corpus(self, limit: int) -> list[Paper]:
        """The papers to fit the vocabulary on and sample negatives from: the newest `limit`
        first-seen papers, plus every paper any chat saved or labelled."""
        rows = await self._db.fetchall(
            """
            SELECT * FROM papers WHERE arxiv_id IN (
                SELECT arxiv_id FROM (SELECT arxiv_id FROM papers
                                      ORDER BY first_seen_at DESC LIMIT ?) AS newest
                UNION SELECT arxiv_id FROM saved UNION SELECT arxiv_id FROM feedback)
            ORDER BY first_seen_at DESC, arxiv_id
            """,
            (limit,))
        return await asyncio.to_thread(_papers, rows)

    async def stored_papers(self, limit: int) -> int:
        return await self._db.fetchval(
            "SELECT COUNT(*) FROM (SELECT 1 FROM papers LIMIT ?) AS counted", (limit,))


def _papers(rows: Sequence[Row]) -> list[Paper]:
    """Thousands of rows decoded (JSON authors and categories): in a worker thread, as 5,000
    take some 60 ms, too long to hold the event loop."""
    return [paper_from_row(r) for r in rows]

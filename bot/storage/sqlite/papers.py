"""Papers and their version history; the batch upsert tells new from revised from seen."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import aiosqlite

from bot.core.models import (
    AnnounceType,
    ChangeStatus,
    Paper,
    PaperChange,
    classify,
    latest_versions,
)
from bot.storage.sqlite.db import Database, in_chunks
from bot.storage.sqlite.outbox import STAGED_PAPERS


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


RANKED_MATCHES = 500  # of a full-text search, the newest this many are ranked


def text_query(words: Sequence[str]) -> str:
    """An FTS5 query for `words`: each a quoted string (so no word is read as an operator),
    all of them required, the last a prefix."""
    quoted = ['"' + word.replace('"', '""') + '"' for word in words]
    return " ".join(quoted) + "*"


DECODE_ON_LOOP = 200  # papers decoded on the event loop at most (5,000 take some 60 ms)


def _by_id(rows: Sequence[sqlite3.Row]) -> dict[str, Paper]:
    return {row["arxiv_id"]: paper_from_row(row) for row in rows}


def paper_from_row(row: sqlite3.Row, version: int | None = None) -> Paper:
    """Build a Paper from a `papers` or `paper_versions` row."""
    keys = set(row.keys())
    announce = row["announce_type"] if "announce_type" in keys else None
    return Paper(
        arxiv_id=row["arxiv_id"],
        version=version if version is not None else row["version" if "version" in keys
                                                        else "latest_version"],
        title=row["title"],
        authors=tuple(json.loads(row["authors"])),
        abstract=row["abstract"],
        categories=tuple(json.loads(row["categories"])),
        comment=row["comment"],
        journal_ref=row["journal_ref"],
        doi=row["doi"],
        published=_dt(row["published"]) if "published" in keys else None,
        updated=_dt(row["updated"]),
        announce_type=AnnounceType(announce) if announce else None,
        license=row["license"] if "license" in keys else None,
    )


class PapersInTransaction:
    """The paper writes of one open transaction (see `SqliteStorage.transaction`)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def upsert(self, papers: Sequence[Paper], now: float) -> list[PaperChange]:
        """Store a batch inside the transaction; say per paper: new, revised or seen.

        Re-ingesting the same papers changes nothing. Within a batch, the same id twice
        (a feed listing a paper under two categories) counts once.
        """
        unique = latest_versions(papers)
        if not unique:
            return []
        changes = classify(unique, await self._latest(p.arxiv_id for p in unique))
        fresh = [c.paper for c in changes if c.status is not ChangeStatus.SEEN]
        fill_rows = [c.paper for c in changes if c.status is ChangeStatus.SEEN]
        await self._conn.executemany(
            """
            INSERT INTO papers (arxiv_id, latest_version, title, authors, abstract, categories,
                primary_category, comment, journal_ref, doi, license, published, updated,
                first_seen_at, last_changed_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (arxiv_id) DO UPDATE SET
                latest_version = excluded.latest_version, title = excluded.title,
                authors = excluded.authors, abstract = excluded.abstract,
                categories = excluded.categories,
                primary_category = excluded.primary_category,
                comment = COALESCE(excluded.comment, papers.comment),
                journal_ref = COALESCE(excluded.journal_ref, papers.journal_ref),
                doi = COALESCE(excluded.doi, papers.doi),
                license = COALESCE(excluded.license, papers.license),
                published = COALESCE(papers.published, excluded.published),
                updated = excluded.updated,
                last_changed_at = excluded.last_changed_at,
                first_seen_at = CASE WHEN papers.from_feed <> 0 THEN papers.first_seen_at
                                     ELSE excluded.first_seen_at END,
                from_feed = 1
            """,
            [
                (p.arxiv_id, p.version, p.title, json.dumps(list(p.authors)), p.abstract,
                 json.dumps(list(p.categories)), p.primary_category, p.comment, p.journal_ref,
                 p.doi, p.license, _ts(p.published), _ts(p.updated), now, now)
                for p in fresh
            ],
        )
        await self._conn.executemany(
            """
            INSERT INTO paper_versions (arxiv_id, version, title, authors, abstract,
                categories, comment, journal_ref, doi, announce_type, updated, seen_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (arxiv_id, version) DO NOTHING
            """,
            [
                (p.arxiv_id, p.version, p.title, json.dumps(list(p.authors)), p.abstract,
                 json.dumps(list(p.categories)), p.comment, p.journal_ref, p.doi,
                 p.announce_type.value if p.announce_type else None, _ts(p.updated), now)
                for p in fresh
            ],
        )
        # A known version seen again may carry what the feed lacked (the API has comments).
        await self._conn.executemany(
            """
            UPDATE papers SET comment = COALESCE(comment, ?),
                journal_ref = COALESCE(journal_ref, ?), doi = COALESCE(doi, ?)
                WHERE arxiv_id = ? AND latest_version = ?
            """,
            [(p.comment, p.journal_ref, p.doi, p.arxiv_id, p.version) for p in fill_rows
             if p.comment or p.journal_ref or p.doi],
        )
        return changes

    async def _latest(self, ids: Iterable[str]) -> dict[str, Paper]:
        """The latest stored versions the feeds announced; a paper known only from an API
        look-up counts as absent, so the feed that lists it later still makes it new."""
        found: dict[str, Paper] = {}
        for chunk, marks in in_chunks(ids):
            cursor = await self._conn.execute(
                f"SELECT * FROM papers WHERE from_feed = 1 AND arxiv_id IN ({marks})", chunk
            )
            for row in await cursor.fetchall():
                found[row["arxiv_id"]] = paper_from_row(row)
        return found


class PaperRepository:
    """Reads and writes `papers` and `paper_versions`."""

    _STAGED_PAPERS = STAGED_PAPERS  # the papers of staged alerts, in this engine's SQL

    def __init__(self, db: Database) -> None:
        self._db = db

    async def upsert_many(self, papers: Sequence[Paper], now: float) -> list[PaperChange]:
        """Store a batch in its own transaction; see `PapersInTransaction.upsert`."""
        async with self._db.transaction() as conn:
            return await PapersInTransaction(conn).upsert(papers, now)

    async def announced(self, arxiv_ids: Iterable[str]) -> dict[str, Paper]:
        """The latest versions the feeds announced, as last committed (read without waiting
        for a writer); see `PapersInTransaction._latest`."""
        found: dict[str, Paper] = {}
        for chunk, marks in in_chunks(arxiv_ids):
            rows = await self._db.fetchall(
                f"SELECT * FROM papers WHERE from_feed = 1 AND arxiv_id IN ({marks})", chunk)
            found.update({row["arxiv_id"]: paper_from_row(row) for row in rows})
        return found

    async def cache_lookups(self, papers: Sequence[Paper], now: float) -> None:
        """Keep papers fetched by id from the API (for /paper and saving) without marking them
        as announced: the feed that lists them later still counts them as new."""
        async with self._db.transaction() as conn:
            await conn.executemany(
                """
                INSERT INTO papers (arxiv_id, latest_version, title, authors, abstract, categories,
                    primary_category, comment, journal_ref, doi, license, published, updated,
                    first_seen_at, last_changed_at, from_feed)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)
                ON CONFLICT (arxiv_id) DO UPDATE SET
                    comment = COALESCE(papers.comment, excluded.comment),
                    journal_ref = COALESCE(papers.journal_ref, excluded.journal_ref),
                    doi = COALESCE(papers.doi, excluded.doi),
                    published = COALESCE(papers.published, excluded.published)
                """,
                [
                    (p.arxiv_id, p.version, p.title, json.dumps(list(p.authors)), p.abstract,
                     json.dumps(list(p.categories)), p.primary_category, p.comment,
                     p.journal_ref, p.doi, p.license, _ts(p.published), _ts(p.updated), now, now)
                    for p in papers
                ],
            )

    async def get(self, arxiv_id: str, version: int | None = None) -> Paper | None:
        """The stored paper (latest version), or one specific stored version."""
        if version is None:
            row = await self._db.fetchone("SELECT * FROM papers WHERE arxiv_id = ?", (arxiv_id,))
            return None if row is None else paper_from_row(row)
        row = await self._db.fetchone(
            """
            SELECT v.*, p.license, p.published FROM paper_versions v
            JOIN papers p USING (arxiv_id) WHERE v.arxiv_id = ? AND v.version = ?
            """,
            (arxiv_id, version),
        )
        return None if row is None else paper_from_row(row)

    async def get_many(self, arxiv_ids: Sequence[str]) -> dict[str, Paper]:
        rows = []
        for chunk, marks in in_chunks(arxiv_ids):
            rows += await self._db.fetchall(
                f"SELECT * FROM papers WHERE arxiv_id IN ({marks})", chunk
            )
        if len(rows) <= DECODE_ON_LOOP:
            return _by_id(rows)
        # A For-you round reads a day's thousands of papers: decoded off the event loop.
        return await asyncio.to_thread(_by_id, rows)

    async def get_versions(
        self, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Paper]:
        """Specific stored versions, by (id, version); the latest row stands in for a version
        known only from the papers table (an API look-up)."""
        found: dict[tuple[str, int], Paper] = {}
        wanted = set(keys)
        for chunk, marks in in_chunks(dict.fromkeys(arxiv_id for arxiv_id, _ in keys)):
            rows = await self._db.fetchall(
                f"""
                SELECT v.*, p.license, p.published FROM paper_versions v
                JOIN papers p USING (arxiv_id) WHERE v.arxiv_id IN ({marks})
                """,
                chunk,
            )
            for row in rows:
                key = (row["arxiv_id"], row["version"])
                if key in wanted:
                    found[key] = paper_from_row(row)
        missing = [key for key in keys if key not in found]
        if missing:
            latest = await self.get_many([arxiv_id for arxiv_id, _ in missing])
            for arxiv_id, version in missing:
                paper = latest.get(arxiv_id)
                if paper is not None and paper.version == version:
                    found[(arxiv_id, version)] = paper
        return found

    async def previous_version(self, arxiv_id: str, version: int) -> Paper | None:
        """The newest stored version older than `version` (what a revision diff compares with)."""
        row = await self._db.fetchone(
            """
            SELECT v.*, p.license, p.published FROM paper_versions v
            JOIN papers p USING (arxiv_id)
            WHERE v.arxiv_id = ? AND v.version < ? ORDER BY v.version DESC LIMIT 1
            """,
            (arxiv_id, version),
        )
        return None if row is None else paper_from_row(row)

    async def seen_since(self, since: float, limit: int) -> list[Paper]:
        """Latest versions of papers stored or changed since `since`, at most `limit` of them,
        newest first (for /follow previews)."""
        rows = await self._db.fetchall(
            "SELECT * FROM papers WHERE last_changed_at >= ? AND from_feed = 1 "
            "ORDER BY last_changed_at DESC LIMIT ?",
            (since, limit),
        )
        return [paper_from_row(r) for r in rows]

    async def search(self, words: Sequence[str], since: float, limit: int) -> list[Paper]:
        """Papers first stored since `since` whose title, authors or abstract hold every one
        of `words` (the last one as a prefix: it may still be being typed), best first."""
        if not words:
            return []
        # Ranking every match of a common word costs a bm25 each; the newest matches (rowids
        # grow with storing) are what a researcher looks for, so only they are ranked.
        rows = await self._db.fetchall(
            """
            SELECT p.* FROM (
                SELECT rowid AS id, rank FROM paper_text WHERE paper_text MATCH ?
                ORDER BY rowid DESC LIMIT ?
            ) t JOIN paper_text_ids i ON i.id = t.id JOIN papers p USING (arxiv_id)
            WHERE p.first_seen_at >= ? ORDER BY t.rank LIMIT ?
            """,
            (text_query(words), RANKED_MATCHES, since, limit),
        )
        return [paper_from_row(r) for r in rows]

    async def ingest_counts(self, since: float, ai_categories: Sequence[str]) -> dict[str, int]:
        """Versions stored since `since`: new papers, revisions, and the AI-related among them."""
        marks = ",".join("?" * len(ai_categories))
        row = await self._db.fetchone(
            f"""
            SELECT SUM(v.version = 1 OR v.announce_type IN ('new', 'cross')) AS new,
                   SUM(NOT (v.version = 1 OR v.announce_type IN ('new', 'cross'))) AS revised,
                   SUM(EXISTS (SELECT 1 FROM json_each(v.categories) c
                               WHERE c.value IN ({marks}))) AS ai
            FROM paper_versions v WHERE v.seen_at >= ?
            """,
            (*ai_categories, since),
        )
        assert row is not None
        return {k: int(row[k] or 0) for k in ("new", "revised", "ai")}

    async def count(self) -> int:
        return int(await self._db.fetchval("SELECT COUNT(*) FROM papers"))

    async def record_details(self, papers: Sequence[Paper]) -> None:
        """Store what the API says of known versions: comment, journal ref and DOI.

        The feeds carry no comments, so the API's word on a version's comment stands.
        """
        async with self._db.transaction() as conn:
            await conn.executemany(
                "UPDATE paper_versions SET comment = ?, journal_ref = COALESCE(?, journal_ref), "
                "doi = COALESCE(?, doi) WHERE arxiv_id = ? AND version = ?",
                [(p.comment, p.journal_ref, p.doi, p.arxiv_id, p.version) for p in papers],
            )
            await conn.executemany(
                "UPDATE papers SET comment = ?, journal_ref = COALESCE(?, journal_ref), "
                "doi = COALESCE(?, doi) WHERE arxiv_id = ? AND latest_version = ?",
                [(p.comment, p.journal_ref, p.doi, p.arxiv_id, p.version) for p in papers],
            )

    async def prune(self, before: float) -> int:
        """Forget papers unchanged since `before` that no chat saved or still waits for.

        Saved papers keep every version (revision diffs compare with them); so do papers
        with alerts still pending, being sent or held.
        """
        return await self._db.execute(
            f"""
            DELETE FROM papers
            WHERE last_changed_at < ?
              AND arxiv_id NOT IN (SELECT arxiv_id FROM saved)
              AND arxiv_id NOT IN (SELECT arxiv_id FROM outbox
                                   WHERE status IN ('pending', 'sending', 'held'))
              AND arxiv_id NOT IN ({self._STAGED_PAPERS})
            """,
            (before,),
        )

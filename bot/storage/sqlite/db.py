"""The SQLite connection: WAL mode, foreign keys, serialised transactions and migrations."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bot.storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS, DataMigration

log = logging.getLogger(__name__)
T = TypeVar("T")

_IN_CHUNK = 500  # values per `IN (…)`: well under SQLite's limit on bound parameters


def in_chunks(values: Iterable[T]) -> Iterator[tuple[list[T], str]]:
    """Split values for `WHERE x IN (…)` queries: each chunk with its `?,?,…` placeholders."""
    items = list(values)
    for start in range(0, len(items), _IN_CHUNK):
        chunk = items[start:start + _IN_CHUNK]
        yield chunk, ",".join("?" * len(chunk))


VACUUM_MIN_FREE_SHARE = 0.2  # VACUUM after pruning once a fifth of the file is free pages


class DatabaseError(Exception):
    """A database the bot must not use; the message is the one line shown to the operator."""


class Database:
    """A writer connection (writes go through `transaction()`) and a read-only reader.

    Reads never use the writer: it may be inside another coroutine's open transaction, and a
    read there would see rows that are not committed yet (and may be rolled back). WAL lets the
    separate reader see exactly the last commit without waiting for the writer's lock. An
    in-memory database cannot be shared by two connections, so there reads take the lock.
    """

    def __init__(self, connection: aiosqlite.Connection, path: Path) -> None:
        self._conn = connection
        self._reader: aiosqlite.Connection | None = None
        self.path = path
        # One writer connection is shared by every coroutine; the lock keeps one transaction's
        # statements from interleaving with another's.
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, path: Path | str, *, migrate: bool = True,
                   create: bool = True) -> Database:
        """Open (creating folder and file if needed), enable WAL and foreign keys, migrate.

        With `create=False` a missing file is an error (a mistyped path must not be
        "backed up" as an empty database). A schema newer than this code is always refused.
        """
        path = Path(path)
        if not create and not path.is_file():
            raise DatabaseError(f"no database at {str(path)!r} (check DATABASE_PATH)")
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        conn = await aiosqlite.connect(path, isolation_level=None)
        conn.row_factory = sqlite3.Row
        await conn.execute("PRAGMA journal_mode=WAL")
        await conn.execute("PRAGMA foreign_keys=ON")
        await conn.execute("PRAGMA synchronous=NORMAL")
        await conn.execute("PRAGMA busy_timeout=5000")
        db = cls(conn, path)
        try:
            version = await db.schema_version()
            if version > LATEST_VERSION:
                raise DatabaseError(
                    f"the database {str(path)!r} has schema version {version}, newer than "
                    f"this version of the bot knows ({LATEST_VERSION}); upgrade the bot or "
                    "restore a backup")
            if migrate:
                await db.migrate()
        except BaseException:
            await conn.close()
            raise
        if str(path) != ":memory:":
            reader = await aiosqlite.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
            reader.row_factory = sqlite3.Row
            await reader.execute("PRAGMA foreign_keys=ON")
            await reader.execute("PRAGMA busy_timeout=5000")
            db._reader = reader
        return db

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
        await self._conn.close()

    @asynccontextmanager
    async def _read(self, sql: str, params: Sequence[Any]) -> AsyncIterator[aiosqlite.Cursor]:
        if self._reader is not None:
            async with self._reader.execute(sql, params) as cursor:
                yield cursor
            return
        async with self._lock, self._conn.execute(sql, params) as cursor:
            yield cursor

    async def schema_version(self) -> int:
        await self._conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)"
        )
        async with self._conn.execute("SELECT MAX(version) AS v FROM schema_version") as cursor:
            row = await cursor.fetchone()
        return int(row["v"]) if row and row["v"] is not None else 0

    async def migrate(self, target: int = LATEST_VERSION) -> list[int]:
        """Apply every migration above the stored version up to `target`; returns those applied."""
        applied = []
        current = await self.schema_version()
        for version, description, script in MIGRATIONS:
            if version <= current or version > target:
                continue
            async with self._lock:
                if isinstance(script, str):
                    # executescript commits on its own, so the whole migration and its version
                    # row go in one script, wrapped in an explicit transaction.
                    await self._conn.executescript(
                        f"BEGIN IMMEDIATE;\n{script}\n"
                        f"INSERT INTO schema_version (version) VALUES ({int(version)});\nCOMMIT;"
                    )
                else:
                    await self._migrate_in_python(version, script)
            log.info("applied migration %d: %s", version, description)
            applied.append(version)
        return applied

    async def _migrate_in_python(self, version: int, step: DataMigration) -> None:
        """A data migration (rows rewritten by Python code) and its version row, all or nothing."""
        await self._conn.execute("BEGIN IMMEDIATE")
        try:
            await step(self._conn)
            await self._conn.execute("INSERT INTO schema_version (version) VALUES (?)",
                                     (int(version),))
        except BaseException:
            await self._conn.execute("ROLLBACK")
            raise
        await self._conn.execute("COMMIT")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[aiosqlite.Connection]:
        """A write transaction (BEGIN IMMEDIATE … COMMIT, rolled back on error)."""
        async with self._lock:
            await self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                await self._conn.execute("ROLLBACK")
                raise
            else:
                await self._conn.execute("COMMIT")

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement in its own transaction; returns the rows it changed."""
        async with self.transaction() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.rowcount

    async def fetchone(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Row | None:
        """One row, as last committed."""
        async with self._read(sql, params) as cursor:
            return await cursor.fetchone()

    async def fetchall(self, sql: str, params: Iterable[Any] = ()) -> list[sqlite3.Row]:
        """All rows, as last committed."""
        async with self._read(sql, tuple(params)) as cursor:
            return list(await cursor.fetchall())

    async def fetchval(self, sql: str, params: Sequence[Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def backup(self, target: Path) -> None:
        """Write a consistent copy of the live database to `target` (SQLite's online backup)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        dest = await aiosqlite.connect(target)
        try:
            async with self._lock:
                await self._conn.backup(dest)
        finally:
            await dest.close()

    async def optimize(self) -> None:
        """SQLite's own upkeep of query-planner statistics (cheap; run now and then)."""
        async with self._lock:
            await self._conn.execute("PRAGMA optimize")

    async def vacuum_if_worth(self, min_share: float = VACUUM_MIN_FREE_SHARE
                              ) -> tuple[int, int] | None:
        """VACUUM when at least `min_share` of the file is free pages (after pruning).

        Returns (bytes before, bytes after), or None when it was not worth it.
        """
        async with self._lock:
            pages = await self._pragma("page_count")
            free = await self._pragma("freelist_count")
            if not pages or free / pages < min_share:
                return None
            before = pages * await self._pragma("page_size")
            await self._conn.execute("VACUUM")
            # In WAL mode the rewritten pages sit in the log until a checkpoint.
            await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            after = await self._pragma("page_count") * await self._pragma("page_size")
        return before, after

    async def _pragma(self, name: str) -> int:
        async with self._conn.execute(f"PRAGMA {name}") as cursor:
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def size_bytes(self) -> int:
        page_count = await self.fetchval("PRAGMA page_count")
        page_size = await self.fetchval("PRAGMA page_size")
        return int(page_count) * int(page_size)

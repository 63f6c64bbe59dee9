"""The SQLite connection: WAL mode, foreign keys, serialised transactions and migrations."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import shlex
import sqlite3
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import aiosqlite

from bot.storage.errors import DatabaseDamaged, DatabaseError
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


async def inserted_id(conn: aiosqlite.Connection, sql: str, params: Sequence[Any]) -> int:
    """Run one INSERT inside a transaction; the new row's id."""
    cursor = await conn.execute(sql, params)
    return int(cursor.lastrowid or 0)


VACUUM_MIN_FREE_SHARE = 0.2  # VACUUM after pruning once a fifth of the file is free pages
BUSY_TIMEOUT = 5.0  # seconds a statement waits for another connection's lock
# The writer's page cache, in KiB (SQLite's default is 2 MiB). A big poll's outbox rows go in
# by paper while the outbox's (chat, …) index is ordered by chat, so each batch touches a leaf
# page per chat; with 2 MiB the cache spilled and re-read them within a batch. Measured on the
# 2,000-paper day against 100,000 subscriptions (516,668 alerts): 42 s of CPU for the poll
# with 2 MiB, 32 s with 32 MiB (docs/performance.md, "The store").
WRITER_CACHE_KIB = 32 * 1024
# WAL pages before a commit copies the log back into the file (SQLite's default is 1,000, 4 MB).
# A page written by many commits is copied once per checkpoint: with 20,000 the same poll
# wrote 2.6 GB instead of 4.0 GB. The log's file grows to about 80 MB and stays that size on
# disk until the daily upkeep truncates it.
WAL_AUTOCHECKPOINT_PAGES = 20_000
QUICK_CHECK_PROBLEMS = 3  # of SQLite's list of damaged pages, the first few are enough to tell


def damaged(path: Path, reason: str) -> DatabaseDamaged:
    """The operator's line for a damaged file: what happened and the two ways back."""
    recovered = path.with_name(f"{path.stem}-recovered{path.suffix}")
    return DatabaseDamaged(
        f"the database {str(path)!r} is damaged ({reason}): restore a backup made with "
        f"`python -m bot backup`, or recover what is readable with `sqlite3 "
        f"{shlex.quote(str(path))} .recover | sqlite3 {shlex.quote(str(recovered))}` and "
        "point DATABASE_PATH at the result", reason)


def engine_error(path: Path, exc: sqlite3.Error) -> DatabaseError:
    """SQLite's error as the storage error the rest of the bot knows, in the operator's words."""
    reason = str(exc) or type(exc).__name__
    code = getattr(exc, "sqlite_errorcode", None)
    primary = None if code is None else code & 0xFF  # extended codes share the primary's byte
    where = repr(str(path))
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return damaged(path, reason)
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        return DatabaseError(f"the database {where} is locked by another program ({reason}): "
                             "close whatever holds it open for writing (an sqlite3 shell, a "
                             "copy or sync tool)")
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM):
        return DatabaseError(f"the database {where} cannot be written ({reason}): check the "
                             "permissions of the file and its folder, and that the disk is "
                             "mounted read-write")
    if primary == sqlite3.SQLITE_FULL:
        return DatabaseError(f"the disk holding the database {where} is full ({reason}): "
                             "free some space")
    if primary == sqlite3.SQLITE_CANTOPEN:
        return DatabaseError(f"the database {where} cannot be opened ({reason}): check "
                             "DATABASE_PATH and the permissions of its folder")
    if primary == sqlite3.SQLITE_IOERR:
        return DatabaseError(f"reading or writing the database {where} failed ({reason}): "
                             "check the disk and the permissions of the file and its folder")
    return DatabaseError(f"the database {where}: {reason}")


@contextmanager
def engine_errors(path: Path) -> Iterator[None]:
    """Raise SQLite's errors inside the block as storage errors (the cause stays chained)."""
    try:
        yield
    except sqlite3.Error as exc:
        raise engine_error(path, exc) from exc


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
    async def open(cls, path: Path | str, *, migrate: bool = True, create: bool = True,
                   busy_timeout: float = BUSY_TIMEOUT) -> Database:
        """Open (creating folder and file if needed), enable WAL and foreign keys, migrate.

        With `create=False` a missing file is an error (a mistyped path must not be
        "backed up" as an empty database). A schema newer than this code is always refused.
        Whatever goes wrong raises `DatabaseError` and leaves no connection (nor its thread,
        which would keep the process alive) open. `busy_timeout`: seconds a statement waits
        for another connection's lock.
        """
        path = Path(path)
        memory = str(path) == ":memory:"
        if path.is_dir():
            raise DatabaseError(f"{str(path)!r} is a folder, not a database file "
                                "(check DATABASE_PATH)")
        if not create and not path.is_file():
            raise DatabaseError(f"no database at {str(path)!r} (check DATABASE_PATH)")
        if not memory:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseError(f"cannot create the folder of the database {str(path)!r} "
                                    f"({exc.strerror}): check DATABASE_PATH") from exc
        with engine_errors(path):
            conn = await aiosqlite.connect(path, isolation_level=None, timeout=busy_timeout)
        db = cls(conn, path)
        try:
            with engine_errors(path):
                conn.row_factory = sqlite3.Row
                await conn.execute("PRAGMA journal_mode=WAL")
                await conn.execute("PRAGMA foreign_keys=ON")
                await conn.execute("PRAGMA synchronous=NORMAL")
                await conn.execute(f"PRAGMA cache_size=-{WRITER_CACHE_KIB}")
                await conn.execute(f"PRAGMA wal_autocheckpoint={WAL_AUTOCHECKPOINT_PAGES}")
                await conn.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
                version = await db.schema_version()
                if version > LATEST_VERSION:
                    raise DatabaseError(
                        f"the database {str(path)!r} has schema version {version}, newer than "
                        f"this version of the bot knows ({LATEST_VERSION}); upgrade the bot or "
                        "restore a backup")
                if migrate:
                    await db.migrate()
                if not memory:
                    reader = await aiosqlite.connect(f"{path.resolve().as_uri()}?mode=ro",
                                                     uri=True, timeout=busy_timeout)
                    db._reader = reader
                    reader.row_factory = sqlite3.Row
                    await reader.execute("PRAGMA foreign_keys=ON")
                    await reader.execute(f"PRAGMA busy_timeout={int(busy_timeout * 1000)}")
        except BaseException:
            with contextlib.suppress(sqlite3.Error, ValueError):
                await db.close()
            raise
        return db

    async def check_writable(self) -> None:
        """Part of the start-up check: raises `DatabaseError` unless the bot can take the write
        lock (a read-only file or disk, another program holding it past the busy timeout)."""
        async with self._lock:
            with engine_errors(self.path):
                await self._conn.execute("BEGIN IMMEDIATE")
                await self._conn.execute("ROLLBACK")

    async def quick_check(self) -> None:
        """SQLite's `PRAGMA quick_check` of every page; raises `DatabaseDamaged` with the first
        problems it lists, on one line (or the error of a page too damaged to read).

        Reads the whole file (about a second for 500 MB from the page cache) on a connection
        of its own: the reader and the writer stay free for the bot's work meanwhile.
        """
        sql = f"PRAGMA quick_check({QUICK_CHECK_PROBLEMS})"
        if self._reader is None:  # in memory: there is only the one connection
            rows = await self.fetchall(sql)
        else:
            with engine_errors(self.path):
                async with aiosqlite.connect(f"{self.path.resolve().as_uri()}?mode=ro",
                                             uri=True) as conn:
                    rows = list(await conn.execute_fetchall(sql))
        problems = [line for row in rows for line in str(row[0]).splitlines()
                    if line and not line.startswith("*** in database")]
        if problems != ["ok"]:
            raise damaged(self.path, "; ".join(problems))

    async def has_table(self, name: str) -> bool:
        """Whether the schema has this table (a database not yet migrated may lack it)."""
        return await self.fetchval(
            "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?", (name,)) is not None

    async def close(self) -> None:
        if self._reader is not None:
            await self._reader.close()
        await self._conn.close()

    async def _read(self, sql: str, params: Sequence[Any] | Mapping[str, Any]
                    ) -> list[sqlite3.Row]:
        """All the rows of a query, as last committed: executed, fetched and its statement
        reset in one call on the connection's thread (a cursor's execute, fetch and close are
        three; a drain reads a few times a message)."""
        with engine_errors(self.path):
            if self._reader is not None:
                return list(await self._reader.execute_fetchall(sql, params))
            async with self._lock:
                return list(await self._conn.execute_fetchall(sql, params))

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
            with engine_errors(self.path):
                await self._conn.execute("BEGIN IMMEDIATE")
                try:
                    yield self._conn
                except BaseException:
                    # SQLite itself ends the transaction on some errors (a full disk, a damaged
                    # page): a ROLLBACK then would replace the error with its own.
                    if self._conn.in_transaction:
                        await self._conn.execute("ROLLBACK")
                    raise
                else:
                    await self._conn.execute("COMMIT")

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one write statement in its own transaction; returns the rows it changed."""
        async with self.transaction() as conn:
            cursor = await conn.execute(sql, params)
            return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one write statement for each of `rows`, in one transaction (none for no rows)."""
        if rows:
            async with self.transaction() as conn:
                await conn.executemany(sql, rows)

    async def fetchone(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
                       ) -> sqlite3.Row | None:
        """The first row, as last committed; for queries of one row at most (a key, LIMIT 1):
        all of a query's rows are read."""
        rows = await self._read(sql, params)
        return rows[0] if rows else None

    async def fetchall(self, sql: str, params: Iterable[Any] | Mapping[str, Any] = ()
                       ) -> list[sqlite3.Row]:
        """All rows, as last committed."""
        # Named parameters (`:name`) come as a mapping, SQLite's own `?` as any iterable.
        return await self._read(sql, params if isinstance(params, Mapping) else tuple(params))

    async def fetchval(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def backup(self, target: Path) -> None:
        """Write a consistent copy of the live database to `target` (SQLite's online backup)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        with engine_errors(target):
            dest = await aiosqlite.connect(target)
        try:
            async with self._lock:
                with engine_errors(self.path):
                    await self._conn.backup(dest)
        finally:
            await dest.close()

    async def optimize(self) -> None:
        """SQLite's own upkeep of query-planner statistics (cheap; run now and then), and the
        write-ahead log copied back and cut to nothing (it grows to WAL_AUTOCHECKPOINT_PAGES)."""
        async with self._lock:
            with engine_errors(self.path):
                await self._conn.execute("PRAGMA optimize")
                await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    async def vacuum_if_worth(self, min_share: float = VACUUM_MIN_FREE_SHARE
                              ) -> tuple[int, int] | None:
        """VACUUM when at least `min_share` of the file is free pages (after pruning).

        Returns (bytes before, bytes after), or None when it was not worth it.
        """
        async with self._lock:
            with engine_errors(self.path):
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

    async def free_bytes(self) -> int:
        """The free pages' share of the file: what VACUUM would give back."""
        free_pages = await self.fetchval("PRAGMA freelist_count")
        page_size = await self.fetchval("PRAGMA page_size")
        return int(free_pages) * int(page_size)

"""The PostgreSQL connections: one writer taking turns (as SQLite's does), a pool of readers.

The repositories are the SQLite engine's, with the statements PostgreSQL words differently
overridden (`bot.storage.postgres.repositories`), so both engines keep one behaviour. They call
`fetchone`, `fetchall`, `fetchval`, `execute` and `transaction()` on their database and
`execute`/`executemany` on a transaction's connection, with SQLite's `?` (or `:name`)
placeholders: `Connection` turns them into PostgreSQL's `$1, $2, …`, and that is the only
rewriting of SQL text anywhere.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import socket
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import asyncpg

from bot.config import hide_password
from bot.storage.errors import DatabaseError, DatabaseUnreachable
from bot.storage.postgres.schema import BASE_VERSION, LATEST_VERSION, SCHEMA, UPGRADES

log = logging.getLogger(__name__)

READERS = 4  # pooled read connections: reads never wait for the writer's transaction
# The writer's commits: as durable as SQLite's in WAL mode with synchronous=NORMAL. A crash of
# the bot loses nothing (the server has the commit); a crash of the server's machine may lose
# its last fraction of a second of commits, never its consistency: then an alert marked sent
# just before is sent again, as after such a crash on SQLite. Without it every claim and every
# sent mark waits for a flush to disk (29 ms a message where SQLite takes 7, bench/engines.py).
WRITER_SETTINGS = {"synchronous_commit": "off"}
# What pg_stat_activity shows for the bot's data connections (the lock's own says the same
# without "(data)"): an operator, or a test, finds a process's backends by it.
APPLICATION_NAME = f"arxiv-alert-bot pid {os.getpid()} on {socket.gethostname()} (data)"[:63]
# A literal, a `::` cast (left alone), or a placeholder: `?` or `:name`.
_TOKEN = re.compile(r"'(?:[^']|'')*'|::|\?|:([A-Za-z_]\w*)")
_STATUS_COUNT = re.compile(r" (\d+)$")


def placeholders(sql: str, params: Sequence[Any] | Mapping[str, Any]) -> tuple[str, list[Any]]:
    """SQLite's placeholders as PostgreSQL's, with the arguments in their order."""
    args: list[Any] = []
    names: dict[str, int] = {}
    positional = iter(params) if not isinstance(params, Mapping) else None

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token.startswith("'") or token == "::":
            return token
        if token == "?":
            assert positional is not None, "a ? placeholder with named parameters"
            args.append(next(positional))
            return f"${len(args)}"
        assert isinstance(params, Mapping), "a :name placeholder with positional parameters"
        name = match.group(1)
        if name not in names:
            args.append(params[name])
            names[name] = len(args)
        return f"${names[name]}"

    return _TOKEN.sub(replace, sql), args


def _returns_rows(sql: str) -> bool:
    head = sql.lstrip().split(None, 1)[0].upper() if sql.strip() else ""
    return head in ("SELECT", "WITH", "VALUES") or " RETURNING " in sql.upper()


def _rowcount(status: str) -> int:
    found = _STATUS_COUNT.search(status)
    return int(found.group(1)) if found else -1


def engine_error(url: str, exc: BaseException) -> DatabaseError:
    """asyncpg's error as the storage error the rest of the bot knows (no password shown)."""
    where = repr(hide_password(url))
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if isinstance(exc, asyncpg.InvalidPasswordError
                  | asyncpg.InvalidAuthorizationSpecificationError):
        return DatabaseError(f"the database {where} refused the bot's credentials ({reason}): "
                             "check the user and password in DATABASE_URL")
    if isinstance(exc, asyncpg.InvalidCatalogNameError):
        return DatabaseError(f"the database {where} does not exist ({reason}): create it "
                             "(createdb) or check DATABASE_URL")
    if isinstance(exc, OSError | TimeoutError | asyncpg.CannotConnectNowError):
        return DatabaseUnreachable(f"cannot reach the database {where} ({reason}): check that the "
                             "server runs and DATABASE_URL's host and port")
    if isinstance(exc, asyncpg.InsufficientPrivilegeError):
        return DatabaseError(f"the database {where} cannot be written ({reason}): grant the "
                             "bot's user the rights on its tables")
    if isinstance(exc, asyncpg.DiskFullError):
        return DatabaseError(f"the disk of the database {where} is full ({reason})")
    return DatabaseError(f"the database {where}: {reason}")


@contextmanager
def engine_errors(url: str) -> Iterator[None]:
    """Raise asyncpg's errors inside the block as storage errors (the cause stays chained)."""
    try:
        yield
    except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
        raise engine_error(url, exc) from exc


class Cursor:
    """A statement's result as the repositories read it (SQLite's cursor, in short)."""

    def __init__(self, rows: list[asyncpg.Record], rowcount: int) -> None:
        self._rows = rows
        self.rowcount = rowcount

    async def fetchone(self) -> asyncpg.Record | None:
        return self._rows[0] if self._rows else None

    async def fetchall(self) -> list[asyncpg.Record]:
        return self._rows


class Connection:
    """The writer inside one transaction, as the repositories' SQL speaks to it."""

    def __init__(self, conn: asyncpg.Connection) -> None:
        self.raw = conn

    async def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Cursor:
        query, args = placeholders(sql, params)
        if _returns_rows(query):
            rows = await self.raw.fetch(query, *args)
            return Cursor(rows, len(rows))
        return Cursor([], _rowcount(await self.raw.execute(query, *args)))

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        rows = list(rows)
        if rows:
            query, _ = placeholders(sql, rows[0])
            await self.raw.executemany(query, [list(row) for row in rows])


class Database:
    """A writer connection (writes go through `transaction()`, one at a time) and readers.

    Reads use the pool: they see the last commit, never a transaction that is still open
    (as SQLite's separate reader does).
    """

    def __init__(self, url: str, writer: asyncpg.Connection, readers: asyncpg.Pool) -> None:
        self.url = url
        self._writer = writer
        self._readers = readers
        self._lock = asyncio.Lock()

    @classmethod
    async def open(cls, url: str, *, migrate: bool = True, create: bool = True,
                   timeout: float = 10.0) -> Database:
        """Connect, refuse a schema newer than this code, create the schema if missing (unless
        `migrate=False`). With `create=False` a database without the bot's tables is an
        error. Whatever goes wrong raises `DatabaseError` and leaves no connection open."""
        with engine_errors(url):
            writer = await asyncpg.connect(url, timeout=timeout, server_settings={
                **WRITER_SETTINGS, "application_name": APPLICATION_NAME})
        readers = None
        try:
            with engine_errors(url):
                readers = await asyncpg.create_pool(
                    url, min_size=1, max_size=READERS, timeout=timeout,
                    server_settings={"application_name": APPLICATION_NAME})
                db = cls(url, writer, readers)
                version = await db.schema_version()
                if version > LATEST_VERSION:
                    raise DatabaseError(
                        f"the database {hide_password(url)!r} has schema version {version}, "
                        f"newer than this version of the bot knows ({LATEST_VERSION}); upgrade "
                        "the bot or restore a backup")
                if version == 0 and not create:
                    raise DatabaseError(f"no bot database at {hide_password(url)!r} (its "
                                        "tables are missing): check DATABASE_URL")
                if migrate:
                    await db.migrate()
        except BaseException:
            with contextlib.suppress(Exception):
                await writer.close()
                if readers is not None:
                    await readers.close()
            raise
        return db

    async def schema_version(self) -> int:
        if not await self.has_table("schema_version"):
            return 0
        return int(await self._writer.fetchval("SELECT COALESCE(MAX(version), 0) "
                                               "FROM schema_version"))

    async def migrate(self) -> list[int]:
        """Bring the schema to this code's version, in one transaction: the whole schema in an
        empty database, then the upgrades above the stored version; returns the versions
        applied. A lock keeps two bots starting at once from both applying them."""
        applied: list[int] = []
        async with self._lock, self._writer.transaction():
            await self._writer.execute("SELECT pg_advisory_xact_lock(hashtext('bot schema'))")
            version = await self.schema_version()
            steps = [(BASE_VERSION, SCHEMA)] if version == 0 else []
            steps += [(number, sql) for number, sql in UPGRADES if number > version]
            for number, sql in steps:
                await self._writer.execute(sql)
                await self._writer.execute("INSERT INTO schema_version (version) VALUES ($1)",
                                           number)
                applied.append(number)
        for number in applied:
            log.info("applied PostgreSQL schema version %d", number)
        return applied

    async def has_table(self, name: str) -> bool:
        """Whether the schema has this table (a database not yet migrated may lack it)."""
        with engine_errors(self.url):
            return await self._readers.fetchval("SELECT to_regclass($1) IS NOT NULL",
                                                name) is True

    async def check_writable(self) -> None:
        """Raise `DatabaseError` unless the server takes writes (not a read-only replica, nor
        a read-only default) from the bot's user: a write that is then rolled back."""
        with engine_errors(self.url):
            async with self._lock:
                transaction = self._writer.transaction()
                await transaction.start()
                try:
                    await self._writer.execute(
                        "CREATE TEMPORARY TABLE bot_writable_check (x integer) ON COMMIT DROP")
                finally:
                    await transaction.rollback()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            await self._readers.close()
        await self._writer.close()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Connection]:
        """A write transaction (committed when the block ends, rolled back if it raises)."""
        async with self._lock:
            with engine_errors(self.url):
                async with self._writer.transaction():
                    yield Connection(self._writer)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[asyncpg.Connection]:
        """A reader inside a read-only, repeatable-read transaction: every read in the block
        sees the database as one commit left it."""
        with engine_errors(self.url):
            async with self._readers.acquire() as conn, conn.transaction(
                    isolation="repeatable_read", readonly=True):
                yield conn

    @property
    def writer(self) -> asyncpg.Connection:
        """The writer connection, for statements that are PostgreSQL's own (inside
        `transaction()` only)."""
        return self._writer

    async def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> int:
        """Run one write statement in its own transaction; returns the rows it changed."""
        async with self.transaction() as conn:
            return (await conn.execute(sql, params)).rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one write statement for each of `rows`, in one transaction (none for no rows)."""
        if rows:
            async with self.transaction() as conn:
                await conn.executemany(sql, rows)

    async def fetchall(self, sql: str, params: Iterable[Any] | Mapping[str, Any] = ()
                       ) -> list[asyncpg.Record]:
        """All rows, as last committed."""
        query, args = placeholders(sql, params if isinstance(params, Mapping)
                                   else tuple(params))
        with engine_errors(self.url):
            return await self._readers.fetch(query, *args)

    async def fetchone(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()
                       ) -> asyncpg.Record | None:
        """One row, as last committed."""
        query, args = placeholders(sql, params)
        with engine_errors(self.url):
            return await self._readers.fetchrow(query, *args)

    async def fetchval(self, sql: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        row = await self.fetchone(sql, params)
        return None if row is None else row[0]

    async def size_bytes(self) -> int:
        return int(await self.fetchval("SELECT pg_database_size(current_database())"))

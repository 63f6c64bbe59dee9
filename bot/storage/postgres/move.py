"""Moving up: a SQLite database copied whole into an empty PostgreSQL database.

Every table in one transaction (all or nothing), row for row with the same ids, so the
outbox's sent rows stay sent (nothing goes twice) and pending ones stay pending (nothing is
missed); the identity sequences then continue after the highest id. Row counts are checked
per table before the commit. A target that holds any row is refused: this is a move, not a
merge.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from bot.config import hide_password
from bot.storage.errors import DatabaseError
from bot.storage.postgres.db import Database as PostgresDatabase
from bot.storage.postgres.db import engine_errors
from bot.storage.postgres.schema import LATEST_VERSION, TABLES
from bot.storage.sqlite.db import Database as SqliteDatabase

log = logging.getLogger(__name__)

CHUNK = 20_000  # rows read from SQLite and sent to PostgreSQL at a time
_IDENTITY_TABLES = ("subscriptions", "outbox", "guide_calls", "foryou_outbox", "outbox_staged")


async def move_to_postgres(source: Path, url: str,
                           progress: Callable[[str, int], None] | None = None
                           ) -> dict[str, int]:
    """Copy the SQLite database at `source` (migrated to this code's schema first) into the
    empty PostgreSQL database at `url`; returns the rows copied per table. Raises
    `DatabaseError` for a non-empty target, a count that does not match, or either database
    the bot cannot use."""
    lite = await SqliteDatabase.open(source, create=False)
    try:
        target = await PostgresDatabase.open(url)
        try:
            return await _copy(lite, target, progress)
        finally:
            await target.close()
    finally:
        await lite.close()


async def _copy(lite: SqliteDatabase, target: PostgresDatabase,
                progress: Callable[[str, int], None] | None) -> dict[str, int]:
    shown = hide_password(target.url)
    occupied = {table: n for table in TABLES
                if (n := int(await target.fetchval(f"SELECT COUNT(*) FROM {table}")))}
    if occupied:
        listed = ", ".join(f"{n} in {table}" for table, n in occupied.items())
        raise DatabaseError(f"the database {shown!r} is not empty ({listed}): migrate copies "
                            "into an empty database only")
    copied: dict[str, int] = {}
    async with target.transaction() as conn:
        with engine_errors(target.url):
            for table in TABLES:
                columns = [r["column_name"] for r in await conn.raw.fetch(
                    "SELECT column_name FROM information_schema.columns "
                    "WHERE table_name = $1 AND table_schema = current_schema() "
                    "ORDER BY ordinal_position", table)]
                listed = ", ".join(columns)
                # Chats' rowids are their ids, negative for groups.
                total, last = 0, -(2**63)
                while True:
                    rows = await lite.fetchall(
                        f"SELECT rowid AS bot_rowid, {listed} FROM {table} WHERE rowid > ? "
                        f"ORDER BY rowid LIMIT {CHUNK}", (last,))
                    if not rows:
                        break
                    last = rows[-1]["bot_rowid"]
                    await conn.raw.copy_records_to_table(
                        table, columns=columns, records=[tuple(r)[1:] for r in rows])
                    total += len(rows)
                expected = int(await lite.fetchval(f"SELECT COUNT(*) FROM {table}"))
                landed = int(await conn.raw.fetchval(f"SELECT COUNT(*) FROM {table}"))
                if not total == expected == landed:
                    raise DatabaseError(
                        f"{table}: {expected} rows in the SQLite database, {landed} copied: "
                        "nothing was committed")
                copied[table] = landed
                if progress is not None:
                    progress(table, landed)
            for table in _IDENTITY_TABLES:
                await conn.raw.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"COALESCE((SELECT MAX(id) FROM {table}), 0) + 1, false)")
    log.info("moved %d rows into %s", sum(copied.values()), shown)
    return copied


async def copy_to_sqlite(url: str, target: Path) -> dict[str, int]:
    """The PostgreSQL database at `url`, copied into a new SQLite database at `target` as one
    snapshot (a read-only transaction: safe beside a running leader); rows per table. What
    `poll-once --dry-run` polls, so that it prints the running bot's messages and changes
    nothing. Both engines have the same tables and columns (`schema.TABLES`)."""
    source = await PostgresDatabase.open(url, migrate=False, create=False)
    try:
        version = await source.schema_version()
        if version != LATEST_VERSION:
            raise DatabaseError(
                f"the database {hide_password(url)!r} has schema version {version}, this "
                f"version of the bot {LATEST_VERSION}: start the bot (or poll-once) once first")
        lite = await SqliteDatabase.open(target, create=True)
        try:
            return await _copy_out(source, lite)
        finally:
            await lite.close()
    finally:
        await source.close()


async def _copy_out(source: PostgresDatabase, lite: SqliteDatabase) -> dict[str, int]:
    copied: dict[str, int] = {}
    async with source.snapshot() as conn, lite.transaction() as out:
        for table in TABLES:
            columns = [r["name"] for r in await lite.fetchall(
                f"SELECT name FROM pragma_table_info('{table}')")]
            listed = ", ".join(columns)
            insert = (f"INSERT OR REPLACE INTO {table} ({listed}) "
                      f"VALUES ({', '.join('?' * len(columns))})")
            total = 0
            with engine_errors(source.url):
                rows: list[tuple] = []
                async for record in conn.cursor(f"SELECT {listed} FROM {table}",
                                                prefetch=CHUNK):
                    rows.append(tuple(record))
                    if len(rows) == CHUNK:
                        await out.executemany(insert, rows)
                        total, rows = total + len(rows), []
                if rows:
                    await out.executemany(insert, rows)
                    total += len(rows)
            copied[table] = total
    return copied

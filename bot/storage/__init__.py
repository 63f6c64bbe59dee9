"""Storage: the only package that speaks to the database; `interfaces` says what it offers."""

from __future__ import annotations

from pathlib import Path

from bot.storage.interfaces import Compaction, StagedAlerts, Storage, Transaction

SQLITE_PREFIX = "sqlite:///"
POSTGRES_PREFIXES = ("postgresql://", "postgres://")


def is_postgres(database: Path | str) -> bool:
    """Whether `database` (a `DATABASE_URL`, or a SQLite file's path) names a PostgreSQL one."""
    return str(database).startswith(POSTGRES_PREFIXES)


async def open_storage(database: Path | str, *, create: bool = True, migrate: bool = True,
                       busy_timeout: float | None = None) -> Storage:
    """Open the database, migrating it to this code's schema unless `migrate=False`.

    `database` is a URL (`Settings.database`: `sqlite:///path` or `postgresql://…`) or a
    SQLite file's path. With `create=False` a missing database is a `DatabaseError` (a
    mistyped path must not be "backed up" as an empty one); a schema newer than this code
    always is. `busy_timeout`: seconds a statement waits for another connection's lock
    (None: the engine's default).
    """
    if is_postgres(database):
        from bot.storage.postgres.storage import PostgresStorage

        return await PostgresStorage.open(str(database), create=create, migrate=migrate,
                                          busy_timeout=busy_timeout)
    from bot.storage.sqlite.storage import SqliteStorage

    path = str(database)
    if path.startswith(SQLITE_PREFIX):
        path = path[len(SQLITE_PREFIX):]
    return await SqliteStorage.open(path, create=create, migrate=migrate,
                                    busy_timeout=busy_timeout)


__all__ = ["Compaction", "StagedAlerts", "Storage", "Transaction", "is_postgres", "open_storage"]

"""Storage: the only package that speaks to the database; `interfaces` says what it offers."""

from __future__ import annotations

from pathlib import Path

from bot.storage.interfaces import Compaction, Storage, Transaction


async def open_storage(path: Path | str, *, create: bool = True, migrate: bool = True,
                       busy_timeout: float | None = None) -> Storage:
    """Open the database at `path`, migrating it to this code's schema unless `migrate=False`.

    With `create=False` a missing database is a `DatabaseError` (a mistyped path must not be
    "backed up" as an empty one); a schema newer than this code always is. `busy_timeout`:
    seconds a statement waits for another connection's lock (None: the engine's default).
    Today every database is a SQLite file.
    """
    from bot.storage.sqlite.storage import SqliteStorage

    return await SqliteStorage.open(path, create=create, migrate=migrate,
                                    busy_timeout=busy_timeout)


__all__ = ["Compaction", "Storage", "Transaction", "open_storage"]

"""What storage raises instead of its engine's errors: callers never see sqlite3's (or later
a PostgreSQL driver's) exceptions, only these, with a message written for the operator."""

from __future__ import annotations

from pathlib import Path


class DatabaseError(Exception):
    """A database the bot cannot use; the message is the one line shown to the operator."""


class DatabaseUnreachable(DatabaseError):
    """The database server did not answer (down, restarting, a network fault): a retry may
    help, unlike the other errors (bad credentials, a newer schema)."""


class DatabaseDamaged(DatabaseError):
    """The file is not a database, or its pages are damaged: no retry helps, only a backup or a
    recovery, so the bot stops rather than keep writing into it."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason  # the engine's own words, e.g. "database disk image is malformed"


class DatabaseLocked(Exception):
    """Another process holds the database's lock; the message names the lock and its holder
    (a pid, or for PostgreSQL's lock the holder's own description: pid and host)."""

    def __init__(self, lock_path: Path | str, holder: int | str | None) -> None:
        self.lock_path = lock_path
        self.holder = holder
        if isinstance(holder, int):
            who = f"pid {holder}"
        else:
            who = holder or "a process that has not written its pid"
        super().__init__(
            f"another bot is running on this database: {lock_path} is held by {who}"
        )

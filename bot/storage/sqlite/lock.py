"""One bot per database: an OS lock on a file next to it, released by the kernel on exit.

Two processes sending from one outbox would both send every alert: nothing claims a row
across processes. `flock` is held for the life of the process and dies with it, even after a
SIGKILL, so a crashed bot never leaves a stale lock behind.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from bot.storage.errors import DatabaseLocked


class DatabaseLock:
    """The exclusive lock of one database file; `acquire()` never waits."""

    def __init__(self, database_path: Path) -> None:
        self.path = Path(f"{database_path}.lock")
        self._fd: int | None = None

    def acquire(self) -> DatabaseLock:
        """Take the lock and write our pid into it, or raise `DatabaseLocked` at once."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise DatabaseLocked(self.path, holder) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd
        return self

    def release(self) -> None:
        """Let go early (the kernel does it anyway when the process ends)."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing the last descriptor releases the flock
            self._fd = None


def _read_pid(fd: int) -> int | None:
    text = os.pread(fd, 32, 0).decode(errors="replace").strip()
    return int(text) if text.isdigit() else None

"""One bot per PostgreSQL database: a session advisory lock, held on a connection of its own.

The file lock beside a SQLite database cannot reach another host; two bots on one PostgreSQL
database (on two hosts, or with different working folders) would both poll and both send.
PostgreSQL's session advisory lock is held for as long as its connection lives and is dropped
by the server when the connection ends, also when the process is SIGKILLed (the kernel closes
its socket). The connection is held by a thread with its own event loop, so that the lock is
taken before the bot's loop exists and is held for the life of the process, as `flock` is.

Not yet a standby: a second bot is refused at once (exit 2), as on SQLite. If the connection
is lost while the bot runs, the lock is gone with it; nothing fences the bot then (the leader
lease of the standby design is what would).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable

import asyncpg

from bot.config import hide_password
from bot.storage.errors import DatabaseLocked, DatabaseUnreachable
from bot.storage.postgres.db import engine_errors

LOCK_NAME = "arxiv-alert-bot"  # hashed into the advisory lock's key
# Seconds between tries while the server does not answer at start (as for Telegram's).
BACKOFF = (1, 2, 4, 8, 16, 30)
log = logging.getLogger(__name__)
_KEY = "SELECT hashtext($1)::bigint"


class PostgresLock:
    """The database's advisory lock; `acquire()` never waits for another holder."""

    def __init__(self, url: str, timeout: float = 10.0) -> None:
        self.url = url
        self._timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: asyncpg.Connection | None = None
        self.description = f"pid {os.getpid()} on {socket.gethostname()}"

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> PostgresLock:
        """Take the lock, or raise `DatabaseLocked` (naming the holder's pid and host) at once.
        While the server does not answer, try again (1, 2, 4 … 30 s apart, a line each);
        what a retry cannot fix (bad credentials, no such database) raises `DatabaseError`."""
        for attempt in itertools.count():
            try:
                return self._acquire()
            except DatabaseUnreachable as exc:
                delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                log.warning("%s; trying again in %d s", exc, delay)
                sleep(delay)
        raise AssertionError("itertools.count() ended")

    def _acquire(self) -> PostgresLock:
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="postgres-lock", daemon=True)
        thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self._take(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=5)
            loop.close()
            raise
        self._loop, self._thread = loop, thread
        return self

    async def _take(self) -> None:
        with engine_errors(self.url):
            conn = await asyncpg.connect(
                self.url, timeout=self._timeout,
                server_settings={"application_name": f"{LOCK_NAME} {self.description}"[:63]})
            try:
                key = await conn.fetchval(_KEY, LOCK_NAME)
                if await conn.fetchval("SELECT pg_try_advisory_lock($1)", key):
                    self._conn = conn
                    return
                holder = await conn.fetchval(
                    "SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a "
                    "USING (pid) WHERE l.locktype = 'advisory' AND l.granted "
                    "AND l.database = (SELECT oid FROM pg_database "
                    "                  WHERE datname = current_database()) "
                    "AND l.objsubid = 1 AND (l.classid::bigint << 32 | l.objid::bigint) = $1 "
                    "LIMIT 1", key)
            except BaseException:
                await conn.close()
                raise
            await conn.close()
        who = (holder or "").removeprefix(f"{LOCK_NAME} ") or None
        raise DatabaseLocked(f"the advisory lock {LOCK_NAME!r} of {hide_password(self.url)!r}",
                             who)

    def release(self) -> None:
        """Let go early (the server does it anyway when the process ends)."""
        loop, conn = self._loop, self._conn
        if loop is None:
            return
        if conn is not None:
            asyncio.run_coroutine_threadsafe(conn.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=5)
        loop.close()
        self._loop = self._conn = self._thread = None

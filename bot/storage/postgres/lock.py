"""A leader and standbys on one PostgreSQL database: a session advisory lock on a connection of
its own, a lease the leader renews, and a term that fences a leader that lost them.

PostgreSQL's session advisory lock is held for as long as its connection lives and is dropped
by the server when the connection ends, also when the process is SIGKILLed (the kernel closes
its socket) or its backend is terminated. The process holding it is the leader: it polls
arXiv, takes Telegram's updates and sends. The others stand by: they try the lock every
`renew_every` seconds and open nothing towards Telegram or arXiv until they win it.

Each win starts a new term: `bot_leadership.term`, raised by one in the same transaction that
records the winner. The outbox's claims and sent marks name the claimer's term and the
statement itself refuses them when the term is no longer the current one
(`bot.storage.postgres.repositories`), so an old leader whose other connections still work
can never claim or mark a row once a successor has won.

The lease: the leader renews `bot_leadership.renewed_at` (the server's clock) every
`renew_every` seconds, and trusts its leadership only until `lease_seconds` after the start of
its last renewal that succeeded (its own monotonic clock); past that, or as soon as its lock
connection is closed or a renewal fails, `holds()` is False and it sends nothing more. A
successor, having won the lock, waits before its first send until the last lease it can see
is `lease_seconds` old (plus `HANDOVER_MARGIN`) by the server's clock: the old leader has
stopped by then, wherever it runs and whatever happened to its connection. A lock still held
by a connection whose lease is `STALE_LEASES` leases old (its host vanished and the server
has not noticed yet) is cut off with `pg_terminate_backend`.

The lock's tables are its own (made here, on first use): they are not the bot's data, so
`migrate` never copies them and SQLite has none; SQLite's file lock is the whole story there.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import asyncpg

from bot.config import hide_password
from bot.storage.errors import DatabaseError, DatabaseLocked, DatabaseUnreachable
from bot.storage.postgres.db import engine_errors

LOCK_NAME = "arxiv-alert-bot"  # hashed into the advisory lock's key; begins application_name
# Seconds between tries while the server does not answer (as for Telegram's).
BACKOFF = (1, 2, 4, 8, 16, 30)
LEASE_SECONDS = 10.0  # the default of LEADER_LEASE_SECONDS
# A successor's wait beyond the old lease: a request the old leader began just before its
# lease ran out reaches Telegram within it.
HANDOVER_MARGIN = 1.0
STALE_LEASES = 2  # a lock held this many leases after its last renewal is cut off
FORGET_PROCESSES_AFTER = 86_400.0  # rows of processes gone a day are deleted
# The server's clock (every age is measured by it, so two hosts' clocks never meet).
_NOW = "extract(epoch FROM clock_timestamp())"
_KEY = "SELECT hashtext($1)::bigint"
_TABLES = """
CREATE TABLE IF NOT EXISTS bot_leadership (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    term          BIGINT NOT NULL,
    holder        TEXT NOT NULL,
    instance      TEXT NOT NULL,
    lease_seconds DOUBLE PRECISION NOT NULL,
    won_at        DOUBLE PRECISION NOT NULL,
    renewed_at    DOUBLE PRECISION NOT NULL
);
CREATE TABLE IF NOT EXISTS bot_processes (
    holder   TEXT PRIMARY KEY,
    instance TEXT NOT NULL,
    role     TEXT NOT NULL,
    seen_at  DOUBLE PRECISION NOT NULL
);
"""
_HOLDER_PID = (
    "SELECT l.pid FROM pg_locks l WHERE l.locktype = 'advisory' AND l.granted "
    "AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
    "AND l.objsubid = 1 AND (l.classid::bigint << 32 | l.objid::bigint) = $1 LIMIT 1")
log = logging.getLogger(__name__)
T = TypeVar("T")

_held: PostgresLock | None = None  # this process's leadership, once won


def fencing_term() -> int | None:
    """The term this process leads in (what its claims and sent marks carry), or None when it
    holds no leadership (a test or a bench opening storage by itself)."""
    held = _held
    return None if held is None else held.term


def leading() -> bool:
    """Whether this process may send now: always without a leadership, else while it holds."""
    held = _held
    return held is None or held.holds()


class PostgresLock:
    """The database's advisory lock and leader lease. `acquire()` never waits for another
    holder (`poll-once`); `stand_by()` waits until this process wins (`run`)."""

    def __init__(self, url: str, *, instance: str | None = None,
                 lease_seconds: float = LEASE_SECONDS, timeout: float = 10.0) -> None:
        self.url = url
        self.description = f"pid {os.getpid()} on {socket.gethostname()}"
        self.instance = instance or socket.gethostname()
        self.lease_seconds = lease_seconds
        self.renew_every = lease_seconds / 5
        self.term: int | None = None
        self._timeout = timeout
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._conn: asyncpg.Connection | None = None
        self._key: int | None = None
        self._guard = threading.Lock()
        self._valid_until = 0.0  # time.monotonic(): the leadership is trusted until then
        self._lost: str | None = None
        self._releasing = False
        self._on_lost: list[Callable[[str], None]] = []
        self._renewal: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ what the bot asks

    def holds(self) -> bool:
        """Whether this process is the leader now: it won, its lock connection is open and its
        last renewal is less than a lease old."""
        with self._guard:
            return (self.term is not None and self._lost is None
                    and time.monotonic() < self._valid_until)

    def on_lost(self, callback: Callable[[str], None]) -> None:
        """Call `callback(reason)` (from the lock's thread) when the leadership is lost."""
        self._on_lost.append(callback)
        if self._lost is not None:
            callback(self._lost)

    # ------------------------------------------------------------------ winning

    def acquire(self, sleep: Callable[[float], None] = time.sleep) -> PostgresLock:
        """Take the lock, or raise `DatabaseLocked` (naming the holder's pid and host) at once.
        While the server does not answer, try again (1, 2, 4 … 30 s apart, a line each);
        what a retry cannot fix (bad credentials, no such database) raises `DatabaseError`."""
        for attempt in itertools.count():
            try:
                self._start()
                if self._call(self._try_lead()):
                    return self
                holder = self._call(self._holder())
                self._stop_thread()
                raise DatabaseLocked(
                    f"the advisory lock {LOCK_NAME!r} of {hide_password(self.url)!r}", holder)
            except DatabaseUnreachable as exc:
                self._stop_thread()
                delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                log.warning("%s; trying again in %d s", exc, delay)
                sleep(delay)
        raise AssertionError("itertools.count() ended")

    def stand_by(self) -> PostgresLock:
        """Wait as a standby until this process wins the lock, then return as the leader.
        A server that does not answer is tried again as in `acquire`; a Ctrl-C ends the wait
        (KeyboardInterrupt)."""
        self._start()
        try:
            self._call(self._stand_by())
        except BaseException:
            self.release()
            raise
        return self

    def _start(self) -> None:
        self._releasing = False
        if self._loop is not None:
            return
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="postgres-lock", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        assert self._loop is not None
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    async def _connect(self) -> asyncpg.Connection:
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        with engine_errors(self.url):
            conn = await asyncpg.connect(
                self.url, timeout=self._timeout, server_settings={
                    "application_name": f"{LOCK_NAME} {self.description}"[:63],
                    # The server notices a vanished host within about a lease, and drops its
                    # lock (the stale-lease cut-off covers a server that does not).
                    "tcp_keepalives_idle": "5", "tcp_keepalives_interval": "2",
                    "tcp_keepalives_count": "3",
                    "tcp_user_timeout": str(int(self.lease_seconds * 1000))})
            try:
                async with conn.transaction():
                    # Two processes starting at once must not both create the tables.
                    await conn.execute("SELECT pg_advisory_xact_lock(hashtext('bot schema'))")
                    await conn.execute(_TABLES)
                self._key = await conn.fetchval(_KEY, LOCK_NAME)
            except BaseException:
                await conn.close()
                raise
        conn.add_termination_listener(self._terminated)
        self._conn = conn
        return conn

    async def _try_lead(self) -> bool:
        """Try the lock once; won: record the new term, start renewing, and wait out the last
        leader's lease before returning True."""
        conn = await self._connect()
        with engine_errors(self.url):
            if not await conn.fetchval("SELECT pg_try_advisory_lock($1)", self._key):
                return False
            started = time.monotonic()
            async with conn.transaction():
                last = await conn.fetchrow(
                    f"SELECT term, holder, lease_seconds, {_NOW} - renewed_at AS age "
                    f"FROM bot_leadership WHERE id = 1 FOR UPDATE")
                term = (last["term"] if last else 0) + 1
                await conn.execute(
                    f"INSERT INTO bot_leadership (id, term, holder, instance, lease_seconds, "
                    f"won_at, renewed_at) VALUES (1, $1, $2, $3, $4, {_NOW}, {_NOW}) "
                    f"ON CONFLICT (id) DO UPDATE SET term = EXCLUDED.term, "
                    f"holder = EXCLUDED.holder, instance = EXCLUDED.instance, "
                    f"lease_seconds = EXCLUDED.lease_seconds, won_at = EXCLUDED.won_at, "
                    f"renewed_at = EXCLUDED.renewed_at",
                    term, self.description, self.instance, self.lease_seconds)
                await self._seen(conn, "leader")
        global _held
        with self._guard:
            self.term, self._lost = term, None
            self._valid_until = started + self.lease_seconds
        _held = self
        self._renewal = asyncio.get_running_loop().create_task(self._keep())
        wait = 0.0
        if last is not None:
            wait = max(0.0, last["lease_seconds"] - last["age"] + HANDOVER_MARGIN)
        log.info("leading the database %s as term %d%s", hide_password(self.url), term,
                 f"; the last leader ({last['holder']}) may still send for up to {wait:.1f} s: "
                 "waiting that long first" if wait else "")
        await asyncio.sleep(wait)
        return True

    async def _stand_by(self) -> None:
        seen: tuple[int, str] | None = None
        for attempt in itertools.count():
            try:
                if await self._try_lead():
                    return
                conn = await self._connect()
                with engine_errors(self.url):
                    async with conn.transaction():
                        await self._seen(conn, "standby")
                    leader = await conn.fetchrow(
                        f"SELECT term, holder, lease_seconds, {_NOW} - renewed_at AS age "
                        f"FROM bot_leadership WHERE id = 1")
                    if leader is not None and (leader["term"], leader["holder"]) != seen:
                        seen = (leader["term"], leader["holder"])
                        log.info("standing by: the leader is %s (term %d, lease renewed "
                                 "%.1f s ago); taking over when it is gone", leader["holder"],
                                 leader["term"], leader["age"])
                    if leader is not None and (
                            leader["age"] > STALE_LEASES * leader["lease_seconds"]):
                        await self._cut_off(conn, leader)
                attempt = 0
                await asyncio.sleep(self.renew_every)
            except DatabaseUnreachable as exc:
                if self._conn is not None:
                    with contextlib.suppress(Exception):
                        await self._conn.close()
                    self._conn = None
                delay = BACKOFF[min(attempt, len(BACKOFF) - 1)]
                log.warning("%s; trying again in %d s", exc, delay)
                await asyncio.sleep(delay)

    async def _cut_off(self, conn: asyncpg.Connection, leader: asyncpg.Record) -> None:
        """The lock is held but its lease is long past: its holder stopped sending a lease
        ago, and the server keeps a dead connection's lock. End that connection."""
        pid = await conn.fetchval(_HOLDER_PID, self._key)
        if pid is not None and await conn.fetchval("SELECT pg_terminate_backend($1)", pid):
            log.warning("the leader %s renewed its lease %.0f s ago and still holds the lock: "
                        "its connection (backend %d) was ended", leader["holder"],
                        leader["age"], pid)

    async def _seen(self, conn: asyncpg.Connection, role: str) -> None:
        """This process's row, for `health`: its instance, role and when it was last seen."""
        await conn.execute(
            f"INSERT INTO bot_processes (holder, instance, role, seen_at) "
            f"VALUES ($1, $2, $3, {_NOW}) ON CONFLICT (holder) DO UPDATE SET "
            f"instance = EXCLUDED.instance, role = EXCLUDED.role, seen_at = EXCLUDED.seen_at",
            self.description, self.instance, role)
        await conn.execute(f"DELETE FROM bot_processes WHERE seen_at < {_NOW} - $1",
                           FORGET_PROCESSES_AFTER)

    async def _holder(self) -> str | None:
        conn = await self._connect()
        with engine_errors(self.url):
            holder = await conn.fetchval(
                "SELECT a.application_name FROM pg_stat_activity a "
                f"WHERE a.pid = ({_HOLDER_PID})", self._key)
        return (holder or "").removeprefix(f"{LOCK_NAME} ") or None

    # ------------------------------------------------------------------ keeping it

    async def _keep(self) -> None:
        """Renew the lease every `renew_every` s; lose the leadership when a renewal fails, or
        does not answer before the lease runs out, or finds another term."""
        while True:
            await asyncio.sleep(self.renew_every)
            started = time.monotonic()
            try:
                async with asyncio.timeout(max(self._valid_until - started, 0.01)):
                    renewed = await self._renew()
            except (TimeoutError, asyncpg.PostgresError, asyncpg.InterfaceError,
                    OSError) as exc:
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else (
                    type(exc).__name__)
                self._lose(f"its lease could not be renewed ({reason})")
                return
            if not renewed:
                self._lose("another bot has won the lock since")
                return
            with self._guard:
                self._valid_until = started + self.lease_seconds

    async def _renew(self) -> bool:
        assert self._conn is not None
        async with self._conn.transaction():
            status = await self._conn.execute(
                f"UPDATE bot_leadership SET renewed_at = {_NOW} WHERE id = 1 AND term = $1",
                self.term)
            await self._seen(self._conn, "leader")
        return status.endswith(" 1")

    def _terminated(self, conn: asyncpg.Connection) -> None:
        if not self._releasing and self.term is not None:
            self._lose("its database connection was closed (the lock went with it)")

    def _lose(self, reason: str) -> None:
        with self._guard:
            if self._lost is not None or self._releasing:
                return
            self._lost, self._valid_until = reason, 0.0
        log.error("no longer the leader of term %s: %s; sending nothing more", self.term,
                  reason)
        for callback in self._on_lost:
            try:
                callback(reason)
            except Exception:  # e.g. the bot's loop has closed already: it sends nothing
                log.debug("a callback on losing the leadership failed", exc_info=True)

    # ------------------------------------------------------------------ letting go

    def release(self) -> None:
        """Let go (the server does it anyway when the process ends). A leader that still held
        marks its lease as over, so that its successor need not wait it out: the process has
        stopped sending by now."""
        global _held
        loop = self._loop
        if loop is None:
            return
        self._releasing = True
        with contextlib.suppress(Exception):
            self._call(self._let_go())
        if _held is self:
            _held = None
        self._stop_thread()

    async def _let_go(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            await asyncio.gather(self._renewal, return_exceptions=True)
        conn = self._conn
        if conn is None or conn.is_closed():
            return
        with contextlib.suppress(DatabaseError, asyncpg.PostgresError, OSError):
            async with asyncio.timeout(5):
                if self.term is not None and self._lost is None:
                    await conn.execute("UPDATE bot_leadership SET renewed_at = 0 "
                                       "WHERE id = 1 AND term = $1", self.term)
                await conn.execute("DELETE FROM bot_processes WHERE holder = $1",
                                   self.description)
        await conn.close()

    def _stop_thread(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None:
            return
        if self._conn is not None and not self._conn.is_closed():
            self._releasing = True
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(self._conn.close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(timeout=5)
        loop.close()
        self._loop = self._thread = self._conn = None

"""The operator's use-cases behind `python -m bot poll-once`, `backup` and `health`."""

from __future__ import annotations

import dataclasses
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.core.clock import SystemClock
from bot.services.health import Health, assess, check_integrity
from bot.storage import is_postgres, open_storage
from bot.storage.errors import DatabaseError
from bot.storage.sqlite.lock import DatabaseLock

# The start-up check waits less for another program's lock than the bot's statements do, so
# that a database held by one ends the start within 5 s.
START_BUSY_TIMEOUT = 1.0

if TYPE_CHECKING:
    from telegram import Bot

    from bot.delivery.compose import Outgoing
    from bot.delivery.sender import DrainReport
    from bot.services.ingest import PollReport
    from bot.storage.postgres.lock import PostgresLock


@dataclass(frozen=True, slots=True)
class PollOnce:
    """One poll as the operator sees it: the report, each chat's title, and what each chat
    received (`drained`) or, in a dry run, the messages it would receive (`previews`)."""

    report: PollReport
    chat_titles: dict[int, str]
    previews: dict[int, list[Outgoing]]
    drained: DrainReport | None  # None in a dry run


async def poll_once(settings: Settings, bot: Bot, *, dry_run: bool) -> PollOnce:
    """One poll through the same services the running bot uses; delivered unless a dry run.

    A dry run polls a copy of the database (SQLite's online backup, or PostgreSQL's tables
    copied into a SQLite file from one snapshot; both safe beside a running bot)
    and composes what the sender would send next, so it prints exactly the running bot's
    messages while the real database and Telegram see nothing of it.
    """
    if not dry_run:
        return await _poll_once(settings, bot, dry_run=False)
    with tempfile.TemporaryDirectory(prefix="arxiv-alert-bot-dry-run-") as scratch:
        copy = Path(scratch) / "copy.sqlite3"
        if is_postgres(settings.database):
            # PostgreSQL's tables read in one snapshot into a SQLite file: the same rows, so
            # the same messages, and the server sees only reads.
            from bot.storage.postgres.move import copy_to_sqlite

            await copy_to_sqlite(settings.database, copy)
        elif settings.database_path.is_file():
            await _copy_database(settings.database_path, copy)
        return await _poll_once(dataclasses.replace(settings, database_path=copy,
                                                    database_url=None), bot, dry_run=True)


async def _poll_once(settings: Settings, bot: Bot, *, dry_run: bool) -> PollOnce:
    # Imported here: `check_database` and `health` run before (or without) the whole bot.
    from bot.services.container import open_services

    async with open_services(settings, bot=bot) as services:
        report = await services.pipeline.poll(keep_alerts=True)
        if dry_run:
            previews, drained = await services.sender.preview(), None
        else:
            previews, drained = {}, await services.sender.drain()
        titles = {}
        for chat_id in report.alerted_chats:
            chat = await services.storage.chats.get(chat_id)
            titles[chat_id] = chat.title if chat and chat.title else ""
        return PollOnce(report, titles, previews, drained)


async def _copy_database(source: Path, target: Path) -> None:
    storage = await open_storage(source, create=False, migrate=False)
    try:
        await storage.backup(target)
    finally:
        await storage.close()


async def check_database(settings: Settings) -> None:
    """Refuse a database the bot cannot use: damaged, or not writable; it is checked whole
    (SQLite's quick_check), as a damaged page deep in the file is met only when read."""
    # Without migrating: its log lines belong to the start proper (post_init).
    storage = await open_storage(settings.database, migrate=False,
                                 busy_timeout=START_BUSY_TIMEOUT)
    try:
        await storage.check_writable()
        await check_integrity(storage, SystemClock().now())
    finally:
        await storage.close()


def hold_database(settings: Settings, *, stand_by: bool = False) -> DatabaseLock | PostgresLock:
    """The database's lock, for whatever sends or stores alerts, held for as long as it runs:
    two processes sending from one outbox would both send every alert. Raises
    `DatabaseLocked` at once when another bot holds it (on PostgreSQL, from any host), unless
    `stand_by` (the running bot on PostgreSQL): then it waits as a standby until it leads."""
    if is_postgres(settings.database):
        # Imported here: asyncpg costs every start of a SQLite bot 50 ms otherwise.
        from bot.storage.postgres.lock import PostgresLock

        lock = PostgresLock(settings.database, instance=settings.instance,
                            lease_seconds=settings.leader_lease_seconds)
        return lock.stand_by() if stand_by else lock.acquire()
    return DatabaseLock(settings.database_path).acquire()


async def backup(settings: Settings, path: Path) -> None:
    """A consistent copy of the database at `path`, safe beside a running bot."""
    # A mistyped DATABASE_PATH must fail, not "back up" a new empty database.
    await _copy_database(settings.database, path)


async def migrate(settings: Settings, target: str,
                  progress: Callable[[str, int], None] | None = None) -> dict[str, int]:
    """Copy the bot's SQLite database into the empty PostgreSQL database `target` (the caller
    holds the SQLite database's lock: the bot is stopped); rows per table."""
    if is_postgres(settings.database):
        raise DatabaseError("migrate copies a SQLite database: DATABASE_URL already names a "
                            "PostgreSQL one")
    if not is_postgres(target):
        raise DatabaseError("migrate --to takes a postgresql://user:password@host:5432/dbname "
                            "URL")
    from bot.storage.postgres.move import move_to_postgres

    return await move_to_postgres(settings.database_path, target, progress)


async def health(settings: Settings) -> Health:
    """The heartbeats and the last integrity check as stored, against their limits (a
    database the bot has not migrated yet reads as nothing recorded)."""
    storage = await open_storage(settings.database, create=False, migrate=False)
    try:
        beats = await storage.heartbeats.all()
        integrity = await storage.heartbeats.last_check()
        leadership = await storage.leadership(settings.instance)
    finally:
        await storage.close()
    return assess(beats, settings, SystemClock().now(), integrity, leadership,
                  shared=is_postgres(settings.database))

"""What only the PostgreSQL engine has to show: its schema, its errors, claims across
processes, and `backup` pointing at pg_dump. (What both engines share runs on both, through
the `database_url` fixture.)"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import asyncpg
import pytest

from bot.core.models import Alert
from bot.storage import open_storage
from bot.storage.errors import DatabaseError, DatabaseLocked
from bot.storage.postgres.db import placeholders
from bot.storage.postgres.lock import PostgresLock
from bot.storage.postgres.schema import BASE_VERSION, LATEST_VERSION, TABLES, UPGRADES
from bot.storage.sqlite.db import Database as SqliteDatabase
from tests.conftest import make_paper
from tests.postgres_server import PostgresServer

NOW = 1_790_000_000.0


@pytest.fixture
def pg_url(postgres_server: PostgresServer):
    url = postgres_server.new_database()
    yield url
    postgres_server.drop_database(url)


async def test_an_empty_database_gets_the_schema_once_with_every_sqlite_table(
        pg_url: str, tmp_path: Path) -> None:
    await (await open_storage(pg_url)).close()
    conn = await asyncpg.connect(pg_url)
    versions = [r[0] for r in await conn.fetch("SELECT version FROM schema_version")]
    await conn.close()
    await (await open_storage(pg_url)).close()  # the second start changes nothing
    conn = await asyncpg.connect(pg_url)
    try:
        assert [r[0] for r in await conn.fetch("SELECT version FROM schema_version")] == versions
        assert versions == [BASE_VERSION, *(number for number, _ in UPGRADES)]
        assert max(versions) == LATEST_VERSION
        tables = {r[0] for r in await conn.fetch(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    finally:
        await conn.close()
    sqlite = await SqliteDatabase.open(tmp_path / "bot.sqlite3")
    try:
        sqlite_tables = {r[0] for r in await sqlite.fetchall(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
            # SQLite's full-text index (FTS5's table, its shadow tables, its ids); PostgreSQL
            # indexes the papers table itself.
            " AND name NOT LIKE 'paper_text%'")}
    finally:
        await sqlite.close()
    assert tables == sqlite_tables == {*TABLES, "schema_version"}


async def test_columns_match_sqlites_table_for_table(pg_url: str, tmp_path: Path) -> None:
    await (await open_storage(pg_url)).close()
    conn = await asyncpg.connect(pg_url)
    sqlite = await SqliteDatabase.open(tmp_path / "bot.sqlite3")
    try:
        for table in TABLES:
            pg = [r[0] for r in await conn.fetch(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $1 "
                "ORDER BY ordinal_position", table)]
            lite = [r[1] for r in await sqlite.fetchall(f"PRAGMA table_info({table})")]
            assert sorted(pg) == sorted(lite), table
    finally:
        await conn.close()
        await sqlite.close()


async def test_a_database_made_by_an_earlier_version_gets_the_upgrades_above_it(
        pg_url: str) -> None:
    """Version 16 was the first PostgreSQL schema; 17 added the inline search's index, 18 the
    chats' rating_buttons, 19 the paid broadcasts' budget, 20 the Zotero links, 21 the cards'
    messages, 22 the index of chats that blocked the bot, 23 the staged alerts: a database at
    16 is made as it was, then started."""
    await (await open_storage(pg_url)).close()
    conn = await asyncpg.connect(pg_url)
    await conn.execute("DROP INDEX papers_text; ALTER TABLE chats DROP COLUMN rating_buttons; "
                       "DROP TABLE paid_broadcasts; DROP TABLE zotero_items; "
                       "DROP TABLE zotero_links; DROP TABLE card_messages; "
                       "DROP INDEX chats_inactive; DROP TABLE outbox_staged; "
                       "DELETE FROM schema_version WHERE version > 16")
    await conn.close()
    await (await open_storage(pg_url)).close()
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetchval("SELECT MAX(version) FROM schema_version") == LATEST_VERSION
        assert await conn.fetchval("SELECT to_regclass('papers_text') IS NOT NULL")
        assert await conn.fetchval("SELECT rating_buttons FROM chats LIMIT 1") is None
        assert await conn.fetchval("SELECT to_regclass('paid_broadcasts') IS NOT NULL")
        assert await conn.fetchval("SELECT COUNT(*) FROM zotero_links") == 0
        assert await conn.fetchval("SELECT COUNT(*) FROM card_messages") == 0
        assert await conn.fetchval("SELECT to_regclass('chats_inactive') IS NOT NULL")
        assert await conn.fetchval("SELECT COUNT(*) FROM outbox_staged") == 0
    finally:
        await conn.close()


async def test_a_schema_newer_than_the_code_is_refused(pg_url: str) -> None:
    await (await open_storage(pg_url)).close()
    conn = await asyncpg.connect(pg_url)
    await conn.execute("INSERT INTO schema_version VALUES ($1)", LATEST_VERSION + 1)
    await conn.close()
    with pytest.raises(DatabaseError, match="newer than this version of the bot"):
        await open_storage(pg_url)


async def test_a_database_without_the_bots_tables_is_not_backed_up_or_checked(
        pg_url: str) -> None:
    with pytest.raises(DatabaseError, match="tables are missing"):
        await open_storage(pg_url, create=False, migrate=False)


async def test_bad_credentials_a_missing_database_and_an_unreachable_server_are_one_line(
        postgres_server: PostgresServer, pg_url: str) -> None:
    """Each names what to check, and never shows the password."""
    wrong = postgres_server.url(pg_url.rsplit("/", 1)[1], password="hunter2")
    with pytest.raises(DatabaseError, match="refused the bot's credentials") as raised:
        await open_storage(wrong)
    assert "hunter2" not in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(DatabaseError, match="does not exist") as raised:
        await open_storage(postgres_server.url("no_such_db"))
    assert "test-pw" not in str(raised.value)
    closed = "postgresql://bot:hunter2@127.0.0.1:9/bot"
    with pytest.raises(DatabaseError, match="cannot reach the database") as raised:
        await open_storage(closed)
    assert "hunter2" not in str(raised.value) and "***" in str(raised.value)


async def test_backup_on_postgresql_points_at_pg_dump(pg_url: str, tmp_path: Path) -> None:
    store = await open_storage(pg_url)
    try:
        with pytest.raises(DatabaseError, match="pg_dump"):
            await store.backup(tmp_path / "copy.sqlite3")
    finally:
        await store.close()
    assert not (tmp_path / "copy.sqlite3").exists()


async def test_two_processes_claiming_the_same_alerts_never_both_get_them(pg_url: str) -> None:
    first, second = await open_storage(pg_url), await open_storage(pg_url)
    try:
        await first.chats.record(42, "private", "Ada", "en", NOW)
        await first.papers.upsert_many([make_paper(n) for n in range(20)], NOW)
        await first.outbox.enqueue(
            [Alert(42, f"2611.{10000 + n}", 1, "new") for n in range(20)], NOW)
        ids = [row.id for row in await first.outbox.pending_for_chat(42)]
        wins = await asyncio.gather(*(
            store.outbox.claim(ids[n:n + 2], NOW + 1)
            for n in range(0, 20, 2) for store in (first, second)))
        assert sum(wins) == 10, "each pair of rows is claimed exactly once"
        assert (await first.outbox.counts())["sending"] == 20
    finally:
        await first.close()
        await second.close()


def test_sqlite_placeholders_become_numbered_ones_outside_literals_and_casts() -> None:
    assert placeholders("SELECT ? , '?', x::text FROM t WHERE a = ? AND b = 'it''s ?'",
                        (1, 2)) == (
        "SELECT $1 , '?', x::text FROM t WHERE a = $2 AND b = 'it''s ?'", [1, 2])
    assert placeholders("UPDATE t SET a = :new WHERE a = :old OR b = :new",
                        {"old": 1, "new": 2}) == (
        "UPDATE t SET a = $1 WHERE a = $2 OR b = $1", [2, 1])


def test_the_lock_waits_for_a_server_that_does_not_answer_yet(
        postgres_server: PostgresServer, pg_url: str) -> None:
    """As for Telegram at start: 1, 2, 4 … s apart, a line each, never the password; the
    bot's own lock is then taken as soon as the server answers."""
    waits: list[float] = []

    class Stop(Exception):
        pass

    def sleep(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 4:
            raise Stop

    with pytest.raises(Stop):
        PostgresLock("postgresql://bot:hunter2@127.0.0.1:9/bot").acquire(sleep=sleep)
    assert waits == [1, 2, 4, 8]
    lock = PostgresLock(pg_url).acquire(sleep=sleep)
    try:
        with pytest.raises(DatabaseLocked, match=f"pid {os.getpid()}"):
            PostgresLock(pg_url).acquire(sleep=sleep)
    finally:
        lock.release()
    PostgresLock(pg_url).acquire(sleep=sleep).release()

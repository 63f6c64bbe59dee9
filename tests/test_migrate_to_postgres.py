"""Moving up: `python -m bot migrate --to postgresql://…` copies a SQLite database whole into an
empty PostgreSQL database; started there, the bot sends nothing twice and misses nothing."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.models import Alert, Feedback, ForYouPick, ForYouRound, GroupMember
from bot.storage import open_storage
from bot.storage.errors import DatabaseError
from bot.storage.postgres.move import move_to_postgres
from bot.storage.postgres.schema import TABLES
from tests.conftest import TOKEN, make_paper, postgres_rows
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[1]
DAY = 86_400.0
START = 1_790_000_000.0
LAB, ADA, GROUP = -1001500000001, 4242, -4001


async def a_week_of_use(path: Path) -> None:
    """Chats, subscriptions in topics, a week of papers and their revisions, saves with
    savers, feedback, alerts sent (threads) and pending, a For-you message, sources."""
    store = await open_storage(path)
    try:
        for chat_id, kind in ((LAB, "supergroup"), (ADA, "private"), (GROUP, "group")):
            await store.chats.record(chat_id, kind, f"chat {chat_id}", "en", START)
        await store.chats.set_digest(ADA, "08:00", START)
        await store.subscriptions.add(LAB, "cat:cs.LG", "cs.LG", START, topic_id=17)
        await store.subscriptions.add(ADA, 'au:"yoneki"', "au:Yoneki", START)
        await store.topics.remember(LAB, 17, "Methods")
        message_id = 100
        for day in range(7):
            now = START + day * DAY
            papers = [make_paper(day * 20 + n) for n in range(20)]
            if day:
                papers.append(make_paper((day - 1) * 20, version=2, title="Revised title"))
            await store.papers.upsert_many(papers, now)
            alerts = [Alert(LAB, p.arxiv_id, p.version, "new" if p.version == 1 else "revision",
                            (1,), ("cat:cs.LG",), topic_id=17) for p in papers]
            await store.outbox.enqueue(alerts, now)
            if day < 6:  # the last day's alerts are still pending
                for row in await store.outbox.pending_for_chat(LAB):
                    assert await store.outbox.claim([row.id], now)
                    message_id += 1
                    await store.outbox.mark_sent([row.id], message_id, now, alone=True)
        await store.saved.save(LAB, "2611.10003", 1, START, GroupMember(77, "Eiko"))
        await store.saved.save_many(ADA, [("2611.10004", 1), ("2611.10005", 1)], START)
        await store.feedback.set(ADA, "2611.10006", Feedback.MORE, START)
        await store.feedback.set(ADA, "2611.10007", Feedback.LESS, START)
        await store.rankings.set_for_you(ADA, 5, START)
        await store.for_you_outbox.enqueue([ForYouRound(ADA, "2026-09-21", (
            ForYouPick("2611.10008", 1, "Sparse attention", ("attention",)),))], START)
        await store.sources.record_success("https://rss.arxiv.org/rss/cs", START, 200, 120,
                                           '"etag"', None)
        await store.guides.record_call(ADA, START)
    finally:
        await store.close()


def table_rows(url: str, source: Path, table: str) -> tuple[list[dict], list[dict]]:
    """A table's rows on both sides, by column name (the schemas order some columns
    differently), in the same order."""
    columns = [r[0] for r in postgres_rows(
        url, "SELECT column_name FROM information_schema.columns WHERE table_name = ? "
        "ORDER BY ordinal_position", (table,))]
    listed = ", ".join(columns)
    sql = f"SELECT {listed} FROM {table} ORDER BY {listed}"
    with contextlib.closing(sqlite3.connect(source)) as db:
        lite = db.execute(sql).fetchall()
    pg = postgres_rows(url, sql)
    return ([dict(zip(columns, r, strict=True)) for r in pg],
            [dict(zip(columns, r, strict=True)) for r in lite])


@pytest.fixture
def empty_postgres(postgres_server: PostgresServer):
    url = postgres_server.new_database()
    yield url
    postgres_server.drop_database(url)


async def test_every_row_of_every_table_arrives_as_it_was(tmp_path: Path,
                                                          empty_postgres: str) -> None:
    source = tmp_path / "bot.sqlite3"
    await a_week_of_use(source)

    copied = await move_to_postgres(source, empty_postgres)

    assert set(copied) == set(TABLES)
    assert copied["outbox"] == 7 * 20 + 6 and copied["alert_threads"] > 0
    for table in TABLES:
        pg, lite = table_rows(empty_postgres, source, table)
        assert pg == lite, table


async def test_after_the_move_nothing_sent_goes_again_and_nothing_pending_is_missed(
        tmp_path: Path, empty_postgres: str) -> None:
    source = tmp_path / "bot.sqlite3"
    await a_week_of_use(source)
    await move_to_postgres(source, empty_postgres)
    lite, pg = await open_storage(source), await open_storage(empty_postgres)
    try:
        now = START + 7 * DAY
        assert await pg.outbox.due_chats(now) == await lite.outbox.due_chats(now) == [LAB]
        assert ([r.alert for r in await pg.outbox.pending_for_chat(LAB)]
                == [r.alert for r in await lite.outbox.pending_for_chat(LAB)])
        assert len(await pg.outbox.pending_for_chat(LAB)) == 21, "the last day's 20 and a revision"
        # The same alerts again (the next poll of the same feed) queue nothing on either.
        again = [Alert(LAB, make_paper(n).arxiv_id, 1, "new", topic_id=17) for n in range(140)]
        assert await pg.outbox.enqueue(again, now) == await lite.outbox.enqueue(again, now) == 0
        # New ids continue after the copied ones.
        sub = await pg.subscriptions.add(ADA, "cat:cs.CL", "cs.CL", now)
        assert sub.subscription is not None and sub.subscription.number == 2
        assert await pg.outbox.thread_starts(LAB, 17, ["2611.10000"]) == \
            await lite.outbox.thread_starts(LAB, 17, ["2611.10000"])
        assert (await pg.saved.record(LAB, "2611.10003")).saver == GroupMember(77, "Eiko")
    finally:
        await lite.close()
        await pg.close()


async def test_a_database_that_is_not_empty_is_refused_and_keeps_its_rows(
        tmp_path: Path, empty_postgres: str) -> None:
    source = tmp_path / "bot.sqlite3"
    await a_week_of_use(source)
    await move_to_postgres(source, empty_postgres)
    with pytest.raises(DatabaseError, match="is not empty"):
        await move_to_postgres(source, empty_postgres)
    assert postgres_rows(empty_postgres, "SELECT COUNT(*) FROM outbox") == [(146,)]


def test_the_command_moves_a_stopped_bots_database_in_one_go(
        tmp_path: Path, empty_postgres: str) -> None:
    import asyncio

    source = tmp_path / "data" / "bot.sqlite3"
    source.parent.mkdir()
    asyncio.run(a_week_of_use(source))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "DATABASE_"))}
    env.update(PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN=TOKEN, DATABASE_PATH=str(source))
    result = subprocess.run([sys.executable, "-m", "bot", "migrate", "--to", empty_postgres],
                            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "outbox: 146 rows" in result.stdout
    assert "test-pw" not in result.stdout + result.stderr, "the password is never shown"
    again = subprocess.run([sys.executable, "-m", "bot", "migrate", "--to", empty_postgres],
                           cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 2
    assert len(again.stderr.strip().splitlines()) == 1 and "not empty" in again.stderr

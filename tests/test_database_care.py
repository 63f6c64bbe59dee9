"""Database care: online backups while the bot runs, pruning, migrations from every version."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from bot.core.models import Alert, ForYouPick, ForYouRound
from bot.services.upkeep import prune
from bot.storage import open_storage
from bot.storage.sqlite.db import Database
from bot.storage.sqlite.migrations import LATEST_VERSION, MIGRATIONS
from tests.conftest import Harness, make_paper

ROOT = Path(__file__).resolve().parents[1]
DAY = 86400.0


async def test_backup_command_copies_the_live_database(harness: Harness, tmp_path: Path) -> None:
    await harness.ask(9001, "/follow cs.LG")
    harness.serve_feed([make_paper(n) for n in range(1, 6)])
    await harness.poll()
    target = tmp_path / "backups" / "copy.sqlite3"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TELEGRAM_", "DATABASE_"))}
    env.update(PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN=harness.settings.telegram_bot_token,
               DATABASE_PATH=str(harness.settings.database_path))
    # The bot keeps running (and holding its connection) while the copy is made.
    result = subprocess.run([sys.executable, "-m", "bot", "backup", str(target)], env=env,
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "backup written" in result.stdout
    copy = sqlite3.connect(target)
    try:
        assert copy.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert copy.execute("SELECT COUNT(*) FROM papers").fetchone()[0] == 5
        assert copy.execute("SELECT query FROM subscriptions").fetchall() == [("cat:cs.LG",)]
        assert copy.execute("SELECT COUNT(*) FROM outbox WHERE status = 'sent'").fetchone()[0] == 5
    finally:
        copy.close()
    assert "1. cs.LG" in (await harness.ask(9001, "/list")).text, "the bot is still serving"


async def test_prune_forgets_old_deliveries_and_papers_but_keeps_the_library(
        database_url: str) -> None:
    store = await open_storage(database_url)
    try:
        start = 1_790_000_000.0
        await store.chats.record(1, "private", "Ada", "en", start)
        papers = [make_paper(n) for n in range(1, 5)]
        await store.papers.upsert_many(papers, start)
        await store.outbox.enqueue([Alert(1, p.arxiv_id, 1, "new") for p in papers], start)
        rows = await store.outbox.pending_for_chat(1)
        await store.outbox.mark_sent([rows[0].id, rows[1].id], 10, start)  # 3 and 4 stay pending
        await store.saved.save(1, papers[0].arxiv_id, 1, start)

        assert await prune(store, start + 29 * DAY) == (0, 0), "nothing is old enough yet"
        alerts, gone = await prune(store, start + 91 * DAY)
        assert alerts == 2, "sent alerts older than 30 days go"
        assert gone == 1, "only the unsaved paper without pending alerts goes"
        assert await store.papers.get(papers[0].arxiv_id) is not None, "saved papers stay"
        assert await store.papers.get(papers[0].arxiv_id, 1) is not None, "with their versions"
        assert await store.papers.get(papers[1].arxiv_id) is None
        assert len(await store.outbox.pending_for_chat(1)) == 2, "pending alerts are kept"
        assert len(await store.saved.all(1)) == 1
    finally:
        await store.close()


@pytest.mark.parametrize("from_version", range(LATEST_VERSION))
async def test_migrations_run_from_every_earlier_schema_version(
        tmp_path: Path, from_version: int) -> None:
    path = tmp_path / "old.sqlite3"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=from_version)
    assert await db.schema_version() == from_version
    if from_version >= 1:
        await db.execute("INSERT INTO chats (id, created_at, last_seen_at) VALUES (1, 0, 0)")
    await db.close()

    db = await Database.open(path)
    try:
        assert await db.schema_version() == LATEST_VERSION
        applied = await db.fetchval("SELECT COUNT(*) FROM schema_version")
        assert applied == LATEST_VERSION
        if from_version >= 1:
            assert await db.fetchval("SELECT COUNT(*) FROM chats") == 1, "data survives"
    finally:
        await db.close()


async def test_a_for_you_setting_from_before_its_outbox_queues_to_general(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = await Database.open(path, migrate=False)
    await db.migrate(target=14)
    await db.execute("INSERT INTO chats (id, created_at, last_seen_at) VALUES (1, 0, 0)")
    await db.execute("INSERT INTO foryou (chat_id, count, enabled_at) VALUES (1, 5, 0)")
    await db.close()

    store = await open_storage(path)
    try:
        round_ = ForYouRound(1, "2026-12-01", (ForYouPick("2611.10001", 1, None, ("graph",)),))
        assert await store.for_you_outbox.enqueue([round_], 100.0) == 1
        [row] = await store.for_you_outbox.pending_for_chat(1)
        assert (row.topic_id, row.picks) == (0, round_.picks)
        [setting] = await store.rankings.for_you_chats()
        assert (setting.count, setting.last_sent_at) == (5, 100.0), "the day marked with it"
    finally:
        await store.close()


async def test_prune_forgets_old_for_you_messages_and_expires_held_ones(
        database_url: str) -> None:
    store = await open_storage(database_url)
    try:
        start = 1_790_000_000.0
        for chat_id in (1, 2):
            await store.chats.record(chat_id, "private", "Ada", "en", start)
            await store.rankings.set_for_you(chat_id, 5, start)
        picks = (ForYouPick("2611.10001", 1),)
        await store.for_you_outbox.enqueue(
            [ForYouRound(1, "2026-11-20", picks), ForYouRound(2, "2026-11-20", picks)], start)
        [sent] = await store.for_you_outbox.pending_for_chat(1)
        await store.for_you_outbox.mark_sent([sent.id], 10, start)
        await store.chats.mark_inactive(2, "Forbidden: bot was blocked by the user", start)

        await prune(store, start + 15 * DAY)
        assert [r.status for r in await store.for_you_outbox.of_chat(2)] == ["expired"]
        assert len(await store.for_you_outbox.of_chat(1)) == 1, "kept for 30 days"
        await prune(store, start + 31 * DAY)
        assert await store.for_you_outbox.of_chat(1) == []
        assert await store.for_you_outbox.of_chat(2) == []
    finally:
        await store.close()


def test_migration_numbers_are_consecutive_from_one() -> None:
    assert [number for number, _, _ in MIGRATIONS] == list(range(1, LATEST_VERSION + 1))


async def test_upgrade_recleans_stored_author_names_and_keeps_queries_as_typed(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = await Database.open(path, migrate=False)
    recleaning = next(n for n, about, _ in MIGRATIONS if "without affiliations" in about)
    await db.migrate(target=recleaning - 1)
    # What older versions stored for `Franz Gähler (Institut für …, Universität Stuttgart), A. Lee`
    old_authors = '["Franz Gähler (Institut für Theoretische Physik", "Universität Stuttgart)", ' \
                  '"A. Lee"]'
    await db.execute("INSERT INTO chats (id, created_at, last_seen_at) VALUES (1, 0, 0)")
    for table, extra in (("papers", ", latest_version, first_seen_at, last_changed_at"),
                         ("paper_versions", ", version, seen_at")):
        await db.execute(
            f"INSERT INTO {table} (arxiv_id, title, authors, abstract, categories{extra}) "
            "VALUES ('0704.0001', 'T', ?, 'A', '[]', 1, 0" + (", 0)" if table == "papers" else ")"),
            (old_authors,))
    await db.execute("INSERT INTO subscriptions (chat_id, query, raw_query, created_at) "
                     "VALUES (1, 'au:yoneki', '  au:Yoneki ', 0), (1, 'cat:cs.LG', '', 0)")
    await db.close()

    store = await open_storage(path)
    try:
        paper = await store.papers.get("0704.0001")
        assert paper is not None and paper.authors == ("Franz Gähler", "A. Lee")
        version = await store.papers.get("0704.0001", 1)
        assert version is not None and version.authors == ("Franz Gähler", "A. Lee")
        assert [s.display for s in await store.subscriptions.for_chat(1)] == [
            "au:Yoneki", "cat:cs.LG"]
    finally:
        await store.close()


async def test_upgrade_keeps_alerts_in_general_and_threads_the_ones_sent_alone(
        tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    db = await Database.open(path, migrate=False)
    threads = next(n for n, about, _ in MIGRATIONS if about.startswith("alert threads"))
    await db.migrate(target=threads - 1)
    await db.execute("INSERT INTO chats (id, created_at, last_seen_at) VALUES (1, 0, 0)")
    # 0704.0001 went alone as message 5; 0704.0002 and 0704.0003 together in digest 6.
    for arxiv_id, status, message_id in (("0704.0001", "sent", 5), ("0704.0002", "sent", 6),
                                         ("0704.0003", "sent", 6), ("0704.0004", "pending", None)):
        await db.execute(
            "INSERT INTO outbox (chat_id, arxiv_id, version, kind, status, created_at, due_at, "
            "message_id, sent_at) VALUES (1, ?, 1, 'new', ?, 0, 0, ?, 1)",
            (arxiv_id, status, message_id))
    await db.close()

    store = await open_storage(path)
    try:
        ids = ["0704.0001", "0704.0002", "0704.0003", "0704.0004"]
        assert await store.outbox.thread_starts(1, 0, ids) == {"0704.0001": 5}
        [pending] = await store.outbox.pending_for_chat(1)
        assert (pending.alert.arxiv_id, pending.alert.topic_id) == ("0704.0004", 0)
        assert (await store.outbox.counts())["sent"] == 3
    finally:
        await store.close()


def run_bot_command(tmp_path: Path, database: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "DATABASE_", "HEALTH_", "POLL_"))}
    env.update(PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN="123456:TEST-care-token",
               DATABASE_PATH=str(database), TELEGRAM_API_URL="http://127.0.0.1:9")
    return subprocess.run([sys.executable, "-m", "bot", *args], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", [("run",), ("poll-once", "--dry-run"), ("health",)])
async def test_a_database_newer_than_the_code_is_refused_in_one_line(
        tmp_path: Path, command: tuple[str, ...]) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    db = await Database.open(database)
    await db.execute(f"INSERT INTO schema_version (version) VALUES ({LATEST_VERSION + 1})")
    await db.close()
    result = run_bot_command(tmp_path, database, *command)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert f"schema version {LATEST_VERSION + 1}" in lines[0]
    assert f"({LATEST_VERSION})" in lines[0]
    copy = sqlite3.connect(database)
    try:
        assert copy.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] == \
            LATEST_VERSION + 1, "left as it was"
    finally:
        copy.close()


def test_backup_of_a_mistyped_database_path_is_refused(tmp_path: Path) -> None:
    mistyped = tmp_path / "data" / "bot.sqlite"
    target = tmp_path / "backup.sqlite3"
    result = run_bot_command(tmp_path, mistyped, "backup", str(target))
    assert result.returncode == 2
    assert result.stderr.strip() == (f"database error: no database at {str(mistyped)!r} "
                                     "(check DATABASE_PATH)")
    assert not mistyped.exists() and not target.exists(), "nothing created"


async def test_pruning_that_frees_a_large_share_vacuums_and_logs_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        start = 1_790_000_000.0
        long_abstract = "A long abstract about attention. " * 200
        papers = [make_paper(n, abstract=long_abstract) for n in range(1, 301)]
        await store.papers.upsert_many(papers, start)
        size = await store.size_bytes()
        with caplog.at_level("INFO", logger="bot.services.upkeep"):
            assert await prune(store, start + 91 * DAY) == (0, 300)
        assert await store.size_bytes() < size / 2, "the file shrank"
        freed = [r.getMessage() for r in caplog.records if "vacuum freed" in r.getMessage()]
        assert len(freed) == 1 and "MB" in freed[0]
        caplog.clear()
        with caplog.at_level("INFO", logger="bot.services.upkeep"):
            await prune(store, start + 92 * DAY)
        assert not [r for r in caplog.records if "vacuum" in r.getMessage()], \
            "nothing freed, no vacuum"
    finally:
        await store.close()


async def test_the_daily_upkeep_cuts_the_write_ahead_log_to_nothing(tmp_path: Path) -> None:
    """The writer checkpoints only every WAL_AUTOCHECKPOINT_PAGES pages (a big poll writes far
    less to disk that way), so the log's file would keep its largest size on disk for good;
    the daily upkeep copies it back and cuts it, as an operator watching the disk expects."""
    store = await open_storage(f"sqlite:///{tmp_path / 'bot.sqlite3'}")
    log = tmp_path / "bot.sqlite3-wal"
    try:
        start = 1_790_000_000.0
        await store.chats.record(1, "private", "Ada", "en", start)
        papers = [make_paper(n) for n in range(1, 401)]
        await store.papers.upsert_many(papers, start)
        await store.outbox.enqueue([Alert(1, p.arxiv_id, 1, "new") for p in papers], start)
        assert log.stat().st_size > 100_000, "the commits are in the log, not yet in the file"
        await store.upkeep()
        assert log.stat().st_size == 0
        assert len(await store.outbox.pending_for_chat(1)) == 400, "nothing lost on the way"
    finally:
        await store.close()

"""A damaged or unusable database: `python -m bot` refuses to start within 5 s with one line
that names the file and the way back, exit 2, no traceback, and nothing left running; a
database that turns damaged while the bot runs stops it the same way."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot import runtime
from bot.storage.errors import DatabaseDamaged, DatabaseError
from bot.storage.sqlite.storage import SqliteStorage
from tests.conftest import Harness, make_paper, make_settings
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
CHAT = 4242
START_LIMIT = 5.0  # seconds: a refusal slower than this counts as a hang
PAGE = 4096  # SQLite's default page size, which the bot keeps


def bot_env(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
            database: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_", "POLL_"))}
    env.update(
        PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN=tg.token, TELEGRAM_API_URL=tg.api_url,
        ARXIV_RSS_URL=arxiv.rss_url, ARXIV_API_URL=arxiv.api_url, DATABASE_PATH=str(database),
        ARXIV_MIN_INTERVAL_SECONDS="0", POLL_INTERVAL_SECONDS="3600", HF_PAPERS_URL="off",
    )
    return env


def start(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """`python -m bot`, which must have ended by START_LIMIT (a TimeoutExpired fails the test)."""
    return subprocess.run([sys.executable, "-m", "bot"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=START_LIMIT)


async def make_database(path: Path, papers: int = 200) -> None:
    """A real database of several hundred pages: a chat that saved every paper."""
    storage = await SqliteStorage.open(path)
    try:
        await storage.chats.record(CHAT, "private", "Ada", "en", 1_790_000_000.0)
        batch = [make_paper(n, abstract="Sparse attention at scale. " * 110)
                 for n in range(1, papers + 1)]
        await storage.papers.upsert_many(batch, 1_790_000_000.0)
        await storage.saved.save_many(CHAT, [(p.arxiv_id, 1) for p in batch], 1_790_000_000.0)
    finally:
        await storage.close()


def overwrite_pages(path: Path, pages: list[int], seed: int) -> None:
    """Random bytes over the given pages (numbered from 1, as SQLite does)."""
    noise = random.Random(seed)
    with path.open("r+b") as file:
        for page in pages:
            file.seek((page - 1) * PAGE)
            file.write(noise.randbytes(PAGE))


def header_overwritten(path: Path) -> None:
    overwrite_pages(path, [1], seed=1)


def middle_overwritten(path: Path) -> None:
    middle = path.stat().st_size // PAGE // 2
    overwrite_pages(path, [middle], seed=2)


def random_bytes(path: Path) -> None:
    path.write_bytes(random.Random(3).randbytes(64 * 1024))


def folder_in_its_place(path: Path) -> None:
    path.unlink()
    path.mkdir()
    (path / "bot.sqlite3").write_bytes(b"")


@pytest.mark.parametrize("damage", [header_overwritten, middle_overwritten, random_bytes,
                                    folder_in_its_place])
async def test_a_database_the_bot_cannot_use_ends_start_up_in_one_line(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        damage: Callable[[Path], None]) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    await make_database(database)
    assert database.stat().st_size > 200 * PAGE
    damage(database)

    result = start(bot_env(tmp_path, fake_telegram, fake_arxiv, database), tmp_path)

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    [line] = lines
    assert line.startswith("database error: ") and str(database) in line
    if database.is_dir():
        assert "is a folder, not a database file (check DATABASE_PATH)" in line
    else:
        assert "is damaged" in line
        assert "restore a backup made with `python -m bot backup`" in line
        assert f"sqlite3 {database} .recover | sqlite3 " in line
    assert not fake_telegram.calls, "refused before Telegram was tried"


async def test_a_database_another_program_holds_ends_start_up_in_one_line(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    await make_database(database, papers=5)
    holder = sqlite3.connect(database, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # an sqlite3 shell in the middle of a write
        holder.execute("DELETE FROM saved")
        result = start(bot_env(tmp_path, fake_telegram, fake_arxiv, database), tmp_path)
    finally:
        holder.close()

    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"database error: the database {str(database)!r} is locked by "
                               "another program")
    assert not fake_telegram.calls


def pages_of(database: Path, table: str) -> list[int]:
    """The pages of a table and its indexes (SQLite's dbstat)."""
    db = sqlite3.connect(f"{database.resolve().as_uri()}?mode=ro", uri=True)
    try:
        indexes = [row[0] for row in db.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ?", (table,))]
        names = [table, *indexes]
        return [row[0] for row in db.execute(
            f"SELECT pageno FROM dbstat WHERE name IN ({','.join('?' * len(names))})", names)]
    finally:
        db.close()


async def test_a_database_damaged_while_the_bot_runs_stops_it_in_one_line(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    await make_database(database)
    saved_pages = pages_of(database, "saved")
    bot = subprocess.Popen([sys.executable, "-m", "bot"], cwd=tmp_path,
                           env=bot_env(tmp_path, fake_telegram, fake_arxiv, database),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        fake_telegram.wait_for_sync(lambda: fake_telegram.waiting_polls > 0, timeout=30,
                                    what="the bot to start long polling")
        # Pages the bot has not read since it started: its next read of the library meets them.
        overwrite_pages(database, saved_pages, seed=4)
        fake_telegram.send_command(CHAT, "/saved")
        _, stderr = bot.communicate(timeout=15)
    finally:
        if bot.poll() is None:
            bot.send_signal(signal.SIGKILL)
            bot.communicate()

    assert bot.returncode == 2, stderr
    assert "Traceback" not in stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith(f"database error: the database {str(database)!r} is damaged ")
    assert "restore a backup made with `python -m bot backup`" in last
    assert sum("database error" in line for line in stderr.splitlines()) == 1, stderr
    assert "stopping (the database is damaged)" in stderr


async def test_a_job_that_meets_a_damaged_database_stops_the_run_and_nothing_logs_a_traceback(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(runtime, "_start_deadline", lambda: None)  # its os._exit would end pytest
    # Not started: the stop then waits for a start that never comes, and touches no event loop.
    application = runtime.build_bot(make_settings(tmp_path, fake_telegram, fake_arxiv))
    stopper = runtime.Stopper(application)
    stopper.watch_errors()
    damaged = DatabaseDamaged("the database 'x' is damaged", "database disk image is malformed")
    try:
        # As PTB reports a job's exception (the poll, the drain, the upkeep).
        with caplog.at_level("INFO"):
            await application.process_error(None, damaged)
        assert stopper.damaged is damaged, "the run ends by raising it: __main__ prints it"
        assert stopper.requested.is_set()
        assert "stopping (the database is damaged)" in caplog.messages
        assert not [r for r in caplog.records if r.exc_info], "no traceback logged"
    finally:
        await stopper.finish()


async def test_a_drain_takes_a_damaged_database_for_everyone_s_trouble_not_one_chat_s(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    await harness.ask(9001, "/follow cs.LG")
    harness.serve_feed([make_paper(1)])
    await harness.services.pipeline.poll()  # queued, not yet sent
    sender = harness.services.sender

    async def page_unreadable(*args: object, **kwargs: object) -> None:
        raise DatabaseDamaged("the database 'x' is damaged", "database disk image is malformed")

    monkeypatch.setattr(sender, "_deliver_chat", page_unreadable)
    with pytest.raises(DatabaseDamaged):
        await sender.drain()


async def test_a_full_disk_fails_the_write_in_the_operator_s_words_and_the_database_goes_on(
        tmp_path: Path) -> None:
    storage = await SqliteStorage.open(tmp_path / "bot.sqlite3")
    papers = [make_paper(n, abstract="Sparse attention at scale. " * 110) for n in range(1, 40)]
    try:
        pages = await storage.db.fetchval("PRAGMA page_count")
        await storage.db.execute(f"PRAGMA max_page_count = {pages}")  # as a disk with no room
        with pytest.raises(DatabaseError) as raised:
            await storage.papers.upsert_many(papers, 1_790_000_000.0)
        assert not isinstance(raised.value, DatabaseDamaged), "a full disk stops nothing"
        assert str(raised.value).startswith(
            f"the disk holding the database {str(tmp_path / 'bot.sqlite3')!r} is full")
        await storage.db.execute("PRAGMA max_page_count = 1073741823")  # space freed
        await storage.papers.upsert_many(papers, 1_790_000_000.0)
        assert await storage.db.fetchval("SELECT COUNT(*) FROM papers") == len(papers)
    finally:
        await storage.close()

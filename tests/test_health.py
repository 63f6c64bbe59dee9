"""`python -m bot health` for a service manager, and /status showing the same facts."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bot.config import load_settings
from bot.core.models import Beat, IntegrityCheck, Leadership, Role
from bot.jobs.poll import poll_job
from bot.jobs.routine import prune_job, telegram_heartbeat_job
from bot.services.health import assess
from bot.storage import open_storage
from bot.storage.errors import DatabaseDamaged
from tests.conftest import Harness, make_paper

ROOT = Path(__file__).resolve().parents[1]


async def write_beats(database: Path, beats: dict[Beat, float],
                      integrity: IntegrityCheck | None = None) -> None:
    storage = await open_storage(database)
    try:
        for beat, at in beats.items():
            await storage.heartbeats.beat(beat, at)
        if integrity is not None:
            await storage.heartbeats.record_check(integrity)
    finally:
        await storage.close()


def health(tmp_path: Path, database: Path, **env: str) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items()
                   if not k.startswith(("TELEGRAM_", "DATABASE_", "HEALTH_", "POLL_"))}
    environment.update(PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN="123456:TEST-health-token",
                       DATABASE_PATH=str(database), **env)
    return subprocess.run([sys.executable, "-m", "bot", "health"], env=environment,
                          cwd=tmp_path, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("arxiv_age", "telegram_age", "code", "stale"), [
    (300, 30, 0, None),
    (4 * 3600, 30, 1, "arXiv poll"),  # the default limit: 3 x the 3600 s poll ceiling
    (300, 3600, 1, "Telegram call"),
    (None, 30, 1, "no successful arXiv poll yet"),
])
def test_health_is_fresh_only_when_both_beats_are_recent(
        tmp_path: Path, arxiv_age: float | None, telegram_age: float, code: int,
        stale: str | None) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    now = time.time()
    beats = {Beat.TELEGRAM: now - telegram_age}
    if arxiv_age is not None:
        beats[Beat.ARXIV_POLL] = now - arxiv_age
    asyncio.run(write_beats(database, beats))
    result = health(tmp_path, database)
    assert result.returncode == code, result
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1
    if stale is None:
        assert lines[0].startswith("healthy: ")
    else:
        assert lines[0].startswith("stale: ")
        assert stale in lines[0].split("; fine:")[0], "the stale part names what is stale"


def test_health_thresholds_follow_the_settings(tmp_path: Path) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    now = time.time()
    asyncio.run(write_beats(database, {Beat.TELEGRAM: now - 30, Beat.ARXIV_POLL: now - 2 * 3600}))
    assert health(tmp_path, database, POLL_INTERVAL_SECONDS="3600").returncode == 0, \
        "three missed hourly polls is the default limit"
    assert health(tmp_path, database, HEALTH_MAX_ARXIV_AGE_SECONDS="3600").returncode == 1


def test_health_without_a_database_fails_in_one_line(tmp_path: Path) -> None:
    result = health(tmp_path, tmp_path / "nowhere" / "bot.sqlite3")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("database error: no database at")


async def test_the_running_bot_beats_and_status_shows_it(harness: Harness) -> None:
    status = await harness.ask(1, "/status")
    assert "❌ Last successful arXiv poll: never" in status.text
    # Telegram has answered every call so far (getMe, getUpdates): that counts, stored or not.
    assert "✅ Last successful Telegram call: just now" in status.text
    assert Beat.TELEGRAM not in await harness.services.storage.heartbeats.all()
    harness.serve_feed([make_paper(1)])
    context = harness.app.context_types.context(harness.app)
    await poll_job(harness.services, context)
    await telegram_heartbeat_job(harness.services, context)
    beats = await harness.services.storage.heartbeats.all()
    assert set(beats) == {Beat.ARXIV_POLL, Beat.TELEGRAM}
    status = await harness.ask(1, "/status")
    assert "✅ Last successful arXiv poll: just now (limit 3 h)" in status.text
    assert "✅ Last successful Telegram call: just now (limit 10 min)" in status.text


async def test_a_failed_poll_does_not_beat(harness: Harness) -> None:
    harness.arxiv.fail_next(503, times=20)
    context = harness.app.context_types.context(harness.app)
    async with harness.backoff_recorded() as backoff:
        await poll_job(harness.services, context)
    assert len(backoff.delays) == 3, "every attempt failed: the poll failed"
    assert Beat.ARXIV_POLL not in await harness.services.storage.heartbeats.all()


def test_health_on_a_database_not_yet_migrated_is_stale_not_a_traceback(tmp_path: Path) -> None:
    from bot.storage.sqlite.db import Database
    from bot.storage.sqlite.migrations import MIGRATIONS

    heartbeats = next(n for n, about, _ in MIGRATIONS if about.startswith("heartbeats"))

    async def old_schema(path: Path) -> None:
        db = await Database.open(path, migrate=False)
        await db.migrate(target=heartbeats - 1)
        await db.close()

    database = tmp_path / "data" / "bot.sqlite3"
    asyncio.run(old_schema(database))
    result = health(tmp_path, database)
    assert result.returncode == 1
    assert result.stdout.startswith("stale: no successful arXiv poll yet")
    assert "Traceback" not in result.stderr


async def test_status_shows_telegram_stale_when_its_calls_stop_succeeding(
        harness: Harness) -> None:
    context = harness.app.context_types.context(harness.app)
    await telegram_heartbeat_job(harness.services, context)
    stored = (await harness.services.storage.heartbeats.all())[Beat.TELEGRAM]
    assert stored == harness.services.run.telegram_ok_at, "the job stores the last answer"
    harness.services.run.telegram_ok_at = None  # as if nothing was answered since the last beat
    harness.clock.advance(3600)
    harness.tg.fail_next("getMe", 502)
    await telegram_heartbeat_job(harness.services, context)  # getMe fails: nothing new to store
    assert (await harness.services.storage.heartbeats.all())[Beat.TELEGRAM] == stored


PROBLEM = "On tree page 72 cell 4: Offset 0 out of range 967..4092"


@pytest.mark.parametrize(("problem", "code", "start", "end"), [
    (None, 0, "healthy: last successful arXiv poll", "; integrity ok 3 h ago"),
    (PROBLEM, 1, f"unhealthy: integrity FAILED 3 h ago: {PROBLEM}; fine: last successful "
                 "arXiv poll", "(limit 10 min)"),
])
def test_health_reports_the_last_integrity_check(
        tmp_path: Path, problem: str | None, code: int, start: str, end: str) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    now = time.time()
    asyncio.run(write_beats(database, {Beat.TELEGRAM: now - 30, Beat.ARXIV_POLL: now - 300},
                            IntegrityCheck(now - 3 * 3600 - 10, problem)))
    result = health(tmp_path, database)
    assert result.returncode == code, result
    line = result.stdout.strip()
    assert line.startswith(start) and line.endswith(end), line


def test_health_before_the_first_integrity_check_says_so_and_passes(tmp_path: Path) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    now = time.time()
    asyncio.run(write_beats(database, {Beat.TELEGRAM: now - 30, Beat.ARXIV_POLL: now - 300}))
    result = health(tmp_path, database)
    assert result.returncode == 0, result
    assert result.stdout.strip().endswith("; integrity not checked yet")


def damage_cell_counts(database: Path, table: str) -> None:
    """Claim more cells than a few leaf pages of `table` hold: the pages stay readable, and only
    a check of every page (or a read of those rows) finds the damage."""
    db = sqlite3.connect(database, isolation_level=None)
    try:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the pages' latest copy in the file
        leaves = [row[0] for row in db.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf'", (table,))]
    finally:
        db.close()
    assert len(leaves) > 20
    with database.open("r+b") as file:
        for page in leaves[10:12]:
            file.seek((page - 1) * 4096 + 3)  # a leaf page's header: its number of cells
            file.write((5).to_bytes(2, "big"))


async def test_the_daily_upkeep_checks_every_page_and_health_fails_on_damage(
        harness: Harness, tmp_path: Path) -> None:
    database = harness.settings.database_path
    context = harness.app.context_types.context(harness.app)
    await prune_job(harness.services, context)
    check = await harness.services.storage.heartbeats.last_check()
    assert check == IntegrityCheck(harness.clock.now()), "a sound database, checked"

    long_abstract = "Sparse attention at scale. " * 110  # one paper a page
    harness.serve_feed([make_paper(n, abstract=long_abstract) for n in range(1, 60)])
    await harness.poll()
    damage_cell_counts(database, "papers")
    harness.clock.advance(86400)
    with pytest.raises(DatabaseDamaged) as raised:
        await prune_job(harness.services, context)
    assert "out of range" in raised.value.reason
    check = await harness.services.storage.heartbeats.last_check()
    assert check == IntegrityCheck(harness.clock.now(), raised.value.reason)

    result = health(tmp_path, database)
    assert result.returncode == 1, result
    assert "integrity FAILED" in result.stdout and "out of range" in result.stdout
    assert len(result.stdout.strip().splitlines()) == 1


@pytest.mark.parametrize(("lease_age", "role", "ok", "says"), [
    (1.0, Role.LEADER, True, "healthy: leader (term 4, lease renewed 1.0 s ago); "),
    (1.0, Role.STANDBY, True, "healthy: standby (the leader is pid 7 on host-a, term 4, "),
    (1.0, None, False, "unhealthy: no bot of this instance (INSTANCE_NAME) is running"),
    (25.0, Role.STANDBY, False, "NO LEADER: the lease of term 4 (pid 7 on host-a) is 25.0 s "
                                "old, past its 10 s"),
])
def test_on_a_shared_database_health_names_the_role_and_the_lease(
        lease_age: float, role: Role | None, ok: bool, says: str) -> None:
    """PostgreSQL's `health`: the line starts with this instance's role; a standby whose
    leader's lease has run out, or an instance with no bot running, is unhealthy."""
    now = time.time()
    settings = load_settings({"TELEGRAM_BOT_TOKEN": "123456:TEST-health-token"}, None)
    lease = Leadership(term=4, leader="pid 7 on host-a", lease_age=lease_age,
                       lease_seconds=10.0, role=role)
    result = assess({Beat.ARXIV_POLL: now - 60, Beat.TELEGRAM: now - 5}, settings, now,
                    None, lease, shared=True)
    assert result.ok is ok
    assert says in result.line()
    assert "last successful arXiv poll" in result.line()

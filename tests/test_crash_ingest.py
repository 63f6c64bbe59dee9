"""A kill in the middle of an ingest transaction leaves a consistent database; the next poll
completes the work, and every alert is queued exactly once."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bot.query.matcher import evaluate
from bot.query.parser import canonical, parse
from bot.storage import Storage
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed, synth_papers
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
ITEMS = 3000
QUERY = canonical(parse("cat:cs.LG au:Nguyen"))


def poll_once(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_"))}
    env.update(
        PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN=tg.token, TELEGRAM_API_URL=tg.api_url,
        ARXIV_RSS_URL=arxiv.rss_url, ARXIV_API_URL=arxiv.api_url,
        DATABASE_PATH=str(tmp_path / "bot.sqlite3"), ARXIV_MIN_INTERVAL_SECONDS="0",
        LOG_LEVEL="WARNING",
    )
    return subprocess.Popen([sys.executable, "-m", "bot", "poll-once"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


async def seed(path: Path) -> None:
    store = await Storage.open(path)
    try:
        await store.chats.record(77, "private", "Ada", "en", time.time())
        await store.subscriptions.add(77, QUERY, QUERY, time.time())
    finally:
        await store.close()


def counts(path: Path) -> tuple[str, int, int, int]:
    db = sqlite3.connect(path)
    try:
        return (db.execute("PRAGMA integrity_check").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM papers").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM paper_versions").fetchone()[0],
                db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0])
    finally:
        db.close()


async def test_sigkill_during_the_ingest_transaction(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    database = tmp_path / "bot.sqlite3"
    await seed(database)
    fake_arxiv.set_feed(None, rss_feed(synth_papers(ITEMS, seed=7)))
    wal = tmp_path / "bot.sqlite3-wal"
    baseline = wal.stat().st_size if wal.exists() else 0

    process = poll_once(tmp_path, fake_telegram, fake_arxiv)
    deadline = time.monotonic() + 90
    # A transaction this large spills pages into the WAL before it commits: once the WAL
    # grows, the transaction is under way, and that is the moment to kill.
    while time.monotonic() < deadline and process.poll() is None:
        if wal.exists() and wal.stat().st_size > baseline + 2_000_000:
            break
        time.sleep(0.005)
    assert process.poll() is None, "poll-once finished before the kill; make the feed larger"
    process.send_signal(signal.SIGKILL)
    process.communicate(timeout=30)
    assert fake_telegram.calls_of("sendMessage") == [], "killed before delivery"

    integrity, papers, versions, alerts = counts(database)
    assert integrity == "ok"
    # All or nothing: the half-written transaction is gone, not half there.
    assert (papers, versions, alerts) == (0, 0, 0)

    fake_arxiv.clear_requests()
    finished = poll_once(tmp_path, fake_telegram, fake_arxiv)
    _, err = finished.communicate(timeout=180)
    assert finished.returncode == 0, err
    request = fake_arxiv.requests[0]
    assert request.header("If-None-Match") is None, "the killed poll stored no validators"

    integrity, papers, versions, alerts = counts(database)
    assert integrity == "ok"
    assert papers == len({p.arxiv_id for p in synth_papers(ITEMS, seed=7)})
    assert versions == papers
    query = parse(QUERY)
    expected = sum(1 for p in synth_papers(ITEMS, seed=7) if evaluate(query, p))
    assert alerts == expected > 0
    db = sqlite3.connect(database)
    try:
        sent = db.execute("SELECT COUNT(*) FROM outbox WHERE status = 'sent'").fetchone()[0]
    finally:
        db.close()
    assert sent == expected, "every queued alert was delivered (as digests: it is a flood)"

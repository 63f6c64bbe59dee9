"""A kill in the middle of an ingest leaves a consistent database; the next poll completes the
work, and every alert is queued, and delivered, exactly once.

A feed is stored in batches, each one transaction holding its papers (what "seen" means) and
every alert they make. A kill after some batches committed leaves those whole, with their
alerts, and the rest absent: the next poll finds the stored papers seen and the others new."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from bot.config import Settings
from bot.query.matcher import evaluate
from bot.query.parser import canonical, parse
from bot.storage import open_storage
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed, synth_papers
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
ITEMS = 3000
# POLL_INTERVAL_SECONDS' default: revisions wait at most that for details.
POLL_INTERVAL = Settings.poll_interval_seconds
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
    store = await open_storage(path)
    try:
        await store.chats.record(77, "private", "Ada", "en", time.time())
        await store.subscriptions.add(77, QUERY, QUERY, time.time())
    finally:
        await store.close()


def stored(path: Path) -> tuple[str, set[str], int, set[str], int]:
    """Integrity, the stored papers, their versions, the papers with an alert, the alerts."""
    db = sqlite3.connect(path)
    try:
        return (db.execute("PRAGMA integrity_check").fetchone()[0],
                {row[0] for row in db.execute("SELECT arxiv_id FROM papers")},
                db.execute("SELECT COUNT(*) FROM paper_versions").fetchone()[0],
                # A poll's new papers' alerts are staged, one row per chat, until delivery.
                {row[0] for row in db.execute(
                    "SELECT arxiv_id FROM outbox UNION SELECT j.value FROM outbox_staged s, "
                    "json_each(s.alerts, '$.papers') j")},
                db.execute("SELECT COUNT(*) FROM outbox").fetchone()[0]
                + db.execute("SELECT COALESCE(SUM(alert_count), 0) FROM outbox_staged"
                             ).fetchone()[0])
    finally:
        db.close()


def papers_stored(path: Path) -> int:
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    try:
        return int(db.execute("SELECT COUNT(*) FROM papers").fetchone()[0])
    except sqlite3.OperationalError:  # the first poll is still creating the schema
        return 0
    finally:
        db.close()


async def test_sigkill_between_the_batches_of_an_ingest(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    database = tmp_path / "bot.sqlite3"
    await seed(database)
    papers = synth_papers(ITEMS, seed=7)
    fake_arxiv.set_feed(None, rss_feed(papers))
    query = parse(QUERY)
    matching = {p.arxiv_id for p in papers if evaluate(query, p)}

    process = poll_once(tmp_path, fake_telegram, fake_arxiv)
    deadline = time.monotonic() + 90
    # Once a batch has committed, the next one is under way: that is the moment to kill.
    while time.monotonic() < deadline and process.poll() is None:
        if papers_stored(database) > 0:
            break
        time.sleep(0.005)
    assert process.poll() is None, "poll-once finished before the kill; make the feed larger"
    process.send_signal(signal.SIGKILL)
    killed_at = time.time()
    process.communicate(timeout=30)
    assert fake_telegram.calls_of("sendMessage") == [], "killed before delivery"

    integrity, kept, versions, alerted, alerts = stored(database)
    assert integrity == "ok"
    assert 0 < len(kept) < len({p.arxiv_id for p in papers}), "killed in the middle of the feed"
    assert versions == len(kept)
    # Whole batches: every stored paper has its alert, and no alert is without its paper.
    assert alerted == kept & matching
    assert alerts == len(alerted)
    kept_at_kill = kept

    fake_arxiv.clear_requests()
    finished = poll_once(tmp_path, fake_telegram, fake_arxiv)
    _, err = finished.communicate(timeout=180)
    assert finished.returncode == 0, err
    request = fake_arxiv.requests[0]
    assert request.header("If-None-Match") is None, "the killed poll stored no validators"

    integrity, kept, versions, alerted, alerts = stored(database)
    assert integrity == "ok"
    assert kept == {p.arxiv_id for p in papers}
    assert versions == len(kept)
    assert alerted == matching and alerts == len(matching) > 0, "each alert queued once"
    db = sqlite3.connect(database)
    try:
        sent = {row[0] for row in db.execute(
            "SELECT arxiv_id FROM outbox WHERE status = 'sent'")}
        waiting = {row[0] for row in db.execute(
            "SELECT arxiv_id FROM outbox WHERE status = 'pending' AND kind = 'revision' "
            "AND due_at <= ?", (killed_at + POLL_INTERVAL,))}
    finally:
        db.close()
    # A revision stored by the killed poll waited for its details, which that poll never
    # fetched: it goes out one poll interval later at the most. Everything else went now.
    assert waiting <= kept_at_kill
    assert sent | waiting == matching and not sent & waiting, "every alert delivered or due"
    # Delivered once: the chat's messages name no paper twice (a digest lists those that fit
    # its message; the rest are behind its "Show more" button, sent with it).
    texts = " ".join(m.text for m in fake_telegram.messages(77))
    assert all(texts.count(arxiv_id) <= 1 for arxiv_id in sent)

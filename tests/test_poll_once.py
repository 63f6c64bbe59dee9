"""The operator's `python -m bot poll-once [--dry-run]`, and the scheduled poll job: first poll
within 5 s of start-up, repeated every POLL_INTERVAL_SECONDS, never two polls at once."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.chat.application import build_application
from bot.core.clock import ManualClock, SystemClock
from bot.delivery.pacing import Pacer
from bot.query.service import SubscriptionService
from bot.runtime import build_bot
from bot.storage import open_storage
from tests.conftest import Harness, make_paper, make_settings, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
MONDAY = datetime(2026, 11, 16, 5, 0, tzinfo=UTC)
READER = 77
LAB = -100500


def announce(server: FakeArxivServer) -> None:
    """Monday's cs feed: two cs.LG papers and one cs.DS paper nobody follows."""
    papers = [make_paper(1), make_paper(2), make_paper(3, categories=("cs.DS",))]
    server.set_feed(None, rss_feed(papers, names=("cs",), announce_date=MONDAY))


async def seed_chats(database: Path | str) -> None:
    """A researcher following cs.LG and a lab group following one title phrase."""
    storage = await open_storage(database)
    try:
        clock = SystemClock()
        await storage.chats.record(READER, "private", None, "en", clock.now())
        await storage.chats.record(LAB, "supergroup", "Sparse Lab", "en", clock.now())
        subscriptions = SubscriptionService(storage, clock)
        for chat_id, query in ((READER, "cs.LG"), (LAB, 'ti:"part 2"')):
            result = await subscriptions.follow(chat_id, query)
            assert result.status == "added", result
    finally:
        await storage.close()


async def stored_counts(database: Path | str) -> tuple[int, int, int]:
    """Papers, queued-or-sent alerts, and source records in the database."""
    storage = await open_storage(database)
    try:
        outbox = await storage.outbox.counts()
        return (await storage.papers.count(), sum(outbox.values()),
                len(await storage.sources.all()))
    finally:
        await storage.close()


def write_env(folder: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
              database_url: str | None = None) -> None:
    """The operator's `.env` in `folder`, pointing the command line at the fakes (and at
    `database_url`, else DATABASE_PATH's default under `folder`)."""
    (folder / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={tg.token}\n"
        f"TELEGRAM_API_URL={tg.api_url}\n"
        f"ARXIV_RSS_URL={arxiv.rss_url}\n"
        f"ARXIV_API_URL={arxiv.api_url}\n"
        "ARXIV_MIN_INTERVAL_SECONDS=0\n"
        + (f"DATABASE_URL={database_url}\n" if database_url else "")
    )


def run_cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_", "ADMIN_", "POLL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


async def test_poll_once_dry_run_prints_per_chat_and_sends_or_stores_nothing(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer, database_url: str
) -> None:
    """On both engines: on PostgreSQL the dry run polls a SQLite copy of one snapshot."""
    write_env(tmp_path, fake_telegram, fake_arxiv, database_url)
    database = database_url
    await seed_chats(database)
    announce(fake_arxiv)

    dry = await asyncio.to_thread(run_cli, tmp_path, "poll-once", "--dry-run")

    assert dry.returncode == 0, dry.stderr
    lines = dry.stdout.splitlines()
    assert lines[0].startswith("poll: 1 source(s), 3 new, 0 revised, 0 already seen, "
                               "3 alert(s)")
    assert f"  {fake_arxiv.rss_url}/cs [ok] 3 items, 3 new, 0 revised, 0 seen" in lines
    reader = lines.index(f"chat {READER}: 2 alert(s)")
    assert lines[reader + 1] == ("  [new] 2611.10001v1 Sparse attention for long-context "
                                 "models, part 1 — matched: cs.LG")
    assert lines[reader + 2].startswith("  [new] 2611.10002v1 ")
    lab = lines.index(f"chat {LAB} Sparse Lab: 1 alert(s)")
    assert lines[lab + 1].endswith('part 2 — matched: ti:"part 2"')
    assert "2611.10003" not in dry.stdout.split("\n", 2)[2], "nobody follows cs.DS"
    assert lines[-1] == "dry run: nothing was sent or stored"
    assert fake_telegram.calls == [], "a dry run never talks to Telegram"
    assert await stored_counts(database) == (0, 0, 0)
    assert [r.header("If-None-Match") for r in fake_arxiv.requests] == [None]

    real = await asyncio.to_thread(run_cli, tmp_path, "poll-once")

    assert real.returncode == 0, real.stderr
    assert real.stdout.startswith("poll: 1 source(s), 3 new, "), "the dry run stored nothing"
    assert "sent 3 alert(s), 0 digest(s), 0 failed, 0 to retry" in real.stdout
    assert [m.text.splitlines()[0] for m in fake_telegram.messages(READER)] == [
        "🆕 Sparse attention for long-context models, part 1",
        "🆕 Sparse attention for long-context models, part 2",
    ]
    [lab_alert] = fake_telegram.messages(LAB)
    assert "arXiv:2611.10002v1" in lab_alert.text and 'Matched: ti:"part 2"' in lab_alert.text
    assert await stored_counts(database) == (3, 3, 1)


async def test_the_first_scheduled_poll_comes_within_5_s_and_repeats(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer
) -> None:
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, POLL_INTERVAL_SECONDS="1")
    await seed_chats(settings.database_path)
    announce(fake_arxiv)
    app = build_bot(settings, ManualClock(time.time()),
                            pacer=Pacer(rate=1000, private_interval=0, group_interval=0))
    await app.initialize()
    await app.post_init(app)
    ready = datetime.now(UTC)
    # The promise is the schedule's: the poll is set for at most 5 s after the bot is ready
    # (read from the scheduler, so a slow machine cannot make it pass or fail).
    [first_poll] = app.job_queue.get_jobs_by_name("poll")
    assert first_poll.job.trigger.run_date - ready <= timedelta(seconds=5), \
        "the spec promises the first poll within 5 s"
    await app.start()
    await app.updater.start_polling(poll_interval=0, timeout=1)
    try:
        await fake_telegram.wait_for(lambda: fake_arxiv.requests, timeout=60,
                                     what="the first poll of arXiv")
        # The poll job also delivers what it found.
        await fake_telegram.wait_for_messages(READER, "part 1", timeout=30)
        await fake_telegram.wait_for_messages(LAB, "part 2", timeout=30)
        # The next run comes one interval later and asks conditionally.
        await fake_telegram.wait_for(lambda: len(fake_arxiv.requests) >= 2, timeout=30,
                                     what="the second scheduled poll")
    finally:
        await stop_bot(app)
    second = fake_arxiv.requests[1]
    assert second.header("If-None-Match") and second.status == 304
    assert len(fake_telegram.messages(READER)) == 2, "each paper reaches a chat once"


async def test_polls_never_overlap(harness: Harness) -> None:
    await harness.ask(READER, "/follow cs.LG")
    announce(harness.arxiv)
    harness.arxiv.delay_next(0.5)  # the first poll is slow; the second is asked for meanwhile
    pipeline = harness.services.pipeline
    assert pipeline is not None

    first, second = await asyncio.gather(pipeline.poll(), pipeline.poll())

    requests = harness.arxiv.requests
    assert len(requests) == 2
    # The second poll starts after the first has stored the feed's validators.
    assert requests[0].header("If-None-Match") is None and requests[0].status == 200
    assert requests[1].header("If-None-Match") and requests[1].status == 304
    assert [s.outcome for s in (*first.sources, *second.sources)] == ["ok", "not-modified"]
    assert first.alert_count + second.alert_count == 2
    await harness.drain()
    assert len(harness.tg.messages(READER)) - 1 == 2, "one alert per paper, after the reply"


DIGEST_READER = 78  # follows every paper of the day: more than a digest's threshold


def parse_previews(stdout: str) -> dict[int, list[str]]:
    """The dry run's message blocks, chat by chat, in order."""
    previews: dict[int, list[str]] = {}
    current: list[str] | None = None
    for line in stdout.splitlines():
        if line.startswith("── chat ") and line.endswith(" ──"):
            chat_id = int(line.split()[2].rstrip(":,"))
            current = []
            previews.setdefault(chat_id, []).append(current)  # type: ignore[arg-type]
        elif line == "dry run: nothing was sent or stored":
            current = None
        elif current is not None:
            current.append(line)
    return {chat: ["\n".join(block) for block in blocks]  # type: ignore[misc]
            for chat, blocks in previews.items()}


async def test_a_dry_run_prints_exactly_the_messages_the_running_bot_sends(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer
) -> None:
    """The same poll both ways, from two copies of one database: `poll-once --dry-run` on
    one, the running bot on the other; each chat's messages must be the same texts."""
    write_env(tmp_path, fake_telegram, fake_arxiv)
    dry_database = tmp_path / "data" / "bot.sqlite3"
    await seed_chats(dry_database)
    storage = await open_storage(dry_database)
    try:
        await storage.chats.record(DIGEST_READER, "private", None, "zh", SystemClock().now())
        subscriptions = SubscriptionService(storage, SystemClock())
        result = await subscriptions.follow(DIGEST_READER, "ti:sparse")
        assert result.status == "added", result
    finally:
        await storage.close()
    live_database = tmp_path / "live" / "bot.sqlite3"
    live_database.parent.mkdir()
    live_database.write_bytes(dry_database.read_bytes())
    papers = [make_paper(n, categories=("cs.LG",) if n <= 2 else ("cs.DS",))
              for n in range(1, 15)]
    fake_arxiv.set_feed(None, rss_feed(papers, names=("cs",), announce_date=MONDAY))

    dry = await asyncio.to_thread(run_cli, tmp_path, "poll-once", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert fake_telegram.calls == [], "a dry run never talks to Telegram"
    printed = parse_previews(dry.stdout)

    settings = make_settings(tmp_path, fake_telegram, fake_arxiv,
                             DATABASE_PATH=str(live_database))
    app = build_application(settings, ManualClock(time.time()),
                            pacer=Pacer(rate=1000, private_interval=0, group_interval=0))
    await app.initialize()
    await app.post_init(app)
    try:
        services = app.bot_data["services"]
        await services.pipeline.poll()
        await services.sender.drain()
    finally:
        await app.post_shutdown(app)
        await app.shutdown()
    sent = {chat: [m.sent_text for m in fake_telegram.messages(chat)]
            for chat in (READER, LAB, DIGEST_READER)}

    assert set(printed) == {READER, LAB, DIGEST_READER}, dry.stdout
    assert len(sent[READER]) == 2 and len(sent[LAB]) == 1
    assert "14" in sent[DIGEST_READER][0], "more than the threshold: one digest, in Chinese"
    for chat, texts in sent.items():
        assert printed[chat] == texts, f"chat {chat}: the dry run printed other messages"

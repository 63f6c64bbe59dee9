"""A crash in the middle of a For-you round loses no chat's message and repeats at most the
send window; a failed send arrives on its retry, a paused chat's message after /resume.

The bot runs as `python -m bot` (long polling) against the fake Telegram, which answers every
sendMessage after a 0.1 s round trip, on a database where CHATS chats have their For-you
message due. One chat's first send fails (a 502); one chat is paused. The bot is SIGKILLed at a
random moment while the round's messages go out, then started again on the same database.
Every chat must get its message; Telegram has no idempotency key, so those it took whose
answers were not recorded arrive twice: they are among the rows left claimed, at most WINDOW.

The For-you check runs every 30 s in the bot; the launcher below sets it to 1 s (nothing else
differs from `python -m bot`), so the round starts at once. CI runs CRASH_FOR_YOU_CHATS=40
chats CRASH_FOR_YOU_RUNS=2 times; CRASH_FOR_YOU_SEED repeats a run's kill points.
"""

from __future__ import annotations

import asyncio
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

from bot.storage import open_storage
from tests.conftest import TOKEN
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram
from tests.for_you_setup import FOR_YOU_COUNT, is_for_you, seed_for_you, suggested
from tests.test_crash_delivery import seed_on_failure, start_bot, write_env

CHATS = int(os.environ.get("CRASH_FOR_YOU_CHATS", "40"))
RUNS = int(os.environ.get("CRASH_FOR_YOU_RUNS", "2"))
WINDOW = int(os.environ.get("CRASH_FOR_YOU_WINDOW", "10"))
ROUND_TRIP = 0.1
FIRST_CHAT = 9001
PAUSED = FIRST_CHAT  # paused before the round; sends /resume once the others have theirs
FAILING = FIRST_CHAT + CHATS // 2  # its first send gets a 502
CHAT_IDS = list(range(FIRST_CHAT, FIRST_CHAT + CHATS))
ACTIVE = [c for c in CHAT_IDS if c != PAUSED]
# `python -m bot`, with the For-you check every second instead of every 30 s.
LAUNCH = (
    "import runpy\n"
    "import bot.jobs.schedule as schedule\n"
    "assert hasattr(schedule, 'DIGEST_CHECK_INTERVAL'), 'the check interval moved'\n"
    "schedule.DIGEST_CHECK_INTERVAL = 1.0\n"
    "runpy.run_module('bot', run_name='__main__', alter_sys=True)\n"
)


def stop(process: subprocess.Popen[str], sig: signal.Signals) -> None:
    process.send_signal(sig)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def for_you_counts(tg: FakeTelegram) -> dict[int, int]:
    """How many For-you messages each chat has, repeats included."""
    return {chat_id: sum(is_for_you(m.text) for m in tg.messages(chat_id))
            for chat_id in CHAT_IDS}


def rows_by_status(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        return dict(db.execute("SELECT status, COUNT(*) FROM foryou_outbox GROUP BY status"))


async def seed_database(database: Path) -> None:
    storage = await open_storage(database)
    try:
        await seed_for_you(storage, CHAT_IDS, time.time(), paused=(PAUSED,))
    finally:
        await storage.close()


def crash_and_restart(folder: Path, arxiv: FakeArxivServer, rng: random.Random
                      ) -> tuple[int, int, int]:
    """One run: returns (messages before the kill, rows left claimed, repeated messages)."""
    database = folder / "data" / "bot.sqlite3"
    with FakeTelegram(TOKEN) as tg:
        tg.set_round_trip("sendMessage", ROUND_TRIP)
        write_env(folder, tg, arxiv, database, WINDOW, "HF_PAPERS_URL=off")
        asyncio.run(seed_database(database))
        tg.fail_next("sendMessage", 502, chat_id=FAILING)
        # After 1 to (what the first process can deliver) - WINDOW - 1 messages: with up to
        # WINDOW in flight, a later kill could land after the round's last send.
        kill_after = rng.randint(1, len(ACTIVE) - 1 - WINDOW - 1)
        first = start_bot(folder, "first", "-c", LAUNCH)
        try:
            tg.wait_for_sync(lambda: sum(for_you_counts(tg).values()) >= kill_after,
                             timeout=90, what=f"{kill_after} For-you messages to arrive")
        finally:
            stop(first, signal.SIGKILL)
        before_restart = sum(for_you_counts(tg).values())
        rows = rows_by_status(database)
        uncertain = rows.get("sending", 0)
        assert sum(rows.values()) == CHATS, f"one row per chat, queued together: {rows}"
        assert before_restart < len(ACTIVE) - 1, "the kill came before the round was over"
        assert uncertain <= WINDOW, f"{uncertain} rows claimed, more than the window"

        second = start_bot(folder, "second", "-c", LAUNCH)
        try:
            tg.wait_for_sync(lambda: all(for_you_counts(tg)[c] for c in ACTIVE), timeout=90,
                             what="every active chat's For-you message")
            assert for_you_counts(tg)[PAUSED] == 0, "not while paused"
            tg.send_command(PAUSED, "/resume")
            tg.wait_for_sync(lambda: for_you_counts(tg)[PAUSED], timeout=30,
                             what="the paused chat's message after /resume")
            tg.wait_for_sync(lambda: rows_by_status(database) == {"sent": CHATS}, timeout=30,
                             what=f"every row recorded sent (now {rows_by_status(database)})")
        finally:
            stop(second, signal.SIGINT)
        assert second.returncode == 0, (folder / "second.err").read_text()[-3000:]

        counts = for_you_counts(tg)
        assert all(counts[c] >= 1 for c in CHAT_IDS), counts
        repeats = sum(n - 1 for n in counts.values())
        assert repeats <= uncertain, f"only rows left claimed can repeat: {counts}"
        for chat_id in CHAT_IDS:
            for message in (m for m in tg.messages(chat_id) if is_for_you(m.text)):
                assert len(suggested(message.text)) == FOR_YOU_COUNT, message.text
        # A request the kill cut off arrived without its parameters.
        refused = [c for c in tg.calls_of("sendMessage")
                   if c.params.get("chat_id") == FAILING and c.status == 502]
        assert len(refused) == 1 and counts[FAILING] >= 1, "the failed send came on its retry"
        return before_restart, uncertain, repeats


def test_killed_in_a_for_you_round_every_chat_gets_its_message_once_within_the_window(
    tmp_path: Path, fake_arxiv: FakeArxivServer
) -> None:
    fake_arxiv.set_feed(None, rss_feed([], names=("cs",)))  # the polls bring nothing new
    seed = int(os.environ.get("CRASH_FOR_YOU_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    results = []
    for run in range(RUNS):
        folder = tmp_path / f"run{run}"
        folder.mkdir()
        with seed_on_failure("CRASH_FOR_YOU_SEED", seed, run):
            results.append(crash_and_restart(folder, fake_arxiv, rng))
    print(f"\n{RUNS} runs of a For-you round to {CHATS} chats, window {WINDOW}, round trip "
          f"{ROUND_TRIP * 1000:.0f} ms, seed {seed}: every chat got its message; killed after "
          f"{[r[0] for r in results]} messages, rows left claimed {[r[1] for r in results]}, "
          f"repeats {[r[2] for r in results]} (bound {WINDOW})")
    assert all(r[2] <= WINDOW for r in results), f"seed {seed}: {results}"

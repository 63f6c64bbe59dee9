"""Benchmark: does a chat still get its answers while a big poll runs?

Run with `.venv/bin/python bench/responsiveness.py [--seed N] [--command /list]`.

The bot runs in this process as in production (PTB's real stack, long polling a fake Telegram
on loopback) over a database of 10,000 chats following 100,000 subscriptions (the corpus of
`bench/match.py`). A fake arXiv announces 2,000 new papers (the same corpus) on every feed the
bot plans. While one poll ingests, matches and queues them, a thread outside the event loop
sends one chat's command every 100 ms (so a stalled loop cannot delay the asking, only the
answer), and the time from each command to the bot's reply is measured on the fake Telegram's
clock. It prints the p50, p99 and maximum over the commands sent while the poll ran.

The default command, `/list`, reads the chat's subscriptions; `--command /pause` measures a
command that writes (it alternates with `/resume`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import logging
import math
import os
import sqlite3
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.match import CHATS, PAPERS, SUBSCRIPTIONS, Corpus
from bot.app import build_application
from bot.budget import UNLIMITED
from bot.clock import SystemClock
from bot.config import load_settings
from bot.delivery.pacing import Pacer
from bot.query.parser import QueryError, canonical, parse
from bot.storage import Storage
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "123456:BENCH-responsiveness_abcdefghijklmnopq"
ASKER = 4242  # the chat that keeps asking
ASK_EVERY = 0.1
AIM_P99 = 0.25
UNANSWERED_AFTER = 120.0  # seconds after the poll: a reply later than that counts as none
FIRST_CHAT = 10_000  # chat ids of the subscribers: 10,000 … 19,999


def seed(path: Path, corpus: Corpus) -> int:
    """10,000 chats and 100,000 subscriptions, written in bulk (the bot's own `follow` would
    take minutes for this many); returns how many subscriptions were stored."""
    now = time.time()
    rows: list[tuple[int, str, str, float]] = []
    seen: set[tuple[int, str]] = set()
    while len(rows) < SUBSCRIPTIONS:
        raw = corpus.query()
        try:
            query = canonical(parse(raw))
        except QueryError:
            continue
        chat_id = FIRST_CHAT + corpus.random.randrange(CHATS)
        if (chat_id, query) not in seen:
            seen.add((chat_id, query))
            rows.append((chat_id, query, raw, now))
    rows += [(ASKER, q, q, now) for q in ("cat:cs.LG", 'au:"E. Yoneki"', '"graph neural"')]
    db = sqlite3.connect(path)
    try:
        with db:
            db.executemany(
                "INSERT INTO chats (id, type, language, created_at, last_seen_at) "
                "VALUES (?, 'private', 'en', ?, ?)",
                [(chat_id, now, now) for chat_id in [*range(FIRST_CHAT, FIRST_CHAT + CHATS),
                                                     ASKER]],
            )
            db.executemany("INSERT INTO subscriptions (chat_id, query, raw_query, created_at) "
                           "VALUES (?, ?, ?, ?)", rows)
    finally:
        db.close()
    return len(rows)


class Asker(threading.Thread):
    """Sends a command every 100 ms until told to stop; remembers when it sent each."""

    def __init__(self, tg: FakeTelegram, command: str) -> None:
        super().__init__(name="asker", daemon=True)
        self.tg = tg
        self.command = command
        self.sent: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        following = time.monotonic()
        while not self.stop.is_set():
            command = self.command
            if command == "/pause" and len(self.sent) % 2:
                command = "/resume"
            self.sent.append(time.time())  # the fake Telegram stamps requests with time.time()
            self.tg.send_command(ASKER, command)
            following += ASK_EVERY
            self.stop.wait(max(0.0, following - time.monotonic()))


def percentile(values: list[float], share: float) -> float:
    """Nearest rank: the smallest value that at least `share` of the values do not exceed."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


async def run(options: argparse.Namespace) -> None:
    corpus = Corpus(options.seed)
    papers = [corpus.paper(number) for number in range(PAPERS)]
    folder = Path(tempfile.mkdtemp(prefix="bench-responsiveness-"))
    database = folder / "bot.sqlite3"
    storage = await Storage.open(database)  # creates the schema
    await storage.close()
    started = time.perf_counter()
    stored = seed(database, corpus)
    print(f"seeded {CHATS:,} chats and {stored:,} subscriptions in "
          f"{time.perf_counter() - started:.1f} s; papers: {len(papers):,}")

    tg = FakeTelegram(TOKEN).start()
    arxiv = FakeArxivServer().start()
    arxiv.set_feed(None, rss_feed(papers, names=("cs",), announce_date=datetime.now(UTC)))
    env = {
        "TELEGRAM_BOT_TOKEN": tg.token, "TELEGRAM_API_URL": tg.api_url,
        "ARXIV_RSS_URL": arxiv.rss_url, "ARXIV_API_URL": arxiv.api_url,
        "DATABASE_PATH": str(database), "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "LOG_LEVEL": "WARNING",
    }
    settings = load_settings(env, env_file=None)
    # The flood budget (bot/budget.py) would rightly silence a chat asking ten times a second;
    # what is measured here is the event loop, so it is lifted, as in the tests.
    app = build_application(settings, SystemClock(), schedule_jobs=False,
                            pacer=Pacer(rate=1000, private_interval=0, group_interval=0),
                            budget=UNLIMITED)
    await app.initialize()
    await app.post_init(app)
    await app.start()
    await app.updater.start_polling(poll_interval=0, timeout=1)
    try:
        # Warm up: the first answer pays for imports and connections.
        tg.send_command(ASKER, options.command)
        await tg.wait_for(lambda: tg.messages(ASKER), 30, what="the first answer")
        before = len(tg.messages(ASKER))

        asker = Asker(tg, options.command)
        poll_started = time.monotonic()
        poll_cpu = time.process_time()
        asker.start()
        report = await app.bot_data["services"].pipeline.poll()
        poll_seconds = time.monotonic() - poll_started
        poll_cpu = time.process_time() - poll_cpu
        asker.stop.set()
        asker.join()
        asked = len(asker.sent)
        with contextlib.suppress(AssertionError):  # what is not answered by then is counted
            await tg.wait_for(lambda: len(tg.messages(ASKER)) >= before + asked,
                              UNANSWERED_AFTER, what="every answer")
        # One chat's updates are answered in order, so the n-th reply answers the n-th command.
        replies = [c.at for c in tg.calls_of("sendMessage")
                   if c.params.get("chat_id") == ASKER][before:before + asked]
        waits = [reply - sent for sent, reply in zip(asker.sent, replies, strict=False)]
        unanswered = asked - len(waits)
        waits += [math.inf] * unanswered
        # The poll froze what outlived its matching (`survivors_frozen`): with the report
        # gone, what is still frozen and unreachable is cyclic garbage the collector lost.
        alerts_queued, revised = len(report.alerts), report.count("new")
        del report
        gc.collect()  # what is not frozen
        frozen = gc.get_freeze_count()
        gc.unfreeze()
        lost = gc.collect()
    finally:
        await app.updater.stop()
        await app.stop()
        await app.post_shutdown(app)
        await app.shutdown()
        tg.stop()
        arxiv.stop()

    load = os.getloadavg()
    print(f"poll: {revised:,} new papers, {alerts_queued:,} alerts queued, {poll_seconds:.2f} s "
          f"wall, {poll_cpu:.2f} s CPU of this process")
    print(f"after the poll: {frozen:,} objects frozen, of which {lost:,} unreachable (cyclic "
          "garbage that a poll's freeze keeps from the collector)")
    print(f"'{options.command}' every {ASK_EVERY * 1000:.0f} ms during the poll: {asked} asked, "
          f"{asked - unanswered} answered"
          + (f", {unanswered} not within {UNANSWERED_AFTER:.0f} s after it" if unanswered else ""))
    p99 = percentile(waits, 0.99)
    print(f"time to the reply: p50 {percentile(waits, 0.5) * 1000:.0f} ms, "
          f"p99 {p99 * 1000:.0f} ms, max {max(waits) * 1000:.0f} ms "
          f"(aim p99 <= {AIM_P99 * 1000:.0f} ms: "
          f"{'met' if p99 <= AIM_P99 else 'NOT met'})")
    slow = [(sent - asker.sent[0], wait)
            for sent, wait in zip(asker.sent, waits, strict=True) if wait > AIM_P99]
    if slow:
        print(f"replies slower than {AIM_P99 * 1000:.0f} ms: {len(slow)}, asked between "
              f"{slow[0][0]:.1f} s and {slow[-1][0]:.1f} s into the poll")
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (figures are slower on a "
          "busy machine)")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--command", default="/list", choices=["/list", "/pause", "/help"])
    options = arguments.parse_args()
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(options))


if __name__ == "__main__":
    main()

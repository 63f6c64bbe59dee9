"""Benchmark: does a chat still get its answers while a big poll runs?

Run with `.venv/bin/python bench/responsiveness.py [--seed N] [--commands /list,/pause,/follow]`.

The bot runs in this process as in production (PTB's real stack, long polling a fake Telegram
on loopback) over a database of 10,000 chats following 100,000 subscriptions (the corpus of
`bench/match.py`). A fake arXiv announces 2,000 new papers (the same corpus) on every feed the
bot plans. While one poll ingests, matches and queues them, a thread outside the event loop
sends one chat's command every 100 ms (so a stalled loop cannot delay the asking, only the
answer), and the time from each command to the bot's reply is measured on the fake Telegram's
clock. It prints the p50, p99 and maximum over the commands sent while the poll ran.

Each of `--commands` is asked by its own chat, all at once (chats are served side by side):
`/list` reads the chat's subscriptions; `/pause` writes (it alternates with `/resume`), and so
does `/follow` (it alternates with `/unfollow`, and its reply counts a 7-day preview). The
figures are per command. `--commands /list` alone is the run of the first version of this
bench.
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
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import aiosqlite

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.match import CHATS, PAPERS, Corpus, subscription_rows
from bot.chat.application import build_application
from bot.config import load_settings
from bot.core.clock import SystemClock
from bot.delivery.pacing import Pacer
from bot.services.budget import UNLIMITED
from bot.storage import open_storage
from bot.storage.sqlite.db import Database
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram

TOKEN = "123456:BENCH-responsiveness_abcdefghijklmnopq"
# The chat that keeps asking each command; each follows three queries of its own.
ASKERS = {"/list": 4242, "/pause": 4243, "/follow": 4244}
ASKER_QUERIES = ("cat:cs.LG", 'au:"E. Yoneki"', '"graph neural"')
ASK_EVERY = 0.1
AIM_P99 = 0.25
UNANSWERED_AFTER = 120.0  # seconds after the poll: a reply later than that counts as none
FIRST_CHAT = 10_000  # chat ids of the subscribers: 10,000 … 19,999


def seed(path: Path, corpus: Corpus) -> int:
    """10,000 chats and 100,000 subscriptions, written in bulk (the bot's own `follow` would
    take minutes for this many); returns how many subscriptions were stored."""
    now = time.time()
    rows = subscription_rows(corpus, FIRST_CHAT, now)
    rows += [(asker, q, q, now) for asker in ASKERS.values() for q in ASKER_QUERIES]
    db = sqlite3.connect(path)
    try:
        with db:
            db.executemany(
                "INSERT INTO chats (id, type, language, created_at, last_seen_at) "
                "VALUES (?, 'private', 'en', ?, ?)",
                [(chat_id, now, now) for chat_id in [*range(FIRST_CHAT, FIRST_CHAT + CHATS),
                                                     *ASKERS.values()]],
            )
            db.executemany("INSERT INTO subscriptions (chat_id, query, raw_query, created_at) "
                           "VALUES (?, ?, ?, ?)", rows)
    finally:
        db.close()
    return len(rows)


class WriterTimes:
    """How long each write transaction waited for the writer and then held it, for the poll's
    own transactions and for everyone else's (the commands'): what a writing command waits on."""

    def __init__(self, db: Database) -> None:
        self.poll_task: asyncio.Task[object] | None = None
        self.poll_held: list[float] = []
        self.others_waited: list[float] = []
        original = db.transaction

        @contextlib.asynccontextmanager
        async def timed() -> AsyncIterator[aiosqlite.Connection]:
            asked = time.perf_counter()
            got = asked
            try:
                async with original() as conn:
                    got = time.perf_counter()
                    yield conn
            finally:
                if asyncio.current_task() is self.poll_task:
                    self.poll_held.append(time.perf_counter() - got)
                else:
                    self.others_waited.append(got - asked)

        db.transaction = timed  # type: ignore[method-assign]


def nth_command(command: str, n: int) -> str:
    """The n-th command (from 0) an asker sends: writes alternate with their undoing."""
    if command == "/pause":
        return "/resume" if n % 2 else "/pause"
    if command == "/follow":
        # The asker follows three queries, so what it just followed is #4.
        return "/unfollow 4" if n % 2 else f"/follow ti:benchmark{n}"
    return command


class Asker(threading.Thread):
    """Sends a command every 100 ms until told to stop; remembers when it sent each."""

    def __init__(self, tg: FakeTelegram, command: str) -> None:
        super().__init__(name=f"asker {command}", daemon=True)
        self.tg = tg
        self.command = command
        self.chat_id = ASKERS[command]
        self.sent: list[tuple[str, float]] = []  # (command, when)
        self.stop = threading.Event()

    def run(self) -> None:
        following = time.monotonic()
        while not self.stop.is_set():
            command = nth_command(self.command, len(self.sent))
            # The fake Telegram stamps requests with time.time().
            self.sent.append((command.split()[0], time.time()))
            self.tg.send_command(self.chat_id, command)
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
    storage = await open_storage(database)  # creates the schema
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
    app = build_application(settings, SystemClock(),
                            pacer=Pacer(rate=1000, private_interval=0, group_interval=0),
                            budget=UNLIMITED)
    await app.initialize()
    await app.post_init(app)
    await app.start()
    await app.updater.start_polling(poll_interval=0, timeout=1)
    try:
        # Warm up: the first answer pays for imports and connections.
        before: dict[int, int] = {}
        for command in options.commands:
            chat_id = ASKERS[command]
            tg.send_command(chat_id, "/list")
            await tg.wait_for(lambda chat_id=chat_id: tg.messages(chat_id), 30,
                              what="the first answer")
            before[chat_id] = len(tg.messages(chat_id))

        askers = [Asker(tg, command) for command in options.commands]
        load_before = os.getloadavg()
        poll_started = time.monotonic()
        poll_cpu = time.process_time()
        for asker in askers:
            asker.start()
        services = app.bot_data["services"]
        writer = WriterTimes(services.storage.db)
        poll = asyncio.create_task(services.pipeline.poll())
        writer.poll_task = poll
        report = await poll
        poll_seconds = time.monotonic() - poll_started
        poll_cpu = time.process_time() - poll_cpu
        for asker in askers:
            asker.stop.set()
        for asker in askers:
            asker.join()
        with contextlib.suppress(AssertionError):  # what is not answered by then is counted
            await tg.wait_for(
                lambda: all(len(tg.messages(a.chat_id)) >= before[a.chat_id] + len(a.sent)
                            for a in askers),
                UNANSWERED_AFTER, what="every answer")
        # One chat's updates are answered in order, so the n-th reply answers the n-th command.
        waits: dict[str, list[float]] = {}
        for asker in askers:
            start = before[asker.chat_id]
            replies = [c.at for c in tg.calls_of("sendMessage")
                       if c.params.get("chat_id") == asker.chat_id][start:start + len(asker.sent)]
            for n, (command, sent) in enumerate(asker.sent):
                waits.setdefault(command, []).append(
                    replies[n] - sent if n < len(replies) else math.inf)
        # The poll froze what outlived its matching (`survivors_frozen`): with the report
        # gone, what is still frozen and unreachable is cyclic garbage the collector lost.
        alerts_queued, revised = report.alert_count, report.count("new")
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
    held, waited = writer.poll_held or [0.0], writer.others_waited or [0.0]
    print(f"the writer: the poll held it {len(held)} times, for p50 "
          f"{percentile(held, 0.5) * 1000:.0f} ms, p99 {percentile(held, 0.99) * 1000:.0f} ms, "
          f"max {max(held) * 1000:.0f} ms; other writes ({len(waited)}) waited for it p50 "
          f"{percentile(waited, 0.5) * 1000:.0f} ms, p99 {percentile(waited, 0.99) * 1000:.0f} "
          f"ms, max {max(waited) * 1000:.0f} ms")
    print(f"poll: {revised:,} new papers, {alerts_queued:,} alerts queued, {poll_seconds:.2f} s "
          f"wall, {poll_cpu:.2f} s CPU of this process")
    print(f"after the poll: {frozen:,} objects frozen, of which {lost:,} unreachable (cyclic "
          "garbage that a poll's freeze keeps from the collector)")
    print(f"{', '.join(options.commands)} every {ASK_EVERY * 1000:.0f} ms during the poll, each "
          f"from its own chat; time to the reply (aim p99 <= {AIM_P99 * 1000:.0f} ms):")
    for command, times in waits.items():
        unanswered = sum(1 for w in times if math.isinf(w))
        p99 = percentile(times, 0.99)
        print(f"  {command:<10} {len(times):4d} asked, {len(times) - unanswered:4d} answered: "
              f"p50 {percentile(times, 0.5) * 1000:6.0f} ms, p99 {p99 * 1000:6.0f} ms, "
              f"max {max(times) * 1000:6.0f} ms ({'met' if p99 <= AIM_P99 else 'NOT met'})"
              + (f"; {unanswered} not answered within {UNANSWERED_AFTER:.0f} s after the poll"
                 if unanswered else ""))
    print(f"load average {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f} at the "
          f"poll's start, {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at its end (2 cores; "
          "figures are slower on a busy machine)")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--commands", default=",".join(ASKERS),
                           help=f"comma-separated, of {', '.join(ASKERS)}")
    options = arguments.parse_args()
    options.commands = [c.strip() for c in options.commands.split(",") if c.strip()]
    unknown = [c for c in options.commands if c not in ASKERS]
    if unknown or not options.commands:
        arguments.error(f"--commands takes {', '.join(ASKERS)}; not {', '.join(unknown)}")
    logging.basicConfig(level=logging.WARNING)
    asyncio.run(run(options))


if __name__ == "__main__":
    main()

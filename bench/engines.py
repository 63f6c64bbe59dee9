"""Benchmark: a big poll and the storage of a drain, on SQLite and on PostgreSQL, in one run.

Run with `.venv/bin/python bench/engines.py [--seed 1] [--drain 3000] [--rtt 0.1]
[--engines sqlite,postgresql] [--chats 10000]`. For each engine, a fresh database through the
bot's own construction (`open_services`): bench/match.py's 10,000 chats and 100,000
subscriptions (`--chats 100000`: 1,000,000 subscriptions, the public bot's large case)
(`Corpus.query`, stored in bulk; the bot's own `follow` would take minutes for this many) and
its 2,000-paper day served as an RSS feed by the fake arXiv on loopback; the ingest is the real
`Pipeline.poll`: fetch and parse, match against the subscriptions' index, and store the papers
and their alerts batch by batch, as the running bot does. Then what a drain asks of storage for
each of `--drain` messages: the chat's pending rows, the claim and the sent mark, one after
another (the sender's statements, without Telegram). Last, the real drain: `--drain` alerts to
as many chats, sent by the bot's own `Sender` against the fake Telegram in its own process, each
call answered `--rtt` seconds later and Telegram's limits enforced (bench/deliver.py's drain, on
a fresh database of the same engine). PostgreSQL is the tests' own server
(tests/postgres_server.py: Debian's package, a cluster in a temporary folder, here with the
server's default durability, fsync on, unlike the tests'); SQLite a file in WAL mode with the
bot's pragmas (synchronous=NORMAL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from telegram import Bot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.deliver import drain as real_drain
from bench.match import CHATS, PAPERS, Corpus, rss_mb, subscription_rows
from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.services.container import Wiring, open_services
from bot.storage import open_storage
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.postgres_server import start_shared_server, stop_shared_server

FIRST_CHAT = 1_000_000
TOKEN = "123456:BENCH-engines"


async def seed(url: str, corpus: Corpus, chats: int) -> int:
    """The chats and subscriptions, in one transaction of bulk inserts; how many stored."""
    now = time.time()
    rows = subscription_rows(corpus, FIRST_CHAT, now, chats)
    storage = await open_storage(url)
    try:
        async with storage.db.transaction() as conn:  # type: ignore[attr-defined]
            await conn.executemany(
                "INSERT INTO chats (id, type, language, created_at, last_seen_at) "
                "VALUES (?, 'private', 'en', ?, ?)",
                [(FIRST_CHAT + n, now, now) for n in range(chats)])
            await conn.executemany(
                "INSERT INTO subscriptions (chat_id, query, raw_query, created_at) "
                "VALUES (?, ?, ?, ?)", rows)
    finally:
        await storage.close()
    return len(rows)


def _written_bytes() -> int:
    """Bytes this process has written to storage (the SQLite file and its log; PostgreSQL's
    server writes in its own processes)."""
    with open("/proc/self/io") as io:
        return int(next(line for line in io if line.startswith("write_bytes:")).split()[1])


class _PeakRss(threading.Thread):
    """RSS sampled every 0.1 s while the poll runs."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.before = self.peak = rss_mb()
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.wait(0.1):
            self.peak = max(self.peak, rss_mb())


async def measure(url: str, seed_value: int, drain: int, chats: int = CHATS
                  ) -> dict[str, float | str]:
    corpus = Corpus(seed_value)
    papers = [corpus.paper(number) for number in range(PAPERS)]
    stored = await seed(url, corpus, chats)
    feed = rss_feed(papers, names=("cs",), announce_date=datetime.now(UTC))
    with FakeArxivServer() as server:
        server.set_feed(None, feed)
        settings = load_settings({
            "TELEGRAM_BOT_TOKEN": TOKEN, "ARXIV_RSS_URL": server.rss_url,
            "ARXIV_API_URL": server.api_url, "DATABASE_URL": url,
            "ARXIV_MIN_INTERVAL_SECONDS": "0", "HF_PAPERS_URL": "off",
        }, env_file=None)
        clock = ManualClock()
        # The bot's own construction; the poll sends nothing, so Telegram is never reached.
        async with open_services(settings, bot=Bot(TOKEN), wiring=Wiring(clock=clock)) as services:
            rss = _PeakRss()
            rss.start()
            written, cpu = _written_bytes(), time.process_time()
            started = time.perf_counter()
            report = await services.pipeline.poll()
            ingest = time.perf_counter() - started
            cpu, written = time.process_time() - cpu, _written_bytes() - written
            rss.stopping.set()
            rss.join()
            after = rss_mb()
            if report.failed_sources:
                raise SystemExit(f"a feed failed: {report.failed_sources}")
            storage = services.storage
            now = clock.now()
            rng = random.Random(7)
            chats = sorted(report.alerted_chats)
            targets = rng.sample(chats, min(drain, len(chats)))
            started = time.perf_counter()
            for message_id, chat_id in enumerate(targets, 1):
                row = (await storage.outbox.pending_for_chat(chat_id, now + 1))[0]
                assert await storage.outbox.claim([row.id], now + 1)
                await storage.outbox.mark_sent([row.id], message_id, now + 1, alone=True)
            drained = time.perf_counter() - started
    return {"ingest": ingest, "cpu": cpu, "written_mb": written / 1e6, "rss_before": rss.before,
            "rss_peak": rss.peak, "rss_after": after, "subscriptions": stored,
            "sources": len(report.sources),
            "new": report.count("new"), "alerts": report.alert_count, "chats": len(chats),
            "per_message_ms": drained / len(targets) * 1000, "drain": drained,
            "messages": len(targets)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drain", type=int, default=3000)
    parser.add_argument("--rtt", type=float, default=0.1,
                        help="the simulated round trip of the real drain, in seconds")
    parser.add_argument("--engines", default="sqlite,postgresql")
    parser.add_argument("--chats", type=int, default=CHATS,
                        help="chats, with 10 subscriptions each on average")
    args = parser.parse_args()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = {}
    try:
        with tempfile.TemporaryDirectory(prefix="bench-engines-") as folder:
            for engine in args.engines.split(","):
                if engine == "sqlite":
                    url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
                else:
                    url = start_shared_server(durable=True).new_database()
                results[engine] = asyncio.run(measure(url, args.seed, args.drain, args.chats))
                print(f"{engine}: the real drain of {args.drain} alerts at a "
                      f"{args.rtt * 1000:.0f} ms round trip")
                drain_url = (None if engine == "sqlite"
                             else start_shared_server(durable=True).new_database())
                results[engine]["real"] = real_drain(args.drain, 0, args.rtt,
                                                     database_url=drain_url)
    finally:
        stop_shared_server()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    any_result = next(iter(results.values()))
    print(f"{PAPERS} papers (bench/match.py, seed {args.seed}), "
          f"{any_result['subscriptions']} subscriptions over {args.chats} chats; a drain of "
          f"{args.drain} messages")
    print("engine     | ingest: Pipeline.poll (fetch, parse, match, store) | drain's storage "
          f"a message | real drain at {args.rtt * 1000:.0f} ms")
    for engine, r in results.items():
        real = r["real"]
        print(f"{engine:<10} | {r['ingest']:6.2f} s ({r['new']} new papers, {r['alerts']} "
              f"alerts to {r['chats']} chats, {r['sources']} feed(s)) "
              f"| {r['per_message_ms']:.2f} ms ({r['drain']:.1f} s for {r['messages']}) "
              f"| {real['rate']:.2f} messages/s ({real['sent']:.0f} sent, "
              f"{real['429s']:.0f} self-caused 429s)")
    print("engine     | the poll: CPU of this process, bytes it wrote, RSS before / peak / after")
    for engine, r in results.items():
        print(f"{engine:<10} | {r['cpu']:6.2f} s CPU, {r['written_mb']:,.0f} MB written, RSS "
              f"{r['rss_before']:.0f} / {r['rss_peak']:.0f} / {r['rss_after']:.0f} MB")
    if {"sqlite", "postgresql"} <= results.keys():
        lite, pg = results["sqlite"], results["postgresql"]
        print(f"PostgreSQL / SQLite: ingest time {pg['ingest'] / lite['ingest']:.2f}x, "
              f"drain's storage {pg['per_message_ms'] / lite['per_message_ms']:.2f}x, "
              f"real drain rate {pg['real']['rate'] / lite['real']['rate']:.2f}x")


if __name__ == "__main__":
    main()

"""Benchmark: 1,000 alerts to 1,000 chats, delivered against a fake Telegram that enforces limits.

Run with `.venv/bin/python bench/deliver.py [--rtt 0,0.1,0.3] [--alerts N] [--groups N]
[--per-chat K] [--digest-messages M] [--paid-stars S] [--window K] [--gc-freeze]
[--engines sqlite,postgresql]`. For
each engine and simulated round trip, chats and outbox rows are seeded into a fresh database
through `bot.storage`; the bot is built exactly as production builds it
(`bot.chat.application.build_application`: the `Pacer` as PTB's rate limiter, default
connection pool) and the real `Sender` drains the outbox with its default window and `Pacer`.
The fake Telegram runs in its own process (as Telegram runs on its own machine) on loopback,
answers every sendMessage a round trip after it was sent (counted half-way), and answers 429
when more than 30 messages arrive in any rolling second, or a private chat exceeds a burst of 3
then 1 per second, or a group exceeds 20 per minute.

`--per-chat 45` gives each of the N chats 45 alerts drawn from a day of 2,000 papers: each chat
gets a digest, as most of an evening's messages are: one message (DIGEST_MESSAGES, the bot's
default) or `--digest-messages M` (3: about three messages each, as before one was the
default). `--paid-stars S` turns paid broadcasts on (a budget and a balance of S Stars): the
fake Telegram then takes up to 1,000 messages a second, so the bot's own CPU, not Telegram's
pace, is what limits the drain. Each run prints the CPU seconds of this process (the sender's)
over the drain per message delivered.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import multiprocessing
import os
import random
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.chat.application import build_application
from bot.config import load_settings
from bot.core.clock import SystemClock
from bot.core.models import Alert
from bot.services.container import Wiring, open_services
from bot.storage import Storage
from tests.fakes.feedgen import synth_papers
from tests.fakes.telegram_server import DEFAULT_TOKEN, FakeTelegram
from tests.postgres_server import start_shared_server, stop_shared_server

FIRST_CHAT = 10_000_000
DAY_PAPERS = 2000  # the day a chat's several alerts are drawn from (`--per-chat`)


async def seed(storage: Storage, alerts: int, groups: int, now: float, per_chat: int = 1) -> None:
    """`alerts` chats (the last `groups` of them groups), `per_chat` alerts each, all pending:
    with one, each chat its own paper; with more, papers of one day shared between chats."""
    papers = synth_papers(alerts if per_chat == 1 else max(DAY_PAPERS, per_chat), seed=7)
    await storage.papers.upsert_many(papers, now)
    rng = random.Random(7)
    queued = []
    for index in range(alerts):
        is_group = index >= alerts - groups
        chat_id = -(FIRST_CHAT + index) if is_group else FIRST_CHAT + index
        await storage.chats.record(chat_id, "group" if is_group else "private",
                                   f"bench chat {index}", "en", now)
        chosen = [papers[index]] if per_chat == 1 else rng.sample(papers, per_chat)
        queued += [Alert(chat_id, paper.arxiv_id, paper.version,
                         "new" if paper.version == 1 else "revision", (1,), ("cat:cs.LG",))
                   for paper in chosen]
    added = await storage.outbox.enqueue(queued, now)
    if added != alerts * per_chat:
        raise SystemExit(f"seeding queued {added} alerts, expected {alerts * per_chat}")


def serve_fake_telegram(conn: Connection, rtt: float, stars: int = 0) -> None:
    """The fake Telegram in its own process (as Telegram is on its own machine): no shared GIL."""
    with FakeTelegram(DEFAULT_TOKEN, enforce_limits=True, stars_balance=stars) as tg:
        tg.set_round_trip("sendMessage", rtt)
        conn.send((tg.token, tg.api_url))
        conn.recv()  # the drain is over
        arrivals = [call.at for call in tg.calls_of("sendMessage", ok_only=True)]
        conn.send((tg.rate_limited_count, arrivals))


async def run(alerts: int, groups: int, conn: Connection, freeze: bool,
              window: int | None, database_url: str | None = None, per_chat: int = 1,
              stars: int = 0, digest_messages: int | None = None) -> dict[str, float]:
    """One drain; on a fresh SQLite file, or on `database_url` (a fresh PostgreSQL one)."""
    token, api_url = conn.recv()
    clock = SystemClock()
    with tempfile.TemporaryDirectory() as folder:
        env = {
            "TELEGRAM_BOT_TOKEN": token,
            "TELEGRAM_API_URL": api_url,
            **({"DATABASE_URL": database_url} if database_url else
               {"DATABASE_PATH": str(Path(folder) / "bench.sqlite3")}),
            "HF_PAPERS_URL": "off",
            **({} if window is None else {"SEND_WINDOW": str(window)}),
            **({"PAID_BROADCAST_STARS_PER_DAY": str(stars)} if stars else {}),
            **({"DIGEST_MESSAGES": str(digest_messages)} if digest_messages else {}),
        }
        settings = load_settings(env, env_file=None)
        # The bot's own Telegram client (its request settings) and its own services.
        bot = build_application(settings, clock).bot
        await bot.initialize()
        try:
            async with open_services(settings, bot=bot, wiring=Wiring(clock=clock)) as services:
                await seed(services.storage, alerts, groups, clock.now(), per_chat)
                if freeze:
                    # What a start-up `gc.freeze()` would do: the objects alive after start-up
                    # leave the collector's view, so no full collection stalls the event loop.
                    gc.collect()
                    gc.freeze()
                sender = services.sender
                started, cpu = time.perf_counter(), time.process_time()
                report = await sender.drain()
                seconds = time.perf_counter() - started
                cpu = time.process_time() - cpu
                counts = await services.storage.outbox.counts()
        finally:
            await bot.shutdown()
    conn.send("done")
    rate_limited, arrivals = conn.recv()
    arrivals.sort()
    span = arrivals[-1] - arrivals[0] if len(arrivals) > 1 else 0.0
    messages = len(arrivals)
    print(f"  delivered: {report.sent} alerts in {messages} messages ({report.digests} digests, "
          f"{report.paid} paid; outbox: {counts}), window {sender.window}")
    print(f"  CPU of this process over the drain: {cpu:.2f} s, "
          f"{cpu / max(1, messages) * 1000:.2f} ms a message; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"  time to drain: {seconds:.2f} s; achieved {messages / seconds:.2f} messages/s "
          f"(first to last arrival: {(len(arrivals) - 1) / span if span else 0:.2f}/s)")
    busiest = max_in_window(arrivals, 1.0)
    print(f"  busiest rolling second at the server: {busiest} messages; "
          f"self-caused 429s: {rate_limited}")
    print(f"  sender retry_after waits: {report.retry_after_waits}, retried later: "
          f"{report.retried}, failed: {report.failed}")
    return {"rate": messages / seconds, "busiest": busiest, "429s": rate_limited,
            "sent": report.sent, "cpu_ms": cpu / max(1, messages) * 1000}


def drain(alerts: int, groups: int, rtt: float, freeze: bool = False,
          window: int | None = None, database_url: str | None = None, per_chat: int = 1,
          stars: int = 0, digest_messages: int | None = None) -> dict[str, float]:
    """`run` against the fake Telegram, started in its own process for this drain."""
    ours, theirs = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=serve_fake_telegram, args=(theirs, rtt, stars), daemon=True)
    server.start()
    try:
        return asyncio.run(run(alerts, groups, ours, freeze, window, database_url, per_chat,
                               stars, digest_messages))
    finally:
        server.join(timeout=10)
        if server.is_alive():
            server.terminate()


def max_in_window(times: list[float], window: float) -> int:
    """The most arrivals in any half-open interval of `window` seconds."""
    best, start = 0, 0
    for end, at in enumerate(times):
        while times[start] <= at - window:
            start += 1
        best = max(best, end - start + 1)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rtt", default="0",
                        help="simulated round trips in seconds, comma separated (e.g. 0,0.1,0.3)")
    parser.add_argument("--alerts", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=0,
                        help="how many of the chats are groups (default: all private)")
    parser.add_argument("--per-chat", type=int, default=1,
                        help="alerts per chat (over 10: a digest each)")
    parser.add_argument("--digest-messages", type=int, default=None,
                        help="DIGEST_MESSAGES: messages a digest's first delivery may take "
                             "(default: the bot's, 1)")
    parser.add_argument("--paid-stars", type=int, default=0,
                        help="paid broadcasts with this budget and balance in Stars (default off)")
    parser.add_argument("--window", type=int, default=None,
                        help="the send window (default: the bot's default, SEND_WINDOW unset)")
    parser.add_argument("--gc-freeze", action="store_true",
                        help="gc.freeze() after start-up (not what production does today)")
    parser.add_argument("--engines", default="sqlite",
                        help="storage engines, comma separated: sqlite, postgresql (a server "
                             "started for the run from Debian's package, default durability)")
    args = parser.parse_args()
    try:
        bench(args)
    finally:
        stop_shared_server()


def bench(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.WARNING)
    round_trips = [float(part) for part in args.rtt.split(",")]
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results = []
    runs = [(engine, rtt) for engine in args.engines.split(",") for rtt in round_trips]
    for engine, rtt in runs:
        database_url = (start_shared_server(durable=True).new_database()
                        if engine == "postgresql" else None)
        print(f"{engine}, round trip {rtt * 1000:.0f} ms: {args.alerts * args.per_chat} alerts "
              f"to {args.alerts} chats ({args.groups} groups)"
              f"{', gc frozen after start-up' if args.gc_freeze else ''}"
              f"{f', paid broadcasts ({args.paid_stars} Stars)' if args.paid_stars else ''}"
              f"{f', DIGEST_MESSAGES={args.digest_messages}' if args.digest_messages else ''}")
        results.append(drain(args.alerts, args.groups, rtt, args.gc_freeze, args.window,
                             database_url, args.per_chat, args.paid_stars,
                             args.digest_messages))
    base = results[0]["rate"]
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("engine     | round trip | messages/s | ratio to the first | busiest second | "
          "self-caused 429s | CPU a message")
    for (engine, rtt), result in zip(runs, results, strict=True):
        print(f"{engine:<10} | {rtt * 1000:7.0f} ms | {result['rate']:10.2f} | "
              f"{result['rate'] / base:18.2f} | {result['busiest']:14d} | "
              f"{result['429s']:16d} | {result['cpu_ms']:.2f} ms")


if __name__ == "__main__":
    main()

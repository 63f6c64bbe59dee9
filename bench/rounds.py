"""Benchmark: the memory and CPU of the evening's digest round and For-you round, in-process.

Run with `.venv/bin/python bench/rounds.py [--chats 10000] [--seed 1] [--window 15]
[--no-tracemalloc] [--together] [--only digest|for-you] [--keep PATH]`. The set-up (the
database and the poll, in a child process) takes about a minute at 10,000 chats; `--keep PATH`
keeps the database made for the rounds and a later run with the same `--keep PATH` starts from
a copy of it. The rounds themselves are slow at 10,000 chats (on 3 December the digest round
had used 8 minutes of CPU when stopped, For you several): `--chats 1000` takes about three
minutes in all, `--only for-you` measures the For-you round alone.

The set-up is bench/evening.py's (`build_database`: `--chats` chats with 10 subscriptions each,
a quarter on a daily digest, a fifth with For you on and 10 liked papers each), then the real
`Pipeline.poll` of the day's 2,000 papers served by the fake arXiv (about 500,000 alerts at
10,000 chats). Then, with the clock at the digests' instant, the two rounds the evening runs
there, one after the other: `send_due_digests` (every digest chat's digest, ordered by the
chat's model where it has one, handed to the sender at once) and `queue_for_you` (a model per
chat with likes, scoring the day's papers). The sender is the bot's own, sending to an
in-process stand-in for Telegram that answers at once with no limits, so a round's time is the
bot's work, not Telegram's pace; `--window 515` gives the sender as many workers as the
3 December evening's with paid broadcasts on (2 × its free and paid windows).

Printed per round: the process's peak RSS during it (VmHWM, reset before the round) and RSS
after it, tracemalloc's peak above the round's start and what it held after (unless
`--no-tracemalloc`: tracing costs CPU and its own memory), the round's CPU seconds (this
process and the vocabulary fit's child), and the load average. `--together` runs both rounds
at once, as the evening does when digests and For you come due at the same minute.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.evening import PAPERS, build_database
from bench.match import Corpus
from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.core.memory import cap_malloc_arenas, fix_mmap_threshold
from bot.delivery.pacing import Pacer
from bot.delivery.sender import DEFAULT_SEND_WINDOW, Sender
from bot.services import daily
from bot.services.container import Wiring, open_services
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed

TOKEN = "123456:BENCH-rounds"
MB = 2**20


class InstantTelegram:
    """Takes every message at once (the sender's only call in a round): no network, no limits."""

    def __init__(self) -> None:
        self.messages = 0
        self.characters = 0

    async def send_message(self, chat_id: int, text: str, **_: object) -> SimpleNamespace:
        self.messages += 1
        self.characters += len(text)
        return SimpleNamespace(message_id=self.messages)


def _status(field: str) -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field):
                return int(line.split()[1]) / 1024
    return 0.0


def _reset_peak_rss() -> bool:
    """Reset VmHWM to the current RSS (Linux's clear_refs 5); False where not allowed."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class Figures:
    name: str
    result: str
    rss_before: float
    rss_peak: float
    rss_after: float
    traced_peak: float | None
    traced_held: float | None
    cpu: float
    wall: float
    load: tuple[float, float]

    def line(self) -> str:
        traced = ("" if self.traced_peak is None else
                  f"; tracemalloc peak +{self.traced_peak:.0f} MB, held +{self.traced_held:.1f} MB")
        return (f"{self.name}: {self.result}; RSS {self.rss_before:.0f} → peak "
                f"{self.rss_peak:.0f} → {self.rss_after:.0f} MB{traced}; {self.cpu:.1f} s CPU, "
                f"{self.wall:.1f} s wall; load {self.load[0]:.2f} → {self.load[1]:.2f}")


async def measured(name: str, work, trace: bool) -> Figures:
    """Run `work()` (a coroutine function returning a description) and measure it."""
    load = os.getloadavg()[0]
    rss_before = _status("VmRSS:")
    peak_reset = _reset_peak_rss()
    if trace:
        tracemalloc.start()
        start = tracemalloc.get_traced_memory()[0]
    cpu, wall = _cpu(), time.perf_counter()
    result = await work()
    cpu, wall = _cpu() - cpu, time.perf_counter() - wall
    traced_peak = traced_held = None
    if trace:
        held, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        traced_peak, traced_held = (peak - start) / MB, (held - start) / MB
    rss_peak = _status("VmHWM:") if peak_reset else float("nan")
    return Figures(name, result, rss_before, rss_peak, _status("VmRSS:"), traced_peak,
                   traced_held, cpu, wall, (load, os.getloadavg()[0]))


def _settings(database: Path, server: FakeArxivServer | None):
    env = {"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_PATH": str(database),
           "ARXIV_MIN_INTERVAL_SECONDS": "0", "HF_PAPERS_URL": "off"}
    if server is not None:
        env |= {"ARXIV_RSS_URL": server.rss_url, "ARXIV_API_URL": server.api_url}
    return load_settings(env, env_file=None)


async def prepare(database: Path, chats: int, seed: int) -> dict[str, float]:
    """The evening's database and its poll: every alert of the day queued, none sent."""
    corpus = Corpus(seed)
    start = time.time()
    digest_at = start + 600  # after the poll, as in the evening; the clock is set there
    population = await build_database(database, chats, seed, digest_at, corpus)
    papers = [corpus.paper(n) for n in range(PAPERS)]
    feed = rss_feed(papers, names=("cs",), announce_date=datetime.now(UTC))
    clock = ManualClock(start)
    with FakeArxivServer() as server:
        server.set_feed(None, feed)
        async with open_services(_settings(database, server), bot=InstantTelegram(),
                                 wiring=Wiring(clock=clock)) as services:
            report = await services.pipeline.poll()
    if report.failed_sources:
        raise SystemExit(f"a feed failed: {report.failed_sources}")
    return {"digest_at": digest_at, "alerts": report.alert_count,
            "digest_chats": len(population.digest), "for_you_chats": len(population.for_you)}


async def rounds(database: Path, facts: dict[str, float], window: int, trace: bool,
                 together: bool, only: str | None = None) -> list[Figures]:
    clock = ManualClock(facts["digest_at"] + 1)
    telegram = InstantTelegram()
    unlimited = Pacer(rate=1e9, private_interval=0.0, group_interval=0.0, margin=0.0,
                      paid_rate=1e9)
    async with open_services(_settings(database, None), bot=telegram,
                             wiring=Wiring(clock=clock, pacer=unlimited)) as services:
        # The bot's sender, but with the window asked for (its workers are twice that).
        sender = Sender(telegram, services.storage, clock, unlimited, window=window,
                        relevance=services.ranker.chat_scores)

        async def digests() -> str:
            before = telegram.messages
            chats = await daily.send_due_digests(services.storage, sender, clock.now())
            return f"{chats:,} digests, {telegram.messages - before:,} messages"

        async def for_you() -> str:
            queued = await daily.queue_for_you(services.storage, services.ranker, clock.now())
            return f"{queued:,} For-you messages queued"

        if only == "for-you":
            await services.ranker.vocabulary()  # fitted before, as the digest round would
            return [await measured("For-you round", for_you, trace)]
        if only == "digest":
            return [await measured("digest round", digests, trace)]
        if together:
            async def both() -> str:
                return "; ".join(await asyncio.gather(digests(), for_you()))
            return [await measured("both rounds at once", both, trace)]
        return [await measured("digest round", digests, trace),
                await measured("For-you round", for_you, trace)]


def _prepared(database: Path, chats: int, seed: int) -> dict[str, float]:
    return asyncio.run(prepare(database, chats, seed))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=DEFAULT_SEND_WINDOW,
                        help="the sender's free window (its workers are twice it, at least 40)")
    parser.add_argument("--no-tracemalloc", action="store_true")
    parser.add_argument("--together", action="store_true")
    parser.add_argument("--only", choices=("digest", "for-you"),
                        help="run one round alone (For you after the vocabulary's fit)")
    parser.add_argument("--keep", type=Path, help="keep (or reuse) the database made for the "
                        "rounds here, and its facts beside it")
    args = parser.parse_args()
    # As `python -m bot` does before anything allocates much.
    cap_malloc_arenas()
    fix_mmap_threshold()
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-rounds-") as folder:
        database = Path(folder) / "bot.sqlite3"
        facts_path = args.keep.with_suffix(".json") if args.keep else None
        if args.keep and args.keep.exists() and facts_path.exists():
            shutil.copy(args.keep, database)
            facts = json.loads(facts_path.read_text())
            print(f"reusing {args.keep}", flush=True)
        else:
            started = time.perf_counter()
            # In a child, so that the poll's memory is not counted in the rounds'.
            with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
                facts = pool.submit(_prepared, database, args.chats, args.seed).result()
            print(f"set-up (database and poll) {time.perf_counter() - started:.0f} s; "
                  f"load {os.getloadavg()[0]:.2f}", flush=True)
            if args.keep:
                shutil.copy(database, args.keep)
                facts_path.write_text(json.dumps(facts))
        print(f"{args.chats:,} chats: {facts['digest_chats']:,} on a digest, "
              f"{facts['for_you_chats']:,} with For you; {facts['alerts']:,} alerts queued; "
              f"sender window {args.window}", flush=True)
        print(f"RSS before the rounds {_status('VmRSS:'):.0f} MB", flush=True)
        for figures in asyncio.run(rounds(database, facts, args.window,
                                          not args.no_tracemalloc, args.together,
                                          args.only)):
            print(figures.line(), flush=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

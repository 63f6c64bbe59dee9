"""Benchmark: parse and store a 2,000-item announcement feed, again (all seen), and a 304 poll.

Run with `.venv/bin/python bench/ingest.py [--items N] [--repeat R] [--all-cores]`. The feed is
generated in rss.arxiv.org's format (tests/fakes/feedgen.py: 60% new, 10% cross, 30% replace);
it goes through the real code: `parse_rss` and `PaperRepository.upsert_many` into a fresh SQLite
file, then the whole `Pipeline.poll` against a fake arXiv on loopback. The process is pinned to
one core unless `--all-cores`. Timings are medians of `--repeat` runs; peak memory is measured in
a separate run under tracemalloc (which slows Python down, so it is kept out of the timings).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import resource
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from telegram import Bot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.arxiv.feeds import parse_rss
from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.services.container import Wiring, open_services
from bot.storage import open_storage
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed, synth_papers

AIM_SECONDS = 2.0
TOKEN = "123456:BENCH-token"


async def _timed(step: Callable[[], Awaitable[object]]) -> tuple[float, float, object]:
    """Wall and CPU seconds of one awaited step, and its result."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = await step()
    return time.perf_counter() - wall, time.process_time() - cpu, result


async def _ingest_twice(body: bytes, folder: Path) -> dict[str, float | str]:
    """Parse + upsert into a fresh database, then the same feed again."""
    storage = await open_storage(folder / "bench.sqlite3")
    try:
        figures: dict[str, float | str] = {}
        for label, now in (("first", 1.0), ("again", 2.0)):
            wall, cpu = time.perf_counter(), time.process_time()
            feed = parse_rss(body)
            parsed_wall, parsed_cpu = time.perf_counter(), time.process_time()
            changes = await storage.papers.upsert_many(feed.papers, now)
            figures[f"{label}.parse"] = parsed_wall - wall
            figures[f"{label}.upsert"] = time.perf_counter() - parsed_wall
            figures[f"{label}.cpu"] = time.process_time() - cpu
            figures[f"{label}.parse_cpu"] = parsed_cpu - cpu
            statuses = Counter(change.status for change in changes)
            figures[f"{label}.statuses"] = ", ".join(
                f"{statuses[s]} {s}" for s in ("new", "revised", "seen") if statuses[s])
        return figures
    finally:
        await storage.close()


async def _pipeline_polls(body: bytes, folder: Path) -> dict[str, float | str]:
    """A full poll through the fake arXiv on loopback, then the 304 poll with the stored ETag."""
    with FakeArxivServer() as server:
        server.set_feed(None, body)
        settings = load_settings({
            "TELEGRAM_BOT_TOKEN": TOKEN, "ARXIV_RSS_URL": server.rss_url,
            "ARXIV_API_URL": server.api_url, "DATABASE_PATH": str(folder / "poll.sqlite3"),
            "ARXIV_MIN_INTERVAL_SECONDS": "0", "HF_PAPERS_URL": "off",
        }, env_file=None)
        clock = ManualClock()
        # The bot's own construction; the poll sends nothing, so the bot is never reached.
        async with open_services(settings, bot=Bot(TOKEN), wiring=Wiring(clock=clock)) as services:
            full_seconds, full_cpu, full = await _timed(services.pipeline.poll)
            clock.advance(900)
            cached_seconds, cached_cpu, cached = await _timed(services.pipeline.poll)
        requests = server.requests
    outcomes = [source.outcome for report in (full, cached)
                for source in report.sources]  # type: ignore[attr-defined]
    if outcomes != ["ok", "not-modified"] or [r.status for r in requests] != [200, 304]:
        raise SystemExit(f"unexpected poll outcomes {outcomes}")
    return {"poll.full": full_seconds, "poll.full_cpu": full_cpu, "poll.304": cached_seconds,
            "poll.304_cpu": cached_cpu,
            "poll.statuses": f"{full.count('new')} new, {full.count('revised')} revised"}


async def _peak_memory(body: bytes, folder: Path) -> int:
    tracemalloc.start()
    try:
        await _ingest_twice(body, folder)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _profile(body: bytes, top: int = 6) -> str:
    """Where one fresh parse + upsert spends its time, grouped by module (SQLite itself runs in
    aiosqlite's thread, outside the profile: see the upsert column)."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as folder:
        async def once() -> None:
            storage = await open_storage(Path(folder) / "profile.sqlite3")
            try:
                profiler.enable()
                papers = parse_rss(body).papers
                await storage.papers.upsert_many(papers, 1.0)
                profiler.disable()
            finally:
                await storage.close()

        asyncio.run(once())
    by_module: Counter[str] = Counter()
    stats = pstats.Stats(profiler, stream=io.StringIO())
    for (file, _, _), (_, _, own, _, _) in stats.stats.items():  # type: ignore[attr-defined]
        parts = Path(file).parts
        if "site-packages" in parts:
            module = parts[parts.index("site-packages") + 1]
        elif "bot" in parts:
            module = "/".join(parts[parts.index("bot"):])
        else:
            module = "stdlib/builtins" if file.startswith(("<", "~")) or "python3" in file \
                else Path(file).name
        by_module[module] += own
    total = sum(by_module.values())
    lines = [f"profile of one parse + upsert, own time by module ({total:.2f} s under cProfile):"]
    lines += [f"  {module:<32}{seconds:6.2f} s  {seconds / total:4.0%}"
              for module, seconds in by_module.most_common(top)]
    return "\n".join(lines)


def _run(coro_factory: Callable[[Path], Awaitable[dict[str, float | str]]], repeat: int
         ) -> dict[str, float | str]:
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="bench-ingest-") as folder:
            runs.append(asyncio.run(coro_factory(Path(folder))))
    merged: dict[str, float | str] = {}
    for key, value in runs[0].items():
        merged[key] = statistics.median(float(r[key]) for r in runs) \
            if isinstance(value, float) else value
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--all-cores", action="store_true")
    parser.add_argument("--profile", action="store_true",
                        help="also print the top functions of one parse + upsert by own time")
    args = parser.parse_args(argv)
    if not args.all_cores and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})

    body = rss_feed(synth_papers(args.items, seed=args.seed), names=("cs", "math", "stat"))
    items = args.items
    ingest = _run(lambda folder: _ingest_twice(body, folder), args.repeat)
    polls = _run(lambda folder: _pipeline_polls(body, folder), args.repeat)
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as folder:
        peak = asyncio.run(_peak_memory(body, Path(folder)))
    maxrss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    def row(label: str, parse: float | None, upsert: float | None, total: float, cpu: float,
            note: str) -> str:
        cells = "  ".join(f"{v:8.3f}" if v is not None else f"{'':8}" for v in (parse, upsert))
        return (f"{label:<30}{cells}  {total:8.3f}  {cpu:8.3f}  {items / total:8,.0f}  {note}")

    first_total = float(ingest["first.parse"]) + float(ingest["first.upsert"])
    again_total = float(ingest["again.parse"]) + float(ingest["again.upsert"])
    first_cpu = float(ingest["first.cpu"])
    cores = "all cores" if args.all_cores else "pinned to 1 core"
    print(f"ingest benchmark: {items:,} items, feed {len(body) / 1e6:.2f} MB, "
          f"median of {args.repeat}, {cores}, Python {sys.version.split()[0]}, "
          f"load average {os.getloadavg()[0]:.1f}")
    print(f"{'step':<30}{'parse s':>8}  {'upsert s':>8}  {'wall s':>8}  {'CPU s':>8}  "
          f"{'items/s':>8}  result")
    print(row("parse + upsert, fresh db", float(ingest["first.parse"]),
              float(ingest["first.upsert"]), first_total, first_cpu,
              str(ingest["first.statuses"])))
    print(row("same feed again", float(ingest["again.parse"]), float(ingest["again.upsert"]),
              again_total, float(ingest["again.cpu"]), str(ingest["again.statuses"])))
    print(row("Pipeline.poll, loopback, 200", None, None, float(polls["poll.full"]),
              float(polls["poll.full_cpu"]), f"{polls['poll.statuses']}; fetch+parse+upsert"))
    print(f"{'Pipeline.poll, loopback, 304':<30}{'':8}  {'':8}  {float(polls['poll.304']):8.4f}"
          f"  {float(polls['poll.304_cpu']):8.4f}  {'':8}  not modified: no body, no parse")
    print(f"parse share of CPU: {float(ingest['first.parse_cpu']) / first_cpu:.0%}; "
          f"peak memory: tracemalloc {peak / 1e6:.1f} MB (parse + upsert, twice), "
          f"process max RSS {maxrss_kib / 1024:.0f} MB")
    if args.profile:
        print(_profile(body))
    met = first_total < AIM_SECONDS and first_cpu < AIM_SECONDS
    print(f"aim: {items:,}-item ingest under {AIM_SECONDS:.0f} s on one core: "
          f"{'met' if met else 'MISSED'} (wall {first_total:.2f} s, CPU {first_cpu:.2f} s)")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())

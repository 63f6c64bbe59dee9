"""Benchmark: inline search (`@bot words` and `@bot <id>`) over 1,000 and 100,000 stored papers.

Run with `.venv/bin/python bench/inline.py [--sizes 1000,100000] [--queries 60]`. For each size a
fresh SQLite database is filled with `bench/match.py`'s papers (words with the frequencies of
real arXiv titles and abstracts, technical terms by topic, 30,000 authors), a user's library of
200 of them is saved, and the bot's own `InlineSearch` (built by `open_services`) answers what
people type: one or two technical terms or an author's surname, the last one cut short while
typing; stored ids; and, as the hard case, the commonest words ("the", "of"). The figure is the
server time of `answer()`, in the process, as the handler awaits it (rendering the cards and
Telegram's round trip come on top). Aim: under 100 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

from telegram import Bot

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.match import Corpus
from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.services.container import Wiring, open_services

AIM_MS = 100.0
USER = 4242
LIBRARY = 200
TOKEN = "123456:BENCH-token"


def typed_queries(corpus: Corpus, count: int, rng: random.Random) -> list[str]:
    """What people type: one or two terms of a topic, or a surname, the last cut short."""
    queries = []
    for _ in range(count):
        if rng.random() < 0.25:
            chosen = [rng.choice(corpus.people).split()[-1]]
        else:
            chosen = rng.sample(rng.choice(corpus.topics), rng.randint(1, 2))
        last = chosen[-1]
        chosen[-1] = last[:rng.randint(min(3, len(last)), len(last))]
        queries.append(" ".join(chosen).lower())
    return queries


COMMONEST = ("the", "of the", "learning", "model")


def _figures(seconds: list[float]) -> tuple[float, float, float]:
    ms = sorted(s * 1000 for s in seconds)
    return statistics.median(ms), ms[int(0.99 * (len(ms) - 1))], ms[-1]


async def measure(size: int, queries: int, folder: Path) -> dict[str, float]:
    settings = load_settings({"TELEGRAM_BOT_TOKEN": TOKEN, "HF_PAPERS_URL": "off",
                              "DATABASE_PATH": str(folder / f"inline-{size}.sqlite3")},
                             env_file=None)
    clock = ManualClock()
    rng = random.Random(size)
    async with open_services(settings, bot=Bot(TOKEN), wiring=Wiring(clock=clock)) as services:
        storage = services.storage
        corpus = Corpus(seed=size)
        papers = [corpus.paper(number) for number in range(size)]
        started = time.perf_counter()
        for first in range(0, size, 2000):
            await storage.papers.upsert_many(papers[first:first + 2000], clock.now())
        filled = time.perf_counter() - started
        await storage.chats.record(USER, "private", "bench", "en", clock.now())
        for paper in rng.sample(papers, min(LIBRARY, size)):
            await storage.saved.save(USER, paper.arxiv_id, paper.version, clock.now())
        texts = typed_queries(corpus, queries, rng)
        texts += [rng.choice(papers).arxiv_id for _ in range(queries // 4)]
        await services.inline.answer(USER, texts[0])  # warm the page cache
        seconds, results, common = [], [], []
        for text in texts:
            begun = time.perf_counter()
            answer = await services.inline.answer(USER, text)
            seconds.append(time.perf_counter() - begun)
            results.append(len(answer.papers))
        for text in COMMONEST:
            begun = time.perf_counter()
            await services.inline.answer(USER, text)
            common.append(time.perf_counter() - begun)
    p50, p99, top = _figures(seconds)
    return {"fill": filled, "p50": p50, "p99": p99, "max": top,
            "results": statistics.mean(results), "count": len(seconds),
            "common": max(common) * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="1000,100000")
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"inline search benchmark, Python {sys.version.split()[0]}, load average {load:.1f}")
    print("papers  | fill s | queries | p50 ms | p99 ms | max ms | results (mean) | commonest "
          "words, max ms | aim")
    with tempfile.TemporaryDirectory(prefix="bench-inline-") as folder:
        for size in (int(s) for s in args.sizes.split(",")):
            f = asyncio.run(measure(size, args.queries, Path(folder)))
            verdict = "met" if f["p99"] < AIM_MS else "NOT met"
            print(f"{size:>7,} | {f['fill']:6.1f} | {f['count']:>7} | {f['p50']:6.1f} | "
                  f"{f['p99']:6.1f} | {f['max']:6.1f} | {f['results']:14.1f} | "
                  f"{f['common']:21.1f} | "
                  f"p99 < {AIM_MS:.0f} ms {verdict}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

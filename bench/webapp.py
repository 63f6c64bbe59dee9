"""Benchmark: the Mini App's library page over a library of 1,000 saved papers.

Run with `.venv/bin/python bench/webapp.py [--papers N] [--stored N] [--searches N]
[--engine sqlite|postgresql]`. A fresh database gets N realistic papers
(`tests.fakes.feedgen.synth_papers`), all saved by one private chat, and `--stored` more papers
no chat saved (the bot stores every announced paper: the full-text index searched holds them
all); the services are opened as the bot opens them (`open_services`) and the Mini App's server
(`bot.web.server.WebApp`) listens on loopback. Requests carry a correctly signed initData.
Times are the server's own (its `Server-Timing` header: from the request read to the page
rendered), printed with the machine's load. Aims: the first render of the library under
150 ms, a search under 50 ms. PostgreSQL: tests/postgres_server.py's cluster (Debian's package).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx
from telegram import Bot

from bot.config import load_settings
from bot.services.budget import UNLIMITED
from bot.services.container import Wiring, open_services
from bot.storage import open_storage
from bot.web.auth import sign
from bot.web.server import WebApp
from tests.fakes.feedgen import synth_papers

TOKEN = "123456:BENCH-token_abcdefghijklmnopqrstuvwxyz"
CHAT = 4242
SEARCHES = ("attention", "graph neural", "yoneki", "2411.001", "diffusion model", "quantum",
            "robust", "learning", "transformer", "bayesian")


async def seed(url: str, count: int, stored: int = 0) -> None:
    storage = await open_storage(url)
    try:
        now = time.time()
        papers = synth_papers(count, seed=11)
        await storage.papers.upsert_many(papers, now)
        for start in range(0, stored, 5000):  # unsaved papers, numbered after the saved ones
            await storage.papers.upsert_many(synth_papers(
                min(5000, stored - start), seed=12 + start, first_number=count + start + 1), now)
        await storage.chats.record(CHAT, "private", "bench", "en", now)
        await storage.saved.save_many(CHAT, [(p.arxiv_id, p.version) for p in papers], now)
        saved = await storage.saved.count(CHAT)
        if saved != count:
            raise SystemExit(f"seeding saved {saved} papers, expected {count}")
    finally:
        await storage.close()


def server_ms(response: httpx.Response) -> float:
    if response.status_code != 200:
        raise SystemExit(f"the Mini App answered {response.status_code}: {response.text[:200]}")
    return float(response.headers["Server-Timing"].split("dur=")[1])


async def run(papers: int, stored: int, searches: int, engine: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        if engine == "postgresql":
            from tests.postgres_server import start_shared_server
            url = start_shared_server().new_database()
        else:
            url = f"sqlite:///{Path(folder) / 'bench.sqlite3'}"
        await seed(url, papers, stored)
        settings = load_settings({"TELEGRAM_BOT_TOKEN": TOKEN, "DATABASE_URL": url,
                                  "HF_PAPERS_URL": "off"}, env_file=None)
        # The command budget is off: a script's requests come faster than a person's.
        async with open_services(settings, bot=Bot(TOKEN),
                                 wiring=Wiring(budget=UNLIMITED)) as services:
            webapp = WebApp(services, Bot(TOKEN), path="/app")
            port = webapp.listen("127.0.0.1", 0)
            base = f"http://127.0.0.1:{port}/app/view"
            user = json.dumps({"id": CHAT, "first_name": "Bench", "language_code": "en"})
            init = sign({"user": user, "auth_date": str(int(time.time()))}, TOKEN)
            headers = {"Authorization": f"tma {init}"}
            try:
                async with httpx.AsyncClient(timeout=30) as client:
                    first = server_ms(await client.get(f"{base}/library", headers=headers))
                    again = [server_ms(await client.get(f"{base}/library", headers=headers))
                             for _ in range(10)]
                    found = []
                    for index in range(searches):
                        query = SEARCHES[index % len(SEARCHES)]
                        found.append(server_ms(await client.get(
                            f"{base}/library", params={"q": query, "sort": "updated"},
                            headers=headers)))
            finally:
                await webapp.stop()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"library of {papers} saved papers ({stored} more stored), {engine}, "
          f"server time (Server-Timing), load {load}")
    print(f"  first render of the library: {first:.1f} ms (aim < 150 ms)")
    print(f"  library again: median {statistics.median(again):.1f} ms, "
          f"max {max(again):.1f} ms over {len(again)}")
    print(f"  search: median {statistics.median(found):.1f} ms, "
          f"p95 {sorted(found)[int(len(found) * 0.95) - 1]:.1f} ms, max {max(found):.1f} ms "
          f"over {len(found)} (aim < 50 ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=1000)
    parser.add_argument("--stored", type=int, default=0)
    parser.add_argument("--searches", type=int, default=40)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    arguments = parser.parse_args()
    asyncio.run(run(arguments.papers, arguments.stored, arguments.searches, arguments.engine))


if __name__ == "__main__":
    main()

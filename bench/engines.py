"""Benchmark: the storage work of a big poll and of a drain, on SQLite and on PostgreSQL.

Run with `.venv/bin/python bench/engines.py [--papers 2000] [--chats 10000] [--per-paper 250]
[--drain 3000] [--engines sqlite,postgresql]`. For each engine, a fresh database through
`bot.storage.open_storage`: `--chats` chats, then a 2,000-paper day stored in one transaction
(`PapersInTransaction.upsert`, as the ingest does) with the alerts that 100,000 subscriptions
give it (each paper to `--per-paper` chats: 500,000 alerts, about what bench/match.py's
subscriptions produce) queued in the same transaction; then what a drain asks of storage for
each of `--drain` messages: the chat's pending rows, the claim and the sent mark, one after
another (the sender's statements, without Telegram). PostgreSQL is the tests' own server
(tests/postgres_server.py: Debian's package, a cluster in a temporary folder, here with the
server's default durability, fsync and synchronous commits on, unlike the tests'); SQLite a
file in WAL mode with the bot's pragmas (synchronous=NORMAL).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.core.models import Alert
from bot.storage import open_storage
from tests.fakes.feedgen import synth_papers
from tests.postgres_server import start_shared_server, stop_shared_server

FIRST_CHAT = 1_000_000


async def measure(url: str, papers: int, chats: int, per_paper: int, drain: int
                  ) -> dict[str, float]:
    storage = await open_storage(url)
    try:
        rng = random.Random(7)
        now = time.time()
        chat_ids = [FIRST_CHAT + n for n in range(chats)]
        for chat_id in chat_ids:
            await storage.chats.record(chat_id, "private", f"chat {chat_id}", "en", now)
        day = synth_papers(papers, seed=3)
        alerts = [Alert(chat_id, p.arxiv_id, p.version,
                        "new" if p.version == 1 else "revision", (1,), ("cat:cs.LG",))
                  for p in day for chat_id in rng.sample(chat_ids, per_paper)]
        started = time.perf_counter()
        async with storage.transaction() as tx:
            changes = await tx.papers.upsert(day, now)
            upsert = time.perf_counter() - started
            queued = await tx.outbox.enqueue(alerts, now)
        ingest = time.perf_counter() - started
        assert len(changes) == papers and queued == len(alerts), (len(changes), queued)

        targets = rng.sample(chat_ids, min(drain, chats))
        started = time.perf_counter()
        for message_id, chat_id in enumerate(targets, 1):
            row = (await storage.outbox.pending_for_chat(chat_id, now + 1))[0]
            assert await storage.outbox.claim([row.id], now + 1)
            await storage.outbox.mark_sent([row.id], message_id, now + 1, alone=True)
        drained = time.perf_counter() - started
        return {"upsert": upsert, "ingest": ingest,
                "alerts": queued, "per_message_ms": drained / len(targets) * 1000,
                "drain": drained, "messages": len(targets)}
    finally:
        await storage.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--papers", type=int, default=2000)
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--per-paper", type=int, default=250)
    parser.add_argument("--drain", type=int, default=3000)
    parser.add_argument("--engines", default="sqlite,postgresql")
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
                results[engine] = asyncio.run(measure(url, args.papers, args.chats,
                                                      args.per_paper, args.drain))
    finally:
        stop_shared_server()
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{args.papers} papers, {args.chats} chats, {args.per_paper} chats a paper; "
          f"a drain of {args.drain} messages")
    print("engine     | ingest: papers, then alerts, one transaction | drain's storage a message")
    for engine, r in results.items():
        print(f"{engine:<10} | {r['ingest']:6.2f} s ({r['upsert']:.2f} s + {r['alerts']} alerts) "
              f"| {r['per_message_ms']:.2f} ms ({r['drain']:.1f} s for {r['messages']})")
    if {"sqlite", "postgresql"} <= results.keys():
        lite, pg = results["sqlite"], results["postgresql"]
        print(f"PostgreSQL / SQLite: ingest {pg['ingest'] / lite['ingest']:.2f}x, "
              f"drain's storage {pg['per_message_ms'] / lite['per_message_ms']:.2f}x")


if __name__ == "__main__":
    main()

"""Benchmark: one noisy chat against five ordinary ones, over real HTTP against the fakes.

Run with `.venv/bin/python bench/abuse.py [--scale 1.0]`. Within 10 s one chat sends 50 `/paper`
for ids arXiv does not have and 200 other commands; meanwhile 5 other chats each send `/help`
five times and one `/paper` for a paper arXiv has (and the bot has not stored). The bot is built
as production builds it (`bot.chat.application.build_application`, the real command budget, the
look-up queue, arXiv's 3-second gap) and long-polls the fake Telegram; the fakes
(`tests/fakes/`) run in their own process, as Telegram and arXiv run on their own machines, and
drive the traffic (`tests/fakes/traffic.py`). Prints the quiet chats' latencies, what the noisy
chat received, and the arXiv requests with their spacing, each beside its aim. `--without-noise`
is the control: the quiet chats alone, the noisy chat silent.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import multiprocessing
import os
import sys
import tempfile
import time
from multiprocessing.connection import Connection
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.chat.application import build_application
from bot.config import load_settings
from bot.core.clock import SystemClock
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import DEFAULT_TOKEN, FakeTelegram
from tests.fakes.traffic import Figures, Plan, answered, drive, figures, quiet_papers

SETTLE_LIMIT = 30.0  # seconds after the traffic to wait for the quiet chats' last answers


def serve_fakes(conn: Connection, plan: Plan) -> None:
    """The fakes, in their own process; they drive the traffic once the bot is polling."""
    with FakeTelegram(DEFAULT_TOKEN) as tg, FakeArxivServer() as arxiv:
        arxiv.set_api_papers(quiet_papers(plan))
        conn.send((tg.token, tg.api_url, arxiv.rss_url, arxiv.api_url))
        conn.recv()  # the bot is polling
        sent = drive(tg, plan)
        deadline = time.time() + SETTLE_LIMIT
        while time.time() < deadline and not answered(tg, sent, plan):
            time.sleep(0.2)
        time.sleep(1.0)  # anything more for the noisy chat arrives now
        conn.send(figures(tg, arxiv, sent, plan))


async def run_bot(conn: Connection) -> Figures:
    token, api_url, rss_url, arxiv_api_url = conn.recv()
    with tempfile.TemporaryDirectory() as folder:
        settings = load_settings({
            "TELEGRAM_BOT_TOKEN": token,
            "TELEGRAM_API_URL": api_url,
            "ARXIV_RSS_URL": rss_url,
            "ARXIV_API_URL": arxiv_api_url,
            "DATABASE_PATH": str(Path(folder) / "bench.sqlite3"),
        }, env_file=None)
        application = build_application(settings, SystemClock())
        await application.initialize()
        await application.post_init(application)
        await application.start()
        await application.updater.start_polling(timeout=10)
        try:
            conn.send("polling")
            result: Figures = await asyncio.to_thread(conn.recv)
        finally:
            await application.updater.stop()
            await application.stop()
            await application.post_shutdown(application)
            await application.shutdown()
    return result


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def report(result: Figures, plan: Plan) -> None:
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"(figures are slower on a busy machine)")
    print(f"traffic: in {plan.duration:.0f} s the noisy chat sent {result.noisy_sent} commands "
          f"({plan.noisy_papers} /paper for unknown ids); {plan.quiet_chats} quiet chats sent "
          f"{len(result.help_latencies) + len(result.behind_own_paper)} /help and "
          f"{len(result.paper_latencies)} /paper")
    if result.unanswered:
        print(f"UNANSWERED quiet commands: {', '.join(result.unanswered)}")
    helps = result.help_latencies
    if helps:
        print(f"quiet chats' /help latency: p50 {result.help_p50:.3f} s, "
              f"p99 {result.help_p99:.3f} s, max {max(helps):.3f} s  "
              f"(aim p99 <= 1 s: {verdict(result.help_p99 <= 1.0 and not result.unanswered)}); "
              f"{len(helps)} /help not sent while the same chat's own /paper waited")
    if result.behind_own_paper:
        held = ", ".join(f"{x:.3f}" for x in sorted(result.behind_own_paper))
        print(f"  /help sent while the same chat's own /paper still waited (a chat's updates "
              f"are handled in order): {held} s")
    papers = result.paper_latencies
    if papers:
        print(f"quiet chats' /paper latency: {', '.join(f'{x:.2f}' for x in sorted(papers))} s, "
              f"max {max(papers):.2f} s  (aim <= 10 s: "
              f"{verdict(max(papers) <= 10.0 and len(papers) == plan.quiet_chats)})")
    for latency, gap, previous in result.slow_helps:
        print(f"  a /help answered in {latency:.3f} s went out {gap:.3f} s after the previous "
              f"message to its chat ({previous!r}…): a chat gets one message a second")
    print(f"replies the noisy chat received: {result.noisy_replies}  "
          f"(aim <= 6: {verdict(result.noisy_replies <= 6)})")
    spacing = result.arxiv_min_spacing
    print(f"arXiv requests: {result.arxiv_requests} for {result.arxiv_ids_asked} ids; "
          f"minimum spacing {'—' if spacing is None else f'{spacing:.2f} s'}  "
          f"(aim >= 3 s: {verdict(spacing is None or spacing >= 3.0)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0,
                        help="scale the traffic and its duration (default 1: 250 commands in 10 s)")
    parser.add_argument("--without-noise", action="store_true",
                        help="a control run: the noisy chat sends nothing, the quiet chats the "
                             "same (what do their replies wait on without it?)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    plan = Plan().scaled(args.scale)
    if args.without_noise:
        plan = dataclasses.replace(plan, noisy_papers=0, noisy_others=0)
    ours, theirs = multiprocessing.Pipe()
    fakes = multiprocessing.get_context("spawn").Process(
        target=serve_fakes, args=(theirs, plan), daemon=True)
    fakes.start()
    try:
        result = asyncio.run(run_bot(ours))
    finally:
        fakes.join(timeout=10)
    report(result, plan)


if __name__ == "__main__":
    main()

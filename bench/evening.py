"""Benchmark: the evening that matters, end to end: arXiv rebuilds its feeds, and every chat
should have its papers soon after.

Run with `.venv/bin/python bench/evening.py [--chats 10000] [--rtt 0.1] [--paid-stars 0]
[--seed 1]`; `--chats 100000` is the large case (not in CI).

One real bot process (`python -m bot`, its settings in the environment) runs against the fake
arXiv and the fake Telegram of `tests/fakes/` (every Bot API call answered after `--rtt`
seconds, Telegram's limits enforced: 30 messages a second, 1 a second per chat, and 1,000 a
second for paid broadcasts, which cost 0.1 Stars each from the fake's balance). Its database is
made beforehand: `--chats` private chats with 10 subscriptions each, drawn like
`bench/match.py`'s (categories, authors, words, phrases, prefixes, boolean mixes); a quarter
take a daily digest at one instant a few minutes after the rebuild, each at that instant's
local time in its own time zone; a fifth have For you on (5 a day, at the same instant), with
10 papers of the previous day liked.

The evening: the feeds carry the previous announcement (empty) and the bot polls them as it
does while a due announcement is missing (every ARXIV_TIGHT_POLL_SECONDS, 60 s; the bench
widens ARXIV_TIGHT_WINDOW_SECONDS and ARXIV_STALE_AFTER_SECONDS to a day so that this holds at
whatever hour the bench runs, and the listing pages are never needed). At a random moment of a
poll interval (seeded) the feeds are rebuilt with the due day's 2,000 papers. Printed, per
phase: rebuild → feed seen (the first request after the rebuild), the fetch and the ingest +
match + store (from the bot's own poll log line), the outbox's first and last message (as the
fake Telegram received them), the digests and the For-you round; the bot's peak RSS (VmHWM)
and CPU seconds; and the p50/p99 of `/help` answered to probe chats (each asking every 5 s,
the command budget's sustained rate left alone) from the bot's start to its last message.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import re
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from datetime import time as clock_time
from pathlib import Path
from zoneinfo import ZoneInfo

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import asyncio  # noqa: E402

from bench.match import Corpus  # noqa: E402
from bot.arxiv.calendar import ARXIV_ZONE, ArxivCalendar  # noqa: E402
from bot.query.parser import canonical, parse  # noqa: E402
from bot.storage import open_storage  # noqa: E402
from tests.fakes.arxiv_server import FakeArxivServer  # noqa: E402
from tests.fakes.feedgen import rss_feed  # noqa: E402
from tests.fakes.telegram_server import DEFAULT_TOKEN, FakeTelegram  # noqa: E402

SUBSCRIPTIONS_PER_CHAT = 10
PAPERS = 2_000
FIRST_CHAT = 10_000_000
PROBES = [9_000_000 + n for n in range(10)]
PROBE_INTERVAL = 0.5  # one /help every 0.5 s, each probe chat every 5 s
DIGEST_SHARE = 0.25
FOR_YOU_SHARE = 0.2
LIKED = 10
ZONES = ["UTC", "Europe/Berlin", "Asia/Shanghai", "America/New_York", "Asia/Tokyo",
         "America/Los_Angeles", "Asia/Kolkata"]
# Every Bot API method the bot calls, each answered after the round trip.
METHODS = ["getMe", "getUpdates", "deleteWebhook", "setMyCommands", "setMyDescription",
           "setMyShortDescription", "setChatMenuButton", "sendMessage", "editMessageText",
           "editMessageReplyMarkup", "answerCallbackQuery", "sendDocument", "getChat"]
_POLL_LINE = re.compile(r"poll source=\S+ outcome=ok items=(\d+) new=(\d+) .* alerts=(\d+) "
                        r"seconds=([\d.]+) fetch=([\d.]+)")


@dataclass
class Population:
    chats: list[int]
    digest: set[int] = field(default_factory=set)
    for_you: set[int] = field(default_factory=set)


def previous_announcement(calendar: ArxivCalendar, day):
    day -= timedelta(days=1)
    while not calendar.is_announcement_date(day):
        day -= timedelta(days=1)
    return day


async def build_database(path: Path, chats: int, seed: int, corpus: Corpus) -> Population:
    """The chats, their subscriptions, digests, For you and liked papers, written before the
    bot starts (the bot's own migrations make the schema); `schedule_digests` sets when the
    digests and For you come."""
    now = time.time()
    storage = await open_storage(path)
    liked_papers = [corpus.paper(50_000 + n) for n in range(PAPERS)]
    async with storage.transaction() as tx:
        await tx.papers.upsert(liked_papers, now - 86_400)
    await storage.close()
    rng = random.Random(seed)
    population = Population([FIRST_CHAT + n for n in range(chats)])
    db = sqlite3.connect(path)
    chat_rows, subscription_rows, for_you_rows, feedback_rows = [], [], [], []
    for chat_id in population.chats:
        zone = rng.choice(ZONES)
        digest = rng.random() < DIGEST_SHARE
        for_you = rng.random() < FOR_YOU_SHARE
        if digest:
            population.digest.add(chat_id)
        if for_you:
            population.for_you.add(chat_id)
            for_you_rows.append((chat_id, 5, now - 7 * 86_400, now - 86_400))
            for paper in rng.sample(liked_papers, LIKED):
                feedback_rows.append((chat_id, paper.arxiv_id, "more", now - 86_400))
        # A digest chat had yesterday's digest; a For-you chat its message (digest_time is
        # also when For you comes).
        chat_rows.append((chat_id, "private", zone, "digest" if digest else "instant",
                          "00:00" if digest or for_you else None, now - 86_400,
                          now - 7 * 86_400, now - 86_400))
        queries: dict[str, str] = {}
        while len(queries) < SUBSCRIPTIONS_PER_CHAT:
            raw = corpus.query()
            queries.setdefault(canonical(parse(raw)), raw)
        subscription_rows += [(chat_id, query, raw, now - 7 * 86_400)
                              for query, raw in queries.items()]
    with db:
        db.executemany("INSERT INTO chats (id, type, language, timezone, delivery_mode, "
                       "digest_time, last_digest_at, created_at, last_seen_at) "
                       "VALUES (?, ?, 'en', ?, ?, ?, ?, ?, ?)",
                       chat_rows)
        db.executemany("INSERT INTO subscriptions (chat_id, query, raw_query, created_at) "
                       "VALUES (?, ?, ?, ?)", subscription_rows)
        db.executemany("INSERT INTO foryou (chat_id, count, enabled_at, last_sent_at) "
                       "VALUES (?, ?, ?, ?)", for_you_rows)
        db.executemany("INSERT INTO feedback (chat_id, arxiv_id, label, labelled_at) "
                       "VALUES (?, ?, ?, ?)", feedback_rows)
    db.close()
    return population


def schedule_digests(path: Path, digest_at: float) -> None:
    """Every chat with a digest time gets `digest_at` as its own zone's local time."""
    db = sqlite3.connect(path)
    with db:
        zones = [zone for (zone,) in db.execute(
            "SELECT DISTINCT timezone FROM chats WHERE digest_time IS NOT NULL")]
        db.executemany("UPDATE chats SET digest_time = ? WHERE timezone = ? "
                       "AND digest_time IS NOT NULL",
                       [(datetime.fromtimestamp(digest_at, ZoneInfo(zone)).strftime("%H:%M"),
                         zone) for zone in zones])
    db.close()


class Probe(threading.Thread):
    """Probe chats ask /help in turn; each answer's delay, as the fake Telegram saw it."""

    def __init__(self, tg: FakeTelegram) -> None:
        super().__init__(daemon=True)
        self.tg = tg
        self.delays: list[float] = []
        self.unanswered = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        turn = 0
        while not self.stopping.is_set():
            chat_id = PROBES[turn % len(PROBES)]
            turn += 1
            before = len(self.tg.messages(chat_id))
            asked = time.monotonic()
            self.tg.send_command(chat_id, "/help")
            # A question asked just before the stop is waited for too (the bot is stopped
            # after this thread ends): only an answer 30 s late counts as none.
            while len(self.tg.messages(chat_id)) == before:
                if time.monotonic() - asked > 30:
                    self.unanswered += 1
                    break
                time.sleep(0.005)
            else:
                self.delays.append(time.monotonic() - asked)
            self.stopping.wait(max(0.0, PROBE_INTERVAL - (time.monotonic() - asked)))


def listed(paper, names: list[str]) -> bool:
    """Whether a feed for `names` (archives and categories) lists the paper."""
    return any(category in names or category.split(".")[0] in names
               for category in paper.categories)


def proc_figures(pid: int) -> tuple[float, float]:
    """Peak RSS (MB) and CPU seconds of a process so far."""
    status = Path(f"/proc/{pid}/status").read_text()
    peak_kb = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return peak_kb / 1024, cpu


def outbox_state(path: Path, since: float = 0.0) -> tuple[dict[str, int], dict[str, int], int]:
    """The outbox's and For you's rows by status, and the For-you chats whose round since
    `since` is not queued yet."""
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        alerts = dict(db.execute("SELECT status, COUNT(*) FROM outbox GROUP BY status"))
        # A poll's alerts wait staged, a row per chat, until their chat's are read.
        staged = db.execute("SELECT COALESCE(SUM(alert_count), 0) FROM outbox_staged").fetchone()[0]
        if staged:
            alerts["pending"] = alerts.get("pending", 0) + staged
        for_you = dict(db.execute("SELECT status, COUNT(*) FROM foryou_outbox GROUP BY status"))
        rounds_left = db.execute("SELECT COUNT(*) FROM foryou WHERE last_sent_at IS NULL "
                                 "OR last_sent_at < ?", (since,)).fetchone()[0]
    finally:
        db.close()
    return alerts, for_you, rounds_left


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(share * len(ordered)) - 1)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--rtt", type=float, default=0.1, help="Bot API round trip, seconds")
    parser.add_argument("--paid-stars", type=int, default=0,
                        help="PAID_BROADCAST_STARS_PER_DAY (the fake's balance is ample)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=3600.0)
    args = parser.parse_args()

    calendar = ArxivCalendar()
    due = calendar.expected(time.time())
    before = previous_announcement(calendar, due)
    corpus = Corpus(args.seed)
    papers = [corpus.paper(n) for n in range(PAPERS)]
    rng = random.Random(args.seed)
    folder = Path(tempfile.mkdtemp(prefix="evening-"))
    database = folder / "bot.sqlite3"

    started = time.monotonic()
    population = asyncio.run(build_database(database, args.chats, args.seed, corpus))
    # The digests and For you come due a few minutes after the bot starts (rounded up to a
    # minute, as digest times are), after the rebuild: timed from the end of the build (at
    # 100,000 chats it takes minutes, and the bot's start a minute or two).
    digest_at = math.ceil((time.time() + 150 + args.chats / 1000) / 60) * 60
    schedule_digests(database, digest_at)
    print(f"{args.chats:,} chats ({len(population.digest):,} digest, "
          f"{len(population.for_you):,} with For you), "
          f"{args.chats * SUBSCRIPTIONS_PER_CHAT:,} subscriptions; database made in "
          f"{time.monotonic() - started:.1f} s; rtt {args.rtt * 1000:.0f} ms; paid broadcasts "
          f"{args.paid_stars or 'off'}; load {os.getloadavg()[0]:.1f}", flush=True)

    with FakeTelegram(DEFAULT_TOKEN, enforce_limits=True, stars_balance=10_000_000) as tg, \
            FakeArxivServer() as arxiv:
        for method in METHODS:
            tg.set_round_trip(method, args.rtt)
        arxiv.set_feed(None, rss_feed([], names=("cs",), announce_date=datetime.combine(
            before, clock_time(0), ARXIV_ZONE)))
        env = {
            **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG")},
            "TELEGRAM_BOT_TOKEN": tg.token, "TELEGRAM_API_URL": tg.api_url,
            "ARXIV_RSS_URL": arxiv.rss_url, "ARXIV_API_URL": arxiv.api_url,
            "ARXIV_LISTING_URL": arxiv.listing_url, "DATABASE_PATH": str(database),
            "ARXIV_TIGHT_WINDOW_SECONDS": "86400", "ARXIV_STALE_AFTER_SECONDS": "86400",
            "HF_PAPERS_URL": "off", "LOG_LEVEL": "INFO",
            "PAID_BROADCAST_STARS_PER_DAY": str(args.paid_stars),
        }
        log_path = folder / "bot.log"
        with open(log_path, "w") as log_file:
            bot = subprocess.Popen([sys.executable, "-m", "bot"], cwd=ROOT, env=env,
                                   stdout=log_file, stderr=subprocess.STDOUT)
        launched = time.monotonic()
        probe = Probe(tg)
        try:
            run_evening(args, tg, arxiv, bot, probe, population, papers, due, digest_at,
                        database, log_path, rng, launched)
        finally:
            probe.stopping.set()
            bot.send_signal(signal.SIGTERM)
            try:
                bot.wait(30)
            except subprocess.TimeoutExpired:
                bot.kill()
    print(f"(the bot's log and database: {folder})")


def run_evening(args, tg, arxiv, bot, probe, population, papers, due, digest_at, database,
                log_path, rng, launched) -> None:
    """From the bot's first poll to its last message; prints the figures."""
    deadline = launched + args.timeout
    while not arxiv.requests:
        if bot.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the bot did not poll (exit {bot.returncode}); see {log_path}")
        time.sleep(0.05)
    probe.start()
    first_poll = arxiv.requests[0].time
    rebuild = first_poll + 5 + rng.uniform(0, 60)
    time.sleep(max(0.0, rebuild - time.monotonic()))
    # Each feed URL the bot asks for lists the papers in its archives and categories.
    announced = datetime.combine(due, clock_time(0), ARXIV_ZONE)
    urls = {r.path.removeprefix("/rss/") for r in arxiv.requests}
    feeds = {names: rss_feed([p for p in papers if listed(p, names.split("+"))],
                             names=tuple(names.split("+")), announce_date=announced)
             for names in urls}
    rebuild = time.monotonic()
    rebuild_wall = time.time()
    for names, body in feeds.items():
        arxiv.set_feed(names, body)
    print(f"rebuild {time.monotonic() - launched:.1f} s after the bot started; digests and "
          f"For you due {digest_at - rebuild_wall:.0f} s after the rebuild", flush=True)

    idle_since = None
    peak, cpu = proc_figures(bot.pid)
    memory: list[tuple[float, float]] = []  # (seconds after the rebuild, RSS MB)
    while True:
        time.sleep(2)
        if bot.poll() is not None:
            raise SystemExit(f"the bot exited {bot.returncode}; see {log_path}")
        peak, cpu = proc_figures(bot.pid)
        memory.append((time.monotonic() - rebuild, rss_mb(bot.pid)))
        alerts, for_you, rounds_left = outbox_state(database, digest_at - 120)
        open_rows = alerts.get("pending", 0) + alerts.get("sending", 0)
        open_rows += for_you.get("pending", 0) + for_you.get("sending", 0)
        past_due = time.time() > digest_at + 60
        if past_due and alerts and open_rows == 0 and rounds_left == 0:
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 4:
                break
        else:
            idle_since = None
        if time.monotonic() > deadline:
            print(f"timed out with {open_rows:,} rows open")
            break
    probe.stopping.set()
    probe.join(35)

    seen = [r.time for r in arxiv.requests if r.time > rebuild]
    polls = [m.groups() for m in map(_POLL_LINE.search, log_path.read_text().splitlines())
             if m and int(m.group(2)) > 0]
    chats = set(population.chats)
    sends = [c for c in tg.calls if c.method == "sendMessage" and c.status == 200
             and c.params.get("chat_id") in chats]
    alert_sends = [c for c in sends if "For you" not in c.params.get("text", "")]
    for_you_sends = [c for c in sends if "For you" in c.params.get("text", "")]
    digest_sends = [c for c in alert_sends if c.params["chat_id"] in population.digest]
    alerts, for_you, _ = outbox_state(database)
    db = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    alerted = {row[0] for row in db.execute("SELECT DISTINCT chat_id FROM outbox")}
    db.close()
    got = {c.params["chat_id"] for c in alert_sends}
    limited = tg.rate_limited_count

    def after(t: float) -> str:  # the fake Telegram's times are wall-clock ones
        return f"{t - rebuild_wall:7.1f} s"

    print(f"rebuild → feed seen:           "
          f"{f'{seen[0] - rebuild:7.1f} s' if seen else 'never'}")
    for items, new, queued, seconds, fetch in polls:
        print(f"fetch ({items} items):          {float(fetch):7.2f} s")
        print(f"ingest + match + store:        {float(seconds) - float(fetch):7.2f} s "
              f"({int(new):,} new, {int(queued):,} alerts)")
    if alert_sends:
        print(f"first message:                 {after(alert_sends[0].at)}")
        print(f"last message:                  {after(max(c.at for c in sends))} "
              f"({len(sends):,} messages to {len(got):,} chats; {len(alerted):,} chats had "
              f"alerts, {len(alerted - got):,} got none)")
    if digest_sends:
        print(f"digests:                       {after(min(c.at for c in digest_sends))} to "
              f"{after(max(c.at for c in digest_sends))} ({len(digest_sends):,} messages)")
    if for_you_sends:
        print(f"For-you round:                 {after(min(c.at for c in for_you_sends))} to "
              f"{after(max(c.at for c in for_you_sends))} ({len(for_you_sends):,} messages)")
    else:
        print(f"For-you round:                 no message ({dict(for_you)})")
    print(f"outbox: {dict(alerts)}; 429s: {limited}; paid messages: {tg.paid_messages:,} "
          f"({tg.paid_messages / 10:,.1f} Stars)")
    print(f"bot: peak RSS {peak:.0f} MB, {cpu:.1f} s CPU; RSS by minute after the rebuild: "
          + ", ".join(f"{max(mb for t, mb in memory if int(t // 60) == minute):.0f}"
                      for minute in sorted({int(t // 60) for t, _ in memory})))
    if probe.delays:
        print(f"/help: p50 {statistics.median(probe.delays) * 1000:.0f} ms, p99 "
              f"{percentile(probe.delays, 0.99) * 1000:.0f} ms over {len(probe.delays)} "
              f"(unanswered {probe.unanswered})")
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

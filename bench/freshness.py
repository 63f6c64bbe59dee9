"""Benchmark: how soon after a feed's rebuild an alert can go out, and at how many requests.

Run with `.venv/bin/python bench/freshness.py [--feeds N] [--seed S]`. Two simulated weeks of
arXiv on an injected clock (Sunday 25 October to Sunday 8 November 2026: daylight saving ends on
1 November, and Wednesday 4 November is made a holiday, since arXiv's real holidays lie outside
any fortnight with a DST change). Each feed is rebuilt at a random moment 1–12 minutes after
midnight Eastern on every announcement date (empty on weekends and the holiday).

The bot's side is the real code: `ArxivCalendar`, `assess` (what a fetch tells of each feed) and
`next_poll_delay` (when to poll next). A poll fetches every feed one after the other, 3 s apart
(arXiv's gap). The delay of an announcement is from its feed's rebuild to the fetch that first
sees it, which is when its alerts are queued. The same run is replayed with today's fixed
15-minute interval. The calendar is shown with the default ceiling (POLL_INTERVAL_SECONDS=900)
and with an hourly one; everything runs on simulated time, so figures do not depend on the
machine's load.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.arxiv.calendar import ARXIV_ZONE, HOLIDAYS, ArxivCalendar
from bot.arxiv.freshness import FeedContent, PollTiming, assess, next_poll_delay
from bot.core.models import FeedState

START = datetime(2026, 10, 25, 12, 0, tzinfo=ARXIV_ZONE)
DAYS = 14
SIMULATED_HOLIDAY = date(2026, 11, 4)
REQUEST_GAP = 3.0  # seconds between two requests to arXiv
AIM_P95_SECONDS = 120.0
FIXED_INTERVAL = 900.0


@dataclass(frozen=True, slots=True)
class Change:
    """One feed's content from `at` on (None: an empty feed)."""

    at: float
    content: FeedContent | None
    announced_on: date | None


def simulate_arxiv(calendar: ArxivCalendar, feeds: int, rng: random.Random
                   ) -> list[list[Change]]:
    """Per feed, its changes over the run: a rebuild a few minutes after each midnight."""
    start_day = START.date()
    per_feed: list[list[Change]] = []
    for feed in range(feeds):
        changes = [Change(START.timestamp() - 86400,
                          FeedContent(f"feed{feed}-before", "2610.00001", None), None)]
        for offset in range(1, DAYS + 1):
            day = start_day + timedelta(days=offset)
            at = calendar.rebuild_at(day) + rng.uniform(60, 720)
            if calendar.is_announcement_date(day):
                changes.append(Change(at, FeedContent(f"feed{feed}-{day}", "2611.00001", day),
                                      day))
            else:
                changes.append(Change(at, None, None))
        per_feed.append(changes)
    return per_feed


def content_at(changes: list[Change], now: float) -> Change:
    current = changes[0]
    for change in changes:
        if change.at <= now:
            current = change
    return current


@dataclass
class Outcome:
    delays: list[float]
    requests: int
    missed: int


def run(per_feed: list[list[Change]], next_delay: Callable[[float, list[FeedState]], float],
        calendar: ArxivCalendar, timing: PollTiming, *, phase: float = 0.0) -> Outcome:
    """Poll from START (+ `phase`) for DAYS days; each poll fetches every feed, REQUEST_GAP
    apart."""
    end = START.timestamp() + DAYS * 86400
    states = [FeedState() for _ in per_feed]
    first_seen: dict[tuple[int, date], float] = {}
    requests = 0
    now = START.timestamp() + phase
    while now < end:
        for index, changes in enumerate(per_feed):
            fetched_at = now + index * REQUEST_GAP
            requests += 1
            change = content_at(changes, fetched_at)
            states[index] = assess(states[index], change.content, fetched=True,
                                   now=fetched_at, calendar=calendar, timing=timing)
            if change.announced_on is not None:
                first_seen.setdefault((index, change.announced_on), fetched_at)
        now = now + (len(per_feed) - 1) * REQUEST_GAP + next_delay(now, states)
    delays, missed = [], 0
    for index, changes in enumerate(per_feed):
        for change in changes:
            if change.announced_on is None or change.at >= end:
                continue
            seen = first_seen.get((index, change.announced_on))
            if seen is None:
                missed += 1
            else:
                delays.append(seen - change.at)
    return Outcome(delays, requests, missed)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def report(label: str, outcome: Outcome) -> str:
    d = outcome.delays
    return (f"{label:<44} p50 {statistics.median(d):6.0f} s  p95 {percentile(d, 95):6.0f} s  "
            f"max {max(d):6.0f} s  requests/day {outcome.requests / DAYS:6.1f}  "
            f"missed {outcome.missed}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--feeds", type=int, default=3, help="feed URLs polled (default 3)")
    parser.add_argument("--seed", type=int, default=20)
    args = parser.parse_args(argv)
    calendar = ArxivCalendar({**HOLIDAYS, SIMULATED_HOLIDAY: "simulated holiday"})
    per_feed = simulate_arxiv(calendar, args.feeds, random.Random(args.seed))
    announcements = sum(c.announced_on is not None for f in per_feed for c in f[1:])
    print(f"two weeks from {START:%Y-%m-%d}: {args.feeds} feeds, {announcements} "
          f"announcements (DST ends 2026-11-01; {SIMULATED_HOLIDAY} is a holiday), rebuilds "
          "1-12 min after midnight Eastern; requests counted per feed fetch")

    phase = random.Random(args.seed + 1).uniform(0, FIXED_INTERVAL)
    fixed_timing = PollTiming()

    def fixed(now: float, states: list[FeedState]) -> float:
        return FIXED_INTERVAL - (args.feeds - 1) * REQUEST_GAP

    outcomes = {}
    # The fixed schedule starts at a random phase of its interval, as a bot started any time.
    outcomes["fixed 15-minute interval (today)"] = run(per_feed, fixed, calendar, fixed_timing,
                                                       phase=phase)
    for ceiling in (900, 3600):
        timing = PollTiming(ceiling=ceiling)

        def by_calendar(now: float, states: list[FeedState], timing: PollTiming = timing
                        ) -> float:
            return next_poll_delay(now, states, calendar, timing)

        outcomes[f"calendar, ceiling {ceiling} s"] = run(per_feed, by_calendar, calendar, timing)
    for label, outcome in outcomes.items():
        print(report(label, outcome))
    base = outcomes["fixed 15-minute interval (today)"]
    for label, outcome in outcomes.items():
        if label.startswith("calendar"):
            p95 = percentile(outcome.delays, 95)
            fewer = outcome.requests < base.requests
            print(f"aim for {label}: p95 ≤ {AIM_P95_SECONDS:.0f} s "
                  f"{'met' if p95 <= AIM_P95_SECONDS else 'NOT met'} ({p95:.0f} s); "
                  f"fewer requests than today {'met' if fewer else 'NOT met'} "
                  f"({outcome.requests / DAYS:.1f} vs {base.requests / DAYS:.1f} a day)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Soak: 30 simulated days of arXiv through the real pipeline and sender into 1,000 chats.

Run with `.venv/bin/python bench/soak.py [--days 30] [--chats 1000] [--seed 1]`.

Every weekday the fake arXiv serves a fresh announcement feed in the real RSS format (~1,500
new papers and cross-lists, ~1,000 `replace`/`replace-cross` revisions of papers announced on
earlier days, of papers chats saved, and of older papers); weekends serve an empty feed with
<skipDays>, and so does Thursday 18 June, made an arXiv holiday in the bot's calendar. On two
weekdays (10 and 23 June) the feeds are stale: rss serves the previous day's feed until 09:00
UTC while the listing pages and the API already have the day's announcement, so the bot must
fill the day from the listing; when the feeds catch up, nothing may be alerted twice. The
bot's real `Pipeline` polls it four times a simulated day (an unchanged feed costs a 304),
its real `Sender` drains the outbox into a fake Telegram on loopback after each poll and every
simulated hour (when digests are also checked), and old rows are pruned daily.
Time is a `ManualClock`; the `Pacer` runs on a virtual monotonic clock whose sleep only moves
that clock, so Telegram's pacing is simulated without waiting.

Chats follow 1–5 queries each (categories, authors, words, phrases, prefixes, boolean mixes);
about 5% take a daily digest at a local time in their own time zone, some pause for a few days,
some save papers (so revisions of saved papers are announced), two block the bot for a few days
and then write again.

The expectation is independent of the bot's matcher, outbox and sender: each chat's queries are
parsed and evaluated with the reference evaluator (`evaluate_features` on the paper's features,
which is what `evaluate` does) on every announced version as generated (not as the bot parsed
it), plus every revision of a paper the chat had saved. To keep that affordable the bench skips
evaluating a query on a paper that carries none of the query's terms (then every term is false,
so the query's value is its value on an empty paper); a daily spot check evaluates every query on
sampled papers without that shortcut. One rule of the bot's is modelled: a chat that blocked the
bot, once a send to it was refused (a 403, seen in the fake Telegram's log), is not matched until
it writes again, so the papers ingested meanwhile are not expected there (counted apart).
Deliveries are read back from the messages the fake Telegram received (the versioned ids on
the Save buttons, cross-checked with the message text).

The fake Telegram and the bench's bookkeeping (writing feeds, the expectation, the comparison)
run in two child processes, so the process whose memory is reported (RSS at the end of every
simulated day, ru_maxrss, and tracemalloc's peak over the first weekday's ingest)
holds the bot, the fake arXiv's server thread and a thin schedule only. `--memory-detail`
prints where that memory is once a day (bench/memprobe.py: anonymous and file-backed, malloc's
in use and free, pymalloc's arenas, SQLite's) and names the event after which it grew. The
production bot sends through PTB's AIORateLimiter, which waits on the real clock, so the soak
gives the `Sender` a plain `telegram.Bot` and lets the virtual-time `Pacer` do the pacing.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import multiprocessing
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time
import traceback
import tracemalloc
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from telegram import Bot

from bench import memprobe
from bench.vocabulary import load_vocabulary
from bot.arxiv.calendar import HOLIDAYS, ArxivCalendar
from bot.arxiv.plan import build_feed_plan
from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.core.memory import ARENA_MAX, MMAP_THRESHOLD, cap_malloc_arenas, fix_mmap_threshold
from bot.core.models import AnnounceType, ArxivId, Paper
from bot.delivery.pacing import Pacer
from bot.query.matcher import PaperFeatures, evaluate, evaluate_features
from bot.query.parser import (
    And,
    Archive,
    Author,
    Category,
    Node,
    Not,
    Or,
    Text,
    parse,
)
from bot.services.container import Wiring, open_services
from bot.services.daily import send_due_digests
from bot.services.upkeep import prune
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import listing_page, rss_feed
from tests.fakes.telegram_server import FakeTelegram, SentMessage

TOKEN = "424242:SOAK-token_abcdefghijklmnopqrstuvwxyz"
START = datetime(2026, 6, 1, tzinfo=UTC)  # a Monday
DAY = 86400
POLL_TIMES = (0.25, 6.25, 12.25, 18.25)  # hours UTC; the feed changes at 01:00 UTC
FEED_CHANGE_HOUR = 1.0
DIGEST_CHECK_MINUTE = 30  # digests are checked (and the outbox drained) every hour at :30
PRUNE_HOUR = 12.0  # late enough that day 31's prune forgets day 1's alerts (30-day retention)
SAVE_HOUR = 23.0
NEW_PER_DAY = 1_500
REVISED_PER_DAY = 1_000
HOLIDAY = date(2026, 6, 18)  # a Thursday: no announcement (the bot's calendar is told)
STALE_DAYS = (9, 22)  # 10 and 23 June: rss serves the previous feed until CATCH_UP_HOUR
CATCH_UP_HOUR = 9.0
SPOT_CHECK_PAPERS = 40  # per weekday, evaluated against every query without the shortcut

# Primary-category shares: cs-heavy, like the bot's default ingest, plus some stat/math/eess.
CATEGORY_WEIGHTS = {
    "cs.LG": 22, "cs.CV": 18, "cs.CL": 14, "cs.AI": 10, "cs.RO": 5, "cs.CR": 5, "cs.SE": 4,
    "cs.IT": 3, "cs.DS": 3, "cs.NI": 2, "cs.HC": 3, "cs.IR": 2.5, "cs.DC": 2.5, "cs.NE": 1.5,
    "cs.PL": 1, "cs.LO": 1.2, "cs.CY": 2, "cs.SD": 1, "cs.GT": 1, "cs.DB": 1.2, "cs.SI": 1,
    "cs.CC": 0.6, "cs.CG": 0.5, "cs.DL": 0.3, "cs.MS": 0.2, "cs.OS": 0.15, "cs.PF": 0.2,
    "cs.SC": 0.2, "cs.GR": 0.6, "cs.MA": 0.6, "cs.ET": 0.4, "cs.FL": 0.3, "cs.AR": 0.5,
    "cs.MM": 0.4, "cs.DM": 0.6, "cs.NA": 0.5, "cs.CE": 0.5, "cs.GL": 0.05,
    "stat.ML": 5, "stat.ME": 2, "math.OC": 2.5, "math.PR": 1, "math.NA": 0.8, "eess.SP": 2,
    "eess.IV": 1.5,
}
NON_CS = sorted(c for c in CATEGORY_WEIGHTS if not c.startswith("cs."))
SMALL_CATEGORIES = sorted(c for c, w in CATEGORY_WEIGHTS.items() if w <= 0.3)
MID_CATEGORIES = sorted(c for c, w in CATEGORY_WEIGHTS.items() if 0.5 <= w <= 1.5)
BIG_CATEGORIES = sorted(c for c, w in CATEGORY_WEIGHTS.items() if w >= 2)
BROAD_CHATS = 0.04
ZONES = ("UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Los_Angeles",
         "Asia/Shanghai", "Asia/Tokyo", "Asia/Kolkata", "Australia/Sydney", "America/Sao_Paulo")
_COMMON_WORDS = 1_500
_ID_IN_TEXT = re.compile(r"\b(\d{4}\.\d{4,5})v(\d+)\b")


# --------------------------------------------------------------------------------- the world


def _cumulate(weights: Iterable[float]) -> list[float]:
    total, out = 0.0, []
    for weight in weights:
        total += weight
        out.append(total)
    return out


class World:
    """Vocabulary, topics and people; a paper's content is a pure function of its id and version,
    so the bench keeps only ids and version numbers however long it runs."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        rng = random.Random(seed)
        words, names = load_vocabulary()
        alphabetic = [w for w in words if w.isalpha()]
        self.common = alphabetic[:_COMMON_WORDS]
        self.common_cumulative = _cumulate(1.0 / (r + 1) ** 1.05 for r in range(len(self.common)))
        technical = [w for w in alphabetic[_COMMON_WORDS:] if len(w) >= 5]
        # Real technical vocabulary is far larger than these samples': coin more words by
        # splicing halves, so that a followed word is about as rare as on arXiv.
        coined = {f"{a[:len(a) // 2 + 1]}{b[len(b) // 2:]}"
                  for a, b in zip(rng.choices(technical, k=9_000),
                                  rng.choices(technical, k=9_000), strict=True)}
        technical = sorted(set(technical) | {w for w in coined if 6 <= len(w) <= 14}
                           - set(self.common))
        # A topic: four technical words; the first two and the last two also travel as phrases.
        self.topics = [rng.sample(technical, 4) for _ in range(2_500)]
        common_heads = {w[:6] for w in self.common}
        self.stems = sorted({w[:max(6, len(w) - 2)] for topic in self.topics for w in topic
                             if len(w) >= 7 and w[:6] not in common_heads})
        given = sorted({n.split()[0] for n in names
                        if len(n.split()[0]) > 2 and n.split()[0].isalpha()})
        real = sorted({n.split()[-1] for n in names
                       if len(n.split()[-1]) > 3 and n.split()[-1].isalpha()})
        spliced = sorted({f"{a[:len(a) // 2]}{b[len(b) // 2:]}" for a in real for b in real})
        surnames = real + rng.sample(spliced, 15_000) + [
            "Müller", "Wübben", "Łukasiewicz", "Østergaard", "García-Pérez", "Nguyễn", "Yoneki"]
        people = sorted({f"{rng.choice(given)} {rng.choice(surnames)}" for _ in range(62_000)})
        rng.shuffle(people)
        self.prolific = people[:5_000]  # 15% of all authorships
        self.others = people[5_000:]
        self.categories = list(CATEGORY_WEIGHTS)
        self.category_cumulative = _cumulate(CATEGORY_WEIGHTS.values())

    # -- papers

    def _rng(self, *key: object) -> random.Random:
        return random.Random(":".join(map(str, (self.seed, *key))))

    def _author(self, rng: random.Random) -> str:
        pool = self.prolific if rng.random() < 0.15 else self.others
        return rng.choice(pool)

    def _text(self, rng: random.Random, length: int, topics: list[list[str]],
              topical: float) -> str:
        tokens = rng.choices(self.common, cum_weights=self.common_cumulative, k=length)
        for index in rng.sample(range(length), k=int(length * topical)):
            topic = rng.choice(topics)
            if rng.random() < 0.25:
                tokens[index] = f"{topic[0]} {topic[1]}" if rng.random() < 0.5 \
                    else f"{topic[2]} {topic[3]}"
            else:
                tokens[index] = rng.choice(topic)
        parts = []
        for token in tokens:
            roll = rng.random()
            parts.append(token)
            parts.append("-" if roll > 0.98 else ", " if roll > 0.93 else " ")
        return "".join(parts).strip(" ,-")

    def paper(self, arxiv_id: str, version: int, announce: datetime) -> Paper:
        """Version `version` of paper `arxiv_id`: the first version, revised once per step."""
        rng = self._rng(arxiv_id)
        topics = [rng.choice(self.topics)]
        if rng.random() < 0.5:
            topics.append(rng.choice(self.topics))
        primary = rng.choices(self.categories, cum_weights=self.category_cumulative)[0]
        extra = rng.choices(self.categories, cum_weights=self.category_cumulative,
                            k=rng.choice((0, 0, 1, 1, 2)))
        if not primary.startswith("cs.") and rng.random() < 0.5:
            extra.append(rng.choice(("cs.LG", "cs.AI", "cs.IT", "cs.SY")))
        categories = tuple(dict.fromkeys((primary, *extra)))
        title = self._text(rng, rng.randint(6, 13), topics, 0.25).title()
        authors = list(dict.fromkeys(self._author(rng)
                                     for _ in range(rng.choice((1, 2, 3, 3, 4, 4, 5, 6, 8)))))
        abstract = self._text(rng, rng.randint(110, 200), topics, 0.03)
        for step in range(2, version + 1):
            # Revisions retitle, rewrite and add authors, so a new version may stop matching a
            # query its first version matched (a saved paper's revision is announced anyway).
            change = self._rng(arxiv_id, step)
            roll = change.random()
            if roll < 0.15:
                title = self._text(change, change.randint(6, 13), topics, 0.2).title()
            elif roll < 0.35:
                title = f"{title}: {self._text(change, 3, topics, 0.5).title()}"
            if change.random() < 0.2:
                authors.append(self._author(change))
            sentence = self._text(change, change.randint(12, 30), topics, 0.15)
            if change.random() < 0.2:
                abstract = self._text(change, change.randint(110, 200), topics, 0.05)
            abstract = f"{abstract}. {sentence[0].upper()}{sentence[1:]}"
        cs_primary = primary.startswith("cs.")
        if version == 1:
            kind = AnnounceType.NEW if cs_primary else AnnounceType.CROSS
        else:
            kind = AnnounceType.REPLACE if cs_primary else AnnounceType.REPLACE_CROSS
        return Paper(
            arxiv_id=arxiv_id, version=version, title=title, authors=tuple(authors),
            abstract=f"{abstract[0].upper()}{abstract[1:]}.", categories=categories,
            updated=announce, announce_type=kind,
        )

    # -- queries

    def _topic_word(self, rng: random.Random) -> str:
        return rng.choice(rng.choice(self.topics))

    def _author_term(self, rng: random.Random) -> str:
        person = rng.choice(self.prolific) if rng.random() < 0.8 else rng.choice(self.others)
        given, _, surname = person.partition(" ")
        style = rng.random()
        if style < 0.2:
            return f"au:{surname}" if " " not in surname else f'au:"{surname}"'
        if style < 0.55:
            return f'au:"{given[0]}. {surname}"'
        return f'au:"{person}"'

    def _text_term(self, rng: random.Random) -> str:
        roll = rng.random()
        if roll < 0.4:
            return f"{rng.choice(('', 'ti:', 'ti:', 'abs:'))}{self._topic_word(rng)}"
        if roll < 0.8:
            topic = rng.choice(self.topics)
            return f'"{topic[0]} {topic[1]}"' if rng.random() < 0.5 else f'"{topic[2]} {topic[3]}"'
        return f"{rng.choice(self.stems)}*"

    def query(self, rng: random.Random) -> str:
        """One `/follow` query, drawn from a mix of what researchers write."""
        roll = rng.random()
        if roll < 0.02:
            return f"cat:{rng.choice(SMALL_CATEGORIES)}"
        if roll < 0.22:
            return f"cat:{rng.choice(BIG_CATEGORIES)} {self._text_term(rng)}"
        if roll < 0.64:
            return self._author_term(rng)
        if roll < 0.72:
            return f"{self._author_term(rng)} OR {self._author_term(rng)}"
        if roll < 0.87:
            return self._text_term(rng)
        if roll < 0.94:
            return (f"({self._text_term(rng)} OR {self._text_term(rng)}) "
                    f"{rng.choice(BIG_CATEGORIES)}")
        if roll < 0.97:
            return f"{self._text_term(rng)} -{rng.choice(BIG_CATEGORIES)}"
        return f"{self._text_term(rng)} AND NOT ({self._text_term(rng)} OR survey)"


# --------------------------------------------------------------------------- the expectation

_EMPTY = Paper(arxiv_id="0000.00000", version=1, title="", authors=(), abstract="",
               categories=())


def _leaves(node: Node) -> Iterable[Node]:
    match node:
        case Not(child):
            yield from _leaves(child)
        case And(children) | Or(children):
            for child in children:
                yield from _leaves(child)
        case _:
            yield node


def _leaf_key(leaf: Node) -> tuple[str, str]:
    """A key every paper on which `leaf` holds carries (the evaluator checks it first)."""
    match leaf:
        case Category(name):
            return ("c", name)
        case Archive(name):
            return ("a", name)
        case Author(name):
            return ("u", name.key)
        case Text(_, text_words, prefix):
            whole = text_words[:-1] if prefix else text_words
            return ("w", whole[0]) if whole else ("p", text_words[-1])
    raise TypeError(f"not a query leaf: {leaf!r}")


class Expectation:
    """Which chats must receive a paper version, by the reference evaluator."""

    def __init__(self, queries: dict[int, list[Node]]) -> None:
        self.subs = [(chat_id, node) for chat_id, nodes in queries.items() for node in nodes]
        self.index: dict[tuple[str, str], list[int]] = {}
        self.prefix_lengths: set[int] = set()
        self.always: set[int] = set()
        for number, (chat_id, node) in enumerate(self.subs):
            if evaluate(node, _EMPTY):  # holds even when no term does
                self.always.add(chat_id)
            for key in {_leaf_key(leaf) for leaf in _leaves(node)}:
                self.index.setdefault(key, []).append(number)
                if key[0] == "p":
                    self.prefix_lengths.add(len(key[1]))
        self.spot_checked = 0
        self.spot_disagreements: list[str] = []

    def _keys(self, features: PaperFeatures) -> set[tuple[str, str]]:
        keys = {("c", c) for c in features.categories}
        keys |= {("a", a) for a in features.archives}
        keys |= {("u", u) for u in features.author_keys}
        keys |= {("w", w) for w in features.word_set}
        keys |= {("p", w[:n]) for w in features.word_set for n in self.prefix_lengths
                 if len(w) >= n}
        return keys

    def chats_for(self, paper: Paper, features: PaperFeatures | None = None) -> set[int]:
        features = features or PaperFeatures(paper)
        candidates: set[int] = set()
        for key in self._keys(features):
            candidates.update(self.index.get(key, ()))
        chats = set(self.always)
        for number in candidates:
            chat_id, node = self.subs[number]
            if chat_id not in chats and evaluate_features(node, features):
                chats.add(chat_id)
        return chats

    def spot_check(self, paper: Paper) -> None:
        """Evaluate every query on `paper` without the shortcut; record any disagreement."""
        features = PaperFeatures(paper)
        brute = {chat_id for chat_id, node in self.subs if evaluate_features(node, features)}
        self.spot_checked += len(self.subs)
        fast = self.chats_for(paper, features)
        if brute != fast:
            self.spot_disagreements.append(
                f"{paper.versioned_id}: only brute {sorted(brute - fast)[:5]}, "
                f"only shortcut {sorted(fast - brute)[:5]}")


# ------------------------------------------------------------------------- child processes


class Remote:
    """An object that lives in a spawned child process, called over a pipe, one call at a time.

    The fake Telegram and the bench's own bookkeeping run beside the bot rather than inside it,
    so the bot's process measures only the bot, and the second core does the bench's work.
    """

    def __init__(self, factory: str, *args: object) -> None:
        context = multiprocessing.get_context("spawn")
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(factory, args, child), daemon=True)
        self._process.start()
        self._waiting = False
        self.result()  # the object is built

    def send(self, method: str, *args: object) -> None:
        """Start a call; collect its answer with `result()` before the next one."""
        if self._waiting:
            self.result()
        self._conn.send((method, args))
        self._waiting = True

    def result(self) -> Any:
        ok, value = self._conn.recv()
        self._waiting = False
        if not ok:
            raise RuntimeError(f"in the child process:\n{value}")
        return value

    def call(self, method: str, *args: object) -> Any:
        self.send(method, *args)
        return self.result()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            if self._waiting:
                self.result()
            self._conn.send((None, ()))
            self._conn.recv()
        self._process.join(timeout=10)


def _serve(factory: str, args: tuple[object, ...], conn: Connection) -> None:
    try:
        target = globals()[factory](*args)
    except Exception:
        conn.send((False, traceback.format_exc()))
        return
    conn.send((True, None))
    while True:
        method, params = conn.recv()
        if method is None:
            getattr(target, "close", lambda: None)()
            conn.send((True, None))
            return
        try:
            conn.send((True, getattr(target, method)(*params)))
        except Exception:
            conn.send((False, traceback.format_exc()))


# A delivery as the fake Telegram saw it: chat, kind ("alert", "digest", "other"), the versioned
# ids on its Save buttons, and whether the ids in its text say the same.
Delivery = tuple[int, str, tuple[tuple[str, int], ...], bool]


class TelegramSide:
    """The fake Telegram (child process): hands over what it received each day and forgets it."""

    def __init__(self) -> None:
        self.tg = FakeTelegram(TOKEN).start()
        self.blocked: dict[int, bool] = {}  # chat blocking the bot -> a send to it was refused

    def api_url(self) -> str:
        return self.tg.api_url

    def block(self, chat_id: int) -> None:
        self.tg.block_chat(chat_id)
        self.blocked[chat_id] = False

    def unblock(self, chat_id: int) -> None:
        self.tg.unblock_chat(chat_id)
        self.blocked.pop(chat_id, None)

    def refused(self) -> list[int]:
        """The chats blocking the bot that it has been told so: a send to them got a 403."""
        self._note_refusals()
        return sorted(chat_id for chat_id, told in self.blocked.items() if told)

    def _note_refusals(self) -> None:
        for call in self.tg.calls:
            if call.status == 403 and (chat := _chat_of(call.params)) in self.blocked:
                self.blocked[chat] = True

    def take(self) -> list[Delivery]:
        # The fake keeps every message and request; forgetting them daily keeps it flat.
        self._note_refusals()
        return [_delivery(m) for m in self.tg.take_messages()]

    def close(self) -> None:
        self.tg.stop()


def _chat_of(params: dict[str, Any]) -> int | None:
    try:
        return int(params.get("chat_id"))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _delivery(message: SentMessage) -> Delivery:
    ids = []
    for data in message.callback_data:
        parts = data.split(":")
        if len(parts) >= 3 and parts[:2] == ["v1", "s"]:
            parsed = ArxivId.parse(parts[2])
            if parsed is not None and parsed.version is not None:
                ids.append((parsed.base, parsed.version))
    kind = "digest" if message.text.startswith("📬") else "alert" if ids else "other"
    in_text = [(m.group(1), int(m.group(2))) for m in _ID_IN_TEXT.finditer(message.text)]
    return message.chat_id, kind, tuple(ids), Counter(in_text) == Counter(ids)


@dataclass
class ChatPlan:
    chat_id: int
    kind: str  # "private" | "supergroup"
    language: str
    queries: list[str] = field(default_factory=list)
    digest: tuple[str, str] | None = None  # (HH:MM, zone)
    pause: tuple[int, int] | None = None  # (first paused day, day of resume)
    block: tuple[int, int] | None = None  # (day it blocks the bot, day it writes again)
    saver: bool = False


def plan_chats(world: World, count: int, days: int, rng: random.Random) -> list[ChatPlan]:
    plans: list[ChatPlan] = []
    for index in range(count):
        group = rng.random() < 0.08
        chat_id = -1_000_000_000_000 - index if group else 100_000_000 + index
        plan = ChatPlan(chat_id, "supergroup" if group else "private",
                        "zh" if rng.random() < 0.1 else "en")
        wanted = rng.choices((1, 2, 3, 4, 5), weights=(55, 28, 10, 5, 2))[0]
        plan.queries = [world.query(rng) for _ in range(wanted)]
        if rng.random() < BROAD_CHATS:
            # Some follow a whole (mid-sized) category: 10-30 papers a day, as digests.
            plan.queries[0] = f"cat:{rng.choice(MID_CATEGORIES)}"
        plans.append(plan)
    # Someone follows each non-cs category (narrowed to a phrase, as people do), so every
    # generated paper is in a polled feed.
    for plan, category in zip(plans, NON_CS, strict=False):
        topic = rng.choice(world.topics)
        plan.queries.append(f'cat:{category} "{topic[0]} {topic[1]}"')
    others = plans[len(NON_CS):]
    for plan in rng.sample(others, max(1, count // 20)):
        plan.digest = (f"{rng.randint(0, 23):02d}:{rng.choice(('00', '15', '30', '45'))}",
                       rng.choice(ZONES))
    # Pauses and blocks end by the settling day (index `days`) at the latest.
    for plan in rng.sample(others, max(1, count // 50) if days >= 3 else 0):
        start = rng.randint(1, days - 2)
        plan.pause = (start, min(start + rng.randint(2, 5), days))
    blockers = [p for p in others if p.digest is None and p.pause is None
                and p.kind == "private"]
    for plan in rng.sample(blockers, min(2, len(blockers)) if days >= 3 else 0):
        start = rng.randint(1, days - 2)
        plan.block = (start, min(start + rng.randint(3, 4), days))
    for plan in rng.sample(plans, max(1, count * 3 // 20)):
        plan.saver = True
    return plans


def feed_names(path: str) -> list[str]:
    return path.split("+")


def in_feed(paper: Paper, names: set[str]) -> bool:
    return any(c in names or c.split(".", 1)[0] in names for c in paper.categories)


class WorldSide:
    """arXiv's side and the expectation (child process): plans and writes each day's feeds,
    works out who must receive what, and finally compares that with what was delivered."""

    def __init__(self, seed: int, chats: int, days: int) -> None:
        self.world = World(seed)
        self.rng = random.Random(seed + 1)
        self.plans = plan_chats(self.world, chats, days, random.Random(seed))
        self.expectation = Expectation(
            {p.chat_id: [parse(q) for q in p.queries] for p in self.plans})
        self.feed_paths: list[str] = []
        self.versions: dict[str, int] = {}  # every announced id -> latest announced version
        self.soak_ids: list[str] = []  # ids first announced during the soak
        self.month_counters: Counter[str] = Counter()
        self.prepared: dict[int, tuple[list[Paper], list[set[int]]]] = {}
        self.expected: set[tuple[int, str, int]] = set()
        # Published, not yet ingested: the poll that ingests them says which chats the bot
        # knows to have blocked it (those are not matched: reliability.md, Telegram faults).
        self.pending: set[tuple[int, str, int]] = set()
        self.not_matched_blocked: set[tuple[int, str, int]] = set()
        self.delivered: Counter[tuple[int, str, int]] = Counter()
        self.kinds: Counter[str] = Counter()
        self.text_mismatches = 0
        self.counts: Counter[str] = Counter()
        self.seconds = 0.0

    def chat_plans(self) -> list[ChatPlan]:
        return self.plans

    def set_feed_paths(self, paths: list[str]) -> None:
        self.feed_paths = paths

    # -- feeds

    def _new_id(self, day: datetime) -> str:
        month = day.strftime("%y%m")
        self.month_counters[month] += 1
        return f"{month}.{self.month_counters[month]:05d}"

    def _old_id(self) -> str:
        while True:
            month = START - timedelta(days=self.rng.randint(40, 900))
            arxiv_id = f"{month.strftime('%y%m')}.{self.rng.randint(1, 29_999):05d}"
            if arxiv_id not in self.versions:
                self.versions[arxiv_id] = self.rng.randint(1, 4)
                return arxiv_id

    def _papers(self, day: datetime, saved_ids: list[str]) -> list[Paper]:
        """About 1,500 new and 1,000 revised versions; revisions only of earlier papers."""
        new_count = int(NEW_PER_DAY * self.rng.uniform(0.9, 1.1))
        revised_count = int(REVISED_PER_DAY * self.rng.uniform(0.9, 1.1))
        chosen: dict[str, None] = {}
        for arxiv_id in self.rng.sample(saved_ids, min(40, len(saved_ids))):
            chosen[arxiv_id] = None
        if self.soak_ids:
            for _ in range(revised_count * 55 // 100):
                chosen[self.rng.choice(self.soak_ids)] = None
        while len(chosen) < revised_count:
            chosen[self._old_id()] = None
        papers = []
        for arxiv_id in chosen:
            self.versions[arxiv_id] += 1
            papers.append(self.world.paper(arxiv_id, self.versions[arxiv_id], day))
        fresh = []
        for _ in range(new_count):
            arxiv_id = self._new_id(day)
            self.versions[arxiv_id] = 1
            fresh.append(arxiv_id)
            papers.append(self.world.paper(arxiv_id, 1, day))
        self.soak_ids.extend(fresh)
        # A few cross-lists of older papers arrive with a later version, as on arXiv.
        for _ in range(new_count // 50):
            arxiv_id = self._old_id()
            self.versions[arxiv_id] += 1
            paper = self.world.paper(arxiv_id, self.versions[arxiv_id], day)
            papers.append(dataclasses.replace(paper, announce_type=AnnounceType.CROSS))
        self.rng.shuffle(papers)
        return papers

    def prepare(self, day: int, saved: list[tuple[int, str]]) -> None:
        """Write day `day`'s papers and work out which chats their queries reach."""
        started = time.perf_counter()
        midnight = START + timedelta(days=day)
        papers = []
        if midnight.weekday() < 5 and midnight.date() != HOLIDAY:
            papers = self._papers(midnight, sorted({arxiv_id for _, arxiv_id in saved}))
        covered = set().union(*(feed_names(p) for p in self.feed_paths))
        sample = set(self.rng.sample(range(len(papers)), min(SPOT_CHECK_PAPERS, len(papers))))
        reached = []
        for number, paper in enumerate(papers):
            if not in_feed(paper, covered):
                raise RuntimeError(f"{paper.versioned_id} is in no polled feed")
            if number in sample:
                self.expectation.spot_check(paper)
            reached.append(self.expectation.chats_for(paper))
        self.prepared[day] = (papers, reached)
        self.seconds += time.perf_counter() - started

    def publish(self, day: int, saved: list[tuple[int, str]], stale: bool,
                refused: list[int]) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]],
                                             list[Paper]]:
        """The feeds of day `day` (prepared before); savers of revised papers must hear too.
        On a stale day also the listing page of every name polled, and the papers the API
        must know. `refused`: see `ingesting`, for the previous publish."""
        started = time.perf_counter()
        self.ingesting(refused)
        papers, reached = self.prepared.pop(day)
        savers_of: dict[str, list[int]] = {}
        for chat_id, arxiv_id in saved:
            savers_of.setdefault(arxiv_id, []).append(chat_id)
        for paper, chats in zip(papers, reached, strict=True):
            kind = paper.announce_type
            if paper.version > 1 and kind is not None and kind.is_revision:
                self.counts["revised versions"] += 1
                savers = savers_of.get(paper.arxiv_id, ())
                self.counts["revisions of saved papers"] += len(savers)
                self.counts["expected only as saved"] += sum(c not in chats for c in savers)
                chats = chats | set(savers)
            else:
                self.counts["new versions"] += 1
            self.pending.update((chat_id, paper.arxiv_id, paper.version) for chat_id in chats)
        midnight = START + timedelta(days=day)
        bodies = []
        for path in self.feed_paths:
            names = feed_names(path)
            wanted = set(names)
            bodies.append((path, rss_feed([p for p in papers if in_feed(p, wanted)],
                                          names=names, announce_date=midnight.replace(hour=4))))
        listings = []
        if stale:
            for name in sorted({n for path in self.feed_paths for n in feed_names(path)}):
                listings.append((name, listing_page([p for p in papers if in_feed(p, {name})],
                                                    announced_on=midnight.date(),
                                                    category=name)))
        self.counts["stale days"] += stale
        self.seconds += time.perf_counter() - started
        return bodies, listings, papers if stale else []

    def ingesting(self, refused: list[int]) -> None:
        """A poll begins that ingests what was published since the last one; `refused` are the
        chats blocking the bot to which a send was refused (a 403) before it. The bot marks
        such a chat inactive and does not match it until it writes again, so papers it ingests
        now are not expected there."""
        known = set(refused)
        for key in self.pending:
            (self.not_matched_blocked if key[0] in known else self.expected).add(key)
        self.pending.clear()

    # -- the comparison

    def record(self, deliveries: list[Delivery]) -> None:
        for chat_id, kind, ids, text_agrees in deliveries:
            self.kinds[kind] += 1
            self.text_mismatches += not text_agrees
            for arxiv_id, version in ids:
                self.delivered[(chat_id, arxiv_id, version)] += 1

    def report(self, refused: list[int]) -> dict[str, Any]:
        self.ingesting(refused)
        delivered = set(self.delivered)
        missed = sorted(self.expected - delivered)
        unexpected = sorted(delivered - self.expected)
        duplicated = sorted(k for k, n in self.delivered.items() if n > 1)
        return {
            "expected": len(self.expected), "delivered": len(delivered),
            "duplicates": sum(n - 1 for n in self.delivered.values() if n > 1),
            "missed": len(missed), "unexpected": len(unexpected),
            "samples": [("missed", missed[:5]), ("unexpected", unexpected[:5]),
                        ("duplicated", duplicated[:5])],
            "kinds": dict(self.kinds), "text_mismatches": self.text_mismatches,
            "counts": dict(self.counts), "seconds": self.seconds,
            "spot_checked": self.expectation.spot_checked,
            "spot_disagreements": self.expectation.spot_disagreements[:5],
            "subscriptions": len(self.expectation.subs),
            "not_matched_blocked": len(self.not_matched_blocked),
            "blocked_chats": len({chat for chat, _, _ in self.not_matched_blocked}),
        }


# ------------------------------------------------------------------------------ the bot's side


class VirtualTime:
    """The Pacer's monotonic clock: sleeping moves it forward at once."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.now += seconds
        await asyncio.sleep(0)


class CountingHandler(logging.Handler):
    """Counts the bot's warnings and errors by message template."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        self.counts[f"{record.levelname} {record.name}: {record.msg}"] += 1


def rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


class Soak:
    """The bot's process: storage, pipeline, sender and a thin schedule of simulated days."""

    def __init__(self, args: argparse.Namespace, folder: Path, world: Remote,
                 telegram: Remote) -> None:
        self.args = args
        self.folder = folder
        self.world = world
        self.telegram = telegram
        self.rng = random.Random(args.seed + 2)
        self.clock = ManualClock(START.timestamp())
        self.virtual = VirtualTime()
        self.saved: set[tuple[int, str]] = set()
        self.received_today: dict[int, list[tuple[str, int]]] = {}
        self.polls: Counter[str] = Counter()
        self.freshness: Counter[str] = Counter()
        self.filled = 0
        self.errors = 0
        self.seconds: Counter[str] = Counter()
        self.digest_runs = 0
        self.saves = 0
        self.messages = 0
        self.pruned = [0, 0]
        self.memory: list[tuple[float, float, float | None]] = []  # rss, max rss, traced peak
        self.loads: list[float] = []  # the 1-minute load average at the end of each day
        self.objects: Counter[str] = Counter()  # gc-tracked objects by type (--memory-detail)
        self.refused: list[int] | None = []  # blocked chats told so at the last ingest
        self.grown: tuple[int, float] = (0, 0.0)  # the most pymalloc arenas and malloc heap yet

    async def setup(self, arxiv: FakeArxivServer) -> None:
        self.arxiv = arxiv
        env = {
            "TELEGRAM_BOT_TOKEN": TOKEN, "TELEGRAM_API_URL": self.telegram.call("api_url"),
            "ARXIV_RSS_URL": arxiv.rss_url, "ARXIV_API_URL": arxiv.api_url,
            "DATABASE_PATH": str(self.folder / "bot.sqlite3"),
            "ARXIV_LISTING_URL": arxiv.listing_url,
            "ARXIV_MIN_INTERVAL_SECONDS": "0", "LOG_LEVEL": "WARNING", "HF_PAPERS_URL": "off",
        }
        self.settings = load_settings(env, env_file=None)
        self.bot = Bot(TOKEN, base_url=f"{self.settings.telegram_api_url}/bot")
        await self.bot.initialize()
        # The bot's own construction, on virtual time: its clock, a pacer that sleeps virtually
        # and a calendar with the soak's holiday.
        wiring = Wiring(clock=self.clock,
                        pacer=Pacer(monotonic=self.virtual.monotonic, sleep=self.virtual.sleep),
                        calendar=ArxivCalendar({**HOLIDAYS, HOLIDAY: "soak holiday"}))
        self.services_open = open_services(self.settings, bot=self.bot, wiring=wiring)
        services = await self.services_open.__aenter__()
        self.storage, self.subscriptions = services.storage, services.subscriptions
        self.sender, self.pipeline = services.sender, services.pipeline
        now = self.clock.now()
        self.plans: list[ChatPlan] = self.world.call("chat_plans")
        for plan in self.plans:
            await self.storage.chats.record(plan.chat_id, plan.kind, None, plan.language, now)
            for raw in plan.queries:
                result = await self.subscriptions.follow(plan.chat_id, raw)
                if result.status not in ("added", "duplicate"):
                    raise SystemExit(f"the bench wrote a query the bot refused: {raw!r} "
                                     f"({result.status}: {result.error})")
            if plan.digest is not None:
                await self.storage.chats.set_timezone(plan.chat_id, plan.digest[1])
                await self.storage.chats.set_digest(plan.chat_id, plan.digest[0], now)
        plan = build_feed_plan(self.settings.arxiv_archives,
                               self.subscriptions.followed_sources(),
                               rss_url=self.settings.arxiv_rss_url)
        self.feed_paths = [url.rsplit("/", 1)[1] for url in plan.urls]
        self.world.call("set_feed_paths", self.feed_paths)
        for path in self.feed_paths:  # the weekend before the soak
            self.arxiv.set_feed(path, rss_feed([], names=feed_names(path),
                                               announce_date=START - timedelta(days=2)))
        self.world.send("prepare", 0, sorted(self.saved))

    async def close(self) -> None:
        await self.services_open.__aexit__(None, None, None)
        await self.bot.shutdown()

    # -- the bot's jobs

    async def poll(self, traced: bool) -> None:
        if self.refused is None:
            # The first poll after the feed changed ingests it: what it ingests is expected
            # except in chats the bot knows blocked it (told at the next publish).
            self.refused = self.telegram.call("refused")
        if traced:  # tracemalloc slows Python down several times: only on sampled polls
            tracemalloc.start()
        started = time.perf_counter()
        report = await self.pipeline.poll()
        for source in report.sources:
            self.polls[source.outcome] += 1
            self.freshness[str(source.freshness)] += 1
            self.filled += source.filled
            self.errors += source.error is not None
        if traced:
            self.traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
        self.seconds["bot: polls"] += time.perf_counter() - started
        await self.drain()

    async def drain(self) -> None:
        started = time.perf_counter()
        await self.sender.drain()
        self.seconds["bot: sending"] += time.perf_counter() - started

    async def digests(self) -> None:
        started = time.perf_counter()
        self.digest_runs += await send_due_digests(self.storage, self.sender, self.clock.now())
        self.seconds["bot: sending"] += time.perf_counter() - started
        await self.drain()

    async def prune(self) -> None:
        alerts, papers = await prune(self.storage, self.clock.now())
        self.pruned[0] += alerts
        self.pruned[1] += papers

    # -- what arXiv and the chats do

    def publish(self, day: int) -> None:
        started = time.perf_counter()
        stale = day in STALE_DAYS
        bodies, listings, papers = self.world.call("publish", day, sorted(self.saved), stale,
                                                   self.refused or [])
        self.refused = None
        for path, body in bodies:
            self.arxiv.set_feed(path, body)
        if stale:
            self.arxiv.set_stale(True)
            for name, body in listings:
                self.arxiv.set_listing(name, body)
            self.arxiv.set_api_papers(papers)
        if day + 1 < self.args.days:
            self.world.send("prepare", day + 1, sorted(self.saved))  # while the bot works
        self.seconds["bench: waiting for feeds"] += time.perf_counter() - started

    async def chat_events(self, day: int) -> None:
        now = self.clock.now()
        for plan in self.plans:
            if plan.pause and plan.pause[0] == day:
                await self.storage.chats.set_paused(plan.chat_id, True)
            if plan.pause and plan.pause[1] == day:
                await self.storage.chats.set_paused(plan.chat_id, False)
            if plan.block and plan.block[0] == day:
                self.telegram.call("block", plan.chat_id)
            if plan.block and plan.block[1] == day:
                self.telegram.call("unblock", plan.chat_id)
                # The chat writes to the bot again: what the bot's first handler records.
                await self.storage.chats.record(plan.chat_id, plan.kind, None, plan.language, now)

    def watch_growth(self, day: int, hour: float, what: str) -> None:
        """Name the event after which pymalloc's arenas or malloc's heap grew (--memory-detail)."""
        arenas = memprobe.pymalloc().get("arenas", 0)
        heap = memprobe.mallinfo().get("arena", 0.0)
        last_arenas, last_heap = self.grown
        if arenas - last_arenas >= 3 or heap - last_heap >= 5:
            print(f"  grew day {day + 1} {hour:05.2f} {what}: pymalloc arenas {last_arenas} -> "
                  f"{arenas}, malloc heap {last_heap:.0f} -> {heap:.0f} MB, RSS {rss_mb():.0f}",
                  flush=True)
        self.grown = (max(arenas, last_arenas), max(heap, last_heap))
        if self.args.trim_probe and what == "save":
            before = rss_mb()
            memprobe.malloc_trim()
            print(f"  trim probe day {day + 1}: RSS {before:.0f} -> {rss_mb():.0f} MB", flush=True)

    def harvest(self) -> None:
        deliveries = self.telegram.call("take")
        self.messages += len(deliveries)
        self.received_today = {}
        for chat_id, _, ids, _ in deliveries:
            self.received_today.setdefault(chat_id, []).extend(ids)
        self.world.call("record", deliveries)

    async def save_some(self) -> None:
        """Savers press Save on one or two of the papers they received today."""
        now = self.clock.now()
        for plan in self.plans:
            received = self.received_today.get(plan.chat_id)
            if not plan.saver or not received or self.rng.random() < 0.5:
                continue
            for arxiv_id, version in self.rng.sample(received,
                                                     min(len(received), self.rng.randint(1, 2))):
                if await self.storage.saved.save(plan.chat_id, arxiv_id, version, now):
                    self.saved.add((plan.chat_id, arxiv_id))
                    self.saves += 1

    async def run_day(self, day: int, *, settle: bool = False) -> None:
        midnight = START + timedelta(days=day)
        base = midnight.timestamp()
        weekdays = [d for d in range(self.args.days) if (START + timedelta(days=d)).weekday() < 5]
        # Only the first weekday, before day 10's figure: tracemalloc's tables, allocated
        # among the poll's own objects, left the heap 6 MB bigger for good (RSS 272 -> 280 MB
        # on day 89 of a 90-day run), which the memory verdict would count as the bot's.
        traced = self.args.tracemalloc and day == weekdays[0]
        self.traced_peak = None
        events: list[tuple[float, int, str]] = [(0.05, 0, "chats")]
        if not settle:
            events.append((FEED_CHANGE_HOUR, 1, "feed"))
        if day in STALE_DAYS:
            events.append((CATCH_UP_HOUR, 1, "catch-up"))
        events += [(hour, 2, "poll") for hour in POLL_TIMES]
        events += [(hour + DIGEST_CHECK_MINUTE / 60, 3, "digests") for hour in range(24)]
        events += [(PRUNE_HOUR, 4, "prune"), (SAVE_HOUR, 5, "save")]
        for hour, _, what in sorted(events):
            self.clock.set(max(self.clock.now(), base + hour * 3600))
            if what == "chats":
                await self.chat_events(day)
            elif what == "feed":
                self.publish(day)
            elif what == "catch-up":
                self.arxiv.set_stale(False)
                # The fake lives in this process: a stale day's 2,500 API papers and listing
                # pages, kept for good, were counted as the bot's memory (about 5 MB a day).
                self.arxiv.forget_day()
            elif what == "poll":
                # The first poll after the feed changed ingests it: the day's heaviest moment.
                await self.poll(traced and hour == POLL_TIMES[1])
            elif what == "digests":
                await self.digests()
            elif what == "prune":
                await self.prune()
            elif what == "save":
                self.harvest()
                await self.save_some()
            if self.args.memory_detail:
                self.watch_growth(day, hour, what)
        self.harvest()
        max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        self.memory.append((rss_mb(), max_rss, self.traced_peak))
        self.loads.append(os.getloadavg()[0])
        if self.args.verbose:
            # The database's size a day at a time shows when pruning reaches a steady state.
            db_mb = await self.storage.size_bytes() / 2**20
            free_mb = await self.storage.free_bytes() / 2**20
            papers = await self.storage.papers.count()
            print(f"day {day + 1:2d} {midnight:%a %Y-%m-%d}: {self.messages:,} messages so far, "
                  f"RSS {self.memory[-1][0]:.0f} MB, database {db_mb:.1f} MB "
                  f"({free_mb:.1f} MB free pages), {papers:,} papers", flush=True)
        if self.args.memory_detail:
            print(f"  memory day {day + 1}: {memprobe.line(self.memory[-1][0])}", flush=True)
            if day + 1 in self.args.object_days:
                counts = memprobe.object_counts()
                grown = (counts - self.objects).most_common(12) if self.objects else []
                print(f"  objects day {day + 1}: " + ", ".join(
                    f"{k} {v:,}" for k, v in (grown or counts.most_common(12))), flush=True)
                print("  file mappings: " + ", ".join(
                    f"{k} {v:.0f}" for k, v in memprobe.file_mappings()), flush=True)
                self.objects = counts


async def run(args: argparse.Namespace) -> int:
    # httpcore runs `import sniffio` on every request; without sniffio installed each failed
    # import searches sys.path again (~0.35 ms a request). Recording the miss once spares the
    # soak that cost; behaviour is the same (httpcore falls back to asyncio either way).
    sys.modules.setdefault("sniffio", None)  # type: ignore[arg-type]
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    counting = CountingHandler()
    logging.getLogger("bot").addHandler(counting)
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="soak-"))
    world = Remote("WorldSide", args.seed, args.chats, args.days)
    telegram = Remote("TelegramSide")
    arxiv = FakeArxivServer().start()
    soak = Soak(args, folder, world, telegram)
    try:
        await soak.setup(arxiv)
        setup_seconds = time.perf_counter() - started
        for day in range(args.days):
            await soak.run_day(day)
        await soak.run_day(args.days, settle=True)  # digests and resumed chats catch up
        outbox = await soak.storage.outbox.counts()
        papers = await soak.storage.papers.count()
        db_bytes = await soak.storage.size_bytes()
        free_bytes = await soak.storage.free_bytes()
        files = sum(p.stat().st_size for p in folder.iterdir())
        checked = world.call("report", soak.refused or [])
    finally:
        await soak.close()
        arxiv.stop()
        telegram.close()
        world.close()
        if args.keep_db:
            print(f"database kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    wall = time.perf_counter() - started
    return report(soak, args, checked, outbox, papers, (db_bytes, free_bytes, files),
                  setup_seconds, wall, counting)


def report(soak: Soak, args: argparse.Namespace, checked: dict[str, Any],
           outbox: dict[str, int], papers: int, sizes: tuple[int, int, int],
           setup_seconds: float, wall: float, counting: CountingHandler) -> int:
    counts, kinds = Counter(checked["counts"]), Counter(checked["kinds"])
    weekdays = sum(1 for d in range(args.days) if (START + timedelta(days=d)).weekday() < 5
                   and (START + timedelta(days=d)).date() != HOLIDAY)
    plans = soak.plans
    fetches = ", ".join(f"{k} {v}" for k, v in sorted(soak.polls.items()))
    print(f"soak: {args.days} simulated days ({weekdays} announcement days) + 1 settling day "
          "(no new feed: it ends stale, as it should), "
          f"{args.chats:,} chats, {checked['subscriptions']:,} subscriptions, seed {args.seed}")
    print(f"arXiv: {counts['new versions']:,} new + {counts['revised versions']:,} revised "
          f"versions announced; feed fetches: {fetches} ({len(soak.feed_paths)} feed URL)")
    freshness = ", ".join(f"{k} {v}" for k, v in sorted(soak.freshness.items()))
    print(f"calendar: {counts['stale days']} stale days filled with {soak.filled:,} papers from "
          f"the listing pages; holiday {HOLIDAY} (empty weekday feed); feed states after each "
          f"fetch: {freshness}; fetches with an error: {soak.errors}")
    print(f"chats: {sum(p.digest is not None for p in plans)} in digest mode, "
          f"{sum(p.pause is not None for p in plans)} paused for 2-5 days, "
          f"{sum(p.block is not None for p in plans)} blocked the bot for 3-4 days, "
          f"{sum(p.saver for p in plans)} saving papers ({soak.saves:,} saves; "
          f"{counts['revisions of saved papers']:,} revisions of saved papers announced)")
    print(f"alerts expected: {checked['expected']:,} "
          f"({checked['expected'] / max(1, weekdays) / args.chats:.1f} per chat per weekday; "
          f"{counts['expected only as saved']:,} only because the chat saved the paper)")
    print(f"not expected: {checked['not_matched_blocked']:,} alerts of papers ingested while "
          f"the bot knew the chat had blocked it (a send got a 403; not matched until it writes "
          f"again), in {checked['blocked_chats']} chats")
    print(f"alerts sent (distinct): {checked['delivered']:,}")
    print(f"duplicates: {checked['duplicates']:,}")
    print(f"missed: {checked['missed']:,}")
    print(f"unexpected: {checked['unexpected']:,}")
    print(f"Telegram messages sent: {soak.messages:,} ({kinds['alert']:,} alerts, "
          f"{kinds['digest']:,} digest messages, {kinds['other']:,} other)")
    agree = soak.messages - checked["text_mismatches"]
    print(f"digests sent: {kinds['digest']:,} digest messages (daily digests, and catch-ups of "
          f"over 10 alerts in one go); daily digest times reached: {soak.digest_runs:,}")
    print(f"ids in the message text agree with the Save buttons: {agree:,} of "
          f"{soak.messages:,} messages")
    print(f"naive spot check: {checked['spot_checked']:,} query evaluations without the "
          f"shortcut, {len(checked['spot_disagreements'])} disagreements")
    print("outbox at the end: " + ", ".join(f"{k} {v:,}" for k, v in sorted(outbox.items()))
          + f"; pruned {soak.pruned[0]:,} delivered alerts, {soak.pruned[1]:,} papers")
    rss = " ".join(f"{m[0]:.0f}" for m in soak.memory)
    print(f"RSS of the bot's process at the end of each day (MB): {rss}")
    flat = memory_verdict(soak.memory, args.days)
    if flat is not None:
        print(flat[1])
    print("peak RSS so far (ru_maxrss) at the end of each day (MB): "
          + " ".join(f"{m[1]:.0f}" for m in soak.memory))
    traced = [(day + 1, m[2]) for day, m in enumerate(soak.memory) if m[2] is not None]
    if traced:
        print("tracemalloc peak of the ingest poll, first weekday (MB): "
              + ", ".join(f"day {d} {peak:.0f}" for d, peak in traced))
    db_bytes, free_bytes, files = sizes
    print(f"database after {args.days} days and pruning: {db_bytes / 2**20:.1f} MB "
          f"({free_bytes / 2**20:.1f} MB of it free pages; {files / 2**20:.1f} MB on disk with "
          f"the WAL), {papers:,} papers")
    print(f"simulated Telegram pacing: {soak.virtual.now / 3600:.1f} h of virtual waiting")
    if counting.counts:
        print("bot warnings/errors: " + "; ".join(
            f"{n}x {k}" for k, n in counting.counts.most_common(6)))
    print(f"load average (1 min) at the end of each day: {min(soak.loads):.1f}-"
          f"{max(soak.loads):.1f}, mean {sum(soak.loads) / len(soak.loads):.1f} "
          f"({os.cpu_count()} cores; the wall time below grows with it)")
    print(f"wall time: {wall:.0f} s (set-up {setup_seconds:.0f} s; "
          + ", ".join(f"{k} {v:.0f} s" for k, v in soak.seconds.most_common())
          + f"; bench's feeds and expectation {checked['seconds']:.0f} s in a child process)")
    for label, items in checked["samples"]:
        for item in items:
            print(f"  {label}: {item}")
    for item in checked["spot_disagreements"]:
        print(f"  spot-check disagreement: {item}")
    ok = not (checked["missed"] or checked["duplicates"] or checked["unexpected"]
              or checked["spot_disagreements"] or checked["text_mismatches"]
              or (flat is not None and not flat[0]))
    return 0 if ok else 1


MEMORY_DAYS = (10, 30, 60, 90)
MEMORY_BASE_DAY, MEMORY_FLAT_AFTER, MEMORY_TOLERANCE = 10, 60, 0.10


def memory_verdict(memory: list[tuple[float, float, float | None]], days: int
                   ) -> tuple[bool, str] | None:
    """RSS at days 10, 30, 60 and 90, and whether every day after day 60 stays within 10 % of
    day 10's (None for a run too short to say)."""
    if days <= MEMORY_FLAT_AFTER:
        return None
    at = ", ".join(f"day {d} {memory[d - 1][0]:.0f} MB" for d in MEMORY_DAYS if d <= days)
    base = memory[MEMORY_BASE_DAY - 1][0]
    worst = max(m[0] for m in memory[MEMORY_FLAT_AFTER:days])
    met = worst <= base * (1 + MEMORY_TOLERANCE)
    return met, (f"memory: RSS {at}; after day {MEMORY_FLAT_AFTER} at most {worst:.0f} MB, "
                 f"{100 * (worst / base - 1):+.1f} % of day {MEMORY_BASE_DAY}'s (aim within "
                 f"{100 * MEMORY_TOLERANCE:.0f} %): {'met' if met else 'NOT met'}")


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    arguments.add_argument("--days", type=int, default=30)
    arguments.add_argument("--chats", type=int, default=1_000)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--no-tracemalloc", dest="tracemalloc", action="store_false",
                           help="skip tracemalloc on the first weekday's ingest")
    arguments.add_argument("--keep-db", action="store_true", help="keep the database folder")
    arguments.add_argument("--verbose", action="store_true", help="print a line per day")
    arguments.add_argument("--memory-detail", action="store_true",
                           help="print where the memory is (bench/memprobe.py) once a day")
    arguments.add_argument("--object-days", type=lambda t: {int(d) for d in t.split(",")},
                           default=set(), help="days (1,10,30) to count objects by type on")
    arguments.add_argument("--trim-probe", action="store_true",
                           help="with --memory-detail: malloc_trim(0) daily, RSS before and after")
    arguments.add_argument("--no-arena-cap", dest="arena_cap", action="store_false",
                           help="leave glibc's malloc arenas uncapped (the bot caps them)")
    arguments.add_argument("--no-mmap-threshold", dest="mmap_threshold", action="store_false",
                           help="leave glibc's mmap threshold dynamic (the bot fixes it)")
    arguments.add_argument("--python-malloc", choices=("pymalloc", "malloc"),
                           help="run under PYTHONMALLOC=... (the soak starts itself again)")
    args = arguments.parse_args()
    if args.python_malloc and os.environ.get("PYTHONMALLOC") != args.python_malloc:
        os.execve(sys.executable, [sys.executable, *sys.argv],
                  {**os.environ, "PYTHONMALLOC": args.python_malloc})
    # As `python -m bot` does at start (bot/core/memory.py), before any thread allocates.
    capped = args.arena_cap and cap_malloc_arenas()
    fixed = args.mmap_threshold and fix_mmap_threshold()
    print(f"malloc arenas: {'capped at ' + str(ARENA_MAX) if capped else 'uncapped'}; "
          f"mmap threshold: {f'{MMAP_THRESHOLD // 1024} KiB' if fixed else 'dynamic'}"
          + (f"; PYTHONMALLOC={os.environ['PYTHONMALLOC']}" if "PYTHONMALLOC" in os.environ
             else ""))
    if args.days < 1 or args.chats < len(NON_CS) + 10:
        arguments.error(f"need --days >= 1 and --chats >= {len(NON_CS) + 10}")
    sys.exit(asyncio.run(run(args)))


if __name__ == "__main__":
    main()

"""The figures of /stats (arXiv at a glance, and one chat's numbers) and /status (the bot's
health for its operators), read in one place; the chat edge only renders them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.models import Beat, Source
from bot.delivery.paid import PaidBroadcasts, Spend
from bot.query.service import SubscriptionService
from bot.ranking.service import Ranker, RankerStatus
from bot.services.health import Health, assess
from bot.storage import Storage

if TYPE_CHECKING:
    from bot.services.state import RunState

# The categories /stats counts as AI-related.
AI_CATEGORIES = ("cs.AI", "cs.LG", "cs.CL", "cs.CV", "cs.NE", "stat.ML")


@dataclass(frozen=True, slots=True)
class Announced:
    """Versions stored in a span: new papers, revisions, and the AI-related among them."""

    new: int
    revised: int
    ai: int


@dataclass(frozen=True, slots=True)
class Feed:
    """A polled source, and whether it keeps to arXiv's calendar (an arXiv feed does; Hugging
    Face's daily list does not), so its freshness means something."""

    source: Source
    on_arxiv_calendar: bool


@dataclass(frozen=True, slots=True)
class ChatFigures:
    """One chat's numbers: its matches of the last 24 h and 7 days, saves, subscriptions and
    ranking."""

    matches_day: int
    matches_week: int
    saved: int
    subscriptions: int
    ranking: RankerStatus


@dataclass(frozen=True, slots=True)
class Stats:
    """What /stats shows, as of `now`."""

    now: float
    day: Announced
    week: Announced
    guides_day: int
    picks_day: int
    picks_week: int
    feeds: tuple[Feed, ...]
    chat: ChatFigures


@dataclass(frozen=True, slots=True)
class Day:
    """One day of the front page's chart: versions stored, and the chat's matches."""

    start: float  # the day's first second (days end at the time asked, going back)
    new: int
    revised: int
    matches: int


@dataclass(frozen=True, slots=True)
class Status:
    """What /status shows, as of `now`."""

    now: float
    uptime: float  # seconds
    feeds: tuple[Feed, ...]
    health: Health
    outbox: Mapping[str, int]  # alerts by outbox status
    last_failure: str | None  # the error of the alert that failed last
    chats: Mapping[str, int]  # total, active, inactive, paused
    subscriptions: int
    papers: int
    size_bytes: int
    paid: Spend | None = None  # the day's paid broadcasts, when the operator allows them


class Overview:
    """Reads the figures; every count is the database's as of the call."""

    def __init__(self, settings: Settings, storage: Storage, subscriptions: SubscriptionService,
                 ranker: Ranker, clock: Clock, run: RunState,
                 paid: PaidBroadcasts | None = None) -> None:
        self._settings = settings
        self._paid = paid
        self._storage = storage
        self._subscriptions = subscriptions
        self._ranker = ranker
        self._clock = clock
        self._run = run

    async def stats(self, chat_id: int) -> Stats:
        store, now = self._storage, self._clock.now()
        day = await store.papers.ingest_counts(now - DAY, AI_CATEGORIES)
        week = await store.papers.ingest_counts(now - 7 * DAY, AI_CATEGORIES)
        return Stats(
            now=now, day=Announced(**day), week=Announced(**week),
            guides_day=await store.guides.written_since(now - DAY),
            picks_day=await store.community.count_since(now - DAY),
            picks_week=await store.community.count_since(now - 7 * DAY),
            feeds=await self._feeds(),
            chat=ChatFigures(
                matches_day=await store.outbox.chat_matches_since(chat_id, now - DAY),
                matches_week=await store.outbox.chat_matches_since(chat_id, now - 7 * DAY),
                saved=await store.saved.count(chat_id),
                subscriptions=len(await self._subscriptions.for_chat(chat_id)),
                ranking=await self._ranker.status(chat_id),
            ),
        )

    async def days(self, chat_id: int, count: int) -> tuple[Day, ...]:
        """The last `count` spans of 24 h, oldest first, from the same counts as `stats`."""
        store, now = self._storage, self._clock.now()
        ingested, matched = [], []
        for back in range(count, -1, -1):  # counts since each span's start, widest first
            since = now - back * DAY
            ingested.append(await store.papers.ingest_counts(since, AI_CATEGORIES))
            matched.append(await store.outbox.chat_matches_since(chat_id, since))
        return tuple(
            Day(start=now - (count - i) * DAY,
                new=ingested[i]["new"] - ingested[i + 1]["new"],
                revised=ingested[i]["revised"] - ingested[i + 1]["revised"],
                matches=matched[i] - matched[i + 1])
            for i in range(count))

    async def status(self) -> Status:
        store, now = self._storage, self._clock.now()
        feeds = await self._feeds()
        beats = await store.heartbeats.all()
        answered = self._run.telegram_ok_at  # newer than the stored beat, stored once a minute
        if answered is not None:
            beats[Beat.TELEGRAM] = max(answered, beats.get(Beat.TELEGRAM, answered))
        return Status(
            now=now, uptime=now - self._run.started_at, feeds=feeds,
            health=assess(beats, self._settings, now),
            outbox=await store.outbox.counts(), last_failure=await store.outbox.last_failure(),
            chats=await store.chats.counts(), subscriptions=await store.subscriptions.count(),
            papers=await store.papers.count(), size_bytes=await store.size_bytes(),
            paid=None if self._paid is None else await self._paid.spend(),
        )

    async def _feeds(self) -> tuple[Feed, ...]:
        arxiv = self._settings.arxiv_rss_url
        return tuple(Feed(source, source.url.startswith(arxiv))
                     for source in await self._storage.sources.all())

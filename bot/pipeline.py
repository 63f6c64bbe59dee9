"""One poll, end to end: plan → fetch → parse → upsert → match → outbox (→ deliver).

Used by the scheduled job and by `python -m bot poll-once`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import aiosqlite

from bot.arxiv.calendar import ArxivCalendar
from bot.arxiv.client import ArxivClient
from bot.arxiv.errors import ArxivError, HTTPStatusError
from bot.arxiv.fill import feed_names, read_announcement
from bot.arxiv.plan import build_feed_plan
from bot.clock import Clock
from bot.config import Settings
from bot.freshness import (
    FeedContent,
    PollTiming,
    assess,
    feed_content,
    next_poll_delay,
    wants_listing,
)
from bot.freshness import filled as fill_from_listing
from bot.models import (
    GENERAL,
    Alert,
    AlertKind,
    FeedState,
    Freshness,
    Paper,
    PaperChange,
    SourceOutcome,
)
from bot.query.matcher import survivors_frozen
from bot.query.service import SubscriptionService
from bot.storage import Storage

log = logging.getLogger(__name__)

MAX_DETAIL_LOOKUPS = 300  # three API requests a poll at the most



class _DryRunRollback(Exception):
    """Raised inside the ingest transaction of a dry run so that nothing is stored."""


@dataclass(frozen=True, slots=True)
class SourceReport:
    """What one feed URL gave in one poll."""

    url: str
    outcome: SourceOutcome
    items: int = 0
    new: int = 0
    revised: int = 0
    seen: int = 0
    alerts: int = 0
    error: str | None = None
    seconds: float = 0.0
    freshness: Freshness | None = None
    filled: int = 0  # papers read from the listing page because the feed was stale


@dataclass(frozen=True, slots=True)
class _Settled:
    """A source's freshness after the poll, and what a listing fill added to its counts."""

    freshness: Freshness | None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class PollReport:
    """What one poll did, per source and in total; `alerts` lists what was queued."""

    sources: list[SourceReport] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    changes: list[PaperChange] = field(default_factory=list)
    seconds: float = 0.0

    def count(self, status: str) -> int:
        return sum(1 for change in self.changes if change.status == status)

    @property
    def failed_sources(self) -> list[SourceReport]:
        return [s for s in self.sources if s.outcome is SourceOutcome.ERROR]


class Pipeline:
    """Runs polls; two polls never overlap."""

    def __init__(self, settings: Settings, storage: Storage, arxiv: ArxivClient,
                 subscriptions: SubscriptionService, clock: Clock, *,
                 calendar: ArxivCalendar | None = None) -> None:
        self._settings = settings
        self._calendar = calendar or ArxivCalendar()
        self._timing = PollTiming.from_settings(settings)
        self._store = storage
        self._arxiv = arxiv
        self._subscriptions = subscriptions
        self._clock = clock
        self._lock = asyncio.Lock()

    async def poll(self, *, dry_run: bool = False) -> PollReport:
        """Fetch every planned feed, store what is new or revised and queue the alerts.

        A dry run reads and matches but stores nothing (no papers, no validators, no alerts),
        so the running bot still delivers everything it saw.
        """
        async with self._lock, self._arxiv.ingest():
            started = time.monotonic()
            report = PollReport()
            plan = build_feed_plan(
                self._settings.arxiv_archives, self._subscriptions.followed_sources(),
                rss_url=self._settings.arxiv_rss_url,
            )
            if not dry_run:
                await self._store.sources.forget_others(
                    plan.urls, under=self._settings.arxiv_rss_url)
            for url in plan.urls:
                report.sources.append(await self._poll_source(url, report, dry_run))
            if not dry_run:
                # Half a million alerts after a big poll: sifted off the event loop.
                revisions = await asyncio.to_thread(_revised_versions, report.alerts)
                try:
                    await self._fetch_revision_details(revisions)
                finally:
                    # Stored or failed for good: either way the revisions may go now.
                    await self._store.outbox.release_revisions(
                        {arxiv_id for arxiv_id, _ in revisions}, self._clock.now())
            report.seconds = time.monotonic() - started
            for source in report.sources:
                log.info(
                    "poll source=%s outcome=%s items=%d new=%d revised=%d seen=%d alerts=%d "
                    "seconds=%.2f%s", source.url, source.outcome, source.items, source.new,
                    source.revised, source.seen, source.alerts, source.seconds,
                    f" error={source.error}" if source.error else "",
                )
            return report

    async def next_poll_delay(self) -> float:
        """Seconds to the next poll by arXiv's calendar, from every planned feed's state."""
        sources = await self._store.sources.all()
        return next_poll_delay(self._clock.now(), [s.state for s in sources], self._calendar,
                               self._timing)

    async def _poll_source(self, url: str, report: PollReport, dry_run: bool) -> SourceReport:
        started = time.monotonic()
        store = self._store
        source = None if dry_run else await store.sources.get(url)
        previous = source.state if source is not None else FeedState()
        try:
            fetched = await self._arxiv.fetch_rss(
                url, source.etag if source else None, source.last_modified if source else None
            )
        except ArxivError as exc:
            # Nothing was parsed, so nothing is marked as seen; the validators stay as they
            # were, and the next poll asks again.
            status = exc.status if isinstance(exc, HTTPStatusError) else None
            if not dry_run:
                await store.sources.record_failure(url, self._clock.now(), str(exc), status)
            log.warning("feed %s failed: %s", url, exc)
            state = self._assess(previous, None, fetched=False)
            filled = await self._settle(url, state, report, dry_run)
            return SourceReport(url, SourceOutcome.ERROR, error=str(exc),
                                seconds=time.monotonic() - started, freshness=filled.freshness,
                                **filled.counts)
        result = fetched.result
        if fetched.feed is None:
            if not dry_run:
                await store.sources.record_success(url, self._clock.now(), result.status, None,
                                                   result.etag, result.last_modified)
            state = self._assess(previous, None, fetched=True)
            filled = await self._settle(url, state, report, dry_run)
            return SourceReport(url, SourceOutcome.NOT_MODIFIED, freshness=filled.freshness,
                                seconds=time.monotonic() - started, **filled.counts)

        feed = fetched.feed
        now = self._clock.now()
        state = self._assess(previous, feed_content(feed.papers, feed.pub_date), fetched=True)
        if not feed.papers and state.freshness is Freshness.STALE:
            # An empty feed where the calendar expects news. Nothing parsed, nothing seen; the
            # last good feed's validators stay, so the next poll asks again in full.
            error = (f"empty feed on an announcement day, expected "
                     f"{state.expected_on} ({url})")
            if not dry_run:
                await store.sources.record_failure(url, now, error, result.status)
            log.warning("feed %s is empty on an announcement day", url)
            filled = await self._settle(url, state, report, dry_run)
            return SourceReport(url, SourceOutcome.ERROR, error=error,
                                seconds=time.monotonic() - started, freshness=filled.freshness,
                                **filled.counts)
        changes, alerts = await self._ingest(feed.papers, report, now, dry_run)
        empty = not feed.papers
        if not dry_run:
            # An empty weekend feed keeps no validators, so the next poll fetches the whole
            # feed again rather than trusting a 304.
            await store.sources.record_success(
                url, now, result.status, len(feed.papers),
                None if empty else result.etag, None if empty else result.last_modified,
                clear_validators=empty,
            )
        filled = await self._settle(url, state, report, dry_run)
        counts = _counts(changes, alerts)
        for name, value in filled.counts.items():
            counts[name] = counts.get(name, 0) + value
        return SourceReport(
            url, SourceOutcome.EMPTY if empty else SourceOutcome.OK, items=len(feed.papers),
            seconds=time.monotonic() - started, freshness=filled.freshness, **counts,
        )

    async def _ingest(self, papers: Sequence[Paper], report: PollReport, now: float,
                      dry_run: bool) -> tuple[list[PaperChange], list[Alert]]:
        """Upsert, match and queue one batch in one transaction (rolled back in a dry run)."""
        store = self._store
        changes: list[PaperChange] = []
        alerts: list[Alert] = []
        try:
            # Matching a big batch allocates an object per alert and frees none: with the
            # collector running, each full collection would stop every thread for a second.
            # The alerts outlive the batch (in the report), so they are frozen after it.
            with survivors_frozen(self._subscriptions.large):
                async with store.db.transaction() as conn:
                    changes = await store.papers.upsert_in(conn, papers, now)
                    if dry_run:
                        changes = _seen_earlier_in_poll(changes, report)
                    alerts = await self._alerts_for(conn, changes)
                    # Revision alerts wait for their details (comments, journal refs) from the
                    # API, looked up at the end of the poll; at most one poll interval, should
                    # the look-up never finish.
                    await store.outbox.enqueue_in(
                        conn, alerts, now,
                        revisions_due_at=now + self._settings.poll_interval_seconds)
                    if dry_run:
                        raise _DryRunRollback
        except _DryRunRollback:
            pass
        report.changes.extend(changes)
        report.alerts.extend(alerts)
        return changes, alerts

    def _assess(self, previous: FeedState, content: FeedContent | None, *,
                fetched: bool) -> FeedState:
        return assess(previous, content, fetched=fetched, now=self._clock.now(),
                      calendar=self._calendar, timing=self._timing)

    async def _settle(self, url: str, state: FeedState, report: PollReport,
                      dry_run: bool) -> _Settled:
        """Fill a stale source from the listing pages when it is due, then store its state."""
        if dry_run:
            return _Settled(state.freshness)
        now = self._clock.now()
        counts = {"filled": 0}
        if wants_listing(state, now) and state.expected_on is not None:
            day = state.expected_on
            try:
                papers = await read_announcement(self._arxiv, feed_names(url), day)
            except ArxivError as exc:
                log.warning("feed %s is stale (expected %s); its listing failed: %s",
                            url, day, exc)
                state = dataclasses.replace(state, listing_checked_at=now,
                                            listing_error=str(exc)[:500])
            else:
                changes, alerts = await self._ingest(papers, report, now, dry_run)
                counts = {"filled": len(papers), **_counts(changes, alerts)}
                log.warning("feed %s is stale (expected %s): filled %d papers from the listing, "
                            "%d alerts", url, day, len(papers), len(alerts))
                state = fill_from_listing(state, day, now)
        await self._store.sources.record_state(url, state)
        return _Settled(state.freshness, counts)

    async def _fetch_revision_details(self, revisions: Iterable[tuple[str, int]]) -> None:
        """Fetch from the API what the feeds lack (comments, journal refs) for the revisions
        about to be announced, and for the versions they replace, so an alert can say
        "Comment added: Accepted at …". Best effort: a failure only makes the diff poorer.
        """
        wanted: dict[str, None] = {}
        for arxiv_id, version in revisions:
            wanted[f"{arxiv_id}v{version}"] = None
            previous = await self._store.papers.previous_version(arxiv_id, version)
            if previous is not None and previous.comment is None:
                wanted[f"{previous.arxiv_id}v{previous.version}"] = None
        if not wanted:
            return
        ids = list(wanted)[:MAX_DETAIL_LOOKUPS]
        try:
            papers = await self._arxiv.lookup_ids(ids)
        except ArxivError as exc:
            log.warning("could not fetch details of %d revised papers: %s", len(ids), exc)
            return
        await self._store.papers.record_details(papers)

    async def _alerts_for(
        self, conn: aiosqlite.Connection, changes: Sequence[PaperChange]
    ) -> list[Alert]:
        """Subscription matches of new and revised papers, plus revisions of saved papers.

        Chats that blocked the bot get nothing: it could not be sent, and a chat that comes
        back after months should not find months of alerts waiting.
        """
        fresh = [c for c in changes if c.status != "seen"]
        if not fresh:
            return []
        blocked = await self._store.chats.inactive_ids_in(conn)
        kinds = {c.paper.arxiv_id: AlertKind.REVISION if c.status == "revised" else AlertKind.NEW
                 for c in fresh}
        revised = {c.paper.arxiv_id: c.paper for c in fresh if c.status == "revised"}
        savers = await self._store.saved.chats_saving_in(conn, revised) if revised else {}
        saved_topics = await self._store.outbox.first_topics_in(conn, savers) if savers else {}
        subscriptions = self._subscriptions

        def match() -> list[Alert]:
            # Seconds of CPU for a big batch: run in a worker thread (`in_worker`), so that
            # chats' commands are answered meanwhile.
            matches = subscriptions.matcher.match([c.paper for c in fresh])
            topics = subscriptions.topics  # only subscriptions bound to a forum topic
            by_key: dict[tuple[int, int, str], Alert] = {}
            for chat_id, chat_matches in matches.items():
                if chat_id in blocked:
                    continue
                for match in chat_matches:
                    paper = match.paper
                    for topic_id, sub_ids in _by_topic(match.subscription_ids, topics):
                        queries = tuple(
                            q for q in (subscriptions.query_text(s) for s in sub_ids)
                            if q is not None
                        )
                        by_key[(chat_id, topic_id, paper.arxiv_id)] = Alert(
                            chat_id, paper.arxiv_id, paper.version, kinds[paper.arxiv_id],
                            sub_ids, queries, topic_id=topic_id,
                        )
            for arxiv_id, chat_ids in savers.items():
                paper = revised[arxiv_id]
                for chat_id in chat_ids:
                    if chat_id in blocked:
                        continue
                    # Where the paper's thread is: the topic of its first alert.
                    topic_id = saved_topics.get((chat_id, arxiv_id), GENERAL)
                    existing = by_key.get((chat_id, topic_id, arxiv_id))
                    by_key[(chat_id, topic_id, arxiv_id)] = Alert(
                        chat_id, arxiv_id, paper.version, AlertKind.REVISION,
                        existing.subscription_ids if existing else (),
                        existing.matched_queries if existing else (),
                        saved_revision=True, topic_id=topic_id,
                    )
            return list(by_key.values())

        return await subscriptions.in_worker(match)


def _by_topic(sub_ids: tuple[int, ...], topics: dict[int, int]
              ) -> list[tuple[int, tuple[int, ...]]]:
    """A match's subscriptions grouped by the forum topic each is bound to: one alert per
    topic. Most chats have no topics, and then it is one group, at no cost."""
    if not topics or not any(s in topics for s in sub_ids):
        return [(GENERAL, sub_ids)]
    groups: dict[int, list[int]] = {}
    for sub_id in sub_ids:
        groups.setdefault(topics.get(sub_id, GENERAL), []).append(sub_id)
    return [(topic_id, tuple(ids)) for topic_id, ids in groups.items()]


def _revised_versions(alerts: Iterable[Alert]) -> dict[tuple[str, int], None]:
    """The revised versions some chat will hear of, each once (it is one alert per chat)."""
    return dict.fromkeys((a.arxiv_id, a.version) for a in alerts
                         if a.kind == AlertKind.REVISION)


def _counts(changes: Sequence[PaperChange], alerts: Sequence[Alert]) -> dict[str, int]:
    return {"new": sum(c.status == "new" for c in changes),
            "revised": sum(c.status == "revised" for c in changes),
            "seen": sum(c.status == "seen" for c in changes),
            "alerts": len(alerts)}


def _seen_earlier_in_poll(changes: list[PaperChange], report: PollReport) -> list[PaperChange]:
    """A dry run rolls back each source's upsert, so a paper that an earlier feed of the same
    poll listed (a cross-list) looks unknown again; a real poll would find it already seen."""
    fresh = {c.paper.arxiv_id: c.paper.version for c in report.changes if c.status != "seen"}
    return [
        PaperChange(c.paper, "seen", None)
        if c.status != "seen" and fresh.get(c.paper.arxiv_id, 0) >= c.paper.version else c
        for c in changes
    ]

"""One poll, end to end: plan → fetch → parse → upsert → match → outbox (→ deliver).

Used by the scheduled job and by `python -m bot poll-once`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from bot.arxiv.calendar import ArxivCalendar
from bot.arxiv.client import ArxivClient
from bot.arxiv.errors import ArxivError, HTTPStatusError
from bot.arxiv.fill import feed_names, read_announcement
from bot.arxiv.freshness import (
    FeedContent,
    PollTiming,
    assess,
    feed_content,
    next_poll_delay,
    wants_listing,
)
from bot.arxiv.freshness import filled as fill_from_listing
from bot.arxiv.plan import build_feed_plan
from bot.config import Settings
from bot.core.clock import Clock
from bot.core.memory import release_free_memory
from bot.core.models import (
    GENERAL,
    Alert,
    AlertKind,
    ChangeStatus,
    FeedState,
    Freshness,
    Paper,
    PaperChange,
    PlainAlerts,
    SourceOutcome,
    classify,
    latest_versions,
)
from bot.query.alerts import Pairs, PlainUnits
from bot.query.matcher import survivors_frozen
from bot.query.service import SubscriptionService
from bot.storage import StagedAlerts, Storage, Transaction

log = logging.getLogger(__name__)

MAX_DETAIL_LOOKUPS = 300  # three API requests a poll at the most
# One ingest transaction stores at most this many papers and (unless one paper alone alerts
# more chats) this many alerts, which is how long a chat's /pause or /follow may wait for the
# ingest (`bench/responsiveness.py` prints how long the poll held the writer each time). The
# alerts are staged one row per chat and transaction (bot/storage/sqlite/outbox.py), so a
# transaction costs about a row per chat it touches: a whole matched part is one transaction,
# and the fewer transactions, the fewer rows (500 alerts a transaction, as when each alert
# was a row, would stage about one row per alert).
INGEST_BATCH_ALERTS = 100_000
INGEST_BATCH_PAPERS = 250
# A feed is matched this many papers at a time, each part stored before the next is matched:
# a 2,000-paper day against 100,000 subscriptions makes 516,668 alerts, an object each, and
# matched at once they raised the poll's peak memory by 200 MB (docs/performance.md, "The
# store"); at 1,000,000 subscriptions it would be two gigabytes.
INGEST_MATCH_PAPERS = 250


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
    fetch_seconds: float = 0.0  # of `seconds`, the request and the parse
    freshness: Freshness | None = None
    filled: int = 0  # papers read from the listing page because the feed was stale


@dataclass(frozen=True, slots=True)
class _Settled:
    """A source's freshness after the poll, and what a listing fill added to its counts."""

    freshness: Freshness | None
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class PollReport:
    """What one poll did, per source and in total.

    `alert_count` alerts were queued for the `alerted_chats`. The alerts themselves are listed
    in `alerts` only when the poll was asked to keep them (`poll(keep_alerts=True)`: the
    dry run prints them): half a million of them after a big poll are about 100 MB that the
    running bot has no use for once they are stored.
    """

    sources: list[SourceReport] = field(default_factory=list)
    alerts: list[Alert] = field(default_factory=list)
    changes: list[PaperChange] = field(default_factory=list)
    seconds: float = 0.0
    keep_alerts: bool = False
    alert_count: int = 0
    alerted_chats: set[int] = field(default_factory=set)
    # Each revised version some chat will hear of, once: its details are looked up after.
    revised_versions: dict[tuple[str, int], None] = field(default_factory=dict)

    def count(self, status: ChangeStatus) -> int:
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
        # Since when the poll in progress has been storing its feeds' alerts, batch by batch;
        # the sender holds them until all are stored (`Sender`'s `held_since`).
        self.storing_since: float | None = None

    async def poll(self, *, keep_alerts: bool = False) -> PollReport:
        """Fetch every planned feed, store what is new or revised and queue the alerts;
        `keep_alerts`: list them in the report too (see `PollReport`).

        (`poll-once --dry-run` runs a real poll on a copy of the database:
        `bot/services/operations.py`.)
        """
        async with self._lock, self._arxiv.ingest():
            return await self._poll(PollReport(keep_alerts=keep_alerts))

    async def _poll(self, report: PollReport) -> PollReport:
        started = time.monotonic()
        plan = build_feed_plan(
            self._settings.arxiv_archives, self._subscriptions.followed_sources(),
            rss_url=self._settings.arxiv_rss_url,
        )
        await self._store.sources.forget_others(plan.urls, under=self._settings.arxiv_rss_url)
        self.storing_since = self._clock.now()
        try:
            for url in plan.urls:
                report.sources.append(await self._poll_source(url, report))
        finally:
            self.storing_since = None
        revisions = report.revised_versions
        try:
            await self._fetch_revision_details(revisions)
        finally:
            # Stored or failed for good: either way the revisions may go now.
            await self._store.outbox.release_revisions(
                {arxiv_id for arxiv_id, _ in revisions}, self._clock.now())
        if any(source.items or source.filled for source in report.sources):
            # A feed's parse and matching freed tens of MB: back to the system, not kept.
            await asyncio.to_thread(release_free_memory)
        report.seconds = time.monotonic() - started
        for source in report.sources:
            log.info(
                "poll source=%s outcome=%s items=%d new=%d revised=%d seen=%d alerts=%d "
                "seconds=%.2f fetch=%.2f%s", source.url, source.outcome, source.items,
                source.new, source.revised, source.seen, source.alerts, source.seconds,
                source.fetch_seconds,
                f" error={source.error}" if source.error else "",
            )
        return report

    async def next_poll_delay(self) -> float:
        """Seconds to the next poll by arXiv's calendar, from every planned feed's state."""
        sources = await self._store.sources.all()
        return next_poll_delay(self._clock.now(), [s.state for s in sources], self._calendar,
                               self._timing)

    async def _poll_source(self, url: str, report: PollReport) -> SourceReport:
        started = time.monotonic()
        store = self._store
        source = await store.sources.get(url)
        previous = source.state if source is not None else FeedState()
        try:
            fetched = await self._arxiv.fetch_rss(
                url, source.etag if source else None, source.last_modified if source else None
            )
        except ArxivError as exc:
            # Nothing was parsed, so nothing is marked as seen; the validators stay as they
            # were, and the next poll asks again.
            status = exc.status if isinstance(exc, HTTPStatusError) else None
            await store.sources.record_failure(url, self._clock.now(), str(exc), status)
            log.warning("feed %s failed: %s", url, exc)
            state = self._assess(previous, None, fetched=False)
            filled = await self._settle(url, state, report)
            return SourceReport(url, SourceOutcome.ERROR, error=str(exc),
                                seconds=time.monotonic() - started, freshness=filled.freshness,
                                **filled.counts)
        result = fetched.result
        fetch_seconds = time.monotonic() - started
        if fetched.feed is None:
            await store.sources.record_success(url, self._clock.now(), result.status, None,
                                               result.etag, result.last_modified)
            state = self._assess(previous, None, fetched=True)
            filled = await self._settle(url, state, report)
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
            await store.sources.record_failure(url, now, error, result.status)
            log.warning("feed %s is empty on an announcement day", url)
            filled = await self._settle(url, state, report)
            return SourceReport(url, SourceOutcome.ERROR, error=error,
                                seconds=time.monotonic() - started, freshness=filled.freshness,
                                **filled.counts)
        changes, alerts = await self._ingest(feed.papers, report, now)
        empty = not feed.papers
        # An empty weekend feed keeps no validators, so the next poll fetches the whole feed
        # again rather than trusting a 304.
        await store.sources.record_success(
            url, now, result.status, len(feed.papers),
            None if empty else result.etag, None if empty else result.last_modified,
            clear_validators=empty,
        )
        filled = await self._settle(url, state, report)
        counts = _counts(changes, alerts)
        for name, value in filled.counts.items():
            counts[name] = counts.get(name, 0) + value
        return SourceReport(
            url, SourceOutcome.EMPTY if empty else SourceOutcome.OK, items=len(feed.papers),
            seconds=time.monotonic() - started, fetch_seconds=fetch_seconds,
            freshness=filled.freshness, **counts,
        )

    async def _ingest(self, papers: Sequence[Paper], report: PollReport, now: float
                      ) -> tuple[list[PaperChange], int]:
        """Match a feed's papers, then store them in short transactions, each a batch of
        papers with every alert they make (see `_store_batch`); the changes and how many
        alerts were queued."""
        store = self._store
        changes: list[PaperChange] = []
        alerts = 0
        unique = latest_versions(papers)
        # Matching a big batch allocates an object per alert: with the collector running,
        # each full collection would stop every thread for a second. What outlives the batch
        # (the alerts, when the report keeps them) is frozen after it.
        with survivors_frozen(self._subscriptions.large):
            # What each paper is, as last committed, and who it alerts: read and matched with
            # no transaction open, so chats' own writes (/pause, /follow) go on meanwhile.
            expected = classify(unique, await store.papers.announced(
                p.arxiv_id for p in unique))
            # Each (subscriptions, queries) pair made once a poll.
            pairs = Pairs(self._subscriptions.query_text)
            # A part of the feed at a time, so that only its alerts are alive at once.
            for start in range(0, len(expected), INGEST_MATCH_PAPERS):
                part = expected[start:start + INGEST_MATCH_PAPERS]
                matched = await self._match(part, pairs)
                for batch in _batches(part, matched.counts):
                    stored, queued = await self._store_batch(batch, matched, report, now)
                    changes += stored
                    alerts += queued
        return changes, alerts

    async def _store_batch(self, batch: Sequence[PaperChange], matched: _Matched,
                           report: PollReport, now: float) -> tuple[list[PaperChange], int]:
        """Store one batch of papers and their alerts in one transaction.

        Papers (which are what "seen" means) and their outbox rows commit together or not at
        all, so a crash between batches loses no alert and repeats none: the next poll finds
        the committed papers seen and the others new. The transaction is short (at most
        INGEST_BATCH_ALERTS alerts), so a chat's write waits for one batch, not the whole feed.
        """
        # The new papers' alerts grouped by chat and encoded before the transaction opens:
        # other writers (a chat's /pause) wait for the transaction, not for this.
        subscriptions = self._subscriptions
        plain = await subscriptions.in_worker(lambda: matched.plain(batch))
        prepared = await self._store.outbox.prepare_staged(plain, now)
        async with self._store.transaction() as tx:
            changes = await tx.papers.upsert([c.paper for c in batch], now)
            blocked = await tx.chats.inactive_ids()
            alerts, staged = await self._batch_alerts(tx, changes, batch, matched, plain,
                                                      prepared.without(blocked), blocked)
            # Revision alerts wait for their details (comments, journal refs) from the API,
            # looked up at the end of the poll; at most one poll interval, should the look-up
            # never finish.
            await tx.outbox.enqueue(
                alerts, now, revisions_due_at=now + self._settings.poll_interval_seconds,
                staged=staged)
        report.changes.extend(changes)
        queued = len(alerts)
        report.alerted_chats.update(a.chat_id for a in alerts)
        if staged is not None:
            queued += staged.alert_count
            report.alerted_chats.update(staged.chats)
        report.alert_count += queued
        report.revised_versions.update(dict.fromkeys(
            (a.arxiv_id, a.version) for a in alerts if a.kind == AlertKind.REVISION))
        if report.keep_alerts:
            if staged is not None:
                report.alerts.extend(a for a in plain.alerts() if a.chat_id not in blocked)
            report.alerts.extend(alerts)
        return changes, queued

    def _assess(self, previous: FeedState, content: FeedContent | None, *,
                fetched: bool) -> FeedState:
        return assess(previous, content, fetched=fetched, now=self._clock.now(),
                      calendar=self._calendar, timing=self._timing)

    async def _settle(self, url: str, state: FeedState, report: PollReport) -> _Settled:
        """Fill a stale source from the listing pages when it is due, then store its state."""
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
                changes, alerts = await self._ingest(papers, report, now)
                counts = {"filled": len(papers), **_counts(changes, alerts)}
                log.warning("feed %s is stale (expected %s): filled %d papers from the listing, "
                            "%d alerts", url, day, len(papers), alerts)
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

    async def _match(self, changes: Sequence[PaperChange], pairs: Pairs) -> _Matched:
        """Per new or revised paper, the alert of each chat whose subscriptions match it.

        Seconds of CPU for a big feed: run in a worker thread (`in_worker`), outside any
        transaction, so that chats' commands are answered, and their writes stored, meanwhile.
        """
        subscriptions = self._subscriptions
        return await subscriptions.in_worker(
            lambda: _Matched.of(subscriptions, pairs, changes))

    async def _batch_alerts(self, tx: Transaction, changes: Sequence[PaperChange],
                            expected: Sequence[PaperChange], matched: _Matched,
                            plain: PlainAlerts, prepared: StagedAlerts, blocked: set[int]
                            ) -> tuple[list[Alert], StagedAlerts | None]:
        """A batch's alerts, as its transaction found the papers: subscription matches of new
        and revised papers, plus revisions of saved papers. The new papers' alerts are the
        `prepared` staging (`plain`, encoded, less the `blocked` chats') as long as the
        transaction finds those papers new; the rest are objects.

        A paper the transaction finds otherwise than it was read before matching (stored
        meanwhile, e.g. by a look-up) is matched again here. Chats that blocked the bot get
        nothing: it could not be sent, and a chat that comes back after months should not
        find months of alerts waiting.
        """
        fresh = [c for c in changes if c.status is not ChangeStatus.SEEN]
        if not fresh:
            return [], None
        was = {c.paper.arxiv_id: c.status for c in expected}
        new_now = {c.paper.arxiv_id for c in fresh if c.status is ChangeStatus.NEW}
        expected_new = {arxiv_id for arxiv_id, status in was.items()
                        if status is ChangeStatus.NEW}
        by_paper: Mapping[str, list[Alert]] = matched.revised
        staged: StagedAlerts | None = prepared
        if not expected_new <= new_now:
            # A paper read as new was stored meanwhile: the prepared staging holds its alerts,
            # so the batch's new papers go as objects instead (rare: a race with a look-up).
            staged = None
            by_paper = {**by_paper, **_by_paper(plain.alerts())}
        changed = [c for c in fresh if was.get(c.paper.arxiv_id) != c.status]
        if changed:
            subscriptions = self._subscriptions
            by_paper = {**by_paper, **await subscriptions.in_worker(
                lambda: _alerts_by_paper(subscriptions, matched.pairs, changed))}
        if staged is not None:
            fresh = [c for c in fresh if c.paper.arxiv_id not in expected_new]
        revised = {c.paper.arxiv_id: c.paper for c in fresh if c.status is ChangeStatus.REVISED}
        savers = await tx.saved.chats_saving(revised) if revised else {}
        saved_topics = await tx.outbox.first_topics(savers) if savers else {}
        alerts: list[Alert] = []
        for change in fresh:
            arxiv_id = change.paper.arxiv_id
            by_place = {(a.chat_id, a.topic_id): a for a in by_paper.get(arxiv_id, ())
                        if a.chat_id not in blocked}
            for chat_id in savers.get(arxiv_id, ()):
                if chat_id in blocked:
                    continue
                # Where the paper's thread is: the topic of its first alert.
                topic_id = saved_topics.get((chat_id, arxiv_id), GENERAL)
                existing = by_place.get((chat_id, topic_id))
                by_place[(chat_id, topic_id)] = Alert(
                    chat_id, arxiv_id, change.paper.version, AlertKind.REVISION,
                    existing.subscription_ids if existing else (),
                    existing.matched_queries if existing else (),
                    saved_revision=True, topic_id=topic_id,
                )
            alerts.extend(by_place.values())
        return alerts, staged


class _Matched:
    """A part of a feed matched: its new papers' alerts in arrays (`PlainUnits`), made into
    `PlainAlerts` batch by batch, and its revised papers' alerts as objects."""

    def __init__(self, pairs: Pairs, new: Sequence[Paper], units: PlainUnits | None,
                 revised: dict[str, list[Alert]]) -> None:
        self.pairs = pairs
        self._new = {paper.arxiv_id: index for index, paper in enumerate(new)}
        self._units = units
        self.revised = revised
        # How many alerts each paper makes, to cut the part into batches.
        self.counts = {arxiv_id: len(found) for arxiv_id, found in revised.items()}
        if units is not None:
            self.counts.update(zip(self._new, units.per_paper(), strict=True))

    @classmethod
    def of(cls, subscriptions: SubscriptionService, pairs: Pairs,
           changes: Sequence[PaperChange]) -> _Matched:
        """Match the new and revised papers among `changes` (in a worker thread)."""
        new = [c.paper for c in changes if c.status is ChangeStatus.NEW]
        units = (subscriptions.matcher.match(new).plain_units(subscriptions.topics, pairs)
                 if new else None)
        revised = [c for c in changes if c.status is ChangeStatus.REVISED]
        return cls(pairs, new, units,
                   _alerts_by_paper(subscriptions, pairs, revised) if revised else {})

    def plain(self, batch: Sequence[PaperChange]) -> PlainAlerts:
        """The alerts of the batch's new papers, grouped by chat (in a worker thread)."""
        wanted = [self._new[c.paper.arxiv_id] for c in batch if c.paper.arxiv_id in self._new]
        if self._units is None or not wanted:
            return PlainAlerts.from_alerts(())
        return self._units.plain(wanted)


def _alerts_by_paper(subscriptions: SubscriptionService, pairs: Pairs,
                     fresh: Sequence[PaperChange]) -> dict[str, list[Alert]]:
    """Match new and revised papers (in a worker thread): per paper, one alert per chat and
    forum topic, as objects."""
    kinds = {c.paper.arxiv_id: AlertKind.REVISION if c.status is ChangeStatus.REVISED
             else AlertKind.NEW for c in fresh}
    by_paper: dict[str, list[Alert]] = {arxiv_id: [] for arxiv_id in kinds}
    topics = subscriptions.topics  # only subscriptions bound to a forum topic
    for chat_id, chat_matches in subscriptions.matcher.match([c.paper for c in fresh]).items():
        for match in chat_matches:
            paper = match.paper
            for topic_id, sub_ids in _by_topic(match.subscription_ids, topics):
                by_paper[paper.arxiv_id].append(Alert(
                    chat_id, paper.arxiv_id, paper.version, kinds[paper.arxiv_id],
                    *pairs.of(sub_ids), topic_id=topic_id,
                ))
    return by_paper


def _by_paper(alerts: Iterable[Alert]) -> dict[str, list[Alert]]:
    found: dict[str, list[Alert]] = {}
    for alert in alerts:
        found.setdefault(alert.arxiv_id, []).append(alert)
    return found


def _batches(changes: Sequence[PaperChange], counts: Mapping[str, int]
             ) -> Iterator[list[PaperChange]]:
    """Papers in order, cut so that a batch holds at most INGEST_BATCH_PAPERS papers and, but
    for a single paper that alerts more chats, at most INGEST_BATCH_ALERTS alerts."""
    batch: list[PaperChange] = []
    rows = 0
    for change in changes:
        alerts = counts.get(change.paper.arxiv_id, 0)
        if batch and (len(batch) >= INGEST_BATCH_PAPERS
                      or rows + alerts > INGEST_BATCH_ALERTS):
            yield batch
            batch, rows = [], 0
        batch.append(change)
        rows += alerts
    if batch:
        yield batch


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


def _counts(changes: Sequence[PaperChange], alerts: int) -> dict[str, int]:
    counts = {str(status): sum(c.status is status for c in changes) for status in ChangeStatus}
    return {**counts, "alerts": alerts}

"""Freshness against arXiv's calendar: is a feed quiet, fresh, waiting or stale, and when to poll.

Every fetch is an observation of one feed. Against the announcement date the calendar expects
(`bot/arxiv/calendar.py`) it makes the feed:

- **quiet**: nothing is due (a weekend or holiday) and the last announcement was seen; an empty
  feed then is healthy;
- **fresh**: the feed carries the announcement that is due;
- **waiting**: the due announcement's rebuild has passed, but not `stale_after` seconds ago;
  the bot polls tightly;
- **stale**: still not moved past the last announcement (empty, or the same items) after that:
  shown as such, and filled from the listing page;
- **filled**: it was stale and the due announcement was read from the listing page; it stays so
  until the feed itself catches up (whose items are then all seen: nothing is alerted twice).

"Moved" means the feed's (id, version) pairs differ from those it had when it last moved: a
stale feed serves the previous announcement with a current `lastBuildDate` (ZJU-REAL/Polaris
#414), so dates alone are not trusted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime

from bot.arxiv.calendar import ARXIV_ZONE, ArxivCalendar
from bot.config import Settings
from bot.core.models import ArxivId, FeedState, Freshness, Paper

LISTING_RETRY_SECONDS = 600.0  # a stale source's listing is read again at most this often


@dataclass(frozen=True, slots=True)
class PollTiming:
    """How tightly to poll, from the settings; `ceiling` is POLL_INTERVAL_SECONDS."""

    tight: float = 60.0
    relaxed: float = 3600.0
    tight_window: float = 7200.0
    stale_after: float = 1800.0
    ceiling: float = 900.0

    @classmethod
    def from_settings(cls, settings: Settings) -> PollTiming:
        return cls(tight=settings.arxiv_tight_poll_seconds,
                   relaxed=settings.arxiv_relaxed_poll_seconds,
                   tight_window=settings.arxiv_tight_window_seconds,
                   stale_after=settings.arxiv_stale_after_seconds,
                   ceiling=settings.poll_interval_seconds)


@dataclass(frozen=True, slots=True)
class FeedContent:
    """What a fetched feed carried: a digest of its (id, version) pairs, its newest id, and the
    announcement date it states (its pubDate in New York), if any."""

    digest: str
    newest_id: str
    stated_date: date | None


def feed_content(papers: Sequence[Paper], pub_date: datetime | None) -> FeedContent | None:
    """The content of a feed with papers; None for an empty one."""
    if not papers:
        return None
    pairs = sorted({f"{p.arxiv_id}v{p.version}" for p in papers})
    digest = hashlib.sha256("\n".join(pairs).encode()).hexdigest()[:32]
    newest = max((p.arxiv_id for p in papers), key=_id_order)
    stated = pub_date.astimezone(ARXIV_ZONE).date() if pub_date is not None else None
    return FeedContent(digest, newest, stated)


def assess(previous: FeedState, content: FeedContent | None, *, fetched: bool, now: float,
           calendar: ArxivCalendar, timing: PollTiming) -> FeedState:
    """The feed's state after one poll. `fetched` is False when the fetch failed; `content`
    is None for an empty feed or a 304 (nothing new seen)."""
    expected = calendar.expected(now)
    announcing_today = calendar.is_announcement_date(calendar.today(now))
    state = previous
    if content is not None and content.digest != previous.feed_digest:
        credited = expected
        stated = content.stated_date
        if stated is not None and expected < stated <= calendar.next_after(expected):
            credited = stated  # an early rebuild
        announced = max(previous.announced_on or credited, credited)
        state = replace(state, announced_on=announced, feed_digest=content.digest,
                        newest_id=content.newest_id, changed_at=now)
    elif previous.announced_on is None and fetched and (content is not None
                                                        or not announcing_today):
        state = replace(state, announced_on=expected)  # a first sight sets the baseline
    return classify(state, now, calendar, timing)


def classify(state: FeedState, now: float, calendar: ArxivCalendar,
             timing: PollTiming) -> FeedState:
    """Name the state's freshness at `now`, keeping since when it is stale."""
    expected = calendar.expected(now)
    announced = state.announced_on
    announcing_today = calendar.is_announcement_date(calendar.today(now))
    if (announced is not None and announced >= expected) or not announcing_today:
        # Caught up; or a weekend or holiday, whose feed carries nothing to catch up with.
        filled = (announced is not None and state.filled_on is not None
                  and state.filled_on >= announced
                  and (state.changed_at is None
                       or state.changed_at < calendar.rebuild_at(announced)))
        if filled:
            return replace(state, freshness=Freshness.FILLED)
        freshness = Freshness.FRESH if announcing_today else Freshness.QUIET
        return replace(state, freshness=freshness, stale_since=None, expected_on=None,
                       listing_error=None)
    if now < calendar.rebuild_at(expected) + timing.stale_after:
        return replace(state, freshness=Freshness.WAITING, expected_on=expected)
    since = state.stale_since if state.freshness is Freshness.STALE and \
        state.stale_since is not None else now
    return replace(state, freshness=Freshness.STALE, stale_since=since, expected_on=expected)


def wants_listing(state: FeedState, now: float) -> bool:
    """True when a stale source should be filled from the listing page now."""
    # Without a baseline (a first start) there is no known day to fill.
    return state.freshness is Freshness.STALE and state.announced_on is not None and (
        state.listing_checked_at is None
        or now - state.listing_checked_at >= LISTING_RETRY_SECONDS)


def filled(state: FeedState, day: date, now: float) -> FeedState:
    """The state once the announcement of `day` was read from the listing page."""
    return replace(state, announced_on=max(state.announced_on or day, day), filled_on=day,
                   freshness=Freshness.FILLED, listing_checked_at=now, listing_error=None)


def next_poll_delay(now: float, states: Iterable[FeedState], calendar: ArxivCalendar,
                    timing: PollTiming) -> float:
    """Seconds to the next poll: every `tight` seconds from a due rebuild until every feed has
    the due announcement (for at most `tight_window`), else `relaxed`, waking for the next
    rebuild; never more than the ceiling."""
    expected = calendar.expected(now)
    states = list(states)
    behind = not states or any(s.announced_on is None or s.announced_on < expected
                               for s in states)
    if behind and now < calendar.rebuild_at(expected) + timing.tight_window:
        delay = timing.tight
    else:
        delay = min(timing.relaxed, calendar.next_rebuild(now) - now)
    return max(1.0, min(delay, timing.ceiling))


def _id_order(arxiv_id: str) -> tuple[int, str]:
    """New-style ids sort after old-style ones, and by number among themselves."""
    parsed = ArxivId.parse(arxiv_id)
    base = parsed.base if parsed else arxiv_id
    if "/" in base:
        return (0, base)
    yymm, _, number = base.partition(".")
    return (1, f"{yymm}.{number.zfill(5)}")

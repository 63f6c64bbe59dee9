"""What queries would have matched over the last week: the live preview of a query being typed
(its count and first titles, or the parser's error) and each subscription's matches per day.

Both run the matcher over the stored papers of the last 7 days, as /follow's preview does
(`bot/query/service.py`), in a worker thread so other chats are answered meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.models import Paper, Subscription
from bot.query.matcher import Matcher
from bot.query.parser import QueryError, cjk_terms, parse
from bot.query.service import PREVIEW_DAYS, PREVIEW_MAX_PAPERS
from bot.storage import Storage

PREVIEW_TITLES = 5  # the first matches shown under a query being typed


@dataclass(frozen=True, slots=True)
class QueryPreview:
    """A typed query: its parse error, or how many papers it would have matched this week and
    the newest of them."""

    error: QueryError | None = None
    matches: int = 0
    first: tuple[Paper, ...] = ()
    cjk_terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class WeekOfMatches:
    """A subscription's would-be matches on each of the last 7 days (oldest first)."""

    days: tuple[date, ...]
    counts: dict[int, tuple[int, ...]]  # by subscription id


class Previews:
    def __init__(self, storage: Storage, clock: Clock) -> None:
        self._storage = storage
        self._clock = clock

    async def _week(self) -> list[Paper]:
        since = self._clock.now() - PREVIEW_DAYS * DAY
        return await self._storage.papers.seen_since(since, PREVIEW_MAX_PAPERS)

    async def query(self, typed: str) -> QueryPreview:
        """The preview of a query as typed (not stored)."""
        try:
            node = parse(" ".join(typed.split()))
        except QueryError as exc:
            return QueryPreview(error=exc)
        papers = await self._week()
        matcher = Matcher.build([(1, 0, node)])
        found = await asyncio.to_thread(matcher.find, papers)
        matched = tuple(paper for paper, subs in zip(papers, found, strict=True) if subs)
        return QueryPreview(None, len(matched), matched[:PREVIEW_TITLES],
                            tuple(cjk_terms(node)))

    async def by_day(self, subscriptions: Sequence[Subscription], zone: str) -> WeekOfMatches:
        """Each subscription's matches per local day (the paper's date) over the last week."""
        tz = ZoneInfo(zone)
        today = datetime.fromtimestamp(self._clock.now(), tz).date()
        days = tuple(today - timedelta(days=back) for back in range(PREVIEW_DAYS - 1, -1, -1))
        counts = {sub.id: [0] * PREVIEW_DAYS for sub in subscriptions}
        nodes = []
        for sub in subscriptions:
            try:
                nodes.append((sub.id, sub.chat_id, parse(sub.query, max_length=None)))
            except QueryError:  # stored by an older grammar: no counts, as the matcher skips it
                continue
        papers = await self._week() if nodes else []
        if papers:
            matcher = Matcher.build(nodes)
            found = await asyncio.to_thread(matcher.find, papers)
            first = days[0]
            for paper, subs in zip(papers, found, strict=True):
                when = paper.updated or paper.published
                if when is None or not subs:
                    continue
                index = (when.astimezone(tz).date() if when.tzinfo else
                         when.replace(tzinfo=UTC).astimezone(tz).date()) - first
                if 0 <= index.days < PREVIEW_DAYS:
                    for sub_id in subs:
                        counts[sub_id][index.days] += 1
        return WeekOfMatches(days, {sub_id: tuple(c) for sub_id, c in counts.items()})

"""Read one announcement from the listing pages, as the feed would have carried it.

Used when a feed is stale (`bot/arxiv/freshness.py`). Each name of the feed URL (`cs`,
`math.AG`) has its page; the entries are combined as a combined feed lists them (each paper
once, new before cross before replacement), and their versions and the details a page lacks come
from the API in batches. A page of another date, a page whose counts disagree with its entries,
or a paper whose version cannot be known raises `ListingError`: a partial day is never ingested.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import date

from bot.arxiv.client import ArxivClient
from bot.arxiv.errors import ListingError
from bot.arxiv.listing import ListingEntry
from bot.core.models import AnnounceType, Paper

_KIND_ORDER = (AnnounceType.NEW, AnnounceType.CROSS, AnnounceType.REPLACE,
               AnnounceType.REPLACE_CROSS)


def feed_names(url: str) -> tuple[str, ...]:
    """The archives and categories a feed URL covers (`…/rss/cs+math.AG` → cs, math.AG)."""
    return tuple(name for name in url.rstrip("/").rsplit("/", 1)[-1].split("+") if name)


async def read_announcement(client: ArxivClient, names: Sequence[str], day: date
                            ) -> list[Paper]:
    """The papers the listing pages of `names` announce for `day`, with versions."""
    entries: dict[str, ListingEntry] = {}
    for name in names:
        listing = await client.fetch_listing(name)
        if listing.announced_on != day:
            raise ListingError(f"the listing of {name} shows {listing.announced_on.isoformat()}, "
                               f"not {day.isoformat()}")
        for entry in listing.entries:
            kept = entries.get(entry.arxiv_id)
            if kept is None or _KIND_ORDER.index(entry.kind) < _KIND_ORDER.index(kept.kind):
                entries[entry.arxiv_id] = entry
    if not entries:
        return []
    known = {paper.arxiv_id: paper for paper in await client.lookup_ids(list(entries))}
    papers: list[Paper] = []
    for entry in entries.values():
        looked_up = known.get(entry.arxiv_id)
        if looked_up is not None and looked_up.version >= (entry.version or 1):
            papers.append(dataclasses.replace(
                looked_up, announce_type=entry.kind,
                categories=looked_up.categories or entry.categories))
        elif entry.version is not None:
            papers.append(entry.paper(entry.version))
        elif entry.kind is AnnounceType.NEW:
            papers.append(entry.paper(1))  # a new submission is announced at v1
        else:
            raise ListingError(f"no version known for {entry.arxiv_id} (not in the API yet)")
    return papers

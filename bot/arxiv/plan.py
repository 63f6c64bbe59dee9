"""Which announcement feeds to poll: the fewest rss.arxiv.org URLs covering what chats follow.

Names come from users, so only arXiv's real archives and categories are accepted (the list is
`bot/arxiv/taxonomy.py`, shared with the query parser): one unknown name in a combined URL makes
arXiv answer with an error feed for the whole URL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from bot.arxiv.taxonomy import ARCHIVES, canonical_name

log = logging.getLogger(__name__)

DEFAULT_MAX_URL_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class FeedPlan:
    """The feed URLs to poll, the names they cover, and the names refused as unknown."""

    urls: tuple[str, ...]
    sources: tuple[str, ...]  # canonical archives/categories, in URL order
    rejected: tuple[str, ...] = ()


def build_feed_plan(
    archives: Iterable[str],
    followed: Iterable[str],
    *,
    rss_url: str,
    max_url_length: int = DEFAULT_MAX_URL_LENGTH,
) -> FeedPlan:
    """The fewest feed URLs covering `archives` plus every followed category, in a stable order."""
    wanted: set[str] = set()
    rejected: dict[str, None] = {}
    for name in (*archives, *followed):
        canonical = canonical_name(name)
        if canonical is None:
            rejected.setdefault(str(name)[:80], None)
        else:
            wanted.add(canonical)
    if rejected:
        log.warning("ignoring unknown arXiv archives/categories: %s", ", ".join(rejected))

    whole_archives = {name for name in wanted if name in ARCHIVES}
    # An archive's feed lists all its categories, so "cs" makes "cs.LG" redundant.
    sources = sorted(
        (name for name in wanted
         if name in whole_archives or name.split(".", 1)[0] not in whole_archives),
        key=lambda name: (name.split(".", 1)[0], "." in name, name),
    )
    return FeedPlan(
        urls=tuple(_chunk_urls(rss_url.rstrip("/"), sources, max_url_length)),
        sources=tuple(sources),
        rejected=tuple(rejected),
    )


def _chunk_urls(base: str, sources: list[str], max_url_length: int) -> list[str]:
    urls: list[str] = []
    current: list[str] = []
    for name in sources:
        candidate = f"{base}/{'+'.join([*current, name])}"
        if current and len(candidate) > max_url_length:
            urls.append(f"{base}/{'+'.join(current)}")
            current = [name]
        else:
            current.append(name)
    if current:
        urls.append(f"{base}/{'+'.join(current)}")
    return urls

"""Today's Hugging Face community picks as a chat asks for them: all, or those its
subscriptions match."""

from __future__ import annotations

from dataclasses import dataclass

from bot.core.models import CommunityPick, Paper
from bot.delivery.compose import saved_state
from bot.query.service import SubscriptionService
from bot.sources.huggingface import CommunityPicks
from bot.storage import Storage


@dataclass(frozen=True, slots=True)
class TrendingPick:
    """A pick with its paper, and whether the asking chat saved it (and who did, in a group)."""

    pick: CommunityPick
    paper: Paper
    saved: bool
    saved_by: str | None


@dataclass(frozen=True, slots=True)
class TrendingToday:
    """The latest day's picks, most upvoted first: `shown` of the `matching` (all of them, or
    those the chat's subscriptions match) among `total`."""

    total: int
    matching: int
    shown: tuple[TrendingPick, ...]


class Trending:
    """Present when Hugging Face's daily list is polled (`Features.trending`)."""

    def __init__(self, community: CommunityPicks, subscriptions: SubscriptionService,
                 storage: Storage) -> None:
        self._community = community
        self._subscriptions = subscriptions
        self._storage = storage

    async def today(self, chat_id: int, *, mine: bool, count: int) -> TrendingToday:
        """The first `count` of today's picks; with `mine`, of those the chat follows."""
        picks = await self._community.today()
        total = len(picks)
        if mine:
            matches = self._subscriptions.matcher.match([paper for _, paper in picks])
            wanted = {match.paper.arxiv_id for match in matches.get(chat_id, ())}
            picks = [(pick, paper) for pick, paper in picks if paper.arxiv_id in wanted]
        shown = []
        for pick, paper in picks[:count]:
            saved, saved_by = await saved_state(self._storage, chat_id, paper.arxiv_id)
            shown.append(TrendingPick(pick, paper, saved, saved_by))
        return TrendingToday(total, len(picks), tuple(shown))

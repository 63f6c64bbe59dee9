"""Following and unfollowing: parse, store, keep the live matcher in step, preview matches."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, TypeVar

from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.models import GENERAL, FollowStatus, Paper, Subscription
from bot.query.matcher import Matcher, freeze_long_lived
from bot.query.parser import (
    And,
    Archive,
    Category,
    Node,
    Or,
    QueryError,
    canonical,
    cjk_terms,
    parse,
)
from bot.storage import Storage

log = logging.getLogger(__name__)
T = TypeVar("T")

PREVIEW_DAYS = 7
# Subscriptions from which the index's millions of objects make a full collection a pause of
# its own (about a second at 100,000): then the garbage collector is kept off them.
LARGE_INDEX = 10_000
# Above a week of `cs` (five announcements of about 2,000 items): the newest are counted.
PREVIEW_MAX_PAPERS = 20_000


@dataclass(frozen=True, slots=True)
class FollowResult:
    """The outcome of `/follow`: added (with a 7-day preview count), duplicate, limit or error."""

    status: FollowStatus
    subscription: Subscription | None = None
    preview_matches: int = 0
    error: QueryError | None = None
    cjk_terms: tuple[str, ...] = ()  # terms in a CJK script: arXiv's texts are English


class _Live(NamedTuple):
    """A subscription as the matcher holds it."""

    chat_id: int
    shown: str  # as the chat typed it: the text of "matched: …" lines
    node: Node


def _count_matches(node: Node, papers: Sequence[Paper]) -> int:
    preview = Matcher.build([(1, 1, node)])
    return sum(len(matches) for matches in preview.match(papers).values())


class SubscriptionService:
    """Owns the compiled matcher; every change of subscriptions goes through here."""

    def __init__(self, storage: Storage, clock: Clock) -> None:
        self._store = storage
        self._clock = clock
        self.matcher = Matcher()
        self._live: dict[int, _Live] = {}  # by subscription id, exactly what the matcher holds
        # The forum topic of each subscription bound to one (most are not): read by matching
        # in the worker thread, so it changes only when the matcher does.
        self.topics: dict[int, int] = {}
        # While a worker thread matches, the index must not change under it: changes wait.
        self._in_worker = 0
        self._deferred: list[Callable[[], None]] = []

    def _track(self, sub: Subscription, node: Node) -> None:
        def track() -> None:
            self.matcher.add(sub.id, sub.chat_id, node)
            self._live[sub.id] = _Live(sub.chat_id, sub.display, node)
            self._bind(sub.id, sub.topic_id)

        self._change(track)

    def _untrack(self, sub_id: int) -> None:
        def untrack() -> None:
            self.matcher.remove(sub_id)
            self._live.pop(sub_id, None)
            self.topics.pop(sub_id, None)

        self._change(untrack)

    def _bind(self, sub_id: int, topic_id: int) -> None:
        if topic_id == GENERAL:
            self.topics.pop(sub_id, None)
        else:
            self.topics[sub_id] = topic_id

    def _change(self, change: Callable[[], None]) -> None:
        if self._in_worker:
            self._deferred.append(change)
        else:
            change()

    async def in_worker(self, work: Callable[[], T]) -> T:
        """Run `work` (matching a batch with `matcher` and `query_text`) in a worker thread.

        Matching a big batch takes seconds of CPU; on the event loop it would keep every
        chat's command waiting. Subscriptions changed meanwhile reach the matcher when the
        work is done (even if the caller was cancelled: the thread runs to its end).
        """
        self._in_worker += 1
        future = asyncio.get_running_loop().run_in_executor(None, work)
        future.add_done_callback(self._worker_done)
        return await asyncio.shield(future)

    def _worker_done(self, _: object) -> None:
        self._in_worker -= 1
        if not self._in_worker:
            deferred, self._deferred = self._deferred, []
            for change in deferred:
                change()

    async def load(self) -> int:
        """Compile every stored subscription into the matcher (at start-up)."""
        self._live = {}
        self.topics = {}
        for sub in await self._store.subscriptions.all():
            try:
                node = parse(sub.query, max_length=None)  # canonical text may exceed 300
            except QueryError as exc:  # a query stored by an older grammar; keep running
                log.warning("subscription %s no longer parses (%s); skipped", sub.id, exc)
                continue
            self._live[sub.id] = _Live(sub.chat_id, sub.display, node)
            self._bind(sub.id, sub.topic_id)
        self.matcher = Matcher.build((sub_id, live.chat_id, live.node)
                                     for sub_id, live in self._live.items())
        log.info("matcher compiled with %d subscriptions", len(self._live))
        self.refreeze()
        return len(self._live)

    def refreeze(self) -> None:
        """Daily upkeep of a large index: see `freeze_long_lived`."""
        if self.large:
            freeze_long_lived()

    @property
    def large(self) -> bool:
        """Whether the index is big enough for the collector's passes over it to be felt."""
        return len(self._live) >= LARGE_INDEX

    async def follow(self, chat_id: int, raw_query: str,
                     topic_id: int = GENERAL) -> FollowResult:
        """Parse and add a query for a chat, its alerts bound for forum topic `topic_id`;
        duplicates and the 50-per-chat limit are refused.

        The canonical form finds duplicates and drives matching; the chat sees what it typed
        (trimmed, whitespace collapsed), and a duplicate as it was typed the first time.
        """
        typed = " ".join(raw_query.split())
        try:
            node = parse(typed)
        except QueryError as exc:
            return FollowResult(FollowStatus.INVALID, error=exc)
        result = await self._store.subscriptions.add(chat_id, canonical(node), typed,
                                                     self._clock.now(), topic_id)
        if result.status is not FollowStatus.ADDED or result.subscription is None:
            return FollowResult(result.status, result.subscription)
        self._track(result.subscription, node)
        return FollowResult(FollowStatus.ADDED, result.subscription, await self._preview(node),
                            cjk_terms=tuple(cjk_terms(node)))

    async def _preview(self, node: Node) -> int:
        """How many stored papers of the last week this query would have matched.

        Matching a week of papers takes a while: it runs in a worker thread so other chats
        are answered meanwhile, over the newest PREVIEW_MAX_PAPERS papers at most.
        """
        since = self._clock.now() - PREVIEW_DAYS * DAY
        papers = await self._store.papers.seen_since(since, PREVIEW_MAX_PAPERS)
        if not papers:
            return 0
        return await asyncio.to_thread(_count_matches, node, papers)

    async def unfollow(self, chat_id: int, number: int) -> Subscription | None:
        """Remove the chat's subscription shown as `number` in /list; None if there is none."""
        subs = await self._store.subscriptions.for_chat(chat_id)
        if not 1 <= number <= len(subs):
            return None
        return await self.unfollow_id(chat_id, subs[number - 1].id)

    async def unfollow_id(self, chat_id: int, sub_id: int) -> Subscription | None:
        """Remove a subscription by row id, only if this chat owns it."""
        sub = await self._store.subscriptions.get(sub_id)
        if sub is None or sub.chat_id != chat_id:
            return None
        if await self._store.subscriptions.remove(chat_id, sub_id):
            self._untrack(sub_id)
            return sub
        return None

    async def unfollow_all(self, chat_id: int) -> int:
        subs = await self._store.subscriptions.for_chat(chat_id)
        removed = await self._store.subscriptions.remove_all(chat_id)
        for sub in subs:
            self._untrack(sub.id)
        return removed

    async def for_chat(self, chat_id: int) -> list[Subscription]:
        return await self._store.subscriptions.for_chat(chat_id)

    async def move(self, chat_id: int, number: int, topic_id: int) -> Subscription | None:
        """Bind the chat's subscription shown as `number` in /list to forum topic `topic_id`
        (General: 0); None if there is none. Alerts already queued stay where they were."""
        subs = await self._store.subscriptions.for_chat(chat_id)
        if not 1 <= number <= len(subs):
            return None
        sub = subs[number - 1]
        if not await self._store.subscriptions.move(chat_id, sub.id, topic_id):
            return None
        self._change(lambda: self._bind(sub.id, topic_id))
        return dataclasses.replace(sub, topic_id=topic_id)

    async def topic_gone(self, chat_id: int, topic_id: int) -> None:
        """A topic was deleted or closed, and storage bound its subscriptions to General: so
        does the matcher."""
        gone = {s.id for s in await self._store.subscriptions.for_chat(chat_id)
                if s.topic_id == GENERAL}

        def unbind() -> None:
            for sub_id in gone:
                if self.topics.get(sub_id) == topic_id:
                    del self.topics[sub_id]

        self._change(unbind)

    async def chat_migrated(self, old_id: int, new_id: int) -> None:
        """A group became a supergroup: its subscriptions now belong to the new id."""
        for sub_id in [s for s, live in self._live.items() if live.chat_id in (old_id, new_id)]:
            self._untrack(sub_id)
        for sub in await self._store.subscriptions.for_chat(new_id):
            self._track(sub, parse(sub.query, max_length=None))

    def query_text(self, sub_id: int) -> str | None:
        """A live subscription as the chat typed it (shown as "matched: …")."""
        live = self._live.get(sub_id)
        return None if live is None else live.shown

    def followed_sources(self) -> set[str]:
        """Categories and archives that subscriptions name positively (to plan the feeds)."""
        found: set[str] = set()

        def walk(node: Node) -> None:
            if isinstance(node, Category | Archive):
                found.add(node.name)
            elif isinstance(node, And | Or):
                for child in node.children:
                    walk(child)
            # Under NOT a category only excludes papers, so it needs no feed of its own.

        for live in self._live.values():
            walk(live.node)
        return found

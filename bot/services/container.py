"""The composition root: every service is built here, once, and closed in reverse order.

The bot (`bot/chat/application.py`'s post_init), `poll-once`, the benches and the tests all
open their services with `open_services`, so what `poll-once --dry-run` prints and what the
running bot sends come from the same construction and cannot drift apart.

    async with open_services(settings, bot=telegram_bot) as services:
        report = await services.pipeline.poll()
        await services.sender.drain()
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.arxiv.calendar import ArxivCalendar
from bot.arxiv.client import ArxivClient
from bot.arxiv.lookups import LookupQueue
from bot.config import Settings
from bot.core.clock import Clock, SystemClock
from bot.core.sealing import Sealer
from bot.delivery.pacing import Pacer
from bot.delivery.paid import PaidBroadcasts
from bot.delivery.sender import Sender
from bot.guides.client import GuideClient
from bot.guides.service import GuideService
from bot.importer.service import LibraryImporter
from bot.query.service import SubscriptionService
from bot.ranking.service import Ranker
from bot.services.budget import BudgetPolicy, CommandBudget
from bot.services.chats import ChatSettings
from bot.services.ingest import Pipeline
from bot.services.inline import InlineSearch
from bot.services.library import Library
from bot.services.overview import Overview
from bot.services.papers import Papers
from bot.services.previews import Previews
from bot.services.state import RunState
from bot.services.topics import ForumTopics
from bot.services.trending import Trending
from bot.services.zotero import ZoteroSync
from bot.sources.huggingface import CommunityPicks
from bot.storage import Storage, open_storage
from bot.zotero.client import ZoteroClient

if TYPE_CHECKING:
    from telegram import Bot


@dataclass(frozen=True, slots=True)
class ProgressPolicy:
    """When a long command shows progress: the message after `show_after` s, edits at most
    every `edit_every` s (Telegram allows about one edit a second per chat), the chat action
    renewed every `action_every` s (a chat action shows for five seconds)."""

    show_after: float = 2.0
    edit_every: float = 2.0
    action_every: float = 4.5


@dataclass(frozen=True, slots=True)
class Features:
    """The optional features this bot runs with, as the settings switch them on."""

    guides: bool  # an LLM endpoint is configured: /guide and the 🧠 Guide button
    trending: bool  # Hugging Face's daily list is polled: /trending and its badge
    zotero: bool = False  # SECRET_KEY is set, so Zotero keys can be kept: /zotero

    @classmethod
    def from_settings(cls, settings: Settings) -> Features:
        return cls(guides=settings.guides_enabled, trending=bool(settings.hf_papers_url),
                   zotero=bool(settings.secret_key))


@dataclass
class Services:
    """Everything the edges (chat, jobs, the command line) call. Every field is there for the
    whole run; a switched-off feature's service is absent (None) and `features` says so."""

    settings: Settings
    clock: Clock
    storage: Storage
    subscriptions: SubscriptionService
    arxiv: ArxivClient
    lookups: LookupQueue
    importer: LibraryImporter
    ranker: Ranker
    pipeline: Pipeline
    sender: Sender
    pacer: Pacer
    budget: CommandBudget
    progress: ProgressPolicy
    features: Features
    run: RunState
    overview: Overview
    chats: ChatSettings
    library: Library
    papers: Papers
    topics: ForumTopics
    previews: Previews
    inline: InlineSearch
    guides: GuideService | None = None  # when features.guides
    community: CommunityPicks | None = None  # when features.trending
    trending: Trending | None = None  # when features.trending
    zotero: ZoteroSync | None = None  # when features.zotero


@dataclass(frozen=True, slots=True)
class Wiring:
    """How an edge wants its services made, beyond the settings: tests and benches pass a
    manual clock, a faster pacer, another budget or progress policy, a calendar with more
    holidays."""

    clock: Clock = field(default_factory=SystemClock)
    pacer: Pacer = field(default_factory=Pacer)
    budget: BudgetPolicy = field(default_factory=BudgetPolicy)
    progress: ProgressPolicy = field(default_factory=ProgressPolicy)
    calendar: ArxivCalendar = field(default_factory=ArxivCalendar)


@asynccontextmanager
async def open_services(settings: Settings, *, bot: Bot, wiring: Wiring | None = None,
                        run: RunState | None = None) -> AsyncIterator[Services]:
    """Open the database and every client, build the services on them, and close them all
    when the block ends (also when building fails half-way). `bot` is what the sender sends
    with: the Application's bot, or a plain `telegram.Bot` for the command line."""
    wiring = wiring or Wiring()
    clock = wiring.clock
    async with AsyncExitStack() as stack:
        storage = await open_storage(settings.database)
        stack.push_async_callback(storage.close)
        subscriptions = SubscriptionService(storage, clock)
        await subscriptions.load()
        ranker = Ranker(storage, clock.now)
        arxiv = ArxivClient(
            rss_url=settings.arxiv_rss_url, api_url=settings.arxiv_api_url,
            listing_url=settings.arxiv_listing_url, contact=settings.contact,
            min_interval=settings.arxiv_min_interval_seconds,
        )
        stack.push_async_callback(arxiv.aclose)
        lookups = LookupQueue(arxiv)
        stack.push_async_callback(lookups.aclose)
        features = Features.from_settings(settings)
        guides = community = None
        if features.guides:
            guides = GuideService(
                storage, GuideClient(settings.llm_api_url, settings.llm_model,
                                     settings.llm_api_key, timeout=settings.llm_timeout_seconds),
                clock, chat_daily_limit=settings.guide_chat_daily_limit,
                daily_limit=settings.guide_daily_limit)
            stack.push_async_callback(guides.aclose)
        if features.trending:
            community = CommunityPicks(settings.hf_papers_url, storage, arxiv, clock)
            stack.push_async_callback(community.aclose)
        pipeline = Pipeline(settings, storage, arxiv, subscriptions, clock,
                            calendar=wiring.calendar)
        paid = None
        if settings.paid_broadcast_stars_per_day:
            paid = PaidBroadcasts(storage.paid_broadcasts, clock,
                                  settings.paid_broadcast_stars_per_day)
            stack.push_async_callback(paid.close)  # before the database closes
        sender = Sender(bot, storage, clock, wiring.pacer, window=settings.send_window,
                        on_migrated=subscriptions.chat_migrated,
                        on_topic_gone=subscriptions.topic_gone,
                        guides=features.guides, relevance=ranker.chat_scores,
                        held_since=lambda: pipeline.storing_since, paid=paid,
                        digest_messages=settings.digest_messages)
        run = run or RunState(started_at=clock.now())
        budget = CommandBudget(wiring.budget)
        papers = Papers(storage, lookups, ranker, clock, guide=features.guides,
                        digest_messages=settings.digest_messages)
        importer = LibraryImporter(storage, lookups)
        zotero = None
        if features.zotero:
            zotero = ZoteroSync(storage, ZoteroClient(settings.zotero_api_url,
                                                      contact=settings.contact),
                                Sealer(settings.secret_key), importer, clock, sender.tell)
            stack.push_async_callback(zotero.aclose)
        yield Services(
            settings=settings, clock=clock, storage=storage, subscriptions=subscriptions,
            arxiv=arxiv, lookups=lookups, importer=importer,
            ranker=ranker, pipeline=pipeline, sender=sender, pacer=wiring.pacer,
            budget=budget, progress=wiring.progress, features=features,
            run=run, overview=Overview(settings, storage, subscriptions, ranker, clock, run, paid),
            chats=ChatSettings(storage, ranker, clock, subscriptions),
            library=Library(storage, clock, on_saved=None if zotero is None else zotero.saved),
            papers=papers,
            topics=ForumTopics(storage), previews=Previews(storage, clock),
            inline=InlineSearch(storage, papers, budget, clock), guides=guides,
            community=community,
            trending=None if community is None else Trending(community, subscriptions, storage),
            zotero=zotero,
        )

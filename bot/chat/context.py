"""Typed handler context: services reached as properties instead of casts of `bot_data`."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from telegram.ext import Application, CallbackContext, ExtBot

from bot.config import Settings
from bot.core.clock import Clock
from bot.ranking.service import Ranker
from bot.services.budget import CommandBudget
from bot.storage import Storage

if TYPE_CHECKING:
    from bot.arxiv.client import ArxivClient
    from bot.arxiv.lookups import LookupQueue
    from bot.chat.progress import ProgressPolicy
    from bot.delivery.pacing import Pacer
    from bot.delivery.sender import Sender
    from bot.guides.service import GuideService
    from bot.importer.service import LibraryImporter
    from bot.query.service import SubscriptionService
    from bot.services.ingest import Pipeline
    from bot.sources.huggingface import CommunityPicks
    from bot.storage.sqlite.chats import Chat


@dataclass
class Services:
    """What handlers and jobs need; built once in `app.py`."""

    settings: Settings
    storage: Storage
    clock: Clock
    started_at: float
    # Opened in post_init (they need the event loop), hence optional until then.
    subscriptions: SubscriptionService | None = None
    arxiv: ArxivClient | None = None
    sender: Sender | None = None
    pipeline: Pipeline | None = None
    schedule_jobs: bool = True
    failed_polls: int = 0  # polls in a row with a failed source: sets the retry backoff
    pacer: Pacer | None = None
    # Jobs running right now (polls, drains, digests), for a stop that must end in time.
    work: set[asyncio.Task[None]] = field(default_factory=set)
    telegram_ok_at: float | None = None  # the last Bot API call Telegram answered (clock time)
    budget: CommandBudget = field(default_factory=CommandBudget)
    lookups: LookupQueue | None = None
    progress: ProgressPolicy | None = None  # None: the defaults; tests show progress at once
    guides: GuideService | None = None  # None when no LLM endpoint is configured
    community: CommunityPicks | None = None  # None when HF_PAPERS_URL is off
    ranker: Ranker | None = None
    importer: LibraryImporter | None = None


class BotContext(CallbackContext[ExtBot, dict, dict, dict]):
    """The context every handler receives."""

    def __init__(self, application: Application, chat_id: int | None = None,
                 user_id: int | None = None) -> None:
        super().__init__(application=application, chat_id=chat_id, user_id=user_id)

    @property
    def services(self) -> Services:
        return self.application.bot_data["services"]

    @property
    def store(self) -> Storage:
        return self.services.storage

    @property
    def settings(self) -> Settings:
        return self.services.settings

    @property
    def subscriptions(self) -> SubscriptionService:
        assert self.services.subscriptions is not None, "opened in post_init"
        return self.services.subscriptions

    @property
    def ranker(self) -> Ranker:
        assert self.services.ranker is not None, "opened in post_init"
        return self.services.ranker

    @property
    def importer(self) -> LibraryImporter:
        assert self.services.importer is not None, "opened in post_init"
        return self.services.importer

    @property
    def lookups(self) -> LookupQueue:
        assert self.services.lookups is not None, "opened in post_init"
        return self.services.lookups

    def now(self) -> float:
        return self.services.clock.now()

    @property
    def chat_record(self) -> Chat | None:
        """The chat's row as recorded at the start of this update."""
        return self.chat_data.get("record") if self.chat_data is not None else None

    @property
    def lang(self) -> str:
        record = self.chat_record
        return record.language if record is not None else "en"

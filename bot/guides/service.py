"""Guides on request: the cache first, then the budgets, then one endpoint call per key."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from enum import StrEnum

from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.models import Guide, Paper
from bot.guides.client import (
    EmptyAnswer,
    EndpointBusy,
    EndpointTimeout,
    GuideClient,
    GuideError,
    MalformedAnswer,
)
from bot.storage import Storage

log = logging.getLogger(__name__)



class Refusal(StrEnum):
    """Why no guide is written now."""

    CHAT_BUDGET = "chat-budget"
    GLOBAL_BUDGET = "global-budget"


class Failure(StrEnum):
    """How the endpoint failed, as the user is told."""

    BUSY = "busy"
    TIMEOUT = "timeout"
    MALFORMED = "malformed"
    EMPTY = "empty"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class GuideOutcome:
    """A guide, or the failure that left none (never cached)."""

    guide: Guide | None
    failure: Failure | None = None


_FAILURES: tuple[tuple[type[GuideError], Failure], ...] = (
    (EndpointBusy, Failure.BUSY),
    (EndpointTimeout, Failure.TIMEOUT),
    (MalformedAnswer, Failure.MALFORMED),
    (EmptyAnswer, Failure.EMPTY),
)


class GuideService:
    """Writes guides through `client`, caching each per (paper, version, language)."""

    def __init__(self, storage: Storage, client: GuideClient, clock: Clock, *,
                 chat_daily_limit: int, daily_limit: int) -> None:
        self._store = storage
        self._client = client
        self._clock = clock
        self.chat_daily_limit = chat_daily_limit
        self.daily_limit = daily_limit
        # Presses of the same key while its guide is being written share the one request.
        self._writing: dict[tuple[str, int, str], asyncio.Future[GuideOutcome]] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    async def cached(self, paper: Paper, language: str) -> Guide | None:
        return await self._store.guides.get(paper.arxiv_id, paper.version, language)

    def in_progress(self, paper: Paper, language: str) -> bool:
        return (paper.arxiv_id, paper.version, language) in self._writing

    async def refusal(self, chat_id: int) -> Refusal | None:
        """Whether a new request from `chat_id` is over a budget now."""
        since = self._clock.now() - DAY  # budgets count the last 24 hours
        if await self._store.guides.calls_since(since) >= self.daily_limit:
            return Refusal.GLOBAL_BUDGET
        if await self._store.guides.calls_since(since, chat_id) >= self.chat_daily_limit:
            return Refusal.CHAT_BUDGET
        return None

    async def write(self, chat_id: int, paper: Paper, language: str) -> GuideOutcome:
        """The guide from the cache, or from one request (shared with concurrent presses)."""
        key = (paper.arxiv_id, paper.version, language)
        if (cached := await self._store.guides.get(*key)) is not None:
            return GuideOutcome(cached)
        if (running := self._writing.get(key)) is not None:
            return await asyncio.shield(running)
        future: asyncio.Future[GuideOutcome] = asyncio.get_running_loop().create_future()
        self._writing[key] = future
        try:
            outcome = await self._request(chat_id, paper, language)
            future.set_result(outcome)
            return outcome
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved here, so an unawaited future logs nothing
            raise
        finally:
            del self._writing[key]

    async def _request(self, chat_id: int, paper: Paper, language: str) -> GuideOutcome:
        call_id = await self._store.guides.record_call(chat_id, self._clock.now())
        try:
            text = await self._client.write(paper, language)
        except GuideError as exc:
            failure = next((f for kind, f in _FAILURES if isinstance(exc, kind)), Failure.ERROR)
            log.warning("guide for %s (%s) failed: %s", paper.versioned_id, language, exc)
            return GuideOutcome(None, failure)
        guide = Guide(paper.arxiv_id, paper.version, language, text, self._client.model,
                      self._clock.now())
        await self._store.guides.put(guide)
        await self._store.guides.mark_call_ok(call_id)
        log.info("guide written for %s (%s)", paper.versioned_id, language)
        return GuideOutcome(guide)

    async def written_since(self, since: float) -> int:
        return await self._store.guides.written_since(since)

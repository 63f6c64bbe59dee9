"""Inline mode: `@bot 2611.11450` or `@bot graph neural` typed in any chat offers papers to
share there, from the user's library first, then from what the bot stored lately (through the
storage engine's full-text index)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from bot.arxiv.errors import ArxivError
from bot.arxiv.lookups import TooManyLookups
from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.models import ArxivId, Paper
from bot.library import search as library_search
from bot.query.text import words
from bot.services.budget import LOOKUP_COST, CommandBudget
from bot.services.papers import Papers
from bot.storage import Storage

INLINE_RESULTS = 20  # Telegram shows a short list; at most 50 are allowed
SEARCH_DAYS = 90  # besides the library: papers the bot stored in this many days
# Telegram sends a query per keystroke: an id still being typed is looked up on arXiv only when
# no newer query from the same user came within this many seconds.
TYPING_PAUSE = 0.6


@dataclass(frozen=True, slots=True)
class InlineAnswer:
    """The papers offered for one inline query, best first."""

    papers: tuple[Paper, ...]


class InlineSearch:
    """Answers inline queries from the full-text index; only an unknown id costs arXiv a
    request, through the fair look-up queue and the user's command budget."""

    def __init__(self, storage: Storage, papers: Papers, budget: CommandBudget,
                 clock: Clock, *, typing_pause: float = TYPING_PAUSE) -> None:
        self._storage = storage
        self._papers = papers
        self._budget = budget
        self._clock = clock
        self._typing_pause = typing_pause
        self._latest: dict[int, int] = {}  # user -> the number of their newest query
        self._queries = 0

    async def answer(self, user_id: int, text: str) -> InlineAnswer:
        """What to offer `user_id` for `text`: their newest saved papers for no text, the paper
        for an id or link, else the library's and then the stored papers' best matches."""
        self._queries += 1
        number = self._latest[user_id] = self._queries
        try:
            return await self._answer(user_id, text.strip(), number)
        finally:
            if self._latest.get(user_id) == number:
                del self._latest[user_id]  # kept only while a query is being answered

    async def _answer(self, user_id: int, text: str, number: int) -> InlineAnswer:
        library_chat = user_id  # a user's private chat with the bot has the user's id
        if not text:
            return InlineAnswer(tuple(await self._storage.saved.page(library_chat, 0,
                                                                     INLINE_RESULTS)))
        arxiv_id = ArxivId.parse(text)
        if arxiv_id is not None:
            paper = await self._paper(user_id, arxiv_id, number)
            return InlineAnswer(() if paper is None else (paper,))
        wanted = tuple(words(text))[:12]
        if not wanted:
            return InlineAnswer(())
        found = library_search.find(await self._storage.saved.all(library_chat), wanted)
        found = found[:INLINE_RESULTS]
        if len(found) < INLINE_RESULTS:
            since = self._clock.now() - SEARCH_DAYS * DAY
            shown = {paper.arxiv_id for paper in found}
            found += [paper for paper in await self._storage.papers.search(
                wanted, since, INLINE_RESULTS) if paper.arxiv_id not in shown]
        return InlineAnswer(tuple(found[:INLINE_RESULTS]))

    async def _paper(self, user_id: int, arxiv_id: ArxivId, number: int) -> Paper | None:
        stored = await self._papers.stored(arxiv_id.base, arxiv_id.version)
        if stored is not None:
            return stored
        await asyncio.sleep(self._typing_pause)
        if self._latest.get(user_id) != number:
            return None  # the user typed on: a newer query will ask
        if not self._budget.charge(user_id, None, LOOKUP_COST, self._clock.now()).allowed:
            return None
        try:  # as /paper looks it up: the user's line of the fair queue, then kept
            return await self._papers.kept(self._papers.look_up(user_id, arxiv_id))
        except (TooManyLookups, ArxivError):
            return None

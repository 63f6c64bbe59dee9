"""A chat's library: its saved papers page by page, saving and removing them (a group's by its
rule, `bot/library/groups.py`), and the library as BibTeX."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.core.clock import Clock
from bot.core.models import (
    Feedback,
    GroupMember,
    LibraryEntry,
    LibraryFacets,
    LibraryMatches,
    LibraryQuery,
    Paper,
)
from bot.delivery.bibtex import PART_SEPARATOR, to_bibtex
from bot.delivery.pages import PAGE_SIZE, page_count
from bot.library import groups as group_library
from bot.library.groups import IsAdmin, RemovalResult
from bot.storage import Storage

EXPORT_PART = 250  # papers written per step of an export; progress is shown between steps
# Told of each paper a chat newly saves (the Zotero link writes it to Zotero).
OnSaved = Callable[[int, str], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class SavedPage:
    """One page of a library, newest saves first."""

    entries: list[LibraryEntry]
    page: int  # 1-based, within the library's pages
    total: int  # saved papers in all


class Library:
    """Saved papers of each chat."""

    def __init__(self, storage: Storage, clock: Clock, on_saved: OnSaved | None = None) -> None:
        self._storage = storage
        self._clock = clock
        self._on_saved = on_saved

    async def page(self, chat_id: int, page: int) -> SavedPage:
        """That page of the library; a stale or forged page number gives the nearest page."""
        total = await self._storage.saved.count(chat_id)
        page = min(max(page, 1), page_count(total))
        entries = await self._storage.saved.entries(chat_id, (page - 1) * PAGE_SIZE, PAGE_SIZE)
        return SavedPage(entries, page, total)

    async def select(self, chat_id: int, query: LibraryQuery) -> LibraryMatches:
        """The papers `query` asks for, searched, filtered, sorted and paged by the storage
        engine (the words through its full-text index), and how many match in all."""
        return await self._storage.saved.select(chat_id, query)

    async def facets(self, chat_id: int) -> LibraryFacets:
        """The library's size, primary categories (most common first) and savers."""
        return await self._storage.saved.facets(chat_id)

    async def labels(self, chat_id: int) -> dict[str, Feedback]:
        """The chat's 👍 / 👎 on papers, by arXiv id."""
        return await self._storage.feedback.of_chat(chat_id)

    async def is_saved(self, chat_id: int, arxiv_id: str) -> bool:
        return await self._storage.saved.is_saved(chat_id, arxiv_id)

    async def save(self, chat_id: int, arxiv_id: str, version: int,
                   member: GroupMember | None) -> bool:
        """Save a paper (in a group, with who saved it); False if it was saved already."""
        saved = await group_library.save(self._storage, chat_id, arxiv_id, version,
                                         self._clock.now(), member)
        if saved:
            await self._saved(chat_id, arxiv_id)
        return saved

    async def _saved(self, chat_id: int, arxiv_id: str) -> None:
        if self._on_saved is not None:
            await self._on_saved(chat_id, arxiv_id)

    async def remove(self, chat_id: int, arxiv_id: str, member: GroupMember | None,
                     is_admin: IsAdmin) -> RemovalResult:
        """Remove a paper if `member` may (see `bot/library/groups.py`)."""
        return await group_library.remove(self._storage, chat_id, arxiv_id, member, is_admin)

    async def toggle(self, chat_id: int, arxiv_id: str, version: int,
                     member: GroupMember | None, is_admin: IsAdmin) -> RemovalResult | None:
        """Save the paper if it is not saved (None), else remove it as `remove` does."""
        removal = await group_library.toggle(self._storage, chat_id, arxiv_id, version,
                                             self._clock.now(), member, is_admin)
        if removal is None:
            await self._saved(chat_id, arxiv_id)
        return removal

    async def papers(self, chat_id: int) -> list[Paper]:
        """Every saved paper, as the export writes them."""
        return await self._storage.saved.all(chat_id)

    @staticmethod
    async def bibtex(papers: list[Paper], written: Callable[[int], Awaitable[None]]) -> str:
        """The papers as one BibTeX document, written in parts off the event loop (a thousand
        entries take about a second of CPU); `written(done)` is awaited after each part."""
        parts: list[str] = []
        keys: set[str] = set()
        for start in range(0, len(papers), EXPORT_PART):
            parts.append(await asyncio.to_thread(to_bibtex, papers[start:start + EXPORT_PART],
                                                 keys))
            await written(min(start + EXPORT_PART, len(papers)))
        return PART_SEPARATOR.join(parts)

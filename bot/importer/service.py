"""An import, decided and done: which papers are saved already, which are stored, which to look
up on arXiv (through the fair look-up queue, in its batches), and saving the rest.

Saved papers are the ranker's positives, so an import also seeds the chat's ranking.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from bot.arxiv.errors import ArxivError
from bot.arxiv.lookups import LookupQueue
from bot.core.models import ArxivId, GroupMember, Paper
from bot.importer.parse import ImportSource
from bot.storage import Storage

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int], Awaitable[None]]  # (looked up so far, to look up)


@dataclass(frozen=True, slots=True)
class ImportReport:
    """What an import did, for the chat's reply."""

    source: ImportSource
    added: int  # newly saved
    already_saved: int
    not_found: int  # arXiv has no paper by that ID
    unavailable: int  # not looked up: arXiv did not answer (send the file again later)

    @property
    def recognised(self) -> int:
        return len(self.source.ids)


async def _no_progress(done: int, total: int) -> None:
    return None


class LibraryImporter:
    """Saves the arXiv papers an import names into a chat's library."""

    def __init__(self, store: Storage, lookups: LookupQueue) -> None:
        self._store = store
        self._lookups = lookups

    async def run(self, chat_id: int, source: ImportSource, now: float,
                  progress: ProgressFn = _no_progress,
                  saver: GroupMember | None = None) -> ImportReport:
        """Save the papers `source` names; in a group, `saver` is the member importing."""
        bases = [arxiv_id.base for arxiv_id in source.ids]
        saved = await self._store.saved.saved_among(chat_id, bases)
        wanted = [base for base in bases if base not in saved]
        stored = await self._store.papers.get_many(wanted)
        missing = [base for base in wanted if base not in stored]
        found, unavailable = await self._look_up(chat_id, missing, progress)
        if found:
            await self._store.papers.cache_lookups(found, now)
        # The latest version known is the one saved: revisions after it are news to the chat.
        papers = [stored[base] for base in wanted if base in stored] + found
        added = await self._store.saved.save_many(
            chat_id, [(paper.arxiv_id, paper.version) for paper in papers], now, saver)
        return ImportReport(source, added=added, already_saved=len(saved),
                            not_found=len(missing) - len(found) - unavailable,
                            unavailable=unavailable)

    async def _look_up(self, chat_id: int, bases: list[str],
                       progress: ProgressFn) -> tuple[list[Paper], int]:
        """The papers arXiv has among `bases`, and how many could not be asked for. The first
        failed request ends the look-ups: the rest would fail the same way, one timeout each."""
        if not bases:
            return [], 0
        futures = self._lookups.submit_many(chat_id, [ArxivId(base) for base in bases])
        found: list[Paper] = []
        failed = False
        done = 0
        try:
            for next_done in asyncio.as_completed(futures):
                try:
                    paper = await next_done
                except ArxivError as exc:
                    log.info("import look-ups for chat %s stopped: %s", chat_id, exc)
                    failed = True
                    break
                done += 1
                if paper is not None:
                    found.append(paper)
                await progress(done, len(bases))
        finally:
            for future in futures:
                future.cancel()  # the queue drops what nobody waits for any more
            for future in futures:  # collect the cancellations and the failures not awaited
                with contextlib.suppress(asyncio.CancelledError, ArxivError):
                    await future
        return found, (len(bases) - done if failed else 0)

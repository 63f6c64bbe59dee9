"""Interactive look-ups by id, shared fairly: a queue served round-robin across chats.

Every look-up a person waits for (`/paper`, a pasted link) joins its chat's line. One worker
serves the lines in turn, taking one id per chat per round into a single `id_list` request
(arXiv answers up to `batch_size` ids in one request, still one request per gap). So one chat
asking for many papers delays another chat's one paper by one request at most. A chat may
have `max_pending` look-ups waiting; beyond that it is refused, and an id arXiv did not know is
remembered as unknown for `miss_ttl` seconds, so repeating it costs no request.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Sequence

from bot.arxiv.client import INTERACTIVE, ArxivClient
from bot.arxiv.errors import ArxivError
from bot.core.models import ArxivId, Paper

log = logging.getLogger(__name__)

MAX_PENDING_PER_CHAT = 2
BATCH_SIZE = 20
MISS_TTL = 1800.0  # a new paper's id becomes known at the next announcement, hours away
MAX_MISSES = 10_000  # the negative cache forgets its oldest entries beyond this


class TooManyLookups(Exception):
    """The chat already has `limit` look-ups waiting."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"{limit} look-ups already waiting")
        self.limit = limit


class LookupQueue:
    """Fair, batched interactive look-ups on the shared arXiv client."""

    def __init__(self, client: ArxivClient, *, max_pending: int = MAX_PENDING_PER_CHAT,
                 batch_size: int = BATCH_SIZE, miss_ttl: float = MISS_TTL,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self.max_pending = max_pending
        self._batch_size = batch_size
        self._miss_ttl = miss_ttl
        self._clock = clock
        self._lines: dict[int, deque[str]] = {}  # chat → ids it waits for, in order
        self._turns: deque[int] = deque()  # chats with a non-empty line, next to serve first
        self._waiters: dict[str, list[asyncio.Future[Paper | None]]] = {}
        self._pending: dict[int, int] = {}
        self._misses: OrderedDict[str, float] = OrderedDict()
        self._wake = asyncio.Event()
        self._worker: asyncio.Task[None] | None = None
        self.requests = 0  # id_list requests made (for /status and the benchmarks)

    def known_missing(self, arxiv_id: ArxivId) -> bool:
        """Whether arXiv said lately that it has no paper `arxiv_id`."""
        key = str(arxiv_id)
        until = self._misses.get(key)
        if until is None:
            return False
        if until <= self._clock():
            del self._misses[key]
            return False
        return True

    def waiting(self) -> int:
        """Look-ups queued or in flight, over all chats."""
        return sum(self._pending.values())

    def submit(self, chat_id: int, arxiv_id: ArxivId) -> asyncio.Future[Paper | None]:
        """Queue a look-up for `chat_id`; the future gives the paper, or None if arXiv has none
        by that id, or raises ArxivError. Raises TooManyLookups at once if the chat's line is
        full. Synchronous, so a handler can answer "queued" and let the result come later.
        """
        if not self.known_missing(arxiv_id) and self._pending.get(chat_id, 0) >= self.max_pending:
            raise TooManyLookups(self.max_pending)
        return self._enqueue(chat_id, arxiv_id)

    def submit_many(self, chat_id: int, arxiv_ids: Sequence[ArxivId]
                    ) -> list[asyncio.Future[Paper | None]]:
        """Queue an import's look-ups, one future per id, without the per-chat limit (the
        import's own cap bounds them). They still wait in the chat's line, one id per chat per
        round, so another chat's `/paper` is not held up behind them. A cancelled future's id
        is dropped from the line before it is asked for.
        """
        return [self._enqueue(chat_id, arxiv_id) for arxiv_id in arxiv_ids]

    def _enqueue(self, chat_id: int, arxiv_id: ArxivId) -> asyncio.Future[Paper | None]:
        future: asyncio.Future[Paper | None] = asyncio.get_running_loop().create_future()
        if self.known_missing(arxiv_id):
            future.set_result(None)
            return future
        key = str(arxiv_id)
        waiters = self._waiters.setdefault(key, [])
        if not waiters:  # an id already on its way answers every chat that asked
            line = self._lines.setdefault(chat_id, deque())
            if not line:
                self._turns.append(chat_id)
            line.append(key)
        waiters.append(future)
        self._pending[chat_id] = self._pending.get(chat_id, 0) + 1
        future.add_done_callback(lambda _: self._done(chat_id))
        self._start()
        self._wake.set()
        return future

    async def lookup(self, chat_id: int, arxiv_id: ArxivId) -> Paper | None:
        """`submit`, awaited."""
        return await self.submit(chat_id, arxiv_id)

    def _done(self, chat_id: int) -> None:
        self._pending[chat_id] -= 1
        if not self._pending[chat_id]:
            del self._pending[chat_id]

    async def aclose(self) -> None:
        """Stop the worker; whoever still waits is told arXiv could not be asked."""
        if self._worker is not None:
            self._worker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._worker
            self._worker = None
        self._fail(list(self._waiters), ArxivError("the bot is shutting down"))
        self._lines.clear()
        self._turns.clear()

    def _start(self) -> None:
        if self._worker is None or self._worker.done():
            self._worker = asyncio.create_task(self._serve(), name="arxiv-lookups")

    async def _serve(self) -> None:
        while True:
            await self._wake.wait()
            # Whatever arrives while the gap runs out joins this batch.
            await self._client.interactive_turn()
            batch = self._take_batch()
            if not batch:
                self._wake.clear()
                continue
            await self._ask(batch)

    def _take_batch(self) -> list[str]:
        """Up to `batch_size` ids, one per chat per round, chats in turn."""
        batch: list[str] = []
        while self._turns and len(batch) < self._batch_size:
            chat_id = self._turns.popleft()
            line = self._lines[chat_id]
            key = line.popleft()
            if self._abandoned(key):
                self._waiters.pop(key, None)
            else:
                batch.append(key)
            if line:
                self._turns.append(chat_id)
            else:
                del self._lines[chat_id]
        return batch

    async def _ask(self, batch: list[str]) -> None:
        self.requests += 1
        try:
            papers = await self._client.lookup_ids(batch, policy=INTERACTIVE)
        except ArxivError as exc:
            log.warning("arXiv look-up of %d id(s) failed: %s", len(batch), exc)
            self._fail(batch, exc)
            return
        except Exception as exc:  # never leave a person waiting on a dead worker
            log.exception("arXiv look-up of %d id(s) failed unexpectedly", len(batch))
            self._fail(batch, ArxivError(f"look-up failed: {exc}"))
            return
        found: dict[str, Paper] = {}
        for paper in papers:
            found[f"{paper.arxiv_id}v{paper.version}"] = paper
            latest = found.get(paper.arxiv_id)
            if latest is None or latest.version < paper.version:
                found[paper.arxiv_id] = paper
        for key in batch:
            paper = found.get(key)
            if paper is None:
                self._remember_missing(key)
            for future in self._waiters.pop(key, []):
                if not future.done():
                    future.set_result(paper)

    def _abandoned(self, key: str) -> bool:
        """Whether nobody waits for `key` any more (an import stopped early cancelled it)."""
        return all(future.done() for future in self._waiters.get(key, ()))

    def _remember_missing(self, key: str) -> None:
        self._misses[key] = self._clock() + self._miss_ttl
        self._misses.move_to_end(key)
        while len(self._misses) > MAX_MISSES:
            self._misses.popitem(last=False)

    def _fail(self, keys: list[str], error: ArxivError) -> None:
        for key in keys:
            for future in self._waiters.pop(key, []):
                if not future.done():
                    future.set_exception(error)

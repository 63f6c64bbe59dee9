"""The ranker as the bot uses it: labels and papers from storage, models kept there too.

Fitting, training and scoring run in a worker thread (`asyncio.to_thread`), a big corpus's
vocabulary fit in a child process besides (its memory goes with it: `_fitted_apart`); only
storage reads and writes happen on the event loop. A chat's model is retrained only when its
labels or the vocabulary changed since it was trained (both are fingerprinted), so a restart
retrains nothing that is current.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import threading
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from bot.core.memory import release_free_memory
from bot.core.models import Paper
from bot.ranking.features import FEATURES, Vocabulary, fit_vocabulary
from bot.ranking.model import (
    MIN_POSITIVES,
    ChatLabels,
    ChatModel,
    is_current,
    nearest,
    score,
    stack,
    top_terms,
    train,
)
from bot.storage import Storage
from bot.storage.interfaces import StoredModel, StoredVocabulary

if TYPE_CHECKING:
    from scipy import sparse

log = logging.getLogger(__name__)

FOR_YOU_THRESHOLD = 0.0  # the classifier's own boundary: above it, the model calls it a match
FOR_YOU_WINDOW = 86_400  # seconds: a day's papers are the candidates
FOR_YOU_CANDIDATES = 5_000  # at most this many recent papers per chat
LIKE_MIN_SIMILARITY = 0.15  # below this, the reason is the top terms, not a saved paper
CORPUS_PAPERS = 5_000  # the newest papers the vocabulary is fitted on (plus every labelled one)
REFIT_AFTER = 7 * 86_400  # seconds: a week of new papers is worth new terms and weights
REFIT_GROWTH = 2  # a store that doubled since the fit (below CORPUS_PAPERS) is fitted again
CORPUS_RELOAD = 600  # seconds: how stale the in-memory corpus and the growth check may be
# Chats whose models are loaded at once while scoring: with 1,000 the batch's weights, their
# stack and dense block made some 200 MB of a For-you round's peak (bench/rounds.py).
SCORE_BATCH_CHATS = 250
ROW_CACHE_PAPERS = 20_000  # recent papers whose tf-idf rows are kept (about 20 MB)
FIT_APART_PAPERS = 1_000  # from this many papers the vocabulary is fitted in a child process


@dataclass(frozen=True, slots=True)
class RankerStatus:
    """What /stats tells a chat: its labels and whether it has a model."""

    labels: int
    positives: int
    active: bool


@dataclass(frozen=True, slots=True)
class Suggestion:
    """A paper the chat's subscriptions missed, with why the model suggests it."""

    paper: Paper
    score: float
    like: Paper | None  # the chat's positive it is most similar to, when close enough
    terms: tuple[str, ...]  # else the terms that raised its score most


class _RowCache:
    """Papers' tf-idf rows for one vocabulary, by (arXiv id, version)."""

    def __init__(self, vocabulary: str) -> None:
        self.vocabulary = vocabulary
        self.rows: dict[tuple[str, int], int] = {}
        self.matrix: sparse.csr_matrix | None = None

    def add(self, papers: Sequence[Paper], matrix: sparse.csr_matrix) -> None:
        for paper in papers:
            self.rows[(paper.arxiv_id, paper.version)] = len(self.rows)
        from scipy import sparse  # imported when first needed: see bot/ranking/__init__.py

        self.matrix = matrix if self.matrix is None else sparse.vstack(
            [self.matrix, matrix], format="csr", dtype=np.float32)


@dataclass(frozen=True, slots=True, eq=False)
class _Corpus:
    papers: tuple[Paper, ...]
    rows: dict[str, int]
    matrix: sparse.csr_matrix
    vocabulary: str  # the fingerprint its rows were made with
    loaded_at: float


class Ranker:
    """Vocabulary, per-chat models and scores, stored and reloaded through `Storage`."""

    def __init__(self, store: Storage, clock: Callable[[], float]) -> None:
        self._store = store
        self._now = clock
        self._vocabulary: Vocabulary | None = None
        self._corpus: _Corpus | None = None
        self._lock = asyncio.Lock()  # one fit or training at a time
        self._rows: _RowCache | None = None
        self._rows_lock = threading.Lock()
        self._growth_checked_at = float("-inf")

    async def vocabulary(self) -> Vocabulary | None:
        """The stored vocabulary, refitted when missing, older than REFIT_AFTER, or fitted on
        a store that has since doubled."""
        stored = await self._store.rankings.vocabulary()
        if (stored is None or self._now() - stored.fitted_at > REFIT_AFTER
                or await self._outgrown(stored)):
            return await self.refit()
        if self._vocabulary is None or self._vocabulary.fingerprint != stored.fingerprint:
            loaded = await asyncio.to_thread(Vocabulary.load, stored.terms)
            if loaded.fingerprint != stored.fingerprint or loaded.features != FEATURES:
                return await self.refit()  # fitted with other settings: fit it with these
            self._vocabulary, self._corpus = loaded, None
        return self._vocabulary

    async def _outgrown(self, stored: StoredVocabulary) -> bool:
        """Whether the store has REFIT_GROWTH times the papers the vocabulary was fitted on.
        A vocabulary fitted on a young store (the first day's few hundred papers) misses the
        terms of every field that arrived since and weighs words by that day alone, which
        /similar and new chats' models would otherwise live with for REFIT_AFTER. Counted at
        most once per CORPUS_RELOAD, and not at all once the fit saw CORPUS_PAPERS."""
        now = self._now()
        if stored.papers >= CORPUS_PAPERS or now - self._growth_checked_at < CORPUS_RELOAD:
            return False
        self._growth_checked_at = now
        return (await self._store.rankings.stored_papers(CORPUS_PAPERS)
                >= REFIT_GROWTH * max(stored.papers, 1))

    async def refit(self) -> Vocabulary | None:
        """Fit the vocabulary on the stored corpus again (models retrain when next needed)."""
        papers = await self._store.rankings.corpus(CORPUS_PAPERS)
        self._corpus = None  # rows of the old vocabulary: dropped before the fit, not after it
        fitted = await asyncio.to_thread(
            _fitted_apart if len(papers) >= FIT_APART_PAPERS else _fitted, papers)
        if fitted is None:
            return None
        vocabulary, terms = fitted
        await self._store.rankings.put_vocabulary(StoredVocabulary(
            vocabulary.fingerprint, terms, len(papers), self._now()))
        self._vocabulary, self._corpus = vocabulary, None
        return vocabulary

    async def labels(self, chat_id: int) -> ChatLabels:
        return (await self.labels_of([chat_id]))[chat_id]

    async def labels_of(self, chat_ids: Sequence[int]) -> dict[int, ChatLabels]:
        return {chat_id: ChatLabels.of(ids.saved, ids.more, ids.less)
                for chat_id, ids in (await self._store.rankings.labels_of(chat_ids)).items()}

    async def status(self, chat_id: int) -> RankerStatus:
        labels = await self.labels(chat_id)
        return RankerStatus(labels.count, len(labels.positives),
                            await self.model(chat_id) is not None)

    async def model(self, chat_id: int) -> ChatModel | None:
        """The chat's model, trained now if its labels or the vocabulary changed; None below
        MIN_POSITIVES positives."""
        return (await self.models([chat_id])).get(chat_id)

    async def models(self, chat_ids: Sequence[int],
                     labels_of: Mapping[int, ChatLabels] | None = None) -> dict[int, ChatModel]:
        """Each chat's `model`, those with none left out (`labels_of`: the chats' labels, if
        the caller has read them). Labels and stored models are read, and the models trained
        now are stored, for all the chats at once: a round's 250 chats a statement at a time
        waited their turn behind an evening's drain five times a chat."""
        if labels_of is None:
            labels_of = await self.labels_of(chat_ids)
        stored_of = await self._store.rankings.models_of(chat_ids)
        labelled = []
        for chat_id in chat_ids:
            labels = labels_of[chat_id]
            if len(labels.positives) >= MIN_POSITIVES:
                labelled.append((chat_id, labels))
            elif chat_id in stored_of:
                await self._store.rankings.drop_model(chat_id)
        if not labelled:
            return {}
        models: dict[int, ChatModel] = {}
        async with self._lock:
            vocabulary = await self.vocabulary()
            if vocabulary is None:
                return {}
            current = [stored for chat_id, labels in labelled
                       if (stored := stored_of.get(chat_id)) is not None
                       and is_current(stored, vocabulary, labels)]
            fresh = {stored.chat_id for stored in current}
            stale = [(chat_id, labels) for chat_id, labels in labelled if chat_id not in fresh]
            if stale:
                models.update(await self._trained(stale, vocabulary))
        if current:
            # Decompressing the weights is numpy work: off the event loop, as for every
            # chat of a digest or a For-you round it would add up there.
            loaded = await asyncio.to_thread(lambda: [_loaded(stored) for stored in current])
            models.update((stored.chat_id, model)
                          for stored, model in zip(current, loaded, strict=True))
        return {chat_id: models[chat_id] for chat_id in chat_ids if chat_id in models}

    async def _trained(self, chats: Sequence[tuple[int, ChatLabels]], vocabulary: Vocabulary
                       ) -> dict[int, ChatModel]:
        """Models trained now for these chats and stored together; a chat whose labels give
        none is left out, and any old model of it dropped."""
        needed = frozenset().union(*(labels.positives | labels.negatives for _, labels in chats))
        corpus = await self._corpus_with(vocabulary, needed)
        trained = await asyncio.to_thread(lambda: [
            (chat_id, train(vocabulary, labels, corpus.rows, corpus.matrix, chat_id))
            for chat_id, labels in chats])
        models = {chat_id: model for chat_id, model in trained if model is not None}
        for chat_id, model in trained:
            if model is None:
                await self._store.rankings.drop_model(chat_id)
        now = self._now()
        await self._store.rankings.put_models([
            StoredModel(chat_id, model.vocabulary, model.labels, model.dump(), now)
            for chat_id, model in models.items()])
        return models

    async def scores(self, chat_ids: Sequence[int],
                     papers: Sequence[Paper]) -> dict[int, np.ndarray]:
        """Each chat with a model → its score for each of `papers`."""
        table: dict[int, np.ndarray] = {}
        async for batch in self._scored(chat_ids, papers):
            table.update(batch)
        return table

    async def _scored(self, chat_ids: Sequence[int], papers: Sequence[Paper]
                      ) -> AsyncIterator[dict[int, np.ndarray]]:
        """The scores of SCORE_BATCH_CHATS chats at a time: only one batch's models are loaded
        at once (dropped after it), whatever the number of chats; the papers' rows are
        computed once and shared by every batch."""
        vectors: tuple[str, sparse.csr_matrix] | None = None
        for start in range(0, len(chat_ids), SCORE_BATCH_CHATS):
            models = await self.models(chat_ids[start:start + SCORE_BATCH_CHATS])
            vocabulary = self._vocabulary
            if not models or not papers or vocabulary is None:
                continue
            if vectors is None or vectors[0] != vocabulary.fingerprint:
                vectors = vocabulary.fingerprint, await asyncio.to_thread(
                    self._rows_of, vocabulary, papers)
            chats = list(models)
            batch = [models[c] for c in chats]
            del models

            def compute(rows: sparse.csr_matrix = vectors[1],
                        batch: list[ChatModel] = batch) -> np.ndarray:
                return score(rows, *stack(batch))

            table = await asyncio.to_thread(compute)
            del batch
            yield {chat: table[:, column] for column, chat in enumerate(chats)}

    def _rows_of(self, vocabulary: Vocabulary, papers: Sequence[Paper]) -> sparse.csr_matrix:
        """The papers' tf-idf rows, from a cache of recent papers' rows for this vocabulary:
        every digest of a day orders papers of the same day, so each is transformed once."""
        with self._rows_lock:  # worker threads of two rounds may ask at once
            return self._cached_rows(vocabulary, papers)

    def _cached_rows(self, vocabulary: Vocabulary, papers: Sequence[Paper]) -> sparse.csr_matrix:
        cache = self._rows
        if cache is None or cache.vocabulary != vocabulary.fingerprint:
            cache = self._rows = _RowCache(vocabulary.fingerprint)
        missing = [p for p in dict.fromkeys(papers) if (p.arxiv_id, p.version) not in cache.rows]
        if missing:
            if len(cache.rows) + len(missing) > ROW_CACHE_PAPERS:
                cache = self._rows = _RowCache(vocabulary.fingerprint)
                missing = list(dict.fromkeys(papers))
            cache.add(missing, vocabulary.transform(missing))
        return cache.matrix[[cache.rows[(p.arxiv_id, p.version)] for p in papers]]

    async def chat_scores(self, chat_id: int, papers: Sequence[Paper]) -> list[float] | None:
        """The chat's score for each paper, or None when it has no model (for digest order)."""
        table = await self.scores([chat_id], papers)
        return None if chat_id not in table else table[chat_id].tolist()

    async def suggestions(self, chats: Sequence[tuple[int, int]],
                          now: float) -> dict[int, list[Suggestion]]:
        """For each (chat, count): up to `count` of the last day's papers its subscriptions did
        not match that its model scores above FOR_YOU_THRESHOLD, best first; chats without a
        model or with nothing above the threshold are left out. Scored a batch of chats at a
        time; only each chat's picks are kept. Each chat's candidates are ids, and each
        paper is read once for all chats: a day's 2,000 papers read for each of a thousand
        chats held two million papers in memory at once (a gigabyte in bench/evening.py)."""
        # Each chat's candidates as columns of the day's papers (4 bytes each), not as id
        # strings: 2,014 chats' lists of about 1,950 ids held 3.9 million strings at once
        # (some 300 MB in bench/rounds.py at 10,000 chats).
        column_of: dict[str, int] = {}  # arXiv id → its place among every chat's candidates
        candidates: dict[int, np.ndarray] = {}
        async for chat_id, ids in self._store.rankings.unmatched_by_chat(
                [chat_id for chat_id, _ in chats], now - FOR_YOU_WINDOW, FOR_YOU_CANDIDATES):
            candidates[chat_id] = np.fromiter(
                (column_of.setdefault(i, len(column_of)) for i in ids), np.int32, len(ids))
        wanted_ids = list(column_of)
        del column_of
        read = await self._store.papers.get_many(wanted_ids)
        stored = [n for n, i in enumerate(wanted_ids) if i in read]
        ordered = [read[wanted_ids[n]] for n in stored]
        # A candidate's column among `ordered`, or -1 when its paper is no longer stored.
        columns = np.full(len(wanted_ids), -1, dtype=np.int32)
        columns[np.array(stored, dtype=np.intp)] = np.arange(len(stored), dtype=np.int32)
        del read, wanted_ids, stored
        wanted = dict(chats)
        picks: dict[int, list[tuple[Paper, float]]] = {}
        async for table in self._scored([chat_id for chat_id, _ in chats], ordered):
            picks.update(await asyncio.to_thread(_picks, ordered, candidates, columns, table,
                                                 wanted))
        del candidates
        if not picks:
            return {}
        result = {}
        picked = list(picks)
        for start in range(0, len(picked), SCORE_BATCH_CHATS):
            part = picked[start:start + SCORE_BATCH_CHATS]
            labels_of = await self.labels_of(part)
            models = await self.models(part, labels_of)
            for chat_id in part:
                labels, model = labels_of[chat_id], models.get(chat_id)
                # The explanation's vectors come from the vocabulary the model was trained
                # on: `models` may have fitted it again meanwhile (the evening's 2,000 papers
                # doubled the store), and a model and vectors of two vocabularies broke the
                # whole round.
                vocabulary = self._vocabulary
                if vocabulary is None:
                    return {}
                if model is not None and model.vocabulary != vocabulary.fingerprint:
                    model = None
                corpus = await self._corpus_with(vocabulary, labels.positives)
                result[chat_id] = await asyncio.to_thread(
                    _explain, vocabulary, corpus, model, sorted(labels.positives),
                    picks[chat_id])
            del models
        return result

    async def similar(self, arxiv_id: str, count: int) -> list[Paper]:
        """The stored papers nearest to `arxiv_id` (tf-idf cosine), best first."""
        paper = await self._store.papers.get(arxiv_id)
        vocabulary = await self.vocabulary()
        if paper is None or vocabulary is None:
            return []
        corpus = await self._corpus_with(vocabulary, frozenset())

        def compute() -> list[tuple[int, float]]:
            own = [corpus.rows[arxiv_id]] if arxiv_id in corpus.rows else []
            return nearest(corpus.matrix, vocabulary.transform([paper]), count, own)

        return [corpus.papers[row] for row, _ in await asyncio.to_thread(compute)]

    async def _corpus_with(self, vocabulary: Vocabulary, needed: frozenset[str]) -> _Corpus:
        """The corpus as rows of `vocabulary`, reloaded if a labelled paper is not in it or it
        is older than CORPUS_RELOAD (so /similar finds the papers of the latest poll); rows of
        papers it already held are kept, only new ones are transformed."""
        corpus, now = self._corpus, self._now()
        if (corpus is None or corpus.vocabulary != vocabulary.fingerprint
                or now - corpus.loaded_at >= CORPUS_RELOAD or not needed.issubset(corpus.rows)):
            papers = tuple(await self._store.rankings.corpus(CORPUS_PAPERS))
            kept = corpus if corpus is not None and corpus.vocabulary == vocabulary.fingerprint \
                else None
            matrix = await asyncio.to_thread(_rows_released, vocabulary, papers, kept)
            corpus = _Corpus(papers, {p.arxiv_id: i for i, p in enumerate(papers)}, matrix,
                             vocabulary.fingerprint, now)
            self._corpus = corpus
        return corpus


def _rows_reusing(vocabulary: Vocabulary, papers: Sequence[Paper],
                  kept: _Corpus | None) -> sparse.csr_matrix:
    """`papers` as rows of `vocabulary`, taking the rows of `kept` for the same versions."""
    if kept is None:
        return vocabulary.transform(papers)
    old = [kept.rows.get(p.arxiv_id) for p in papers]
    old = [i if i is not None and kept.papers[i].version == p.version else None
           for i, p in zip(old, papers, strict=True)]
    new = [p for p, i in zip(papers, old, strict=True) if i is None]
    if not new:
        return kept.matrix[old]
    # The new papers' rows go below the kept ones; each paper then takes its row by index.
    from scipy import sparse

    stacked = sparse.vstack([kept.matrix, vocabulary.transform(new)], format="csr",
                            dtype=np.float32)
    new_rows = iter(range(kept.matrix.shape[0], stacked.shape[0]))
    return stacked[[i if i is not None else next(new_rows) for i in old]]


def _fitted(papers: Sequence[Paper]) -> tuple[Vocabulary, bytes] | None:
    """The vocabulary fitted on `papers` and its stored form, as a restart would load it.

    Fitting counts every word and pair of words of thousands of papers (tens of MB of small
    strings) to keep 20,000; the kept terms are strings of that count, strewn over all the
    memory it took, which they would hold for a week. Reloaded from its stored form the same
    vocabulary (same terms, weights and fingerprint) sits in fresh memory, and the fit's goes
    back to the system (`release_free_memory`)."""
    fitted = fit_vocabulary(papers)
    if fitted is None:
        return None
    terms = fitted.dump()
    del fitted
    vocabulary = Vocabulary.load(terms)
    release_free_memory()
    return vocabulary, terms


def _fitted_apart(papers: Sequence[Paper]) -> tuple[Vocabulary, bytes] | None:
    """`_fitted`, with the fit itself in a child process (spawned, as the bot has threads).

    A fit over 5,000 papers takes 40-60 MB of small strings at its peak; in the bot's process
    that memory stayed resident after it (Python frees its small-object arenas only once
    wholly empty, and the event loop's own allocations land among the fit's meanwhile): the
    90-day soak stepped up 35 MB at the first weekly refit. A child's peak goes with the child.
    Should no child start, the fit runs here."""
    try:
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            terms = pool.submit(_fit_terms, list(papers)).result()
    except (OSError, BrokenProcessPool) as exc:
        log.warning("vocabulary fit in a child process failed (%s); fitting here", exc)
        return _fitted(papers)
    if terms is None:
        return None
    vocabulary = Vocabulary.load(terms)
    release_free_memory()  # the papers pickled to the child
    return vocabulary, terms


def _fit_terms(papers: Sequence[Paper]) -> bytes | None:
    """In the child: the fitted vocabulary's stored form."""
    fitted = fit_vocabulary(papers)
    return None if fitted is None else fitted.dump()


def _rows_released(vocabulary: Vocabulary, papers: Sequence[Paper],
                   kept: _Corpus | None) -> sparse.csr_matrix:
    """`_rows_reusing`, then the transform's scratch (tens of MB for 5,000 papers) goes back
    to the system."""
    matrix = _rows_reusing(vocabulary, papers, kept)
    release_free_memory()
    return matrix


def _picks(ordered: Sequence[Paper], candidates: dict[int, np.ndarray], columns: np.ndarray,
           table: dict[int, np.ndarray], wanted: dict[int, int]
           ) -> dict[int, list[tuple[Paper, float]]]:
    """Each chat's best `wanted` candidates above FOR_YOU_THRESHOLD, in the order of its
    candidates among equal scores (a loop over every chat: in the worker thread, not on the
    event loop)."""
    picks = {}
    for chat_id, scores in table.items():
        chosen = columns[candidates[chat_id]]
        chosen = chosen[chosen >= 0]
        values = scores[chosen]
        above = chosen[values > FOR_YOU_THRESHOLD]
        scored = [(ordered[c], float(scores[c])) for c in above.tolist()]
        best = sorted(scored, key=lambda s: -s[1])[:wanted[chat_id]]
        if best:
            picks[chat_id] = best
    return picks


def _explain(vocabulary: Vocabulary, corpus: _Corpus, model: ChatModel | None,
             positives: Sequence[str], chosen: Sequence[tuple[Paper, float]]
             ) -> list[Suggestion]:
    """Each pick with its reason: the most similar positive, or the model's top terms."""
    rows = [corpus.rows[i] for i in positives if i in corpus.rows]
    library = corpus.matrix[rows]
    terms = vocabulary.terms()
    vectors = vocabulary.transform([paper for paper, _ in chosen])
    suggestions = []
    for index, (paper, value) in enumerate(chosen):
        vector = vectors[index]
        best = nearest(library, vector, 1) if rows else []
        if best and best[0][1] >= LIKE_MIN_SIMILARITY:
            like = corpus.papers[rows[best[0][0]]]
            suggestions.append(Suggestion(paper, value, like, ()))
        else:
            found = tuple(top_terms(model, vector, terms)) if model is not None else ()
            suggestions.append(Suggestion(paper, value, None, found))
    return suggestions


def _loaded(stored: StoredModel) -> ChatModel:
    return ChatModel.load(stored.weights, stored.vocabulary, stored.labels)

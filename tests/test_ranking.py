"""The ranker: tf-idf over real arXiv records, per-chat models, one product for every chat.

The corpus is the 100-record arXiv API sample in tests/fixtures (see its README).
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import tracemalloc
from collections import Counter
from collections.abc import AsyncIterator, Awaitable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import pytest

from bot.arxiv.feeds import parse_api
from bot.core.models import Feedback, Paper
from bot.ranking.features import FEATURES, Vocabulary, author_token, fit_vocabulary
from bot.ranking.model import (
    MIN_POSITIVES,
    TRAINING,
    ChatLabels,
    ChatModel,
    nearest,
    score,
    stack,
    top_terms,
    train,
)
from bot.ranking.service import CORPUS_RELOAD, Ranker
from bot.storage import Storage, open_storage
from bot.storage.interfaces import StoredVocabulary
from tests.conftest import make_paper

if TYPE_CHECKING:
    # scipy and scikit-learn are imported by the tests that use them, as the bot imports them
    # where first needed: at the module's top every worker paid ~1.5 CPU-s for them while
    # collecting, whether or not it ran a test that ranks.
    from scipy import sparse

FIXTURES = Path(__file__).parent / "fixtures"
CHAT = 42
START = 1_800_000_000.0

T = TypeVar("T")


async def peak_of(work: Awaitable[T]) -> tuple[int, T]:
    """The traced memory's peak above its start while `work` runs, and its result."""
    # Log records kept by pytest's capture (aiosqlite's debug lines, when an earlier test left
    # it at DEBUG) grow with the work too; they are not the work's.
    logging.disable(logging.DEBUG)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        result = await work
        return tracemalloc.get_traced_memory()[1] - base, result
    finally:
        tracemalloc.stop()
        logging.disable(logging.NOTSET)


@pytest.fixture(scope="module")
def papers() -> list[Paper]:
    body = (FIXTURES / "api-search-all-testing-m100.atom.xml").read_bytes()
    return list(parse_api(body).papers)


@pytest.fixture
async def labelled_store(papers: list[Paper], database_url: str) -> AsyncIterator[Storage]:
    """A database holding the corpus, where chat CHAT saved just enough papers for a model
    (on each engine in turn)."""
    store = await open_storage(database_url)
    try:
        await store.papers.upsert_many(papers, START)
        await store.chats.record(CHAT, "private", "Ada", "en", START)
        for paper in papers[:MIN_POSITIVES]:
            await store.saved.save(CHAT, paper.arxiv_id, paper.version, START)
        yield store
    finally:
        await store.close()


def _setup(papers: list[Paper]) -> tuple[Vocabulary, dict[str, int], sparse.csr_matrix]:
    vocabulary = fit_vocabulary(papers)
    assert vocabulary is not None
    return vocabulary, {p.arxiv_id: i for i, p in enumerate(papers)}, vocabulary.transform(papers)


def test_a_chat_needs_the_minimum_of_positives_for_a_model(papers: list[Paper]) -> None:
    vocabulary, rows, matrix = _setup(papers)
    ids = [p.arxiv_id for p in papers]
    assert train(vocabulary, ChatLabels.of(ids[:MIN_POSITIVES - 1], [], []), rows, matrix) is None
    # 👎 wins over a save: a saved paper marked 👎 is no positive.
    labels = ChatLabels.of(ids[:MIN_POSITIVES], [], [ids[0]])
    assert train(vocabulary, labels, rows, matrix) is None
    assert train(vocabulary, ChatLabels.of(ids[:MIN_POSITIVES], [], []), rows, matrix)


def test_a_group_gets_a_model_too(papers: list[Paper]) -> None:
    # A group's chat id is negative; it seeds the choice of background papers.
    vocabulary, rows, matrix = _setup(papers)
    labels = ChatLabels.of([p.arxiv_id for p in papers[:MIN_POSITIVES]], [], [])
    assert train(vocabulary, labels, rows, matrix, -1001500000001) is not None


def test_the_model_ranks_the_chats_field_first_on_real_records(papers: list[Paper]) -> None:
    vocabulary, rows, matrix = _setup(papers)
    field = Counter(p.categories[0] for p in papers).most_common(1)[0][0]
    in_field = [p.arxiv_id for p in papers if p.categories[0] == field]
    library = in_field[:10]
    model = train(vocabulary, ChatLabels.of(library, [], []), rows, matrix)
    assert model is not None
    weights, intercepts = stack([model])
    scores = score(matrix, weights, intercepts)[:, 0]
    rest = [i for i, p in enumerate(papers) if p.arxiv_id not in library]
    truth = [papers[i].categories[0] == field for i in rest]
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(truth, scores[rest]) > 0.7


def test_one_product_scores_every_chat_as_its_own_dot_product_would(
        papers: list[Paper]) -> None:
    vocabulary, rows, matrix = _setup(papers)
    ids = [p.arxiv_id for p in papers]
    models = [train(vocabulary, ChatLabels.of(ids[k:k + 6], [], ids[k + 6:k + 8]), rows, matrix)
              for k in (0, 20, 40)]
    assert all(models)
    weights, intercepts = stack(models)
    table = score(matrix, weights, intercepts)
    for column, model in enumerate(models):
        one = matrix @ model.weights.T.toarray().ravel() + model.intercept
        assert np.allclose(table[:, column], one, atol=1e-4)
    # A stored model scores the same after a round trip through bytes.
    again = ChatModel.load(models[0].dump(), models[0].vocabulary, models[0].labels)
    assert np.allclose(score(matrix, *stack([again]))[:, 0], table[:, 0], atol=1e-6)
    # The reason names terms that raised the score.
    best = int(np.argmax(table[:, 0]))
    assert top_terms(models[0], matrix[best], vocabulary.terms())


def test_nearest_papers_share_words_and_exclude_the_paper_itself(papers: list[Paper]) -> None:
    _, _, matrix = _setup(papers)
    found = nearest(matrix, matrix[3], 5, exclude=[3])
    assert found and 3 not in [row for row, _ in found]
    assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)


def test_a_vocabulary_reloads_with_the_same_rows_and_fingerprint(papers: list[Paper]) -> None:
    vocabulary, _, matrix = _setup(papers)
    again = Vocabulary.load(vocabulary.dump())
    assert again.fingerprint == vocabulary.fingerprint
    assert abs(again.transform(papers) - matrix).max() < 1e-6


def test_author_tokens_are_surname_and_initial() -> None:
    assert author_token("Eiko Yoneki") == "au_yoneki_e"
    assert author_token("Dirk Wübben") == author_token("D. Wübben")
    assert author_token("   ") == ""


async def test_models_are_kept_and_retrained_only_when_labels_change(
        papers: list[Paper], labelled_store: Storage) -> None:
    now = [START]
    store, chat = labelled_store, CHAT
    ranker = Ranker(store, lambda: now[0])
    assert (await ranker.status(chat)).active
    trained = (await store.rankings.models_of([chat]))[chat].trained_at

    now[0] += 60
    restarted = Ranker(store, lambda: now[0])  # a restart: nothing current is retrained
    assert await restarted.model(chat) is not None
    assert (await store.rankings.models_of([chat]))[chat].trained_at == trained

    await store.feedback.set(chat, papers[50].arxiv_id, Feedback.LESS, now[0])
    assert await restarted.model(chat) is not None
    assert (await store.rankings.models_of([chat]))[chat].trained_at == now[0], "labels changed"
    status = await restarted.status(chat)
    assert (status.labels, status.positives, status.active) == (MIN_POSITIVES + 1,
                                                               MIN_POSITIVES, True)

    await store.saved.remove(chat, papers[0].arxiv_id)
    assert not (await restarted.status(chat)).active, "below the minimum: no model"
    assert chat not in await store.rankings.models_of([chat])

    similar = await restarted.similar(papers[3].arxiv_id, 3)
    assert similar and papers[3].arxiv_id not in [p.arxiv_id for p in similar]


async def test_similar_sees_later_polls_and_a_vocabulary_fitted_again_as_the_store_grows(
        papers: list[Paper], database_url: str) -> None:
    """A bot asked /similar on its first day, when it held a fifth of what it holds now, lists
    neighbours among the papers of every later poll, by words fitted on all of them (it kept
    the first day's corpus and vocabulary for a week: a bench of the real 2024-11-28 feed fell
    from 64 % to 54 % same-archive neighbours, below plain tf-idf's 57 %)."""
    first, later = papers[:20], papers[20:]
    now = [START]
    store = await open_storage(database_url)
    try:
        await store.papers.upsert_many(first, now[0])
        ranker = Ranker(store, lambda: now[0])
        early = await ranker.similar(first[0].arxiv_id, 5)
        assert early and {p.arxiv_id for p in early} <= {p.arxiv_id for p in first}
        assert (await store.rankings.vocabulary()).papers == len(first)

        now[0] += 86_400
        await store.papers.upsert_many(later, now[0])
        now[0] += CORPUS_RELOAD
        probe = later[30]
        listed = await ranker.similar(probe.arxiv_id, 5)
        assert (await store.rankings.vocabulary()).papers == len(papers), "fitted again"
        later_ids = {p.arxiv_id for p in later}
        assert listed and probe.arxiv_id not in {p.arxiv_id for p in listed}
        assert sum(p.arxiv_id in later_ids for p in listed) >= 3, "the later polls' papers"
        fresh = fit_vocabulary(papers)
        assert fresh is not None
        rows = {p.arxiv_id: i for i, p in enumerate(papers)}
        expected = nearest(fresh.transform(papers), fresh.transform([probe]), 5,
                           [rows[probe.arxiv_id]])
        assert [p.arxiv_id for p in listed] == [papers[i].arxiv_id for i, _ in expected], \
            "as a bot that had every paper from the start"
    finally:
        await store.close()


async def test_a_reloaded_corpus_keeps_its_rows_and_adds_the_new_papers_rows(
        papers: list[Paper], database_url: str) -> None:
    """Below doubling the vocabulary stays; the corpus reloaded after CORPUS_RELOAD reuses the
    rows it had and transforms only the new papers, with the neighbours a full transform
    gives."""
    now = [START]
    store = await open_storage(database_url)
    try:
        await store.papers.upsert_many(papers[:60], now[0])
        ranker = Ranker(store, lambda: now[0])
        assert await ranker.similar(papers[0].arxiv_id, 5)
        now[0] += 86_400
        await store.papers.upsert_many(papers[60:], now[0])
        now[0] += CORPUS_RELOAD
        probe = papers[80]
        listed = await ranker.similar(probe.arxiv_id, 5)
        stored = await store.rankings.vocabulary()
        assert stored.papers == 60, "not fitted again below doubling"
        vocabulary = Vocabulary.load(stored.terms)
        rows = {p.arxiv_id: i for i, p in enumerate(papers)}
        expected = nearest(vocabulary.transform(papers), vocabulary.transform([probe]), 5,
                           [rows[probe.arxiv_id]])
        assert [p.arxiv_id for p in listed] == [papers[i].arxiv_id for i, _ in expected]
        assert any(rows[p.arxiv_id] >= 60 for p in listed), "the new papers are in it"
    finally:
        await store.close()


async def ranker_with_models(store: Storage, papers: list[Paper], chats: list[int]) -> Ranker:
    """A ranker whose chats each saved MIN_POSITIVES of `papers` and have their model trained,
    as before a For-you round."""
    for chat in chats:
        await store.chats.record(chat, "private", "Ada", "en", START)
        for paper in papers[chat:chat + MIN_POSITIVES]:
            await store.saved.save(chat, paper.arxiv_id, paper.version, START)
    ranker = Ranker(store, lambda: START + 60)
    for chat in chats:
        assert await ranker.model(chat) is not None
    return ranker


async def test_a_rounds_models_are_read_trained_and_stored_in_a_few_statements_not_per_chat(
        papers: list[Paper], tmp_path: Path) -> None:
    """At 100,000 chats the For-you round's 20,000 chats waited behind the evening's drain for
    every statement of their own: their labels, their stored model, the one trained now. A
    batch of chats now costs a few statements, trained or loaded, whatever its size; each chat
    gets the model it would get alone."""
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await store.papers.upsert_many(papers, START)
        chats = list(range(1, 31))
        for chat in chats:
            await store.chats.record(chat, "private", "Ada", "en", START)
            for paper in papers[chat:chat + MIN_POSITIVES]:
                await store.saved.save(chat, paper.arxiv_id, paper.version, START)
        ranker = Ranker(store, lambda: START + 60)
        await ranker.vocabulary()
        statements = []
        for method in ("execute", "fetchall", "fetchone", "transaction"):
            original = getattr(store.db, method)

            def counted(*args, _original=original, _method=method, **kwargs):
                statements.append(_method)
                return _original(*args, **kwargs)
            setattr(store.db, method, counted)

        trained = await ranker.models(chats)
        assert sorted(trained) == chats
        assert len(statements) <= 8, statements
        statements.clear()
        loaded = await ranker.models(chats)
        assert len(statements) <= 4, statements
        for chat in (1, 30):
            alone = Ranker(store, lambda: START + 60)
            model = await alone.model(chat)
            assert model is not None and model.dump() == loaded[chat].dump() == trained[chat].dump()
    finally:
        await store.close()


async def test_a_for_you_round_reads_the_days_papers_once_not_once_per_chat(
        papers: list[Paper], tmp_path: Path) -> None:
    """Every chat's candidates are the same day's papers: a round keeps one copy of each, so
    its memory grows with the chats by far less than a copy of the day per chat (each chat's
    copy made a round for a thousand chats peak at a gigabyte in bench/evening.py)."""
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await store.papers.upsert_many(papers, START)
        chats = list(range(1, 41))
        ranker = await ranker_with_models(store, papers, chats)

        day, read = await peak_of(store.papers.get_many([p.arxiv_id for p in papers]))
        assert len(read) == len(papers)
        few, picked = await peak_of(ranker.suggestions([(c, 5) for c in chats[:4]], START + 60))
        many, picked_many = await peak_of(ranker.suggestions([(c, 5) for c in chats],
                                                             START + 60))
        assert len(picked) == 4 and len(picked_many) == len(chats)
        per_chat = (many - few) / (len(chats) - 4)
        assert per_chat < day / 2, (per_chat, day)
    finally:
        await store.close()


async def test_a_for_you_round_builds_the_vocabularys_term_list_once_not_once_per_chat(
        papers: list[Paper], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each pick explained by its model's top terms needs the vocabulary's term list;
    scikit-learn builds it anew on every call (about 20 ms), and a round asked once per chat:
    48 s of the evening's CPU at 2,000 For-you chats, taken from the sender beside it."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await store.papers.upsert_many(papers, START)
        chats = list(range(1, 11))
        ranker = await ranker_with_models(store, papers, chats)
        built = []
        names = TfidfVectorizer.get_feature_names_out

        def counted(self, input_features=None):
            built.append(1)
            return names(self, input_features)

        monkeypatch.setattr(TfidfVectorizer, "get_feature_names_out", counted)
        # Each pick explained by its model's terms, not by a saved paper it resembles.
        monkeypatch.setattr("bot.ranking.service.LIKE_MIN_SIMILARITY", 1.01)
        picked = await ranker.suggestions([(c, 5) for c in chats], START + 60)

        assert sorted(picked) == chats
        assert all(s.terms for suggestions in picked.values() for s in suggestions)
        assert len(built) <= 1, f"the term list built {len(built)} times for {len(chats)} chats"
    finally:
        await store.close()


async def test_a_vocabulary_fitted_again_during_a_for_you_round_leaves_the_round_whole(
        papers: list[Paper], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The evening's papers doubled the store while For you was explaining its picks: the
    next chat's model was trained on a vocabulary fitted again, while the picks' vectors
    came from the one before ("inconsistent shapes (1, 17661) and (1, 20000)"), and no chat
    got its For you that day."""
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await store.papers.upsert_many(papers[:40], START)
        chats = [1, 2, 3]
        ranker = await ranker_with_models(store, papers, chats)
        before = await store.rankings.vocabulary()
        trained, scored, scoring = ranker.models, ranker._scored, [True]

        async def scored_then_done(*args):
            async for table in scored(*args):
                yield table
            scoring.clear()

        async def models_then_the_store_grew(*args):
            # Between the scoring and the explanations (a round of 10,000 chats takes
            # minutes): the explanations' models are loaded, then the store outgrows the
            # vocabulary, which is fitted again (by a /similar or a digest meanwhile).
            models = await trained(*args)
            current = await store.rankings.vocabulary()
            if not scoring and current.fingerprint == before.fingerprint:
                await store.papers.upsert_many(papers[40:], START + 30)
                await ranker.refit()
            return models

        ranker._scored = scored_then_done  # type: ignore[method-assign]
        ranker.models = models_then_the_store_grew  # type: ignore[method-assign]
        # Each pick explained by its model's terms, not by a saved paper it resembles.
        monkeypatch.setattr("bot.ranking.service.LIKE_MIN_SIMILARITY", 1.01)
        picked = await ranker.suggestions([(c, 5) for c in chats], START + 60)

        assert (await store.rankings.vocabulary()).fingerprint != before.fingerprint
        assert sorted(picked) == chats and all(picked.values())
    finally:
        await store.close()


def test_the_settings_are_stored_with_the_vocabulary_and_change_its_fingerprint(
        papers: list[Paper]) -> None:
    plain = fit_vocabulary(papers, replace(FEATURES, authors=False))
    assert plain is not None
    assert not any(str(term).startswith("au_") for term in plain.terms()), "no author tokens"
    again = Vocabulary.load(plain.dump())
    assert again.features == plain.features and again.fingerprint == plain.fingerprint
    assert abs(again.transform(papers) - plain.transform(papers)).max() < 1e-6
    with_authors = fit_vocabulary(papers)
    assert with_authors is not None and with_authors.fingerprint != plain.fingerprint
    # A vocabulary stored before its settings were kept loads under a fingerprint of its own,
    # so the ranker sees it is not the one it would fit now.
    old = json.loads(with_authors.dump())
    del old["features"]
    assert Vocabulary.load(json.dumps(old).encode()).fingerprint != with_authors.fingerprint


async def test_a_vocabulary_fitted_with_other_settings_is_refitted_and_models_retrained(
        papers: list[Paper], labelled_store: Storage) -> None:
    now = [START]
    store, chat = labelled_store, CHAT
    other = fit_vocabulary(papers, replace(FEATURES, ngrams=1, authors=False))
    assert other is not None
    await store.rankings.put_vocabulary(
        StoredVocabulary(other.fingerprint, other.dump(), len(papers), now[0]))

    ranker = Ranker(store, lambda: now[0])
    model = await ranker.model(chat)
    assert model is not None
    stored = await store.rankings.vocabulary()
    assert stored is not None and stored.fingerprint != other.fingerprint, "refitted"
    assert Vocabulary.load(stored.terms).features == FEATURES
    assert model.vocabulary == stored.fingerprint


def test_training_settings_reach_the_classifier(papers: list[Paper]) -> None:
    vocabulary, rows, matrix = _setup(papers)
    labels = ChatLabels.of([p.arxiv_id for p in papers[:10]], [], [])
    loose = train(vocabulary, labels, rows, matrix, training=replace(TRAINING, c=10.0))
    tight = train(vocabulary, labels, rows, matrix, training=replace(TRAINING, c=0.001))
    assert loose is not None and tight is not None
    # Stronger regularisation: smaller weights.
    assert abs(tight.weights).sum() < abs(loose.weights).sum()


def test_papers_of_the_chats_field_it_has_not_saved_clear_the_boundary(
        papers: list[Paper]) -> None:
    # For you sends what scores above 0. Trained on 10 saved papers, the model must put some
    # of the field's other papers above it, and few papers of other fields.
    vocabulary, rows, matrix = _setup(papers)
    field = Counter(p.categories[0] for p in papers).most_common(1)[0][0]
    library = [p.arxiv_id for p in papers if p.categories[0] == field][:10]
    model = train(vocabulary, ChatLabels.of(library, [], []), rows, matrix)
    assert model is not None
    scores = score(matrix, *stack([model]))[:, 0]
    above = [p for i, p in enumerate(papers) if scores[i] > 0 and p.arxiv_id not in library]
    assert len(above) >= 3
    assert sum(p.categories[0] == field for p in above) / len(above) >= 0.75


def test_a_model_stored_compressed_before_the_raw_format_still_loads(papers: list[Paper]) -> None:
    import io

    vocabulary, rows, matrix = _setup(papers)
    ids = [p.arxiv_id for p in papers]
    model = train(vocabulary, ChatLabels.of(ids[:6], [], []), rows, matrix)
    assert model is not None
    buffer = io.BytesIO()  # how dump() wrote a model before
    np.savez_compressed(buffer, data=model.weights.data, indices=model.weights.indices,
                        size=np.array([model.weights.shape[1]]),
                        intercept=np.array([model.intercept]))
    for data in (buffer.getvalue(), model.dump()):
        again = ChatModel.load(data, model.vocabulary, model.labels)
        assert again.intercept == pytest.approx(model.intercept)
        assert np.allclose(score(matrix, *stack([again])), score(matrix, *stack([model])))


def test_chats_scored_in_blocks_score_as_in_one(papers: list[Paper],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.ranking import model as ranking_model

    vocabulary, rows, matrix = _setup(papers)
    ids = [p.arxiv_id for p in papers]
    models = [train(vocabulary, ChatLabels.of(ids[k:k + 6], [], []), rows, matrix)
              for k in (0, 20, 40, 60, 80)]
    whole = score(matrix, *stack(models))
    monkeypatch.setattr(ranking_model, "SCORE_BLOCK_CHATS", 2)
    assert np.allclose(score(matrix, *stack(models)), whole, atol=1e-6)


async def test_chats_are_scored_a_batch_at_a_time_with_the_same_scores(
        papers: list[Paper], labelled_store: Storage, monkeypatch: pytest.MonkeyPatch) -> None:
    from bot.ranking import service as ranking_service

    store = labelled_store
    for chat_id, first in ((43, 20), (44, 40)):
        await store.chats.record(chat_id, "private", "Ben", "en", START)
        for paper in papers[first:first + MIN_POSITIVES]:
            await store.saved.save(chat_id, paper.arxiv_id, paper.version, START)
    chats = [CHAT, 43, 45, 44]  # 45 has no model
    ranker = Ranker(store, lambda: START)
    alone = {chat: await ranker.chat_scores(chat, papers[:30]) for chat in chats}
    monkeypatch.setattr(ranking_service, "SCORE_BATCH_CHATS", 1)
    batched = await Ranker(store, lambda: START).scores(chats, papers[:30])
    assert set(batched) == {CHAT, 43, 44} and alone[45] is None
    for chat in batched:
        assert np.allclose(batched[chat], alone[chat], atol=1e-5)
    # The rows of papers seen before come from the cache, in the order asked.
    again = await ranker.chat_scores(CHAT, papers[29::-1])
    assert np.allclose(again, alone[CHAT][::-1], atol=1e-5)


async def test_a_for_you_round_keeps_each_chats_candidates_as_columns_not_id_strings(
        papers: list[Paper], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A chat's candidates are the day's papers its subscriptions missed, nearly all of them:
    kept as lists of id strings, 2,014 chats' candidates of a 2,000-paper day were 3.9 million
    strings held through the whole round (bench/rounds.py). As columns of the day's papers
    they cost 4 bytes each, and each chat's picks are as before. (Small batches of models here,
    so that what grows with the chats is what the round keeps for every chat, not a batch.)"""
    from bot.ranking import service as ranking_service

    monkeypatch.setattr(ranking_service, "SCORE_BATCH_CHATS", 10)
    day = [make_paper(1_000 + n, title=f"{papers[n % len(papers)].title} {n}")
           for n in range(1_000)]
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        await store.papers.upsert_many(papers, START - 2 * 86_400)
        await store.papers.upsert_many(day, START)
        chats = list(range(1, 121))
        for chat in chats:
            await store.chats.record(chat, "private", "Ada", "en", START)
            first = chat % (len(papers) - MIN_POSITIVES)
            for paper in papers[first:first + MIN_POSITIVES]:
                await store.saved.save(chat, paper.arxiv_id, paper.version, START)
        ranker = Ranker(store, lambda: START + 60)
        for chat in chats:
            assert await ranker.model(chat) is not None  # trained before the round

        few, picked = await peak_of(ranker.suggestions([(c, 5) for c in chats[:20]], START + 60))
        many, picked_many = await peak_of(ranker.suggestions([(c, 5) for c in chats],
                                                             START + 60))
        assert {c: [(s.paper.arxiv_id, s.score) for s in picks]
                for c, picks in picked.items()} == {
            c: [(s.paper.arxiv_id, s.score) for s in picks]
            for c, picks in picked_many.items() if c in picked}, "the same picks per chat"
        per_chat = (many - few) / (len(chats) - 20)
        # 1,000 candidate ids a chat were some 70 KB of strings and list; as columns 4 KB.
        assert per_chat < 30_000, f"{per_chat:,.0f} bytes more per chat at the round's peak"
    finally:
        await store.close()


@pytest.mark.parametrize("package", ["scipy", "sklearn"])
def test_a_missing_scipy_or_scikit_learn_stops_the_import_of_the_ranker_naming_it(
        package: str) -> None:
    """They are imported only when a chat is first ranked, so their absence is checked when
    the ranker is imported (at start-up), not found by a user's first /similar."""
    hidden = f"import sys; sys.modules[{package!r}] = None; import bot.ranking.service"
    result = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1], timeout=60)
    assert result.returncode == 1
    assert f"ImportError: the ranker needs {package}, which is not installed" in result.stderr

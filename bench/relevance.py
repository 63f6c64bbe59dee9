"""How well the ranker finds what a researcher likes, and what it costs.

Simulated researchers have a hidden interest; their library is k papers of it; the ranker
(bot.ranking: tf-idf + a per-chat LinearSVC) orders every other paper. AUC and precision@10 are
printed beside two baselines: random order, and "same primary category as most of the library".
Every real corpus is copied into the repository with its provenance (tests/fixtures/README.md,
bench/data/README.md).

1. The API sample (kept to compare with earlier figures): the 100 records arXiv's API returned
   for the query "testing" (tests/fixtures). They all answer one query, so they share their
   words; the interest is cs.SE, 64 of the 100, and the category baseline is perfect by
   construction.
2. An announcement day's cs papers: the 583 papers with a cs primary category in arXiv's
   combined RSS feed of 2024-11-28 (bench/data), the corpus a bot following cs (the default
   ARXIV_ARCHIVES) stores. An interest is a cs primary category with at least 30 papers that
   day (cs.CV, cs.LG, cs.CL, cs.RO); and, harder for the category baseline, "listed in" one of
   them (primary or cross-list).
3. The whole day: its 1,504 papers of every archive; an interest is one of the 10 primary
   categories with at least 30 papers, within the mixed day (easier: archives differ in words).
4. A real researcher's tags (the tuning corpus): 314 arXiv papers one researcher bookmarked in
   Semanlink and tagged by topic (bench/data). An interest is a tag held by at least 10 of them;
   no categories, so no category baseline. The settings are chosen here (`--tune`: one change
   at a time, compared on the same libraries, with a rule fixed beforehand), never on the
   corpora whose figures are reported against the aim.
5. Synthetic topical: papers written from bench/vocabulary.txt (words of real arXiv titles and
   abstracts); an interest is a topic, a set of 40 words; categories are drawn independently
   of topics, as a topic (say "graph pooling") spans cs.LG, cs.SI and stat.ML.
6. Cost: training one chat, and scoring 2,000 papers for 10,000 chats with models (one sparse
   product), in CPU seconds; peak memory (max RSS) of the whole run.
7. A day's ranking cost at 100,000 chats (`--day-chats`), in a process of its own: For you
   scoring the day's papers for every chat a batch of chats at a time, and every digest
   ordered, with each model loaded from its stored bytes; CPU seconds and peak RSS.

Aims (issue 14): real-record AUC ≥ 0.85 with 10 positives; synthetic precision@10 ≥ 2× the
category baseline; train one + score 2,000 × 10,000 ≤ 10 s CPU; (issue 29) a day's For you
and digest ordering for 100,000 chats ≤ 120 s CPU and ≤ 1 GB peak. Figures are noisier when the
machine is loaded; the load average is printed.

    .venv/bin/python bench/relevance.py [--chats 10000] [--papers 2000] [--repeats 20] [--tune]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import subprocess
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.vocabulary import load_vocabulary
from bot.arxiv.feeds import parse_api, parse_rss
from bot.core.models import Paper
from bot.ranking.features import FEATURES, TextFeatures, fit_vocabulary
from bot.ranking.model import TRAINING, ChatLabels, ChatModel, Training, score, stack, train
from bot.ranking.service import SCORE_BATCH_CHATS

ROOT = Path(__file__).resolve().parent.parent
DATA = Path(__file__).resolve().parent / "data"
SAMPLE = ROOT / "tests" / "fixtures" / "api-search-all-testing-m100.atom.xml"
DAY = DATA / "rss-2024-11-28-all-archives-1504-items.xml.gz"
SEMANLINK = DATA / "semanlink-arxiv.json.gz"
LIBRARY_SIZES = (5, 10, 20)
DAY_MIN_PAPERS = 30  # a category is an interest of the day with at least this many papers
TAG_MIN_PAPERS = 10  # a Semanlink tag is an interest with at least this many papers
CATEGORIES = ("cs.LG", "cs.CL", "cs.CV", "cs.AI", "stat.ML", "cs.SI", "cs.IR", "cs.RO")


@dataclass(frozen=True, slots=True)
class Settings:
    """One way to build the ranker: how papers become features and how a chat's model trains."""

    name: str
    features: TextFeatures = FEATURES
    training: Training = TRAINING


@dataclass(frozen=True, slots=True)
class Interest:
    """A simulated researcher's hidden interest: which papers of the corpus they would like."""

    name: str
    liked: np.ndarray  # bool per paper


# method → (mean AUC, mean precision@10); "boundary" → (share of the other papers the model
# scores above 0, the share of those in the interest)
Scores = dict[str, tuple[float, float]]


def precision_at(scores: np.ndarray, truth: np.ndarray, k: int = 10) -> float:
    top = np.argsort(-scores, kind="stable")[:k]
    return float(truth[top].mean())


def evaluate(papers: list[Paper], interests: list[Interest], k: int, repeats: int,
             seed: int, settings: Settings, baselines: bool = True,
             spread: bool = False) -> Scores:
    """Mean (AUC, precision@10) of the ranker (and the baselines) over every interest and
    `repeats` libraries of `k` papers each. The same seed draws the same libraries for every
    setting, so settings are compared on the same researchers."""
    vocabulary = fit_vocabulary(papers, settings.features)
    assert vocabulary is not None
    matrix = vocabulary.transform(papers)
    rows = {p.arxiv_id: i for i, p in enumerate(papers)}
    rng = random.Random(seed)
    results: dict[str, list[tuple[float, float]]] = {"ranker": [], "boundary": []}
    if baselines:
        results |= {"random": [], "category": []}
    for interest in interests:
        liked = np.flatnonzero(interest.liked).tolist()
        for repeat in range(repeats):
            library = rng.sample(liked, k)
            taken = set(library)
            rest = np.array([i for i in range(len(papers)) if i not in taken])
            truth = interest.liked[rest]
            labels = ChatLabels.of([papers[i].arxiv_id for i in library], [], [])
            model = train(vocabulary, labels, rows, matrix, seed=repeat,
                          training=settings.training)
            assert model is not None
            ranked = score(matrix[rest], *stack([model]))[:, 0]
            results["ranker"].append((roc_auc_score(truth, ranked), precision_at(ranked, truth)))
            # What For you sends from: the papers above the boundary, and how many it likes.
            above = ranked > 0
            results["boundary"].append((float(above.mean()),
                                        float(truth[above].mean()) if above.any() else np.nan))
            if not baselines:
                continue
            common = Counter(papers[i].categories[0] for i in library).most_common(1)[0][0]
            # Ties (every paper of that category) are broken at random, as a list shows them.
            noise = np.array([rng.random() for _ in rest]) * 1e-3
            by_category = np.array([papers[i].categories[0] == common for i in rest]) + noise
            randomly = np.array([rng.random() for _ in rest])
            for name, scores in (("random", randomly), ("category", by_category)):
                results[name].append((roc_auc_score(truth, scores),
                                      precision_at(scores, truth)))
    with warnings.catch_warnings():  # no library with a paper above the boundary: NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        means = {name: (float(np.nanmean([a for a, _ in r])),
                        float(np.nanmean([p for _, p in r]))) for name, r in results.items()}
    if spread:  # the standard error of the ranker's mean AUC and precision@10
        ranker = np.array(results["ranker"])
        errors = ranker.std(axis=0, ddof=1) / np.sqrt(len(ranker))
        means["spread"] = (float(errors[0]), float(errors[1]))
    AUCS[(id(papers), k, seed, settings.name)] = [a for a, _ in results["ranker"]]
    return means


# Each library's ranker AUC by (corpus, k, seed, setting): the same seed draws the same
# libraries, so two settings are compared library by library (paired).
AUCS: dict[tuple[int, int, int, str], list[float]] = {}


def print_table(title: str, rows: dict[int, tuple[Scores, Scores]]) -> None:
    print(f"\n{title}")
    print(f"{'k':>3}  {'ranker AUC':>16} {'P@10':>5}  {'before AUC':>10} {'P@10':>5}  "
          f"{'random AUC':>10} {'P@10':>5}  {'category AUC':>12} {'P@10':>5}  "
          f"{'above 0':>7} {'liked':>5} {'before':>6} {'liked':>5}")
    for k, (now, before) in rows.items():
        print(f"{k:>3}  {now['ranker'][0]:>8.3f} ± {now['spread'][0]:.3f} "
              f"{now['ranker'][1]:>5.2f}  "
              f"{before['ranker'][0]:>10.3f} {before['ranker'][1]:>5.2f}  "
              f"{now['random'][0]:>10.3f} {now['random'][1]:>5.2f}  "
              f"{now['category'][0]:>12.3f} {now['category'][1]:>5.2f}  "
              f"{now['boundary'][0]:>7.3f} {now['boundary'][1]:>5.2f} "
              f"{before['boundary'][0]:>6.3f} {before['boundary'][1]:>5.2f}")


# --- the corpora ---------------------------------------------------------------------------


def api_sample() -> tuple[list[Paper], list[Interest]]:
    papers = list(parse_api(SAMPLE.read_bytes()).papers)
    field, _ = Counter(p.categories[0] for p in papers).most_common(1)[0]
    return papers, [Interest(field, np.array([p.categories[0] == field for p in papers]))]


def announcement_day(archive: str | None = None) -> tuple[list[Paper], list[Interest],
                                                          list[Interest]]:
    """The day's papers (of one archive's primary categories, or all); interests by primary
    category, and by any listed cs category."""
    papers = list(parse_rss(gzip.decompress(DAY.read_bytes())).papers)
    if archive is not None:
        papers = [p for p in papers if p.categories[0].split(".")[0] == archive]
    counts = Counter(p.categories[0] for p in papers)
    fields = sorted((c for c, n in counts.items() if n >= DAY_MIN_PAPERS),
                    key=lambda c: -counts[c])
    primary = [Interest(c, np.array([p.categories[0] == c for p in papers])) for c in fields]
    listed = [Interest(f"listed in {c}", np.array([c in p.categories for p in papers]))
              for c in fields if c.startswith("cs.")]
    return papers, primary, listed


def semanlink() -> tuple[list[Paper], list[Interest]]:
    """One researcher's tagged arXiv bookmarks; an interest per tag with TAG_MIN_PAPERS."""
    records = json.loads(gzip.decompress(SEMANLINK.read_bytes()))
    papers = [Paper(arxiv_id=r["arxiv_num"], version=1, title=r["arxiv_title"],
                    authors=tuple(r["arxiv_author"]), abstract=r["arxiv_summary"],
                    categories=()) for r in records]
    tags = Counter(t for r in records for t in r["tag"])
    every = {t for t, n in tags.items() if n == len(records)}  # "arxiv_doc": no interest
    chosen = sorted((t for t, n in tags.items() if n >= TAG_MIN_PAPERS and t not in every),
                    key=lambda t: (-tags[t], t))
    return papers, [Interest(t.rsplit("/", 1)[-1], np.array([t in r["tag"] for r in records]))
                    for t in chosen]


def similar_corpora() -> list[tuple[str, list[Paper]]]:
    """The real corpora with categories, for /similar's neighbours."""
    return [("the whole announcement day", announcement_day()[0]),
            ("the day's cs papers", announcement_day("cs")[0]),
            ("the API sample", api_sample()[0])]


# --- the settings measured -----------------------------------------------------------------


CURRENT = Settings("current")
BEFORE = Settings("before: C = 0.1", training=replace(TRAINING, c=0.1))


def variants() -> list[Settings]:
    """The current settings and one change at a time (features, weighting, negatives, C)."""
    f, t = FEATURES, TRAINING
    return [
        Settings("current"),
        Settings("tf not sublinear", replace(f, sublinear_tf=False)),
        Settings("words only (no bigrams)", replace(f, ngrams=1)),
        Settings("min_df 1", replace(f, min_df=1)),
        Settings("min_df 3", replace(f, min_df=3)),
        Settings("max_df 0.1", replace(f, max_df=0.1)),
        Settings("max_df 1.0 (none)", replace(f, max_df=1.0)),
        Settings("no author tokens", replace(f, authors=False)),
        Settings("max_features 50,000", replace(f, max_features=50_000)),
        Settings("no class weights", training=replace(t, balanced=False)),
        Settings("100 background negatives", training=replace(t, background=100)),
        Settings("2,000 background negatives", training=replace(t, background=2_000)),
        *(Settings(f"C = {c:g}", training=replace(t, c=c))
          for c in (0.001, 0.003, 0.01, 0.03, 0.3, 1.0)),
    ]


def tune(repeats: int) -> None:
    """Each setting on the tuning corpus (Semanlink tags, k = 5 and 10), and, to show the change
    but not to choose by, on the announcement day (primary category, k = 10)."""
    tagged, tags = semanlink()
    cs, fields, _ = announcement_day("cs")
    print(f"\ntuning corpus: Semanlink, {len(tagged)} papers, {len(tags)} tags with ≥ "
          f"{TAG_MIN_PAPERS} papers: {', '.join(i.name for i in tags)}")
    print("ranker AUC (mean ± standard error over libraries) on the tags at k = 5 and 10; "
          "shown, not chosen by: the day's cs papers at k = 10, and for it the share of "
          "papers above the boundary (score > 0) and the share of those in the interest")
    print(f"{'setting':<28} {'tags k=5':>13} {'tags k=10':>13} {'cs day k=10':>12} "
          f"{'above 0':>8} {'liked':>6}")
    for settings in variants():
        small = evaluate(tagged, tags, 5, repeats, 5, settings, baselines=False, spread=True)
        large = evaluate(tagged, tags, 10, repeats, 10, settings, baselines=False, spread=True)
        shown = evaluate(cs, fields, 10, repeats, 10, settings, baselines=False)
        print(f"{settings.name:<28} {small['ranker'][0]:>6.3f} ± {small['spread'][0]:.3f} "
              f"{large['ranker'][0]:>6.3f} ± {large['spread'][0]:.3f} "
              f"{shown['ranker'][0]:>12.3f} {shown['boundary'][0]:>8.2f} "
              f"{shown['boundary'][1]:>6.2f}", flush=True)
    # The rule, fixed before the figures: a change is made when, on the tags, its AUC minus
    # the current settings' AUC on the same libraries (k = 5 and 10 together) is above zero by
    # more than two standard errors of that difference; otherwise what is there stays. Of the
    # C values that pass, the best is taken.
    def paired(name: str) -> np.ndarray:
        return np.array([a for k, seed in ((5, 5), (10, 10))
                         for a in AUCS[(id(tagged), k, seed, name)]])

    current = paired("current")
    print("\nchange of AUC on the tags against the current settings, the same libraries "
          "(mean ± standard error):")
    passed = []
    for settings in variants()[1:]:
        change = paired(settings.name) - current
        mean, error = change.mean(), change.std(ddof=1) / np.sqrt(len(change))
        verdict = mean > 2 * error
        print(f"  {settings.name:<28} {mean:+.4f} ± {error:.4f}"
              f"{'  passes the rule' if verdict else ''}")
        if verdict:
            passed.append((mean, settings.name))
    print("rule (paired change > 2 standard errors): "
          + (", ".join(name for _, name in sorted(passed, reverse=True)) or "no change"))


# --- synthetic and cost --------------------------------------------------------------------


def synthetic(count: int, topics: int, rng: random.Random) -> tuple[list[Paper], np.ndarray]:
    """`count` papers: each has one of `topics` topics (40 words each) or none; background
    words from the whole vocabulary, weighted by their counts in real abstracts."""
    words, names = load_vocabulary()
    stop = {"the", "of", "and", "a", "in", "to", "we", "for", "is", "on", "that", "with", "by"}
    pool = [w for w in words if w not in stop and len(w) > 3]
    topic_words = [rng.sample(pool, 40) for _ in range(topics)]
    papers, labels = [], []
    for n in range(count):
        topic = rng.randrange(topics)
        # One word in nine of the abstract and two of seven in the title are the topic's.
        body = rng.choices(words[:2000], k=96) + rng.choices(topic_words[topic], k=12)
        rng.shuffle(body)
        title = " ".join(rng.choices(topic_words[topic], k=2) + rng.choices(pool, k=5))
        papers.append(Paper(
            arxiv_id=f"2611.{20000 + n}", version=1, title=title.capitalize(),
            authors=tuple(rng.sample(names, 3)), abstract=" ".join(body),
            categories=(rng.choice(CATEGORIES),)))
        labels.append(topic)
    return papers, np.array(labels)


def cost(chats: int, count: int, rng: random.Random) -> None:
    papers, topics = synthetic(count, 20, rng)
    vocabulary = fit_vocabulary(papers)
    assert vocabulary is not None
    matrix = vocabulary.transform(papers)
    rows = {p.arxiv_id: i for i, p in enumerate(papers)}

    def library(topic: int) -> list[str]:
        return [papers[i].arxiv_id for i in np.flatnonzero(topics == topic)[:10]]

    start = time.process_time()
    one = train(vocabulary, ChatLabels.of(library(0), [], []), rows, matrix)
    train_one = time.process_time() - start
    distinct = [train(vocabulary, ChatLabels.of(library(t), [], []), rows, matrix, seed=t)
                for t in range(20)]
    models = [replace(distinct[i % len(distinct)]) for i in range(chats)]
    assert one is not None
    start = time.process_time()
    weights, intercepts = stack(models)
    table = score(matrix, weights, intercepts)
    scoring = time.process_time() - start
    nonzero = weights.nnz / chats
    print(f"\ncost: vocabulary {vocabulary.size} terms; a model has {nonzero:.0f} non-zero "
          f"weights on average")
    print(f"train one chat (10 positives, {matrix.shape[0]} papers): {train_one:.3f} s CPU")
    print(f"score {count} papers for {chats} chats (one call, blocks of 1,000 chats, {table.shape} "
          f"scores): {scoring:.2f} s CPU")
    total = train_one + scoring
    print(f"total {total:.2f} s CPU (aim ≤ 10 s): {'met' if total <= 10 else 'NOT met'}")


def day_cost(chats: int, count: int, digest: int, seed: int) -> None:
    """A day's ranking work for `chats` chats, each with a stored model, as the bot does it:
    For you scores the day's `count` papers for every chat, SCORE_BATCH_CHATS chats at a
    time (each batch's models loaded from their stored bytes, then dropped), and keeps each
    chat's best five above the boundary; every digest loads its chat's model and orders its
    `digest` papers (their rows taken from the day's shared matrix). Run in a process of its
    own (`--day-cost`), so its peak memory is its own."""
    rng = random.Random(seed)
    papers, topics = synthetic(count, 20, rng)
    vocabulary = fit_vocabulary(papers)
    assert vocabulary is not None
    matrix = vocabulary.transform(papers)
    rows = {p.arxiv_id: i for i, p in enumerate(papers)}
    stored = []
    for topic in range(20):
        liked = [papers[i].arxiv_id for i in np.flatnonzero(topics == topic)[:10]]
        model = train(vocabulary, ChatLabels.of(liked, [], []), rows, matrix, seed=topic)
        assert model is not None
        stored.append(model.dump())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.process_time()
    picked = 0
    for first in range(0, chats, SCORE_BATCH_CHATS):
        batch = [ChatModel.load(stored[chat % len(stored)], "", "")
                 for chat in range(first, min(chats, first + SCORE_BATCH_CHATS))]
        table = score(matrix, *stack(batch))
        best = np.argpartition(-table, 5, axis=0)[:5]
        picked += int((np.take_along_axis(table, best, axis=0) > 0).sum())
        del batch, table
    for_you = time.process_time() - start
    start = time.process_time()
    for chat in range(chats):
        model = ChatModel.load(stored[chat % len(stored)], "", "")
        shown = matrix[rng.sample(range(count), digest)]
        np.argsort(-score(shown, *stack([model]))[:, 0], kind="stable")
    digests = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    total = for_you + digests
    print(f"a day for {chats:,} chats with models (vocabulary {vocabulary.size} terms, "
          f"batches of {SCORE_BATCH_CHATS:,} chats): For you, {count:,} papers each: "
          f"{for_you:.1f} s CPU ({picked:,} picks); digest ordering, {digest} papers each: "
          f"{digests:.1f} s CPU; total {total:.1f} s CPU (aim ≤ 120 s): "
          f"{'met' if total <= 120 else 'NOT met'}")
    print(f"peak RSS {peak:.0f} MB (before scoring {before:.0f} MB; aim ≤ 1,024 MB): "
          f"{'met' if peak <= 1024 else 'NOT met'}")


# --- /similar against plain tf-idf ------------------------------------------------------------

NEIGHBOURS = 5  # as /similar lists
GROWTH_BATCHES = 5  # the corpus arrives in this many polls, a day apart


def archive(paper: Paper) -> str:
    return paper.categories[0].split(".")[0]


def same_shares(papers: list[Paper], lists: list[list[int]]) -> tuple[float, float]:
    """The share of listed neighbours in the probe's own archive, and in its own primary
    category, over every probe's list."""
    archives = categories = total = 0
    for probe, listed in zip(papers, lists, strict=True):
        archives += sum(archive(papers[i]) == archive(probe) for i in listed)
        categories += sum(papers[i].categories[0] == probe.categories[0] for i in listed)
        total += len(listed)
    return archives / total, categories / total


def plain_neighbours(papers: list[Paper]) -> list[list[int]]:
    """Plain tf-idf cosine neighbours (scikit-learn's defaults, title and abstract) over the
    same records: the baseline /similar must reach."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    matrix = TfidfVectorizer().fit_transform([f"{p.title}\n{p.abstract}" for p in papers])
    similarity = (matrix @ matrix.T).toarray()
    np.fill_diagonal(similarity, -1.0)
    return [list(np.argsort(-row, kind="stable")[:NEIGHBOURS]) for row in similarity]


async def bot_neighbours(papers: list[Paper], folder: Path, grown: bool) -> list[list[int]]:
    """What /similar lists for each paper, through the bot's own services on a real database.
    `grown`: the records arrive over GROWTH_BATCHES polls a day apart and a researcher asks
    /similar after the first (so the vocabulary is first fitted on a fifth of them), as in a
    bot started the day before; else they are all stored before the first /similar."""
    from telegram import Bot

    from bot.config import load_settings
    from bot.core.clock import ManualClock
    from bot.services.container import Wiring, open_services

    token = "123456:BENCH-token"
    settings = load_settings({"TELEGRAM_BOT_TOKEN": token, "HF_PAPERS_URL": "off",
                              "DATABASE_PATH": str(folder / f"similar-{grown}.sqlite3")},
                             env_file=None)
    clock = ManualClock()
    index = {p.arxiv_id: i for i, p in enumerate(papers)}
    async with open_services(settings, bot=Bot(token), wiring=Wiring(clock=clock)) as services:
        batches = GROWTH_BATCHES if grown else 1
        size = -(-len(papers) // batches)
        for number in range(batches):
            await services.storage.papers.upsert_many(
                papers[number * size:(number + 1) * size], clock.now())
            if grown and number == 0:
                await services.papers.similar(papers[0].arxiv_id, NEIGHBOURS)
            clock.advance(86_400)
        lists = []
        for paper in papers:
            _, nearest = await services.papers.similar(paper.arxiv_id, NEIGHBOURS)
            lists.append([index[p.arxiv_id] for p in nearest])
    return lists


def neighbours(corpora: list[tuple[str, list[Paper]]]) -> None:
    """/similar's same-archive and same-category shares beside plain tf-idf's, per corpus."""
    import asyncio
    import tempfile

    print(f"\n8. /similar against plain tf-idf cosine: the share of the {NEIGHBOURS} papers "
          f"listed for each paper of a corpus that share its archive / its primary category")
    verdicts = []
    with tempfile.TemporaryDirectory() as folder:
        for number, (name, papers) in enumerate(corpora):
            databases = Path(folder) / str(number)
            databases.mkdir()
            plain = same_shares(papers, plain_neighbours(papers))
            at_once = same_shares(papers, asyncio.run(bot_neighbours(papers, databases, False)))
            grown = same_shares(papers, asyncio.run(bot_neighbours(papers, databases, True)))
            print(f"   {name} ({len(papers)} papers): plain tf-idf {plain[0]:.1%} / "
                  f"{plain[1]:.1%}; /similar, all stored at once {at_once[0]:.1%} / "
                  f"{at_once[1]:.1%}; /similar, stored over {GROWTH_BATCHES} days "
                  f"{grown[0]:.1%} / {grown[1]:.1%}")
            verdicts.append(min(at_once[1], grown[1]) >= plain[1]
                            and min(at_once[0], grown[0]) >= plain[0])
    print(f"aim: /similar's shares at least plain tf-idf's on every corpus: "
          f"{'met' if all(verdicts) else 'NOT met'}")


def report(title: str, papers: list[Paper], interests: list[Interest], repeats: int,
           seed: int) -> dict[int, Scores]:
    """The ranker with the current settings and with the settings before (same libraries)."""
    rows = {k: (evaluate(papers, interests, k, repeats, seed, CURRENT, spread=True),
                evaluate(papers, interests, k, repeats, seed, BEFORE, baselines=False))
            for k in LIBRARY_SIZES}
    print_table(title, rows)
    return {k: now for k, (now, _) in rows.items()}


def tuning_corpus(repeats: int) -> None:
    tagged, tags = semanlink()
    k = 5
    now = evaluate(tagged, tags, k, repeats, 5, CURRENT, baselines=False)
    before = evaluate(tagged, tags, k, repeats, 5, BEFORE, baselines=False)
    print(f"\n4. one researcher's Semanlink tags ({len(tagged)} papers, {len(tags)} tags; the "
          f"tuning corpus, so not an independent figure), k = {k}: ranker AUC "
          f"{now['ranker'][0]:.3f} (before {before['ranker'][0]:.3f}), P@10 "
          f"{now['ranker'][1]:.2f} (before {before['ranker'][1]:.2f})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--papers", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--synthetic-papers", type=int, default=2_000)
    parser.add_argument("--tune", action="store_true",
                        help="compare settings on the tuning corpus and stop")
    parser.add_argument("--day-chats", type=int, default=100_000,
                        help="chats of the day's ranking cost (0: not measured)")
    parser.add_argument("--day-cost", action="store_true",
                        help="measure only the day's ranking cost (in this process) and stop")
    parser.add_argument("--similar", action="store_true",
                        help="measure only /similar against plain tf-idf and stop")
    args = parser.parse_args()
    if args.day_cost:
        day_cost(args.day_chats, args.papers, 50, 19)
        return
    if args.similar:
        print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        neighbours(similar_corpora())
        return
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs")
    print(f"settings: {FEATURES}; {TRAINING}; before: {BEFORE.training}")
    if args.tune:
        tune(args.repeats)
        return
    print("columns: the ranker now (± the standard error of its mean AUC over libraries) and "
          "before (C = 0.1), random order, same primary category as most of the library; AUC "
          "and precision@10 over the papers not in the library; the share of those the model "
          "scores above 0 (For you's boundary) and the share of them in the interest, now and "
          "before")

    papers, interests = api_sample()
    liked = int(interests[0].liked.sum())
    print(f"\n1. the API sample: {len(papers)} papers answering the query \"testing\"; "
          f"interest = primary category {interests[0].name} ({liked} papers)")
    sample = report("API sample", papers, interests, args.repeats, 14)

    repeats = args.repeats  # libraries per interest
    cs, fields, listed = announcement_day("cs")
    print(f"\n2. an announcement day's cs papers: {len(cs)} papers with a cs primary category "
          f"(RSS, 2024-11-28), the corpus a bot following cs stores; interests: "
          + ", ".join(f"{i.name} ({int(i.liked.sum())})" for i in fields))
    within_cs = report(f"the day's cs papers, interest = a cs primary category ({repeats} "
                       f"libraries per interest)", cs, fields, repeats, 15)
    print("\n" + ", ".join(f"{i.name} ({int(i.liked.sum())})" for i in listed))
    report("the day's cs papers, interest = listed in a cs category (primary or cross-list)",
           cs, listed, repeats, 16)

    day, primary, _ = announcement_day()
    print(f"\n3. the whole announcement day: {len(day)} papers of every archive; interests: "
          + ", ".join(f"{i.name} ({int(i.liked.sum())})" for i in primary))
    whole_day = report(f"the whole day, interest = a primary category ({repeats} libraries "
                       f"per interest)", day, primary, repeats, 17)

    if not SEMANLINK.exists():
        print(f"\n4. one researcher's Semanlink tags: {SEMANLINK.name} is not on this machine "
              f"(bench/data/README.md), so the tuning corpus is left out")
    else:
        tuning_corpus(args.repeats)

    print()
    for name, rows in (("the day's cs papers", within_cs), ("the whole day", whole_day),
                       ("API sample", sample)):
        auc, error = rows[10]["ranker"][0], rows[10]["spread"][0]
        print(f"aim: real-record AUC ≥ 0.85 with 10 positives ({name}): {auc:.3f} "
              f"± {error:.3f} (standard error) {'met' if auc >= 0.85 else 'NOT met'}")

    rng = random.Random(14)
    papers, topics = synthetic(args.synthetic_papers, 20, rng)
    print(f"\n5. synthetic topical: {len(papers)} papers, 20 topics of 40 words, "
          f"{len(CATEGORIES)} categories drawn independently")
    synthetic_rows = report("synthetic topical", papers, [Interest("topic 0", topics == 0)],
                            args.repeats, 18)
    ranker, category = synthetic_rows[10]["ranker"][1], synthetic_rows[10]["category"][1]
    ratio = ranker / category if category else float("inf")
    print(f"aim: precision@10 ≥ 2× the category baseline (k = 10): {ranker:.2f} vs "
          f"{category:.2f} = {ratio:.1f}× {'met' if ratio >= 2 else 'NOT met'}")

    neighbours(similar_corpora())

    cost(args.chats, args.papers, rng)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this run): {peak:.0f} MB")
    if args.day_chats:
        print(f"\n7. a day's ranking cost at {args.day_chats:,} chats (a process of its own):",
              flush=True)
        subprocess.run([sys.executable, __file__, "--day-cost", "--day-chats",
                        str(args.day_chats), "--papers", str(args.papers)], check=True)


if __name__ == "__main__":
    main()

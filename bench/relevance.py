"""How well the ranker finds what a researcher likes, and what it costs.

Simulated researchers have a hidden interest; their library is k papers of it; the ranker
(bot.ranking: tf-idf + a per-chat LinearSVC) orders every other paper. AUC and precision@10 are
printed beside two baselines: random order, and "same primary category as most of the library".

1. Real records: the 100-entry arXiv API sample in tests/fixtures (provenance in its README).
   The interest is a primary category with enough papers for a library and held-out ones.
2. Synthetic topical: papers written from bench/vocabulary.txt (words of real arXiv titles and
   abstracts); an interest is a topic, a set of 40 words; categories are drawn independently
   of topics, as a topic (say "graph pooling") spans cs.LG, cs.SI and stat.ML.
3. Cost: training one chat, and scoring 2,000 papers for 10,000 chats with models (one sparse
   product), in CPU seconds; peak memory (max RSS) of the whole run.

Aims (issue 14): real-record AUC ≥ 0.85 with 10 positives; synthetic precision@10 ≥ 2× the
category baseline; train one + score 2,000 × 10,000 ≤ 10 s CPU. Figures are noisier when the
machine is loaded; the load average is printed.

    .venv/bin/python bench/relevance.py [--chats 10000] [--papers 2000] [--repeats 20]
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import sys
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
from sklearn.metrics import roc_auc_score

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.vocabulary import load_vocabulary
from bot.arxiv.feeds import parse_api
from bot.models import Paper
from bot.ranking.features import fit_vocabulary
from bot.ranking.model import ChatLabels, score, stack, train

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "tests" / "fixtures" / "api-search-all-testing-m100.atom.xml"
LIBRARY_SIZES = (5, 10, 20)
CATEGORIES = ("cs.LG", "cs.CL", "cs.CV", "cs.AI", "stat.ML", "cs.SI", "cs.IR", "cs.RO")


def precision_at(scores: np.ndarray, truth: np.ndarray, k: int = 10) -> float:
    top = np.argsort(-scores, kind="stable")[:k]
    return float(truth[top].mean())


def evaluate(papers: list[Paper], interest: np.ndarray, k: int, repeats: int,
             rng: random.Random) -> dict[str, tuple[float, float]]:
    """Mean (AUC, precision@10) of ranker, random and category baselines over `repeats`."""
    vocabulary = fit_vocabulary(papers)
    assert vocabulary is not None
    matrix = vocabulary.transform(papers)
    rows = {p.arxiv_id: i for i, p in enumerate(papers)}
    liked = [i for i in range(len(papers)) if interest[i]]
    results: dict[str, list[tuple[float, float]]] = {"ranker": [], "random": [], "category": []}
    for repeat in range(repeats):
        library = rng.sample(liked, k)
        rest = np.array([i for i in range(len(papers)) if i not in set(library)])
        truth = interest[rest]
        model = train(vocabulary, ChatLabels.of([papers[i].arxiv_id for i in library], [], []),
                      rows, matrix, seed=repeat)
        assert model is not None
        ranked = score(matrix[rest], *stack([model]))[:, 0]
        common = Counter(papers[i].categories[0] for i in library).most_common(1)[0][0]
        # Ties (every paper of that category) are broken at random, as a list would show them.
        noise = np.array([rng.random() for _ in rest]) * 1e-3
        by_category = np.array([papers[i].categories[0] == common for i in rest]) + noise
        randomly = np.array([rng.random() for _ in rest])
        for name, scores in (("ranker", ranked), ("random", randomly),
                             ("category", by_category)):
            results[name].append((roc_auc_score(truth, scores), precision_at(scores, truth)))
    return {name: (float(np.mean([a for a, _ in r])), float(np.mean([p for _, p in r])))
            for name, r in results.items()}


def print_table(title: str, rows: dict[int, dict[str, tuple[float, float]]]) -> None:
    print(f"\n{title}")
    print(f"{'k':>3}  {'ranker AUC':>10} {'P@10':>6}  {'random AUC':>10} {'P@10':>6}  "
          f"{'category AUC':>12} {'P@10':>6}")
    for k, r in rows.items():
        print(f"{k:>3}  {r['ranker'][0]:>10.3f} {r['ranker'][1]:>6.2f}  "
              f"{r['random'][0]:>10.3f} {r['random'][1]:>6.2f}  "
              f"{r['category'][0]:>12.3f} {r['category'][1]:>6.2f}")


def real_records(repeats: int, rng: random.Random) -> dict[int, dict[str, tuple[float, float]]]:
    papers = list(parse_api(SAMPLE.read_bytes()).papers)
    field, size = Counter(p.categories[0] for p in papers).most_common(1)[0]
    print(f"real records: {len(papers)} papers; interest = primary category {field} "
          f"({size} papers, the only one with more than 20)")
    interest = np.array([p.categories[0] == field for p in papers])
    return {k: evaluate(papers, interest, k, repeats, rng) for k in LIBRARY_SIZES}


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
    print(f"score {count} papers for {chats} chats (one sparse product, {table.shape} "
          f"scores): {scoring:.2f} s CPU")
    total = train_one + scoring
    print(f"total {total:.2f} s CPU (aim ≤ 10 s): {'met' if total <= 10 else 'NOT met'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chats", type=int, default=10_000)
    parser.add_argument("--papers", type=int, default=2_000)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--synthetic-papers", type=int, default=2_000)
    args = parser.parse_args()
    rng = random.Random(14)
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs")

    real = real_records(args.repeats, rng)
    print_table("real records (AUC and precision@10 over the papers not in the library)", real)
    auc = real[10]["ranker"][0]
    print(f"aim: real-record AUC ≥ 0.85 with 10 positives: {auc:.3f} "
          f"{'met' if auc >= 0.85 else 'NOT met'}")

    papers, topics = synthetic(args.synthetic_papers, 20, rng)
    print(f"\nsynthetic topical: {len(papers)} papers, 20 topics of 40 words, "
          f"{len(CATEGORIES)} categories drawn independently")
    synthetic_rows = {k: evaluate(papers, topics == 0, k, args.repeats, rng)
                      for k in LIBRARY_SIZES}
    print_table("synthetic topical", synthetic_rows)
    ranker, category = synthetic_rows[10]["ranker"][1], synthetic_rows[10]["category"][1]
    ratio = ranker / category if category else float("inf")
    print(f"aim: precision@10 ≥ 2× the category baseline (k = 10): {ranker:.2f} vs "
          f"{category:.2f} = {ratio:.1f}× {'met' if ratio >= 2 else 'NOT met'}")

    cost(args.chats, args.papers, rng)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak memory (max RSS of this run): {peak:.0f} MB")


if __name__ == "__main__":
    main()

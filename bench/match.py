"""Benchmark: 100,000 subscriptions over 10,000 chats matched against 2,000 papers.

Run with `.venv/bin/python bench/match.py [--seed N] [--popular-categories]`. Vocabulary and
author names come from `bench/vocabulary.txt` (words of real arXiv titles and abstracts, with
counts); papers draw their words with Zipf-like frequencies plus a few topic words,
subscriptions favour topical words. By default a category subscription picks any arXiv category
alike, so most follow categories without papers here; `--popular-categories` weights them like
the papers' categories, which roughly doubles the alerts.
The naive baseline evaluates every subscription's AST on precomputed paper features, i.e. the
same evaluator without the index, and is charged the same cost of building the output. Times
are CPU seconds (`time.process_time`) beside wall time, and the ratio is of CPU times: the
machine is shared, and wall time measures the neighbours.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.vocabulary import load_vocabulary
from bot.arxiv.taxonomy import CATEGORIES
from bot.core.models import Paper
from bot.query.matcher import Matcher, PaperFeatures, evaluate_features
from bot.query.parser import (
    And,
    Archive,
    Author,
    Category,
    Node,
    Not,
    Or,
    QueryError,
    Text,
    canonical,
    parse,
)

SUBSCRIPTIONS = 100_000
CHATS = 10_000
PAPERS = 2_000
NAIVE_SUBSCRIPTIONS = 1_000
_COMMON = 1_500

# Where papers are listed: cs-heavy, like the bot's default ingest.
_CATEGORY_WEIGHTS = {
    "cs.LG": 30, "cs.CV": 22, "cs.CL": 18, "cs.AI": 16, "cs.RO": 6, "cs.CR": 6, "cs.SE": 5,
    "cs.IT": 4, "cs.DS": 3, "cs.NI": 3, "cs.HC": 3, "cs.IR": 3, "stat.ML": 8, "math.OC": 4,
    "eess.SP": 4, "eess.IV": 3, "quant-ph": 5, "physics.comp-ph": 2, "q-bio.NC": 2, "hep-th": 3,
    "astro-ph.CO": 3, "cond-mat.str-el": 2, "math.AG": 2, "econ.EM": 1,
}
_LATEX_BITS = [r"$\alpha$-", r"$O(n\log n)$ ", r"\emph{", "} ", r"M\"uller ", "&amp; ", "$k$-"]


class Corpus:
    """Synthetic but realistic papers and subscriptions from one random seed."""

    def __init__(self, seed: int, popular_categories: bool = False) -> None:
        self.random = random.Random(seed)
        self.popular_categories = popular_categories
        self.words, base_names = load_vocabulary()
        # Running text: the 1,500 commonest words with Zipf weights by rank (s = 1.05).
        common = self.words[:_COMMON]
        self.common = common
        self.cumulative = _cumulate([1.0 / (rank + 1) ** 1.05 for rank in range(len(common))])
        # The rarer words are technical: 1,500 topics of 10 such words each; a paper writes
        # about one or two topics and subscribers follow topical words.
        technical = [w for w in self.words[_COMMON:] if len(w) >= 4]
        self.topics = [self.random.sample(technical, 10) for _ in range(1_500)]
        given = sorted({n.split()[0] for n in base_names if len(n.split()[0]) > 2})
        real = sorted({n.split()[-1] for n in base_names if len(n.split()[-1]) > 3})
        # A few hundred real surnames are far too few for 30,000 people: splice halves of them.
        spliced = {f"{a[:len(a) // 2]}{b[len(b) // 2:]}" for a in real for b in real}
        surnames = real + self.random.sample(sorted(spliced), 12_000) + [
            "Müller", "Wübben", "Łukasiewicz", "van der Berg", "de Oliveira Neves", "Østergaard",
            "Del Maestro", "García-Pérez", "Nguyễn", "Yoneki"]
        self.people = [f"{self.random.choice(given)} {self.random.choice(surnames)}"
                       for _ in range(30_000)]
        self.all_categories = sorted(CATEGORIES)
        self.categories = list(_CATEGORY_WEIGHTS)
        self.category_cumulative = _cumulate(list(_CATEGORY_WEIGHTS.values()))

    def _text(self, length: int, topic: list[str], topical: float) -> str:
        tokens = self.random.choices(self.common, cum_weights=self.cumulative, k=length)
        for index in self.random.sample(range(length), k=int(length * topical)):
            tokens[index] = self.random.choice(topic)
        parts = []
        for token in tokens:
            roll = self.random.random()
            if roll < 0.02:
                parts.append(self.random.choice(_LATEX_BITS))
            parts.append(token)
            parts.append("-" if roll > 0.97 else ", " if roll > 0.93 else " ")
        return "".join(parts)

    def paper(self, number: int) -> Paper:
        # A paper uses half the words of one topic, sometimes of two.
        topic = self.random.sample(self.random.choice(self.topics), 5)
        if self.random.random() < 0.5:
            topic += self.random.sample(self.random.choice(self.topics), 5)
        categories = self.random.choices(self.categories, cum_weights=self.category_cumulative,
                                         k=self.random.randint(1, 3))
        return Paper(
            arxiv_id=f"2611.{number:05d}",
            version=1,
            title=self._text(self.random.randint(6, 14), topic, 0.4).title(),
            authors=tuple(self.random.sample(self.people, self.random.randint(1, 8))),
            abstract=self._text(self.random.randint(110, 220), topic, 0.12),
            categories=tuple(dict.fromkeys(categories)),
        )

    def _topical_word(self) -> str:
        return self.random.choice(self.random.choice(self.topics))

    def _author(self) -> str:
        person = self.random.choice(self.people)
        given, _, surname = person.partition(" ")
        style = self.random.random()
        if style < 0.25:
            return f'au:"{surname}"'
        if style < 0.6:
            return f'au:"{given[0]}. {surname}"'
        return f'au:"{person}"'

    def _word(self) -> str:
        field = self.random.choice(["", "", "", "ti:", "abs:"])
        return f"{field}{self._topical_word()}"

    def _phrase(self) -> str:
        topic = self.random.choice(self.topics)
        return f'"{" ".join(self.random.sample(topic, 2))}"'

    def _prefix(self) -> str:
        # Prefixes stand for a technical stem ("quantiz*"), not for a common word's start.
        while True:
            stem = self._topical_word()
            prefix = stem[:max(5, len(stem) - 2)]
            if not any(word.startswith(prefix) for word in self.common[:500]):
                return f"{prefix}*"

    def _text_or_author(self) -> str:
        return self.random.choice([self._author, self._word, self._word, self._phrase,
                                   self._prefix])()

    def query(self) -> str:
        """One subscription, in the mix a population of researchers might follow."""
        roll = self.random.random()
        if roll < 0.03:
            if self.popular_categories:
                # Followers crowd where the papers are: categories weighted like the listings.
                return self.random.choices(self.categories, cum_weights=self.category_cumulative)[0]
            # By default any category or archive alike, most with no paper in this corpus.
            return self.random.choice([*self.all_categories, "cat:cs", "cat:math", "cat:stat"])
        if roll < 0.35:
            return self._author()
        if roll < 0.55:
            return self._word()
        if roll < 0.67:
            return self._phrase()
        if roll < 0.75:
            return self._prefix()
        if roll < 0.85:
            term = self.random.choice([self._word, self._phrase, self._prefix])()
            return f"cat:{self.random.choice(self.categories)} {term}"
        if roll < 0.93:
            terms = [self._text_or_author() for _ in range(self.random.randint(2, 3))]
            return " OR ".join(terms)
        return f"{self._text_or_author()} -{self._text_or_author()}"


def subscription_rows(corpus: Corpus, first_chat: int, now: float, chats: int = CHATS
                      ) -> list[tuple[int, str, str, float]]:
    """Distinct (chat, canonical query, typed query, created) rows, SUBSCRIPTIONS / CHATS a
    chat on average, over `chats` chats numbered from `first_chat`, for benches that write
    them to a database in bulk."""
    rows: list[tuple[int, str, str, float]] = []
    seen: set[tuple[int, str]] = set()
    while len(rows) < SUBSCRIPTIONS * chats // CHATS:
        raw = corpus.query()
        try:
            query = canonical(parse(raw))
        except QueryError:
            continue
        chat_id = first_chat + corpus.random.randrange(chats)
        if (chat_id, query) not in seen:
            seen.add((chat_id, query))
            rows.append((chat_id, query, raw, now))
    return rows


def rss_mb() -> float:
    """The process's current resident memory, in MB (Linux)."""
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * resource.getpagesize() / 2**20


def _cumulate(weights: list[float]) -> list[float]:
    total = 0.0
    out = []
    for weight in weights:
        total += weight
        out.append(total)
    return out


def main() -> None:
    arguments = argparse.ArgumentParser(description=__doc__)
    arguments.add_argument("--seed", type=int, default=1)
    arguments.add_argument("--popular-categories", action="store_true",
                           help="category subscriptions follow the papers' category weights")
    options = arguments.parse_args()

    corpus = Corpus(options.seed, options.popular_categories)
    papers = [corpus.paper(number) for number in range(PAPERS)]
    subscriptions: list[tuple[int, int, Node]] = []
    while len(subscriptions) < SUBSCRIPTIONS:
        try:
            node = parse(corpus.query())
        except QueryError:
            continue
        sub_id = len(subscriptions) + 1
        subscriptions.append((sub_id, corpus.random.randrange(CHATS), node))

    gc.collect()
    before_index_mb = rss_mb()
    started, started_cpu = time.perf_counter(), time.process_time()
    matcher = Matcher.build(subscriptions)
    build_seconds = time.perf_counter() - started
    build_cpu = time.process_time() - started_cpu
    index_mb = rss_mb() - before_index_mb
    # No gc.freeze(): the bot does not freeze its heap, so the collector sees the index here too.

    started_cpu = time.process_time()
    for paper in papers:
        PaperFeatures(paper)
    features_cpu = time.process_time() - started_cpu

    # Each timed block starts from an empty young generation, so the collector's work on the
    # objects a block creates is charged to that block, and only to it.
    gc.collect()
    with _Timer() as matching:
        results = matcher.match(papers)
    alerts = results.alert_count
    pairs = results.pair_count
    chats = len(results)
    sample = subscriptions[:NAIVE_SUBSCRIPTIONS]
    sampled = {sub_id for sub_id, _, _ in sample}
    indexed_pairs = {(m.paper.arxiv_id, sub_id) for found in results.values() for m in found
                     for sub_id in m.subscription_ids if sub_id in sampled}
    del results
    gc.collect()

    # The same work in its two halves: which subscriptions match each paper, then one `Match`
    # per (paper, chat) grouped per chat. The second is proportional to the alerts produced.
    with _Timer() as finding:
        found = matcher.find_pairs(papers)
    gc.collect()
    with _Timer() as materialising:
        grouped = matcher.alerts(papers, found)
    del found
    gc.collect()
    # Not part of matching: what reading every alert as a `Match` costs a caller that does.
    with _Timer() as expanding:
        for chat_matches in grouped.values():
            del chat_matches
    del grouped
    gc.collect()

    # Naive baseline: every paper's features once, then every subscription of a sample on it;
    # the output it would build for all subscriptions is the same as the index's, so it is
    # charged the measured cost of materialising those alerts.
    naive_pairs: set[tuple[str, int]] = set()
    features_seconds = evaluate_seconds = 0.0
    matched_by_shape: Counter[str] = Counter()
    for paper in papers:
        started = time.process_time()
        features = PaperFeatures(paper)
        between = time.process_time()
        hits = [(sub_id, node) for sub_id, _, node in sample if evaluate_features(node, features)]
        features_seconds += between - started
        evaluate_seconds += time.process_time() - between
        naive_pairs.update((paper.arxiv_id, sub_id) for sub_id, _ in hits)
        matched_by_shape.update(_shape(node) for _, node in hits)
    naive_full = (features_seconds + evaluate_seconds * len(subscriptions) / len(sample)
                  + materialising.cpu)
    sample_shapes = Counter(_shape(node) for _, _, node in sample)

    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"subscriptions: {len(subscriptions):,} over {CHATS:,} chats; papers: {len(papers):,}")
    print(f"index build time: {build_seconds:.3f} s wall ({build_cpu:.3f} s CPU)")
    print(f"match time (find + materialise): {matching}; about {features_cpu:.3f} s CPU of it "
          f"normalising the papers' text")
    print(f"  finding matches (Matcher.find_pairs): {finding}")
    print(f"  materialising output (Matcher.alerts: {alerts:,} alerts sorted and grouped per chat "
          f"in arrays): {materialising}")
    print(f"  (not in the match time: reading every alert as a Match object: {expanding})")
    print(f"matches found: {alerts:,} (paper, chat) alerts, {pairs:,} (paper, subscription) "
          f"pairs, in {chats:,} chats")
    print("share of papers matched per subscription, by shape (naive sample): " + ", ".join(
        f"{shape} {matched_by_shape[shape] / count / len(papers):.2%} (x{count})"
        for shape, count in sample_shapes.most_common()))
    print(f"naive on {len(papers):,} papers x {len(sample):,} subscriptions: "
          f"{features_seconds + evaluate_seconds:.3f} s; extrapolated to all subscriptions, plus "
          f"the same output: {naive_full:.1f} s")
    print(f"speed-up over naive (CPU time): {naive_full / matching.cpu:.0f}x "
          f"(finding matches alone: {(naive_full - materialising.cpu) / finding.cpu:.0f}x)")
    print(f"sample agrees with naive: {indexed_pairs == naive_pairs} "
          f"({len(naive_pairs):,} pairs)")
    print(f"memory: index {index_mb:.0f} MB; peak RSS of the whole process {peak_mb:.0f} MB")


def _shape(node: Node) -> str:
    """What kind of subscription a query is, for the mix line."""
    match node:
        case Category() | Archive():
            return "category"
        case Author():
            return "author"
        case Text(words=text_words, prefix=prefix):
            return "prefix" if prefix else "phrase" if len(text_words) > 1 else "word"
        case Or():
            return "OR"
        case And(children) if any(isinstance(child, Not) for child in children):
            return "exclusion"
    return "AND"


class _Timer:
    """Wall and CPU time of a block, and the time the garbage collector ran within it."""

    def __enter__(self) -> _Timer:
        self._collecting: list[float] = []
        gc.callbacks.append(self._collector)
        self._wall, self._cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu
        gc.callbacks.remove(self._collector)
        self.collector = sum(self._collecting)

    def _collector(self, phase: str, _: object) -> None:
        self._collecting.append(time.perf_counter() * (-1 if phase == "start" else 1))

    def __str__(self) -> str:
        return (f"{self.wall:.3f} s wall ({self.cpu:.3f} s CPU, of which {self.collector:.3f} s "
                f"garbage collection)")


if __name__ == "__main__":
    main()

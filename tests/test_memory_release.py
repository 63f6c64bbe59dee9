"""Memory a big round frees goes back to the system (bot/core/memory.py), and the ranker's
vocabulary, once fitted, sits in fresh memory rather than in the fit's (bot/ranking/service.py).

Each measure runs in a fresh Python process and reads its resident memory from /proc, with a
control that shows the same measure failing without the change.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.ranking.features import Vocabulary, fit_vocabulary
from bot.ranking.service import Ranker, _fitted
from bot.storage import Storage
from tests.test_ranking import START, labelled_store, papers  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parent.parent
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc, /proc")

# 40 MB in 2,000-byte strings (malloc's, not pymalloc's), 15 of every 16 freed: the holes between
# the kept ones are whole free pages that glibc keeps resident, as after a poll, until trimmed.
HOLES = r"""
import resource, sys
from bot.core.memory import release_free_memory
def rss():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20
blocks = [b"x" * 2_000 + bytes([i % 256]) for i in range(20_000)]
kept = blocks[::16] + blocks[-1:]
del blocks
before = rss()
released = release_free_memory() if sys.argv[1] == "trim" else False
print(released, before - rss())
"""

# 2,000 papers of a made-up vocabulary (Zipf-like): tens of thousands of pairs of words (the
# plain fit keeps about 38 MB, the compact one 9; 4,000 papers took 73 s of the suite);
# then the vocabulary is fitted and kept one way or the other, and the growth of the process's
# anonymous memory over the fit is printed. The words are drawn with cumulative weights summed
# once: `choices(words, weights)` sums all 30,000 weights again on every call, which was half
# of each child's 9 CPU seconds; the draws are the same (choices sums them the same way).
FIT = r"""
import gc, itertools, random, sys
from bot.core.models import Paper
from bot.ranking.features import fit_vocabulary
from bot.ranking.service import _fitted
import sklearn.feature_extraction.text  # imported before the first measure
def anonymous():
    with open("/proc/self/smaps_rollup") as rollup:
        return next(int(l.split()[1]) for l in rollup if l.startswith("Anonymous:")) / 1024
rng = random.Random(7)
words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(4, 10)))
         for _ in range(30_000)]
weights = list(itertools.accumulate(1 / (rank + 1) for rank in range(len(words))))
papers = [Paper(arxiv_id=f"2601.{n:05d}", version=1,
                title=" ".join(rng.choices(words, cum_weights=weights, k=10)),
                authors=(f"Ada Author{n % 700}",),
                abstract=" ".join(rng.choices(words, cum_weights=weights, k=170)),
                categories=("cs.LG",))
          for n in range(2_000)]
gc.collect()
before = anonymous()
if sys.argv[1] == "compact":
    vocabulary, _ = _fitted(papers)
else:
    vocabulary = fit_vocabulary(papers)
gc.collect()
print(vocabulary.size, anonymous() - before)
"""


def run(script: str, mode: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script, mode], env=env, capture_output=True,
                          text=True, timeout=300, check=True)
    return done.stdout.split()


@linux_only
def test_free_pages_inside_the_heap_go_back_to_the_system() -> None:
    released, dropped = run(HOLES, "trim")
    assert released == "True" and float(dropped) >= 25, dropped
    # The measure can fail: left alone, glibc keeps the holes resident.
    released, dropped = run(HOLES, "keep")
    assert released == "False" and float(dropped) < 5, dropped


@linux_only
def test_a_fitted_vocabulary_does_not_keep_the_memory_of_its_fit() -> None:
    size, compact = run(FIT, "compact")
    kept_size, kept = run(FIT, "kept")
    assert size == kept_size
    # What the plain fit leaves behind: the kept terms strewn over all the fit's memory.
    assert float(compact) <= float(kept) - 8, (compact, kept)


def test_the_refitted_vocabulary_is_the_fitted_one_as_stored(papers: list) -> None:  # noqa: F811
    fitted = fit_vocabulary(papers)
    assert fitted is not None
    compact = _fitted(papers)
    assert compact is not None
    vocabulary, stored = compact
    assert vocabulary.fingerprint == fitted.fingerprint == Vocabulary.load(stored).fingerprint
    assert stored == fitted.dump()
    assert (vocabulary.transform(papers) != fitted.transform(papers)).nnz == 0


async def test_refit_stores_and_uses_the_same_vocabulary(
        papers: list, labelled_store: Storage) -> None:  # noqa: F811
    ranker = Ranker(labelled_store, lambda: START)
    vocabulary = await ranker.refit()
    fitted = fit_vocabulary(await labelled_store.rankings.corpus(5_000))
    stored = await labelled_store.rankings.vocabulary()
    assert vocabulary is not None and fitted is not None and stored is not None
    assert vocabulary.fingerprint == fitted.fingerprint == stored.fingerprint
    assert await ranker.vocabulary() is vocabulary


async def test_a_big_corpus_is_fitted_in_a_child_process_to_the_same_vocabulary(
        papers: list, labelled_store: Storage, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import bot.ranking.service as service

    fitted_here: list[int] = []
    here = service._fitted
    monkeypatch.setattr(service, "_fitted", lambda p: fitted_here.append(len(p)) or here(p))
    monkeypatch.setattr(service, "FIT_APART_PAPERS", 1)
    ranker = Ranker(labelled_store, lambda: START)
    vocabulary = await ranker.refit()
    expected = fit_vocabulary(await labelled_store.rankings.corpus(5_000))
    assert vocabulary is not None and expected is not None
    assert vocabulary.fingerprint == expected.fingerprint
    assert (await labelled_store.rankings.vocabulary()).fingerprint == expected.fingerprint
    assert fitted_here == [], "fitted in the child, not here"
    # Below the threshold the fit stays in a thread of this process.
    monkeypatch.setattr(service, "FIT_APART_PAPERS", 10**6)
    assert (await ranker.refit()).fingerprint == expected.fingerprint
    assert fitted_here == [len(papers)]


async def test_a_fit_whose_child_cannot_start_runs_here(
        papers: list, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    import bot.ranking.service as service

    class NoChild:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise OSError("no processes left")

    monkeypatch.setattr(service, "ProcessPoolExecutor", NoChild)
    fitted = service._fitted_apart(papers)
    expected = fit_vocabulary(papers)
    assert fitted is not None and expected is not None
    assert fitted[0].fingerprint == expected.fingerprint and fitted[1] == expected.dump()

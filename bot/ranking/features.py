"""Tf-idf over title + abstract + author tokens, fitted on the stored corpus (arxiv-sanity-lite).

A fitted `Vocabulary` turns papers into L2-normalised sparse rows; the same vocabulary must
score what it trained, so every model records the `fingerprint` of the vocabulary it used.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from bot.core.models import Paper

if TYPE_CHECKING:
    from scipy import sparse
    from sklearn.feature_extraction.text import TfidfVectorizer

AUTHOR_PREFIX = "au_"  # author tokens stay apart from words of the text
SMALL_CORPUS = 20  # below this many papers every term is kept (min_df 1)


@dataclass(frozen=True, slots=True)
class TextFeatures:
    """How papers become tf-idf rows: the settings bench/relevance.py measures."""

    ngrams: int = 2  # words and pairs of adjacent words ("graph pooling")
    sublinear_tf: bool = True  # 1 + log(tf): a word said ten times is not ten times the topic
    min_df: int = 2  # a term seen in one paper only says nothing about a second one
    max_df: float = 0.5  # a term in more than half the papers tells them apart from nothing
    authors: bool = True  # one token per author: a researcher follows people too
    max_features: int = 20_000  # enough for a field's vocabulary, small to store


FEATURES = TextFeatures()

_NON_WORD = re.compile(r"[^0-9a-z]+")


def author_token(name: str) -> str:
    """`Eiko Yoneki` → `au_yoneki_e`: surname and first initial, as arXiv names are written."""
    parts = [p for p in _NON_WORD.split(name.lower()) if p]
    if not parts:
        return ""
    surname, initial = parts[-1], parts[0][0] if len(parts) > 1 else ""
    return f"{AUTHOR_PREFIX}{surname}_{initial}".rstrip("_")


def paper_text(paper: Paper, authors: bool = True) -> str:
    """The text a paper is known by: title, abstract and (with `authors`) one token per author."""
    if not authors:
        return f"{paper.title}\n{paper.abstract}"
    tokens = " ".join(filter(None, (author_token(name) for name in paper.authors)))
    return f"{paper.title}\n{paper.abstract}\n{tokens}"


@dataclass(frozen=True, slots=True, eq=False)
class Vocabulary:
    """A fitted tf-idf vectorizer, its settings and a fingerprint of its terms, weights and
    settings."""

    vectorizer: TfidfVectorizer
    fingerprint: str
    features: TextFeatures = FEATURES
    # scikit-learn builds its term list again on every get_feature_names_out() (about 20 ms
    # for 20,000 terms, holding the GIL); For you explains each chat's picks with it, so at
    # 2,000 chats that was 48 s of the evening's CPU. Built once here.
    _terms: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_terms", self.vectorizer.get_feature_names_out())

    @property
    def size(self) -> int:
        return len(self.vectorizer.vocabulary_)

    def transform(self, papers: Sequence[Paper]) -> sparse.csr_matrix:
        """One L2-normalised row per paper (float32)."""
        if not papers:
            from scipy import sparse  # imported when first needed: see bot/ranking/__init__.py

            return sparse.csr_matrix((0, self.size), dtype=np.float32)
        texts = [paper_text(p, self.features.authors) for p in papers]
        return self.vectorizer.transform(texts).astype(np.float32)

    def terms(self) -> np.ndarray:
        """The terms in column order."""
        return self._terms

    def dump(self) -> bytes:
        """The vocabulary as JSON (terms in column order, their idf and the settings), to store
        and reload."""
        return json.dumps({"terms": self.terms().tolist(), "idf": self.vectorizer.idf_.tolist(),
                           "features": asdict(self.features)}).encode()

    @classmethod
    def load(cls, data: bytes) -> Vocabulary:
        """A stored vocabulary. One stored before its settings were (or with other settings)
        gets another fingerprint than it was stored with, so the caller can refit it."""
        stored = json.loads(data)
        features = TextFeatures(**stored["features"]) if "features" in stored else None
        vectorizer = _vectorizer(features or FEATURES, min_df=1)
        vectorizer.vocabulary_ = {term: i for i, term in enumerate(stored["terms"])}
        vectorizer.idf_ = np.asarray(stored["idf"], dtype=np.float64)
        return cls(vectorizer, _fingerprint(stored["terms"], vectorizer.idf_, features),
                   features or FEATURES)


def _vectorizer(features: TextFeatures, min_df: int) -> TfidfVectorizer:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        lowercase=True, strip_accents="unicode", stop_words="english",
        ngram_range=(1, features.ngrams), min_df=min_df, max_df=features.max_df,
        max_features=features.max_features, sublinear_tf=features.sublinear_tf,
        token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_\-]+\b", dtype=np.float32,
    )


def _fingerprint(terms: Sequence[str], idf: np.ndarray, features: TextFeatures | None) -> str:
    digest = hashlib.sha256("\n".join(terms).encode())
    digest.update(np.round(np.asarray(idf, dtype=np.float64), 6).tobytes())
    digest.update(json.dumps(None if features is None else asdict(features)).encode())
    return digest.hexdigest()[:16]


def fit_vocabulary(papers: Sequence[Paper], features: TextFeatures = FEATURES
                   ) -> Vocabulary | None:
    """A vocabulary fitted on `papers`, or None when they are too few to have one."""
    min_df = features.min_df if len(papers) >= SMALL_CORPUS else 1
    vectorizer = _vectorizer(features, min_df)
    try:
        vectorizer.fit([paper_text(p, features.authors) for p in papers])
    except ValueError:  # no papers, or no term left after pruning
        return None
    terms = vectorizer.get_feature_names_out().tolist()
    return Vocabulary(vectorizer, _fingerprint(terms, vectorizer.idf_, features), features)

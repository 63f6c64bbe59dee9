"""Tf-idf over title + abstract + author tokens, fitted on the stored corpus (arxiv-sanity-lite).

A fitted `Vocabulary` turns papers into L2-normalised sparse rows; the same vocabulary must
score what it trained, so every model records the `fingerprint` of the vocabulary it used.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import sparse

from bot.models import Paper

if TYPE_CHECKING:
    from sklearn.feature_extraction.text import TfidfVectorizer

MAX_FEATURES = 20_000  # words and bigrams kept: enough for a field's vocabulary, small to store
MIN_DOCUMENT_FREQUENCY = 2  # a term seen in one paper only says nothing about a second one
AUTHOR_PREFIX = "au_"  # author tokens stay apart from words of the text

_NON_WORD = re.compile(r"[^0-9a-z]+")


def author_token(name: str) -> str:
    """`Eiko Yoneki` → `au_yoneki_e`: surname and first initial, as arXiv names are written."""
    parts = [p for p in _NON_WORD.split(name.lower()) if p]
    if not parts:
        return ""
    surname, initial = parts[-1], parts[0][0] if len(parts) > 1 else ""
    return f"{AUTHOR_PREFIX}{surname}_{initial}".rstrip("_")


def paper_text(paper: Paper) -> str:
    """The text a paper is known by: title, abstract and one token per author."""
    authors = " ".join(filter(None, (author_token(name) for name in paper.authors)))
    return f"{paper.title}\n{paper.abstract}\n{authors}"


@dataclass(frozen=True, slots=True, eq=False)
class Vocabulary:
    """A fitted tf-idf vectorizer and a fingerprint of its terms and weights."""

    vectorizer: TfidfVectorizer
    fingerprint: str

    @property
    def size(self) -> int:
        return len(self.vectorizer.vocabulary_)

    def transform(self, papers: Sequence[Paper]) -> sparse.csr_matrix:
        """One L2-normalised row per paper (float32)."""
        if not papers:
            return sparse.csr_matrix((0, self.size), dtype=np.float32)
        return self.vectorizer.transform([paper_text(p) for p in papers]).astype(np.float32)

    def terms(self) -> np.ndarray:
        return self.vectorizer.get_feature_names_out()

    def dump(self) -> bytes:
        """The vocabulary as JSON (terms in column order and their idf), to store and reload."""
        return json.dumps({"terms": self.terms().tolist(),
                           "idf": self.vectorizer.idf_.tolist()}).encode()

    @classmethod
    def load(cls, data: bytes) -> Vocabulary:
        stored = json.loads(data)
        vectorizer = _vectorizer(min_df=1)
        vectorizer.vocabulary_ = {term: i for i, term in enumerate(stored["terms"])}
        vectorizer.idf_ = np.asarray(stored["idf"], dtype=np.float64)
        return cls(vectorizer, _fingerprint(stored["terms"], vectorizer.idf_))


def _vectorizer(min_df: int) -> TfidfVectorizer:
    # Imported when first needed: scikit-learn costs about a second of CPU to import, which
    # every start-up and every operator command would pay before any chat has a model.
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(
        lowercase=True, strip_accents="unicode", stop_words="english", ngram_range=(1, 2),
        min_df=min_df, max_df=0.5, max_features=MAX_FEATURES, sublinear_tf=True,
        token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z0-9_\-]+\b", dtype=np.float32,
    )


def _fingerprint(terms: Sequence[str], idf: np.ndarray) -> str:
    digest = hashlib.sha256("\n".join(terms).encode())
    digest.update(np.round(np.asarray(idf, dtype=np.float64), 6).tobytes())
    return digest.hexdigest()[:16]


def fit_vocabulary(papers: Sequence[Paper]) -> Vocabulary | None:
    """A vocabulary fitted on `papers`, or None when they are too few to have one."""
    min_df = MIN_DOCUMENT_FREQUENCY if len(papers) >= 20 else 1
    vectorizer = _vectorizer(min_df)
    try:
        vectorizer.fit([paper_text(p) for p in papers])
    except ValueError:  # no papers, or no term left after pruning
        return None
    terms = vectorizer.get_feature_names_out().tolist()
    return Vocabulary(vectorizer, _fingerprint(terms, vectorizer.idf_))

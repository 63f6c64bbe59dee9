"""Per-chat linear models (arxiv-sanity-lite): positives against 👎 and other recent papers.

Positives are the chat's saved papers and 👍; negatives its 👎 (which win over a save) and a
sample of other recent papers. A chat gets a model once it has MIN_POSITIVES positives. The
weights are sparse (a term absent from every training paper has weight 0), so the models of all
chats stack into one sparse matrix and scoring a day's papers is one product.
"""

from __future__ import annotations

import hashlib
import io
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import numpy as np

from bot.ranking.features import Vocabulary

if TYPE_CHECKING:
    from scipy import sparse

MIN_POSITIVES = 5  # as Semantic Scholar's feeds: a handful of papers is enough to start


@dataclass(frozen=True, slots=True)
class Training:
    """How a chat's model is trained: the settings bench/relevance.py measures."""

    # Few labels: strong regularisation. With C this small the weights are close to the
    # (class-weighted) difference of the positives' and negatives' mean rows, which ranks best
    # with 5-20 positives: chosen by `bench/relevance.py --tune` on a corpus of its own (one
    # researcher's tagged papers), over 0.001-1 (arxiv-sanity-lite uses 0.01; it was 0.1).
    c: float = 0.001
    balanced: bool = True  # weigh the few positives as much as the many negatives together
    background: int = 500  # other recent papers taken as (weak) negatives


TRAINING = Training()


@dataclass(frozen=True, slots=True)
class ChatLabels:
    """What a chat told us: base ids it likes and dislikes."""

    positives: frozenset[str]
    negatives: frozenset[str]

    @classmethod
    def of(cls, saved: Sequence[str], more: Sequence[str], less: Sequence[str]) -> ChatLabels:
        negatives = frozenset(less)
        return cls(frozenset(saved).union(more) - negatives, negatives)

    @property
    def fingerprint(self) -> str:
        digest = hashlib.sha256()
        for mark, ids in (("+", self.positives), ("-", self.negatives)):
            for arxiv_id in sorted(ids):
                digest.update(f"{mark}{arxiv_id}\n".encode())
        return digest.hexdigest()[:16]

    @property
    def count(self) -> int:
        return len(self.positives) + len(self.negatives)


@dataclass(frozen=True, slots=True, eq=False)
class ChatModel:
    """One chat's weights (a 1 × vocabulary sparse row) and what it was trained from."""

    weights: sparse.csr_matrix
    intercept: float
    vocabulary: str  # the fingerprint of the vocabulary it was trained with
    labels: str  # the fingerprint of the labels it was trained on

    def dump(self) -> bytes:
        """The weights as raw arrays: a header, the term columns (int32), the weights (float32).

        Not compressed: a day's For-you round and digests load every chat's model, and
        decompressing one took about a millisecond, most of the cost of scoring it.
        """
        row = self.weights.tocsr()
        header = np.array([len(row.indices), row.shape[1]], dtype=np.int64).tobytes()
        return b"".join((_RAW, header, np.array([self.intercept]).tobytes(),
                         row.indices.astype(np.int32).tobytes(),
                         row.data.astype(np.float32).tobytes()))

    @classmethod
    def load(cls, data: bytes, vocabulary: str, labels: str) -> ChatModel:
        if not data.startswith(_RAW):
            return cls._load_compressed(data, vocabulary, labels)
        count, size = np.frombuffer(data, np.int64, 2, len(_RAW)).tolist()
        start = len(_RAW) + 16
        intercept = float(np.frombuffer(data, np.float64, 1, start)[0])
        indices = np.frombuffer(data, np.int32, count, start + 8)
        values = np.frombuffer(data, np.float32, count, start + 8 + 4 * count)
        from scipy import sparse  # imported when first needed: see bot/ranking/__init__.py

        weights = sparse.csr_matrix((values, indices, np.array([0, count])), shape=(1, size),
                                    dtype=np.float32)
        return cls(weights, intercept, vocabulary, labels)

    @classmethod
    def _load_compressed(cls, data: bytes, vocabulary: str, labels: str) -> ChatModel:
        """A model stored before the raw format: a compressed numpy archive."""
        from scipy import sparse

        with np.load(io.BytesIO(data)) as stored:
            size = int(stored["size"][0])
            weights = sparse.csr_matrix(
                (stored["data"], stored["indices"], np.array([0, len(stored["indices"])])),
                shape=(1, size), dtype=np.float32)
            return cls(weights, float(stored["intercept"][0]), vocabulary, labels)


_RAW = b"chatmodel1\n"  # what a model in the raw format starts with (a zip archive: "PK")
# Chats scored in one product: their weights as a dense terms × chats block (20,000 terms ×
# 250 chats is 20 MB of float32) bound the memory whatever the number of chats.
SCORE_BLOCK_CHATS = 250


class Trained(Protocol):
    """A model, loaded or still stored, by what it was trained from."""

    @property
    def vocabulary(self) -> str: ...

    @property
    def labels(self) -> str: ...


def is_current(model: Trained, vocabulary: Vocabulary, labels: ChatLabels) -> bool:
    """Whether `model` was trained on these labels with this vocabulary (no retraining due)."""
    return model.vocabulary == vocabulary.fingerprint and model.labels == labels.fingerprint


def train(vocabulary: Vocabulary, labels: ChatLabels, vectors: Mapping[str, int],
          matrix: sparse.csr_matrix, seed: int = 0, training: Training = TRAINING
          ) -> ChatModel | None:
    """A model for a chat, or None below MIN_POSITIVES positives with stored vectors.

    `matrix` holds the stored papers' rows; `vectors` maps base id → row.
    """
    positive_rows = sorted(vectors[i] for i in labels.positives if i in vectors)
    if len(positive_rows) < MIN_POSITIVES:
        return None
    negative_rows = sorted(vectors[i] for i in labels.negatives if i in vectors)
    taken = set(positive_rows) | set(negative_rows)
    others = np.array([row for row in range(matrix.shape[0]) if row not in taken], dtype=np.int64)
    rng = np.random.default_rng(abs(seed))  # a chat id: a group's is negative
    if len(others) > training.background:
        others = rng.choice(others, training.background, replace=False)
    rows = np.concatenate([positive_rows, negative_rows, np.sort(others)]).astype(np.int64)
    if len(rows) == len(positive_rows):
        return None  # nothing to contrast the positives with
    y = np.zeros(len(rows), dtype=np.int8)
    y[: len(positive_rows)] = 1
    from scipy import sparse
    from sklearn.svm import LinearSVC  # imported when first needed, as in features.py

    svm = LinearSVC(C=training.c, class_weight="balanced" if training.balanced else None,
                    tol=1e-6, max_iter=10_000)
    svm.fit(matrix[rows], y)
    weights = sparse.csr_matrix(svm.coef_.astype(np.float32))
    weights.eliminate_zeros()
    return ChatModel(weights, float(svm.intercept_[0]), vocabulary.fingerprint,
                     labels.fingerprint)


def stack(models: Sequence[ChatModel]) -> tuple[sparse.csr_matrix, np.ndarray]:
    """All chats' weights as one sparse matrix (chats × terms) and their intercepts."""
    from scipy import sparse

    weights = sparse.vstack([m.weights for m in models], format="csr", dtype=np.float32)
    return weights, np.array([m.intercept for m in models], dtype=np.float32)


def score(papers: sparse.csr_matrix, weights: sparse.csr_matrix,
          intercepts: np.ndarray) -> np.ndarray:
    """Scores of every paper for every chat (papers × chats), SCORE_BLOCK_CHATS at a time.

    A model weighs most terms of its training papers, so a block of models is nearly dense:
    a sparse × dense product over it is several times faster than a sparse × sparse one.
    """
    table = np.empty((papers.shape[0], weights.shape[0]), dtype=np.float32)
    for start in range(0, weights.shape[0], SCORE_BLOCK_CHATS):
        block = weights[start:start + SCORE_BLOCK_CHATS]
        # In C order: scipy copies a Fortran-ordered dense operand (`block.T.toarray()`) once
        # more before the product, a second block's worth of memory.
        dense = block.T.tocsr().toarray()
        table[:, start:start + block.shape[0]] = papers @ dense
        del dense
    return table + intercepts[np.newaxis, :]


def top_terms(model: ChatModel, paper: sparse.csr_matrix, terms: np.ndarray,
              count: int = 3) -> list[str]:
    """The terms that add most to this paper's score, best first (author tokens left out)."""
    contribution = paper.multiply(model.weights).tocsr()
    order = np.argsort(-contribution.data)
    chosen = []
    for index in order:
        if contribution.data[index] <= 0:
            break
        term = str(terms[contribution.indices[index]])
        if not term.startswith("au_"):
            chosen.append(term)
        if len(chosen) == count:
            break
    return chosen


def nearest(matrix: sparse.csr_matrix, query: sparse.csr_matrix, count: int,
            exclude: Sequence[int] = ()) -> list[tuple[int, float]]:
    """The `count` rows of `matrix` most similar (cosine) to `query`, best first."""
    similarity = (matrix @ query.T).toarray().ravel()
    if len(exclude):
        similarity[list(exclude)] = -1.0
    count = min(count, len(similarity))
    if count <= 0:
        return []
    best = np.argpartition(-similarity, count - 1)[:count]
    best = best[np.argsort(-similarity[best], kind="stable")]
    return [(int(i), float(similarity[i])) for i in best if similarity[i] > 0]

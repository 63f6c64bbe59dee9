"""Matching papers against subscriptions: a naive evaluator and an indexed `Matcher`.

`evaluate` is the reference semantics. `Matcher` indexes every subscription under a few "anchor"
keys, a set of which any matching paper must contain at least one (a category, an archive, an
author's surname, a word or a prefix), so a batch of papers only evaluates the subscriptions
whose anchors it hits.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.models import Match, Paper
from bot.query.parser import (
    MIN_PREFIX_LENGTH,
    And,
    Archive,
    Author,
    Category,
    Node,
    Not,
    Or,
    Text,
    archive_of,
    is_anchored,
    normalise_category,
)
from bot.query.text import PersonName, split_name, words


class PaperFeatures:
    """A paper's normalised words, authors and categories, computed once per paper."""

    __slots__ = ("_positions", "abstract", "abstract_set", "archives", "author_keys", "authors",
                 "categories", "title", "title_set", "word_set")

    def __init__(self, paper: Paper) -> None:
        self.title = words(paper.title)
        self.abstract = words(paper.abstract)
        self.title_set = frozenset(self.title)
        self.abstract_set = frozenset(self.abstract)
        self.word_set = self.title_set | self.abstract_set
        self.authors = tuple(n for n in map(split_name, paper.authors) if n is not None)
        self.author_keys = frozenset(name.key for name in self.authors)
        self.categories = frozenset(normalise_category(c) for c in paper.categories)
        self.archives = frozenset(archive_of(c) for c in paper.categories)
        self._positions: dict[tuple[bool, str], list[int]] = {}

    def _starts(self, in_title: bool, word: str) -> list[int]:
        key = (in_title, word)
        found = self._positions.get(key)
        if found is None:
            tokens = self.title if in_title else self.abstract
            found = [i for i, token in enumerate(tokens) if token == word]
            self._positions[key] = found
        return found

    def _has_phrase(self, in_title: bool, phrase: tuple[str, ...], prefix: bool) -> bool:
        tokens = self.title if in_title else self.abstract
        vocabulary = self.title_set if in_title else self.abstract_set
        whole = phrase[:-1] if prefix else phrase
        if not all(word in vocabulary for word in whole):
            return False
        if len(phrase) == 1:
            return not prefix or any(token.startswith(phrase[0]) for token in vocabulary)
        size = len(phrase)
        for start in self._starts(in_title, phrase[0]):
            window = tokens[start:start + size]
            if len(window) < size:
                break
            if prefix:
                if window[:-1] == list(phrase[:-1]) and window[-1].startswith(phrase[-1]):
                    return True
            elif tuple(window) == phrase:
                return True
        return False

    def has_text(self, term: Text) -> bool:
        """Whether the words of `term` occur, in order, in the field it names."""
        if term.field != "abs" and self._has_phrase(True, term.words, term.prefix):
            return True
        return term.field != "ti" and self._has_phrase(False, term.words, term.prefix)

    def has_author(self, name: PersonName) -> bool:
        if name.key not in self.author_keys:
            return False
        return any(name.matches(author) for author in self.authors)


def evaluate_features(node: Node, features: PaperFeatures) -> bool:
    """Evaluate a query against a paper's precomputed features."""
    match node:
        case Category(name):
            return name in features.categories
        case Archive(name):
            return name in features.archives
        case Author(name):
            return features.has_author(name)
        case Text():
            return features.has_text(node)
        case Not(child):
            return not evaluate_features(child, features)
        case And(children):
            return all(evaluate_features(c, features) for c in children)
        case Or(children):
            return any(evaluate_features(c, features) for c in children)
    raise TypeError(f"not a query node: {node!r}")


def evaluate(node: Node, paper: Paper) -> bool:
    """Whether `paper` matches the query: the reference the indexed `Matcher` must agree with."""
    return evaluate_features(node, PaperFeatures(paper))


# --- anchors -------------------------------------------------------------------------------

# Anchor keys are ("c", category), ("a", archive), ("u", surname key), ("w", word), ("p", prefix).
AnchorKey = tuple[str, str]

# Rough cost of an anchor (how many papers of a batch carry it), to pick the cheapest AND branch.
_COST = {"u": 1.0, "w": 3.0, "p": 6.0, "c": 20.0, "a": 60.0}


def _word_cost(word: str) -> float:
    # Longer words tend to be rarer; numbers and short words are everywhere.
    return _COST["w"] * (2.0 if len(word) <= 3 or word.isdigit() else 8.0 / min(len(word), 8))


def anchors(node: Node) -> frozenset[AnchorKey]:
    """Keys of which every paper matching `node` has at least one (empty if none exist)."""
    options = _anchor_options(node)
    return options[0] if options is not None else frozenset()


def _anchor_options(node: Node) -> tuple[frozenset[AnchorKey], float] | None:
    match node:
        case Category(name):
            return frozenset({("c", name)}), _COST["c"]
        case Archive(name):
            return frozenset({("a", name)}), _COST["a"]
        case Author(name):
            return frozenset({("u", name.key)}), _COST["u"]
        case Text(_, text_words, prefix):
            whole = text_words[:-1] if prefix else text_words
            if whole:
                best = max(whole, key=len)
                return frozenset({("w", best)}), _word_cost(best)
            return frozenset({("p", text_words[-1])}), _COST["p"]
        case Not():
            return None
        case And(children):
            found = [o for o in map(_anchor_options, children) if o is not None]
            return min(found, key=lambda option: option[1]) if found else None
        case Or(children):
            keys: set[AnchorKey] = set()
            cost = 0.0
            for child in children:
                option = _anchor_options(child)
                if option is None:
                    return None
                keys |= option[0]
                cost += option[1]
            return frozenset(keys), cost
    raise TypeError(f"not a query node: {node!r}")


@dataclass(frozen=True, slots=True)
class _Entry:
    sub_id: int
    chat_id: int
    node: Node
    keys: frozenset[AnchorKey]


class Matcher:
    """All subscriptions, indexed by anchor keys, for matching batches of papers."""

    def __init__(self) -> None:
        self._entries: dict[int, _Entry] = {}
        self._index: dict[AnchorKey, set[int]] = defaultdict(set)
        # Prefix anchors grouped by their first letters, so a paper's word finds its prefixes
        # with one lookup; the parser guarantees prefixes of at least MIN_PREFIX_LENGTH letters.
        self._prefix_first: dict[str, list[str]] = {}

    @classmethod
    def build(cls, subscriptions: Iterable[tuple[int, int, Node]]) -> Matcher:
        """A matcher holding every `(sub_id, chat_id, node)`."""
        matcher = cls()
        for sub_id, chat_id, node in subscriptions:
            matcher.add(sub_id, chat_id, node)
        return matcher

    def __len__(self) -> int:
        return len(self._entries)

    def add(self, sub_id: int, chat_id: int, node: Node) -> None:
        """Index one subscription (replacing any earlier one with that id)."""
        keys = anchors(node)
        if not keys or not is_anchored(node):
            raise ValueError(f"subscription {sub_id} has no positive term to index")
        if any(kind == "p" and len(value) < MIN_PREFIX_LENGTH for kind, value in keys):
            raise ValueError(f"subscription {sub_id} has a prefix shorter than "
                             f"{MIN_PREFIX_LENGTH} letters")
        self.remove(sub_id)
        self._entries[sub_id] = _Entry(sub_id, chat_id, node, keys)
        for key in keys:
            bucket = self._index[key]
            if not bucket and key[0] == "p":
                self._add_prefix(key[1])
            bucket.add(sub_id)

    def remove(self, sub_id: int) -> bool:
        """Forget a subscription; False if it was not there."""
        entry = self._entries.pop(sub_id, None)
        if entry is None:
            return False
        for key in entry.keys:
            bucket = self._index[key]
            bucket.discard(sub_id)
            if not bucket:
                del self._index[key]
                if key[0] == "p":
                    self._remove_prefix(key[1])
        return True

    def _add_prefix(self, prefix: str) -> None:
        self._prefix_first.setdefault(prefix[:MIN_PREFIX_LENGTH], []).append(prefix)

    def _remove_prefix(self, prefix: str) -> None:
        group = self._prefix_first[prefix[:MIN_PREFIX_LENGTH]]
        group.remove(prefix)
        if not group:
            del self._prefix_first[prefix[:MIN_PREFIX_LENGTH]]

    def candidates(self, features: PaperFeatures,
                   prefix_cache: dict[str, tuple[str, ...]] | None = None) -> set[int]:
        """Subscriptions whose anchors the paper hits: a superset of those it matches."""
        index = self._index
        found: set[int] = set()
        for key in [("c", c) for c in features.categories] + [("a", a) for a in
                                                               features.archives]:
            bucket = index.get(key)
            if bucket:
                found |= bucket
        for surname in features.author_keys:
            bucket = index.get(("u", surname))
            if bucket:
                found |= bucket
        cache = {} if prefix_cache is None else prefix_cache
        prefix_first = self._prefix_first
        for word in features.word_set:
            bucket = index.get(("w", word))
            if bucket:
                found |= bucket
            if prefix_first:
                hits = cache.get(word)
                if hits is None:
                    group = prefix_first.get(word[:MIN_PREFIX_LENGTH], ())
                    hits = tuple(p for p in group if word.startswith(p))
                    cache[word] = hits
                for prefix in hits:
                    found |= index[("p", prefix)]
        return found

    def match(self, papers: Sequence[Paper]) -> dict[int, list[Match]]:
        """Per chat, each matching paper (in input order) with its matching subscription ids."""
        results: dict[int, list[Match]] = {}
        entries = self._entries
        prefix_cache: dict[str, tuple[str, ...]] = {}
        for paper in papers:
            features = PaperFeatures(paper)
            per_chat: dict[int, list[int]] = {}
            for sub_id in self.candidates(features, prefix_cache):
                entry = entries[sub_id]
                if evaluate_features(entry.node, features):
                    per_chat.setdefault(entry.chat_id, []).append(sub_id)
            for chat_id, sub_ids in per_chat.items():
                results.setdefault(chat_id, []).append(
                    Match(chat_id, paper, tuple(sorted(sub_ids)))
                )
        return results

"""Matching papers against subscriptions: a naive evaluator and an indexed `Matcher`.

`evaluate` is the reference semantics: one query, one paper. `Matcher` holds every subscription
and files each under a few anchor keys (a category, an archive, an author's surname or initial
and surname, a word or a pair of adjacent words of the title or abstract, a prefix), keys of
which every matching paper has at least one. A paper then looks up only its own keys: most
subscriptions (a lone category, author, word or phrase, and their ORs) are decided by those
lookups alone, the rest by a check of a few more keys or, rarely, by evaluating the query on
the paper's precomputed features.
"""

from __future__ import annotations

import gc
from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import lru_cache
from itertools import chain, islice, pairwise
from operator import itemgetter, lt
from typing import NamedTuple

import numpy as np

from bot.arxiv.taxonomy import listed_in
from bot.core.models import Paper
from bot.query.alerts import Alerts
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
    is_anchored,
)
from bot.query.text import NamePart, PersonName, plain_name, split_name, word_text, words


def _pairs(tokens: list[str]) -> frozenset[str]:
    """Adjacent words as "graph neural": a two-word phrase is then one set lookup."""
    return frozenset(map(" ".join, pairwise(tokens)))


class PaperFeatures:
    """A paper's normalised words, authors and categories, computed once per paper."""

    __slots__ = ("_pairs", "_positions", "_sorted", "abstract", "abstract_set", "archives",
                 "author_keys", "authors", "categories", "title", "title_set",
                 "word_set")

    def __init__(self, paper: Paper) -> None:
        self._fill(paper, words(paper.title), words(paper.abstract), split_name)

    @classmethod
    def from_words(cls, paper: Paper, title: list[str], abstract: list[str]) -> PaperFeatures:
        """The features of a paper whose title and abstract words are already known."""
        features = cls.__new__(cls)
        features._fill(paper, title, abstract, _person)
        return features

    def _fill(self, paper: Paper, title: list[str], abstract: list[str],
              split: Callable[[str], PersonName | None]) -> None:
        self.title = title
        self.abstract = abstract
        self.title_set = frozenset(self.title)
        self.abstract_set = frozenset(self.abstract)
        self.word_set = self.title_set | self.abstract_set
        self.authors = tuple(n for n in map(split, paper.authors) if n is not None)
        self.author_keys = frozenset(name.key for name in self.authors)
        listed = [listed_in(c) for c in paper.categories]
        self.categories = frozenset(category for category, _archive in listed)
        self.archives = frozenset(archive for _category, archive in listed)
        self._positions: dict[tuple[bool, str], list[int]] = {}
        self._sorted: dict[bool, list[str]] = {}
        self._pairs: dict[bool, frozenset[str]] = {}

    def pairs(self, in_title: bool) -> frozenset[str]:
        """The title's (or abstract's) adjacent word pairs, "graph neural"."""
        found = self._pairs.get(in_title)
        if found is None:
            found = self._pairs[in_title] = _pairs(self.title if in_title else self.abstract)
        return found

    def _starts(self, in_title: bool, word: str) -> list[int]:
        key = (in_title, word)
        found = self._positions.get(key)
        if found is None:
            tokens = self.title if in_title else self.abstract
            found = [i for i, token in enumerate(tokens) if token == word]
            self._positions[key] = found
        return found

    def _has_prefix(self, in_title: bool, prefix: str) -> bool:
        vocabulary = self._sorted.get(in_title)
        if vocabulary is None:
            vocabulary = sorted(self.title_set if in_title else self.abstract_set)
            self._sorted[in_title] = vocabulary
        # In sorted order, the first word not below the prefix is the one that may start with it.
        index = bisect_left(vocabulary, prefix)
        return index < len(vocabulary) and vocabulary[index].startswith(prefix)

    def _has_phrase(self, in_title: bool, phrase: tuple[str, ...], prefix: bool) -> bool:
        tokens = self.title if in_title else self.abstract
        vocabulary = self.title_set if in_title else self.abstract_set
        whole = phrase[:-1] if prefix else phrase
        if not all(word in vocabulary for word in whole):
            return False
        if len(phrase) == 1:
            return not prefix or self._has_prefix(in_title, phrase[0])
        if not prefix and len(phrase) == 2:
            return " ".join(phrase) in self.pairs(in_title)
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
        if len(term.words) == 1 and not term.prefix:
            vocabulary = {"any": self.word_set, "ti": self.title_set, "abs": self.abstract_set}
            return term.words[0] in vocabulary[term.field]
        if term.field != "abs" and self._has_phrase(True, term.words, term.prefix):
            return True
        return term.field != "ti" and self._has_phrase(False, term.words, term.prefix)

    def has_author(self, name: PersonName) -> bool:
        if name.key not in self.author_keys:
            return False
        return any(name.matches(author) for author in self.authors)


def evaluate_features(node: Node, features: PaperFeatures) -> bool:
    """Evaluate a query against a paper's precomputed features."""
    # Dispatch on the exact type, commonest first: this runs for every candidate of every paper.
    kind = type(node)
    if kind is Text:
        return features.has_text(node)
    if kind is And:
        return all(evaluate_features(child, features) for child in node.children)
    if kind is Or:
        return any(evaluate_features(child, features) for child in node.children)
    if kind is Not:
        return not evaluate_features(node.child, features)
    if kind is Category:
        return node.name in features.categories
    if kind is Author:
        return features.has_author(node.name)
    if kind is Archive:
        return node.name in features.archives
    raise TypeError(f"not a query node: {node!r}")


def evaluate(node: Node, paper: Paper) -> bool:
    """Whether `paper` matches the query: the reference the indexed `Matcher` must agree with."""
    return evaluate_features(node, PaperFeatures(paper))


# --- anchors -------------------------------------------------------------------------------

# An anchor key is (kind, value): ("c", category), ("a", archive), ("u", surname), a word in
# the title or abstract ("w"), the title ("t") or the abstract ("b"), two adjacent words in
# them ("w2", "t2", "b2"), or a prefix of such a word ("pw", "pt", "pb").
AnchorKey = tuple[str, str]

_WORD_KIND = {"any": "w", "ti": "t", "abs": "b"}
_PAIR_KIND = {"any": "w2", "ti": "t2", "abs": "b2"}
_PAIR_KINDS = frozenset(_PAIR_KIND.values())
_PREFIX_KIND = {"any": "pw", "ti": "pt", "abs": "pb"}
# Rough cost of an anchor (how many papers of a batch carry it), to pick the cheapest AND branch.
_COST = {"u": 1.0, "u1": 0.5, "uf": 0.3, "ua": 0.3, "w": 3.0, "t": 1.5, "b": 3.0, "w2": 0.4,
         "t2": 0.2, "b2": 0.4, "pw": 6.0, "pt": 3.0, "pb": 6.0, "c": 20.0, "a": 60.0}


def _word_cost(kind: str, word: str) -> float:
    # Longer words tend to be rarer; numbers and short words are everywhere.
    rarity = 2.0 if len(word) <= 3 or word.isdigit() else 8.0 / min(len(word), 8)
    return _COST[kind] * rarity


def anchors(node: Node) -> frozenset[AnchorKey]:
    """Keys of which every paper matching `node` has at least one (empty if none exist)."""
    options = _anchor_options(node)
    return options[0] if options is not None else frozenset()


def _phrase_pairs(text_words: tuple[str, ...]) -> list[str]:
    """A phrase's adjacent word pairs, longest (so likely rarest) first."""
    pairs = {f"{a} {b}" for a, b in pairwise(text_words)}
    return sorted(pairs, key=lambda pair: (-len(pair), pair))


def _anchor_options(node: Node) -> tuple[frozenset[AnchorKey], float] | None:
    match node:
        case Category(name):
            return frozenset({("c", name)}), _COST["c"]
        case Archive(name):
            return frozenset({("a", name)}), _COST["a"]
        case Author(name):
            return _author_options(name)[:2]
        case Text(field, text_words, prefix):
            whole = text_words[:-1] if prefix else text_words
            if len(whole) >= 2:
                # The words of a phrase are adjacent in every paper it matches.
                kind = _PAIR_KIND[field]
                return frozenset({(kind, _phrase_pairs(whole)[0])}), _COST[kind]
            if whole:
                kind = _WORD_KIND[field]
                return frozenset({(kind, whole[0])}), _word_cost(kind, whole[0])
            kind = _PREFIX_KIND[field]
            return frozenset({(kind, text_words[-1])}), _COST[kind]
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


def _author_options(name: PersonName) -> tuple[frozenset[AnchorKey], float, bool]:
    """An author query's anchor keys, their cost and whether they decide it.

    A name the keys cannot decide (`J. A. Smith`, `Hao Jui Chen`) is still filed under keys
    every match has: an author with that surname, with a part that agrees with the query's
    first, so carrying its initial ("u1"), or for a full part of three letters or more, the
    part itself or its abbreviations, as for a lone given name.
    """
    keys = _author_keys(name)
    if keys:
        return keys, _COST["uf"], True
    given, surname = name.given, name.surname
    key = surname[-1]
    if not given and len(surname) == 1:
        return frozenset({("u", key)}), _COST["u"], False
    first = given[0] if given else NamePart(surname[0])
    if not first.abbreviated and len(first.text) >= 3:
        return _author_keys(PersonName((first,), (key,))), _COST["uf"], False
    return frozenset({("u1", f"{first.text[0]} {key}")}), _COST["u1"], False


def _author_keys(name: PersonName) -> frozenset[AnchorKey]:
    """Keys that decide an author query exactly, or none if only evaluation can tell.

    Mirrors `PersonName.matches` for the common shapes: `Yoneki`, `E. Yoneki`, `Eiko Yoneki`.
    """
    # `name.leading()` is the given names and the surname's words but its last, built only
    # when there is exactly one: this runs for every author subscription of the index.
    given, surname = name.given, name.surname
    key = surname[-1]
    count = len(given) + len(surname) - 1
    if not count:
        return frozenset({("u", key)})
    if count > 1:
        return frozenset()
    if given:
        text, abbreviated = given[0].text, given[0].abbreviated
    else:
        text, abbreviated = surname[0], False
    if abbreviated:
        # An initial agrees with every part starting with that letter, and only with those.
        if len(text) > 1:
            return frozenset()
        return frozenset({("u1", f"{text} {key}")})
    if len(text) < 3:
        return frozenset()  # a longer abbreviation ("Eik.") could still agree with it
    # A full name agrees with itself and with its abbreviations (at most three letters).
    return frozenset({("uf", f"{text} {key}"), ("ua", f"{text[0]} {key}"),
                      ("ua", f"{text[:2]} {key}"), ("ua", f"{text[:3]} {key}")})


def _decidable(node: Node) -> bool:
    """Whether a paper matches `node` exactly when it carries one of the node's anchor keys."""
    match node:
        case Category() | Archive():
            return True
        case Author(name):
            return bool(_author_keys(name))
        case Text(_, text_words, prefix):
            # One word, one prefix or two words in a row: exactly what its key records.
            return len(text_words) == 1 or (len(text_words) == 2 and not prefix)
        case Or(children):
            return all(map(_decidable, children))
    return False


class _Plan(NamedTuple):
    """How the index decides one subscription: by its keys alone, or by checks after them."""

    chat_id: int
    node: Node
    first: frozenset[AnchorKey]  # filed under these: a match hits one of them
    second: frozenset[AnchorKey] = frozenset()  # if any, a match also hits one of these
    exclude: frozenset[AnchorKey] = frozenset()  # a match hits none of these
    sure: frozenset[AnchorKey] = frozenset()  # hitting one of these is enough (OR branches)
    decided: bool = True  # the keys are the whole query: no evaluation needed

    def looked_at(self) -> Iterator[AnchorKey]:
        """Every key the plan looks at."""
        yield from self.first
        yield from self.second
        yield from self.exclude
        yield from self.sure


def _plan(chat_id: int, node: Node) -> _Plan:
    if _decidable(node):
        return _Plan(chat_id, node, anchors(node))
    match node:
        case Or(children):
            # The OR's decidable branches settle a match on their own; the rest are evaluated.
            sure = frozenset().union(*(anchors(c) for c in children if _decidable(c)))
            return _Plan(chat_id, node, anchors(node), sure=sure, decided=False)
        case And(children):
            positive = [c for c in children if not isinstance(c, Not)]
            negative = [c.child for c in children if isinstance(c, Not)]
            options = [o for o in map(_anchor_options, positive) if o is not None]
            options.sort(key=lambda option: option[1])
            excluded = [anchors(c) for c in negative if _decidable(c)]
            decided = (len(positive) <= 2 and all(map(_decidable, positive))
                       and len(excluded) == len(negative))
            # Only the cheapest group is indexed: checking a second on the few papers that pass
            # the first is cheaper than collecting everything it hits (often a whole category).
            second = options[1][0] if len(options) > 1 else frozenset()
            return _Plan(chat_id, node, options[0][0], second, frozenset().union(*excluded),
                         decided=decided)
        case Text(field, text_words, prefix):
            # A longer phrase needs two of its word pairs: a far tighter filter than one.
            pairs = _phrase_pairs(text_words[:-1] if prefix else text_words)
            if len(pairs) >= 2:
                kind = _PAIR_KIND[field]
                return _Plan(chat_id, node, frozenset({(kind, pairs[0])}),
                             frozenset({(kind, pairs[1])}), decided=False)
    return _Plan(chat_id, node, anchors(node), decided=False)


def _term(node: Node) -> tuple[frozenset[AnchorKey], float, bool] | None:
    """A lone term's `_anchor_options` and whether it is `_decidable`, for the common terms
    (None for the rest, and for a prefix too short to index: `_plan` deals with those)."""
    kind = type(node)
    if kind is Text:
        text_words = node.words
        if len(text_words) == 1:
            word = text_words[0]
            if not node.prefix:
                key_kind = _WORD_KIND[node.field]
                return frozenset({(key_kind, word)}), _word_cost(key_kind, word), True
            if len(word) >= MIN_PREFIX_LENGTH:
                key_kind = _PREFIX_KIND[node.field]
                return frozenset({(key_kind, word)}), _COST[key_kind], True
        elif len(text_words) == 2 and not node.prefix:
            key_kind = _PAIR_KIND[node.field]
            return (frozenset({(key_kind, f"{text_words[0]} {text_words[1]}")}),
                    _COST[key_kind], True)
        return None
    if kind is Author:
        return _author_options(node.name)
    if kind is Category:
        return frozenset({("c", node.name)}), _COST["c"], True
    if kind is Archive:
        return frozenset({("a", node.name)}), _COST["a"], True
    return None


_cost_of = itemgetter(1)


def _and_plan(chat_id: int, node: And) -> _Plan | None:
    """`_plan` of an AND of common terms and exclusions of them; None for any other AND."""
    positive = []
    negative = []
    for child in node.children:
        if type(child) is Not:
            term = _term(child.child)
            if term is None:
                return None
            negative.append(term)
        else:
            term = _term(child)
            if term is None:
                return None
            positive.append(term)
    if not positive:
        return None
    positive.sort(key=_cost_of)
    excluded = [keys for keys, _, decidable in negative if decidable]
    decided = (len(positive) <= 2 and all([decidable for _, _, decidable in positive])
               and len(excluded) == len(negative))
    second = positive[1][0] if len(positive) > 1 else frozenset()
    return _Plan(chat_id, node, positive[0][0], second, frozenset().union(*excluded),
                 decided=decided)


def _or_plan(chat_id: int, node: Or) -> _Plan | None:
    """`_plan` of an OR of common terms that each decide it; None for any other OR."""
    keys: list[frozenset[AnchorKey]] = []
    for child in node.children:
        term = _term(child)
        if term is None or not term[2]:
            return None
        keys.append(term[0])
    return _Plan(chat_id, node, frozenset().union(*keys))


def _checked_plan(sub_id: int, chat_id: int, node: Node) -> _Plan:
    # The commonest shapes first, planned directly: what `_plan` would make of them.
    kind = type(node)
    if kind is And:
        plan = _and_plan(chat_id, node)
        if plan is not None:
            return plan
    elif kind is Or:
        plan = _or_plan(chat_id, node)
        if plan is not None:
            return plan
    if kind is Text:
        text_words = node.words
        if len(text_words) == 1:
            word = text_words[0]
            if not node.prefix:
                return _Plan(chat_id, node, frozenset({(_WORD_KIND[node.field], word)}))
            if len(word) >= MIN_PREFIX_LENGTH:
                return _Plan(chat_id, node, frozenset({(_PREFIX_KIND[node.field], word)}))
        elif len(text_words) == 2 and not node.prefix:
            return _Plan(chat_id, node, frozenset(
                {(_PAIR_KIND[node.field], f"{text_words[0]} {text_words[1]}")}))
    elif kind is Author:
        keys = _author_keys(node.name)
        if keys:
            return _Plan(chat_id, node, keys)
    elif kind is Category:
        return _Plan(chat_id, node, frozenset({("c", node.name)}))
    elif kind is Archive:
        return _Plan(chat_id, node, frozenset({("a", node.name)}))
    if not is_anchored(node):
        raise ValueError(f"subscription {sub_id} has no positive term to index")
    plan = _plan(chat_id, node)
    if any(kind[0] == "p" and len(value) < MIN_PREFIX_LENGTH
           for kind, value in plan.looked_at()):
        raise ValueError(f"subscription {sub_id} has a prefix shorter than "
                         f"{MIN_PREFIX_LENGTH} letters")
    return plan


# --- the compiled index --------------------------------------------------------------------

# Which of a word's three tables a text kind uses: anywhere, the title, the abstract.
_FIELD_OF = {"w": 0, "t": 1, "b": 2, "w2": 0, "t2": 1, "b2": 2, "pw": 0, "pt": 1, "pb": 2}
_PAIR_SHIFT = 32
# Where `_Compiled.name_parts` files a key of each kind.
_NAME_PART = {"u1": 0, "uf": 1, "ua": 2}
# Past this many words known to have no key and no registered prefix, that memory starts afresh.
_MAX_BORING_WORDS = 500_000
# How many papers' words are numbered at a time.
_CHUNK_PAPERS = 250
# Past this many author names remembered with their keys, that memory starts afresh.
_MAX_REMEMBERED_NAMES = 100_000
# Past this many removed subscriptions (and a quarter of them all), the index is rebuilt.
_MAX_DEAD = 2_000


def _expand(pointers: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each `rows[i]`, its positions `pointers[r]:pointers[r + 1]`: (i repeated, positions)."""
    starts = pointers[rows]
    lengths = pointers[rows + 1] - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(len(rows), dtype=np.int64), lengths)
    # Position k of the output is k - (where its row's run starts) + (where the row starts).
    run_starts = np.cumsum(lengths) - lengths
    positions = np.arange(total, dtype=np.int64) + (starts - run_starts)[owner]
    return owner, positions


def _csr(rows: list[int] | np.ndarray, size: int,
         *columns: list[int] | np.ndarray) -> tuple[np.ndarray, ...]:
    """Row pointers of length `size + 1` and each column sorted by row (stable)."""
    row_array = np.asarray(rows, dtype=np.int64)
    order = np.argsort(row_array, kind="stable")
    pointers = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_array, minlength=size), out=pointers[1:])
    return (pointers, *(np.asarray(column, dtype=np.int64)[order] for column in columns))


def _ragged(groups: list[tuple[int, ...]]) -> tuple[np.ndarray, np.ndarray]:
    """Row pointers and the concatenated values of a list of tuples."""
    lengths = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
    pointers = np.zeros(len(groups) + 1, dtype=np.int64)
    np.cumsum(lengths, out=pointers[1:])
    values = np.fromiter(chain.from_iterable(groups), dtype=np.int64, count=int(pointers[-1]))
    return pointers, values


def _unique(values: np.ndarray) -> np.ndarray:
    """The distinct values, sorted."""
    values = np.sort(values)
    if len(values) > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def _carries(carried: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Which of `wanted` are in the sorted array `carried`."""
    if not len(carried):
        return np.zeros(len(wanted), dtype=bool)
    where = np.searchsorted(carried, wanted)
    where[where == len(carried)] = 0
    return carried[where] == wanted


def _any_per(owner: np.ndarray, hit: np.ndarray, size: int) -> np.ndarray:
    """For each of `size` items, whether any of its rows (`owner`) hit."""
    found = np.zeros(size, dtype=bool)
    found[owner[hit]] = True
    return found


@lru_cache(maxsize=32_768)
def _person(name: str) -> PersonName | None:
    """`split_name`, remembered: the same authors come back poll after poll."""
    return split_name(name)


# --- words as packed integers --------------------------------------------------------------

# A word of up to 24 bytes (UTF-8) is three 64-bit integers, its bytes zero-padded: a batch's
# words are compared with the known ones as arrays, without a Python string each. No word holds
# a zero byte, so the padding cannot make two words alike.
_PACKED = 24
# The bytes words are made of in `word_text`: ASCII letters and digits, and every byte of a
# non-ASCII character (UTF-8 never uses an ASCII byte inside one).
_WORD_BYTES = np.zeros(256, dtype=bool)
_WORD_BYTES[[ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"]] \
    = True
_WORD_BYTES[128:] = True
# _MASKS[n] keeps the first n bytes of a packed word.
_MASKS = np.ascontiguousarray(
    (np.arange(_PACKED) < np.arange(_PACKED + 1)[:, None]).astype(np.uint8) * np.uint8(255)
).view(np.uint64)
# A word table's slots are kept at least this many times its words, so probes are short.
_SPARSENESS = 3
_EMPTY = -2  # a word table's empty slot
# The first three bytes of a packed word: a word with a prefix (three letters or more) starts
# with that prefix's three first bytes.
_STEM = _MASKS[MIN_PREFIX_LENGTH, 0]
_HASH_FACTORS = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xC2B2AE3D27D4EB4F),
                 np.uint64(0x165667B19E3779F9))


def _hash(rows: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each packed word (a row of three integers); equal words hash alike."""
    found = rows[:, 0] * _HASH_FACTORS[0]
    found += rows[:, 1] * _HASH_FACTORS[1]
    found += rows[:, 2] * _HASH_FACTORS[2]
    found ^= found >> np.uint64(29)
    return found


def _pack(texts: list[str]) -> np.ndarray:
    """The packed rows of words (those over 24 bytes cut short: the caller keeps them apart)."""
    data = b"".join(word.encode()[:_PACKED].ljust(_PACKED, b"\0") for word in texts)
    return np.frombuffer(data, dtype=np.uint64).reshape(len(texts), 3)


class _WordTable:
    """Packed words and their numbers: an open-addressing hash table in numpy arrays, so a
    batch's words are looked up together, a probe or two each. A word's slot holds its packed
    bytes (the table is exact, whatever the hash) and its number, or -1 for a boring word."""

    __slots__ = ("count", "first", "second", "third", "values")

    def __init__(self, capacity: int = 1 << 16) -> None:
        # (2 MB to start: a first batch of 2,000 papers meets some 15,000 new words.)
        self.values = np.full(capacity, _EMPTY, dtype=np.int64)
        self.first = np.zeros(capacity, dtype=np.uint64)  # the packed word, by slot
        self.second = np.zeros(capacity, dtype=np.uint64)
        self.third = np.zeros(capacity, dtype=np.uint64)
        self.count = 0

    def find(self, hashes: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Each word's slot, or -1 for words not here (`hashes` are the rows' `_hash`)."""
        found = np.full(len(hashes), -1, dtype=np.int64)
        mask = len(self.values) - 1
        pending = np.arange(len(hashes), dtype=np.int64)
        position = (hashes & np.uint64(mask)).astype(np.int64)
        first, second, third = rows[:, 0], rows[:, 1], rows[:, 2]
        while len(pending):
            # (`take` is the quicker gather for a flat array.)
            same = ((self.first.take(position) == first) & (self.second.take(position) == second)
                    & (self.third.take(position) == third))
            found[pending[same]] = position[same]
            left = ~same & (self.values.take(position) != _EMPTY)
            if not left.any():
                break
            pending, position = pending[left], (position[left] + 1) & mask
            first, second, third = first[left], second[left], third[left]
        # An empty slot's zero bytes are no word's, so only an occupied slot was found.
        return found

    def add(self, hashes: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
        """Add distinct words, none of them here yet."""
        if _SPARSENESS * (self.count + len(hashes)) > len(self.values):
            capacity = len(self.values)
            while _SPARSENESS * (self.count + len(hashes)) > capacity:
                capacity *= 2
            held = np.flatnonzero(self.values != _EMPTY)
            old_rows = np.stack((self.first[held], self.second[held], self.third[held]), axis=1)
            old_values = self.values[held]
            self.__init__(capacity)  # type: ignore[misc]
            self._place(_hash(old_rows), old_rows, old_values)
        self._place(hashes, rows, values)

    def _place(self, hashes: np.ndarray, rows: np.ndarray, values: np.ndarray) -> None:
        self.count += len(hashes)
        mask = len(self.values) - 1
        pending = np.arange(len(hashes), dtype=np.int64)
        position = (hashes & np.uint64(mask)).astype(np.int64)
        # In rounds: each word takes the next free slot of its probe sequence, one per slot.
        while len(pending):
            free = np.flatnonzero(self.values[position] == _EMPTY)
            _, first = np.unique(position[free], return_index=True)
            placed = free[first]
            at, word = position[placed], pending[placed]
            self.values[at] = values[word]
            self.first[at], self.second[at], self.third[at] = rows[word].T
            left = np.ones(len(pending), dtype=bool)
            left[placed] = False
            pending, position = pending[left], (position[left] + 1) & mask


class _Words(NamedTuple):
    """The known words' tables as numpy arrays."""

    keys: np.ndarray  # (3, words): the key of each word anywhere / in the title / abstract
    pair_start: np.ndarray  # per word: whether a word pair key starts with it
    prefix_pointers: np.ndarray  # per word: its registered prefixes, rows of prefix_ids
    prefix_ids: np.ndarray
    stems: np.ndarray  # sorted: the first three bytes of each registered prefix, packed


class _Arrays(NamedTuple):
    """A snapshot of the compiled index as numpy arrays, for one batch (or more, unchanged)."""

    key_count: int
    prefix_keys: np.ndarray  # (3, prefixes): the key of each prefix anywhere / title / abstract
    pair_codes: tuple[np.ndarray, np.ndarray, np.ndarray]  # per field: sorted word-pair codes
    pair_keys: tuple[np.ndarray, np.ndarray, np.ndarray]  # and their keys
    decided_pointers: np.ndarray  # key -> subscriptions it decides alone
    decided_ranks: np.ndarray
    paired_pointers: np.ndarray  # key -> (second key, subscription) it decides with another
    paired_seconds: np.ndarray
    paired_ranks: np.ndarray
    checked_pointers: np.ndarray  # key -> checked plans (their index among checked plans)
    checked_plans: np.ndarray
    checked_ranks: np.ndarray  # per checked plan: its subscription's rank
    checked_decided: np.ndarray  # per checked plan: whether its keys decide it
    second_pointers: np.ndarray  # per checked plan: keys of which a match has one
    second_keys: np.ndarray
    exclude_pointers: np.ndarray  # per checked plan: keys of which a match has none
    exclude_keys: np.ndarray
    sure_pointers: np.ndarray  # per checked plan: keys any of which makes it a match
    sure_keys: np.ndarray
    alive: np.ndarray | None  # per rank, if some subscriptions were removed since the build
    sub_ids: np.ndarray  # per rank
    chat_rank: np.ndarray  # per rank: its chat, an index into chats
    chats: np.ndarray
    rank_of: dict[int, int]


class _Compiled:
    """The index compiled into integer key ids, tables of rows and arrays.

    Every key a plan looks at gets an integer id. Subscriptions decided by one key are rows of
    a key -> subscription table, those decided by two keys rows of a key -> (second key,
    subscription) table, and the rest rows of a key -> checked plan table, with the checked
    plans' second, excluded and sure keys beside: a batch's matches are array operations over
    the (paper, key) pairs its papers carry, and only the few checked candidates that keys
    cannot decide are evaluated one by one. Subscriptions are numbered in id order (their rank).

    The words of the title and abstract are numbered too (those some key or registered prefix
    needs), each with its keys, so a batch's text is one array of word numbers. The index only
    grows: a subscription added with a higher id than any is appended, a removed one is marked
    dead; anything else (an id reused, many dead) makes the matcher compile afresh.
    """

    def __init__(self) -> None:
        self.key_ids: dict[AnchorKey, int] = {}
        # Keys a paper's categories and surnames are looked up in, by kind: c, a, u.
        self.by_kind: dict[str, dict[str, int]] = {kind: {} for kind in ("c", "a", "u")}
        # Per surname of a u1, uf or ua key, its keys by the name part before it: by initial
        # (u1), by the part written in full (uf) and by the part abbreviated (ua).
        self.name_parts: dict[str, tuple[dict[str, int], dict[str, int], dict[str, int]]] = {}
        self.vocabulary: dict[str, int] = {}
        self.word_keys: tuple[list[int], list[int], list[int]] = ([], [], [])
        self.pair_start: list[bool] = []
        self.word_prefixes: list[tuple[int, ...]] = []
        # The known words of up to 24 bytes with their numbers, and the boring ones (with
        # neither keys nor registered prefixes) with -1; the longer boring words in a set.
        self.boring: set[str] = set()
        self.boring_count = 0
        self.table = _WordTable()
        self.table_words = 0  # how many known words the table has seen
        self.prefix_ids: dict[str, int] = {}
        self.stems = np.zeros(0, dtype=np.uint64)
        self.stems_of = 0  # how many prefixes `stems` has seen
        self.prefix_first: dict[str, list[tuple[str, int]]] = {}
        self.prefix_keys: tuple[list[int], list[int], list[int]] = ([], [], [])
        self.prefixes_changed = False
        self.pair_keys: tuple[dict[int, int], dict[int, int], dict[int, int]] = ({}, {}, {})
        self.decided_keys: list[int] = []
        self.decided_ranks: list[int] = []
        self.paired_keys: list[int] = []
        self.paired_seconds: list[int] = []
        self.paired_ranks: list[int] = []
        self.checked_keys: list[int] = []
        self.checked_plans: list[int] = []
        self.checked_ranks: list[int] = []
        self.checked_nodes: list[Node] = []
        self.checked_decided: list[bool] = []
        self.second: list[tuple[int, ...]] = []
        self.exclude: list[tuple[int, ...]] = []
        self.sure: list[tuple[int, ...]] = []
        self.sub_ids: list[int] = []
        self.rank_of: dict[int, int] = {}
        self.chat_index: dict[int, int] = {}
        self.chats: list[int] = []
        self.chat_rank: list[int] = []
        self.dead: set[int] = set()
        self.last_id: int | None = None
        # What a paper's author name or category carries: key ids, by the text as written.
        self.author_keys: dict[str, tuple[int, ...]] = {}
        self.category_keys: dict[str, tuple[int, ...]] = {}
        self._arrays: _Arrays | None = None
        self._words: _Words | None = None

    # -- building ---------------------------------------------------------------------------

    def extend(self, subscriptions: Iterable[tuple[int, int, Node]]) -> None:
        """Append `(sub_id, chat_id, node)`s, in increasing id order, every id above those
        already here. A subscription that cannot be indexed raises ValueError (`Matcher.add`
        checks first; a failed build is thrown away)."""
        key_ids = self.key_ids
        sub_ids = self.sub_ids
        chat_index = self.chat_index
        chat_rank = self.chat_rank
        decided_keys, decided_ranks = self.decided_keys, self.decided_ranks
        chats = self.chats
        start = len(sub_ids)
        known = len(key_ids)
        for rank, (sub_id, chat_id, node) in enumerate(subscriptions, start):
            sub_ids.append(sub_id)
            chat = chat_index.get(chat_id)
            if chat is None:
                chat = chat_index[chat_id] = len(chats)
                chats.append(chat_id)
            chat_rank.append(chat)
            # The commonest shapes, decided by their keys alone, without a `_Plan`: what
            # `_checked_plan` makes of them (one key each, an author's up to four).
            kind = type(node)
            if kind is Text:
                text_words = node.words
                if len(text_words) == 1:
                    word = text_words[0]
                    if not node.prefix:
                        key: AnchorKey = (_WORD_KIND[node.field], word)
                        decided_keys.append(key_ids.setdefault(key, len(key_ids)))
                        decided_ranks.append(rank)
                        continue
                    if len(word) >= MIN_PREFIX_LENGTH:
                        key = (_PREFIX_KIND[node.field], word)
                        decided_keys.append(key_ids.setdefault(key, len(key_ids)))
                        decided_ranks.append(rank)
                        continue
                elif len(text_words) == 2 and not node.prefix:
                    key = (_PAIR_KIND[node.field], f"{text_words[0]} {text_words[1]}")
                    decided_keys.append(key_ids.setdefault(key, len(key_ids)))
                    decided_ranks.append(rank)
                    continue
            elif kind is Author:
                keys = _author_keys(node.name)
                if keys:
                    for key in keys:
                        decided_keys.append(key_ids.setdefault(key, len(key_ids)))
                        decided_ranks.append(rank)
                    continue
            elif kind is Category:
                decided_keys.append(key_ids.setdefault(("c", node.name), len(key_ids)))
                decided_ranks.append(rank)
                continue
            elif kind is Archive:
                decided_keys.append(key_ids.setdefault(("a", node.name), len(key_ids)))
                decided_ranks.append(rank)
                continue
            self._add_plan(rank, _checked_plan(sub_id, chat_id, node))
        self.rank_of.update(zip(sub_ids[start:], range(start, len(sub_ids)), strict=True))
        if sub_ids:
            self.last_id = sub_ids[-1]
        self._register(known)
        self._arrays = self._words = None

    def _add_plan(self, rank: int, plan: _Plan) -> None:
        _, node, first_keys, second_keys, exclude_keys, sure_keys, decided = plan
        key_ids = self.key_ids
        number = key_ids.setdefault
        first = [number(key, len(key_ids)) for key in first_keys]
        if decided and not exclude_keys:
            if not second_keys:
                self.decided_keys += first
                self.decided_ranks += [rank] * len(first)
                return
            seconds = [number(key, len(key_ids)) for key in second_keys]
            for key_id in first:
                for second in seconds:
                    self.paired_keys.append(key_id)
                    self.paired_seconds.append(second)
                    self.paired_ranks.append(rank)
            return
        checked = len(self.checked_ranks)
        self.checked_ranks.append(rank)
        self.checked_nodes.append(node)
        self.checked_decided.append(decided)
        self.second.append(tuple([number(key, len(key_ids)) for key in second_keys])
                           if second_keys else ())
        self.exclude.append(tuple([number(key, len(key_ids)) for key in exclude_keys])
                            if exclude_keys else ())
        self.sure.append(tuple([number(key, len(key_ids)) for key in sure_keys])
                         if sure_keys else ())
        self.checked_keys += first
        self.checked_plans += [checked] * len(first)

    def remove(self, sub_id: int) -> None:
        self.dead.add(self.rank_of.pop(sub_id))
        self._arrays = None

    def _register(self, known: int) -> None:
        """File the keys numbered from `known` on where a batch's papers will look them up."""
        if known == len(self.key_ids):
            return
        by_kind = self.by_kind
        name_parts = self.name_parts
        prefix_ids, prefix_keys = self.prefix_ids, self.prefix_keys
        pair_keys, pair_start, word_keys = self.pair_keys, self.pair_start, self.word_keys
        word = self._word
        authors = categories = False
        for key_id, (kind, value) in enumerate(islice(self.key_ids, known, None), known):
            field = _FIELD_OF.get(kind)
            if field is None:
                if len(kind) == 2:  # u1, uf, ua: a name part, then the surname
                    authors = True
                    text, _, surname = value.rpartition(" ")
                    parts = name_parts.get(surname)
                    if parts is None:
                        parts = name_parts[surname] = ({}, {}, {})
                    parts[_NAME_PART[kind]][text] = key_id
                else:
                    by_kind[kind][value] = key_id
                    if kind == "u":
                        authors = True
                    else:
                        categories = True
            elif kind[0] == "p":
                prefix = prefix_ids.get(value)
                if prefix is None:
                    prefix = prefix_ids[value] = len(prefix_ids)
                    self.prefix_first.setdefault(value[:MIN_PREFIX_LENGTH], []).append(
                        (value, prefix))
                    for table in prefix_keys:
                        table.append(-1)
                    self.prefixes_changed = True
                prefix_keys[field][prefix] = key_id
            elif len(kind) == 2:
                first, _, second = value.partition(" ")
                start = word(first)
                pair_start[start] = True
                pair_keys[field][start << _PAIR_SHIFT | word(second)] = key_id
            else:
                word_keys[field][word(value)] = key_id
        # Papers' names and categories were looked up without these keys: look again.
        if authors:
            self.author_keys.clear()
        if categories:
            self.category_keys.clear()
        self._arrays = self._words = None

    def _word(self, word: str) -> int:
        word_id = self.vocabulary.get(word)
        if word_id is None:
            word_id = self.vocabulary[word] = len(self.word_prefixes)
            for table in self.word_keys:
                table.append(-1)
            self.pair_start.append(False)
            # While prefixes are being registered, `words()` works every word's out afresh.
            self.word_prefixes.append(() if self.prefixes_changed else self._prefixes_of(word))
            self.boring.discard(word)  # if short, `words()` numbers it in the table
            self._words = None
        return word_id

    def _prefixes_of(self, word: str) -> tuple[int, ...]:
        group = self.prefix_first.get(word[:MIN_PREFIX_LENGTH], ())
        return tuple(prefix for text, prefix in group if word.startswith(text))

    # -- arrays for a batch -----------------------------------------------------------------

    def arrays(self) -> _Arrays:
        found = self._arrays
        if found is None:
            found = self._arrays = self._make_arrays()
        return found

    def words(self) -> _Words:
        if self.prefixes_changed:
            # A prefix registered since: every known word's prefixes, and the boring, again.
            self.word_prefixes = [self._prefixes_of(word) for word in self.vocabulary]
            self._forget_boring()
            self.prefixes_changed = False
            self._words = None
        found = self._words
        if found is None:
            self._number_new_words()
            found = self._words = _Words(
                np.asarray(self.word_keys, dtype=np.int64).reshape(3, -1),
                np.asarray(self.pair_start, dtype=bool), *_ragged(self.word_prefixes),
                self._stems())
        return found

    def _stems(self) -> np.ndarray:
        """`_Words.stems`, worked out again only when prefixes were registered since."""
        if self.stems_of != len(self.prefix_ids):
            self.stems = _unique(_pack(list(self.prefix_first))[:, 0] & _STEM)
            self.stems_of = len(self.prefix_ids)
        return self.stems

    def _forget_boring(self) -> None:
        self.boring.clear()
        self.boring_count = 0
        self.table = _WordTable()
        self.table_words = 0
        self._words = None

    def _number_new_words(self) -> None:
        """Put the words numbered since into the table (a boring one there gets its number)."""
        if self.table_words == len(self.vocabulary):
            return
        new = list(islice(self.vocabulary, self.table_words, None))
        first = self.table_words
        self.table_words = len(self.vocabulary)
        short = [index for index, word in enumerate(new) if len(word.encode()) <= _PACKED]
        if not short:
            return
        rows = _pack([new[index] for index in short])
        hashes = _hash(rows)
        numbers = np.asarray(short, dtype=np.int64) + first
        slots = self.table.find(hashes, rows)
        there = slots >= 0
        self.table.values[slots[there]] = numbers[there]
        self.table.add(hashes[~there], rows[~there], numbers[~there])

    def _make_arrays(self) -> _Arrays:
        key_count = len(self.key_ids)
        checked_count = len(self.checked_ranks)
        codes, keys = [], []
        for table in self.pair_keys:
            code = np.fromiter(table.keys(), dtype=np.int64, count=len(table))
            order = np.argsort(code)
            codes.append(code[order])
            keys.append(np.fromiter(table.values(), dtype=np.int64, count=len(table))[order])
        alive = None
        if self.dead:
            alive = np.ones(len(self.sub_ids), dtype=bool)
            alive[list(self.dead)] = False
        chats = np.asarray(self.chats, dtype=np.int64)
        return _Arrays(
            key_count,
            np.asarray(self.prefix_keys, dtype=np.int64).reshape(3, -1),
            (codes[0], codes[1], codes[2]), (keys[0], keys[1], keys[2]),
            *_csr(self.decided_keys, key_count, self.decided_ranks),
            *_csr(self.paired_keys, key_count, self.paired_seconds, self.paired_ranks),
            *_csr(self.checked_keys, key_count, self.checked_plans),
            np.asarray(self.checked_ranks, dtype=np.int64).reshape(checked_count),
            np.asarray(self.checked_decided, dtype=bool).reshape(checked_count),
            *_ragged(self.second), *_ragged(self.exclude), *_ragged(self.sure),
            alive, np.asarray(self.sub_ids, dtype=np.int64), np.asarray(self.chat_rank,
                                                                        dtype=np.int64),
            chats, dict(self.rank_of))

    # -- what a batch's papers carry --------------------------------------------------------

    def _author(self, name: str) -> tuple[int, ...]:
        # The keys a paper carries for one author: the surname ("u"), and for each part before
        # it, "e yoneki" for its initial ("u1") and "eiko yoneki" as written, full or
        # abbreviated ("uf", "ua").
        if name.isascii() and name.replace(" ", "").isalpha():
            parts = name.lower().split()
            if len(parts) == 2:
                # The commonest name, "Given Surname": what `plain_name` makes of it, inline.
                given, key = parts
                found = []
                surname = self.by_kind["u"].get(key)
                if surname is not None:
                    found.append(surname)
                keys = self.name_parts.get(key)
                if keys is not None:
                    initial = keys[0].get(given[0])
                    if initial is not None:
                        found.append(initial)
                    named = keys[2 if len(given) == 1 else 1].get(given)
                    if named is not None:
                        found.append(named)
                return self._remember(name, tuple(found))
        plain = plain_name(name)
        person = None
        if plain is not None:
            # Most names: the parts without building a PersonName (`split_name` would).
            parts, start = plain
            key = parts[-1]
        else:
            person = _person(name)
            key = "" if person is None else person.key
        found: list[int] = []
        surname = self.by_kind["u"].get(key)
        if surname is not None:
            found.append(surname)
        keys = self.name_parts.get(key)
        if keys is not None:
            initials, full, abbreviated_keys = keys
            if plain is not None:
                for index in range(len(parts) - 1):
                    text = parts[index]
                    initial = initials.get(text[0])
                    if initial is not None:
                        found.append(initial)
                    named = (abbreviated_keys if index < start and len(text) == 1
                             else full).get(text)
                    if named is not None:
                        found.append(named)
            elif person is not None:
                for part in person.leading():
                    text = part.text
                    initial = initials.get(text[0])
                    if initial is not None:
                        found.append(initial)
                    named = (abbreviated_keys if part.abbreviated else full).get(text)
                    if named is not None:
                        found.append(named)
        return self._remember(name, tuple(found))

    def _remember(self, name: str, keys: tuple[int, ...]) -> tuple[int, ...]:
        if len(self.author_keys) >= _MAX_REMEMBERED_NAMES:
            self.author_keys.clear()
        self.author_keys[name] = keys
        return keys

    def _category(self, category: str) -> tuple[int, ...]:
        listed, archive = listed_in(category)
        ids = (self.by_kind["c"].get(listed), self.by_kind["a"].get(archive))
        found = self.category_keys[category] = tuple(i for i in ids if i is not None)
        return found

    def _word_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """The words of `texts` (each a `word_text`), in order: each word's number (-1 for a word
        no key or registered prefix needs) and which text it is in.

        The texts are split and looked up as bytes and arrays; only words never seen before
        (and the rare word too long to pack, or sharing a hash) are read as Python strings.
        """
        lengths = [len(text) if text.isascii() else len(text.encode()) for text in texts]
        data = b" " + " ".join(texts).encode() + bytes(_PACKED)
        text_starts = np.zeros(len(texts), dtype=np.int64)
        np.cumsum(np.asarray(lengths[:-1], dtype=np.int64) + 1, out=text_starts[1:])
        data_bytes = np.frombuffer(data, dtype=np.uint8)
        inside = _WORD_BYTES.take(data_bytes)
        edges = np.flatnonzero(inside[1:] != inside[:-1]) + 1
        starts, ends = edges[0::2], edges[1::2]
        text_of = np.searchsorted(text_starts, starts - 1, side="right") - 1
        lengths_of = ends - starts
        rows = (np.lib.stride_tricks.sliding_window_view(data_bytes, _PACKED)[starts]
                .view(np.uint64) & _MASKS[np.minimum(lengths_of, _PACKED)])
        hashes = _hash(rows)
        self.words()  # the boring words are only known once the prefixes are settled
        table = self.table
        slots = table.find(hashes, rows)
        ids = table.values[slots]
        # By hand: the words too long to pack, and those never seen.
        looked = np.flatnonzero((slots < 0) | (lengths_of > _PACKED))
        if len(looked):
            ids[looked] = self._look_up(data, starts[looked], ends[looked], hashes[looked],
                                        rows[looked])
        return ids, text_of

    def _look_up(self, data: bytes, starts: np.ndarray, ends: np.ndarray, hashes: np.ndarray,
                 rows: np.ndarray) -> np.ndarray:
        """The numbers of these words (-1 if boring), numbering those with registered prefixes;
        the new boring ones are remembered, in the packed table too."""
        # Each distinct word once: words with one hash are one word if their rows and lengths
        # agree, but for those too long to pack (their rows hold only their first 24 bytes).
        _, first, inverse = np.unique(hashes, return_index=True, return_inverse=True)
        inverse = inverse.reshape(-1)
        representative = first[inverse]
        lengths = ends - starts
        long = lengths > _PACKED
        alone = (long | (lengths != lengths[representative])
                 | (rows != rows[representative]).any(axis=1))
        representative[alone] = np.flatnonzero(alone)
        chosen = np.flatnonzero(representative == np.arange(len(representative)))
        if self.boring_count > _MAX_BORING_WORDS:
            self._forget_boring()
        # A short word the table has not seen is not a known one: without the first bytes of
        # some registered prefix, it is boring, and need not be read.
        stems = self.words().stems
        plain = ~long[chosen] & ~_carries(stems, rows[chosen, 0] & _STEM)
        boring_words = chosen[plain]
        chosen = chosen[~plain]
        if len(boring_words):
            self.table.add(hashes[boring_words], rows[boring_words],
                           np.full(len(boring_words), -1, dtype=np.int64))
            self.boring_count += len(boring_words)
        vocabulary, boring = self.vocabulary, self.boring
        long_before = len(boring)
        found: list[int] = []
        packable: dict[str, int] = {}  # new boring words for the table (a short word is
        # only looked up by hand when the table has not seen it)
        for index, start, end in zip(chosen.tolist(), starts[chosen].tolist(),
                                     ends[chosen].tolist(), strict=True):
            word = data[start:end].decode()
            word_id = vocabulary.get(word)
            if word_id is None:
                word_id = -1
                if word not in boring and word not in packable:
                    if self._prefixes_of(word):
                        word_id = self._word(word)
                    elif long[index]:
                        boring.add(word)
                    else:
                        packable[word] = index
            found.append(word_id)
        if packable:
            where = list(packable.values())
            self.table.add(hashes[where], rows[where], np.full(len(where), -1, dtype=np.int64))
        self.boring_count += len(packable) + len(boring) - long_before
        ids = np.full(len(representative), -1, dtype=np.int64)
        ids[chosen] = found
        return ids[representative]

    def carried(self, arrays: _Arrays, papers: Sequence[Paper]) -> np.ndarray:
        """The sorted codes `paper * key_count + key` of every key the papers carry."""
        found_papers: list[np.ndarray] = []
        found_keys: list[np.ndarray] = []
        # A few hundred papers at a time: a whole batch's words at once would be tens of MB.
        for offset in range(0, len(papers), _CHUNK_PAPERS):
            self._carried_by(arrays, papers[offset:offset + _CHUNK_PAPERS], offset,
                             found_papers, found_keys)
        if not found_papers:
            return np.zeros(0, dtype=np.int64)
        return _unique(np.concatenate(found_papers) * arrays.key_count
                       + np.concatenate(found_keys))

    def _carried_by(self, arrays: _Arrays, papers: Sequence[Paper], offset: int,
                    found_papers: list[np.ndarray], found_keys: list[np.ndarray]) -> None:
        """Append the (paper, key) pairs these papers carry, papers numbered from `offset`."""
        texts: list[str] = []
        other_keys: list[int] = []
        other_counts: list[int] = []
        author_keys, category_keys = self.author_keys, self.category_keys
        for paper in papers:
            texts.append(word_text(paper.title))
            texts.append(word_text(paper.abstract))
            before = len(other_keys)
            for name in paper.authors:
                found = author_keys.get(name)
                other_keys.extend(self._author(name) if found is None else found)
            for category in paper.categories:
                found = category_keys.get(category)
                other_keys.extend(self._category(category) if found is None else found)
            other_counts.append(len(other_keys) - before)
        size = len(papers)
        found_papers.append(np.repeat(np.arange(offset, offset + size, dtype=np.int64),
                                      np.asarray(other_counts, dtype=np.int64)))
        found_keys.append(np.asarray(other_keys, dtype=np.int64))
        ids, text_of = self._word_ids(texts)
        text_of += 2 * offset
        known_words = self.words()
        known = np.flatnonzero(ids >= 0)
        known_ids = ids[known]
        known_texts = text_of[known]
        title = (known_texts & 1) == 0
        # Words: every known word anywhere, in the title or in the abstract.
        for field, where in ((0, None), (1, title), (2, ~title)):
            word_ids = known_ids if where is None else known_ids[where]
            keys = known_words.keys[field][word_ids]
            has = keys >= 0
            found_papers.append((known_texts if where is None else known_texts[where])[has] >> 1)
            found_keys.append(keys[has])
        # Word pairs: a known word that starts some pair key, and the word after it.
        starts = known[known_words.pair_start[known_ids]]
        starts = starts[starts + 1 < len(ids)]
        starts = starts[(text_of[starts + 1] == text_of[starts]) & (ids[starts + 1] >= 0)]
        if len(starts):
            codes = ids[starts] << _PAIR_SHIFT | ids[starts + 1]
            pair_texts = text_of[starts]
            pair_title = (pair_texts & 1) == 0
            for field, where in ((0, None), (1, pair_title), (2, ~pair_title)):
                table = arrays.pair_codes[field]
                if not len(table):
                    continue
                wanted = codes if where is None else codes[where]
                at = np.searchsorted(table, wanted)
                at[at == len(table)] = 0
                has = table[at] == wanted
                found_papers.append((pair_texts if where is None
                                     else pair_texts[where])[has] >> 1)
                found_keys.append(arrays.pair_keys[field][at[has]])
        # Prefixes: each (text, known word) with registered prefixes once.
        pointers = known_words.prefix_pointers
        with_prefix = (pointers[known_ids + 1] > pointers[known_ids])
        if with_prefix.any():
            vocabulary_size = len(pointers) - 1
            pairs = _unique(known_texts[with_prefix] * vocabulary_size
                              + known_ids[with_prefix])
            owner, positions = _expand(pointers, pairs % vocabulary_size)
            prefix = known_words.prefix_ids[positions]
            prefix_texts = (pairs // vocabulary_size)[owner]
            prefix_title = (prefix_texts & 1) == 0
            for field, where in ((0, None), (1, prefix_title), (2, ~prefix_title)):
                keys = arrays.prefix_keys[field][prefix if where is None else prefix[where]]
                has = keys >= 0
                found_papers.append((prefix_texts if where is None
                                     else prefix_texts[where])[has] >> 1)
                found_keys.append(keys[has])



class FoundPairs:
    """What a batch matched, compactly: (paper index, subscription rank) pairs, unsorted."""

    __slots__ = ("arrays", "papers", "ranks", "size")

    def __init__(self, arrays: _Arrays, size: int, papers: np.ndarray,
                 ranks: np.ndarray) -> None:
        self.arrays = arrays
        self.size = size
        self.papers = papers
        self.ranks = ranks

    def id_sets(self) -> list[set[int]]:
        found: list[set[int]] = [set() for _ in range(self.size)]
        ids = self.arrays.sub_ids[self.ranks].tolist()
        for paper, sub_id in zip(self.papers.tolist(), ids, strict=True):
            found[paper].add(sub_id)
        return found


class Matcher:
    """All subscriptions, indexed by anchor keys, for matching batches of papers.

    Most subscriptions are decided by their keys: a category, an archive, a common shape of
    author name, a word, a prefix, a two-word phrase, an OR of those (filed under each key), or
    an AND of two of those (filed under the rarer one, paired with the other). A paper's matches
    among them follow from the keys it carries, by array operations over the whole batch. The
    rest (exclusions, longer phrases, unusual names, deeper nesting) are filed under their
    rarest keys as candidates: checked against their other keys and exclusions by array
    operations too, and evaluated on the paper only if keys cannot decide them.
    """

    def __init__(self) -> None:
        self._subscriptions: dict[int, tuple[int, Node]] = {}  # id -> (chat, query)
        self._compiled: _Compiled | None = None

    @classmethod
    def build(cls, subscriptions: Iterable[tuple[int, int, Node]]) -> Matcher:
        """A matcher holding every `(sub_id, chat_id, node)`, compiled."""
        matcher = cls()
        # Hundreds of thousands of small objects that all live on: the collector's passes over
        # them (and everything else alive) would find nothing to free.
        with collector_paused():
            items = list(subscriptions)
            matcher._subscriptions = {
                sub_id: (chat_id, node) for sub_id, chat_id, node in items}
            ids = [sub_id for sub_id, _, _ in items]
            if all(map(lt, ids, islice(ids, 1, None))):
                # Ids in increasing order, as the service reads them: compiled as they come.
                compiled = matcher._compiled = _Compiled()
                compiled.extend(items)  # and checked: one that cannot be indexed raises
            else:
                compiled = matcher._compile()
            compiled.arrays()
            compiled.words()
        return matcher

    def __len__(self) -> int:
        return len(self._subscriptions)

    def add(self, sub_id: int, chat_id: int, node: Node) -> None:
        """Index one subscription (replacing any earlier one with that id)."""
        _checked_plan(sub_id, chat_id, node)  # raises if it cannot be indexed
        replaced = sub_id in self._subscriptions
        self._subscriptions[sub_id] = (chat_id, node)
        compiled = self._compiled
        if compiled is not None:
            if replaced or (compiled.last_id is not None and sub_id <= compiled.last_id):
                self._compiled = None  # ranks follow ids: compile afresh at the next batch
            else:
                compiled.extend([(sub_id, chat_id, node)])

    def remove(self, sub_id: int) -> bool:
        """Forget a subscription; False if it was not there."""
        if self._subscriptions.pop(sub_id, None) is None:
            return False
        compiled = self._compiled
        if compiled is not None:
            compiled.remove(sub_id)
            if len(compiled.dead) > _MAX_DEAD and len(compiled.dead) * 4 > len(compiled.sub_ids):
                self._compiled = None
        return True

    def _compile(self) -> _Compiled:
        compiled = self._compiled
        if compiled is None:
            compiled = _Compiled()
            held = self._subscriptions
            compiled.extend((sub_id, *held[sub_id]) for sub_id in sorted(held))
            self._compiled = compiled
        return compiled

    def find_pairs(self, papers: Sequence[Paper]) -> FoundPairs:
        """Every (paper, subscription) match of the batch."""
        with collector_paused():
            return self._find_pairs(papers)

    def _find_pairs(self, papers: Sequence[Paper]) -> FoundPairs:
        compiled = self._compile()
        arrays = compiled.arrays()
        carried = compiled.carried(arrays, papers)
        key_count = arrays.key_count
        hit_papers = carried // key_count
        hits = carried % key_count
        # Decided by one key: every row of every key hit.
        owner, positions = _expand(arrays.decided_pointers, hits)
        found_papers = [hit_papers[owner]]
        found_ranks = [arrays.decided_ranks[positions]]
        # Decided by two keys: the rows of a key hit whose second key the same paper carries.
        owner, positions = _expand(arrays.paired_pointers, hits)
        if len(positions):
            both = _carries(carried, hit_papers[owner] * key_count
                            + arrays.paired_seconds[positions])
            found_papers.append(hit_papers[owner][both])
            found_ranks.append(arrays.paired_ranks[positions][both])
        # Checked: candidates by their first keys, then their other keys, then evaluation.
        owner, positions = _expand(arrays.checked_pointers, hits)
        if len(positions):
            plan_count = len(arrays.checked_ranks)
            codes = _unique(hit_papers[owner] * plan_count + arrays.checked_plans[positions])
            candidate_papers = codes // plan_count
            candidate_plans = codes % plan_count
            count = len(codes)
            keep = np.ones(count, dtype=bool)
            for pointers, keys, wanted in ((arrays.second_pointers, arrays.second_keys, True),
                                           (arrays.exclude_pointers, arrays.exclude_keys, False)):
                needs = pointers[candidate_plans + 1] > pointers[candidate_plans]
                if not needs.any():
                    continue
                owner, positions = _expand(pointers, candidate_plans)
                hit = _carries(carried, candidate_papers[owner] * key_count + keys[positions])
                keep &= ~needs | (_any_per(owner, hit, count) == wanted)
            sure = arrays.checked_decided[candidate_plans]
            owner, positions = _expand(arrays.sure_pointers, candidate_plans)
            if len(positions):
                sure |= _any_per(owner, _carries(carried, candidate_papers[owner] * key_count
                                                 + arrays.sure_keys[positions]), count)
            accepted = keep & sure
            found_papers.append(candidate_papers[accepted])
            found_ranks.append(arrays.checked_ranks[candidate_plans[accepted]])
            evaluated = np.flatnonzero(keep & ~sure)
            if len(evaluated):
                found_papers.append(candidate_papers[evaluated])
                found_ranks.append(arrays.checked_ranks[candidate_plans[evaluated]])
                matched = self._evaluate(compiled, papers,
                                         candidate_papers[evaluated].tolist(),
                                         candidate_plans[evaluated].tolist())
                found_papers[-1] = found_papers[-1][matched]
                found_ranks[-1] = found_ranks[-1][matched]
        found = FoundPairs(arrays, len(papers), np.concatenate(found_papers),
                           np.concatenate(found_ranks))
        if arrays.alive is not None:
            live = arrays.alive[found.ranks]
            found.papers, found.ranks = found.papers[live], found.ranks[live]
        return found

    @staticmethod
    def _evaluate(compiled: _Compiled, papers: Sequence[Paper],
                  paper_indexes: list[int], plan_indexes: list[int]) -> np.ndarray:
        """Which (paper, checked plan) candidates match, evaluated on the paper's features."""
        features: dict[int, PaperFeatures] = {}
        authors: dict[int, list[PersonName]] = {}
        nodes = compiled.checked_nodes
        matched = np.zeros(len(paper_indexes), dtype=bool)
        for position, (index, plan) in enumerate(zip(paper_indexes, plan_indexes, strict=True)):
            node = nodes[plan]
            if type(node) is Author:
                # `PaperFeatures.has_author` without the rest of the paper's features.
                found = authors.get(index)
                if found is None:
                    found = authors[index] = [
                        name for name in map(_person, papers[index].authors) if name is not None]
                matched[position] = any(map(node.name.matches, found))
                continue
            paper_features = features.get(index)
            if paper_features is None:
                paper = papers[index]
                paper_features = features[index] = PaperFeatures.from_words(
                    paper, words(paper.title), words(paper.abstract))
            matched[position] = evaluate_features(node, paper_features)
        return matched

    def matching(self, paper: Paper) -> set[int]:
        """The ids of the subscriptions that match one paper."""
        return self.find_pairs([paper]).id_sets()[0]

    def find(self, papers: Sequence[Paper]) -> list[set[int]]:
        """For each paper, in order, the ids of the subscriptions that match it."""
        return self.find_pairs(papers).id_sets()

    def alerts(self, papers: Sequence[Paper],
               found: FoundPairs | Sequence[Collection[int]]) -> Alerts:
        """Group what `find` (or `find_pairs`) returned into per-chat alerts: each paper with its
        subscriptions."""
        if not isinstance(found, FoundPairs):
            if len(found) != len(papers):
                raise ValueError(f"{len(found)} id sets for {len(papers)} papers")
            arrays = self._compile().arrays()
            rank_of = arrays.rank_of
            found = FoundPairs(
                arrays, len(papers),
                np.repeat(np.arange(len(papers), dtype=np.int64),
                          np.asarray([len(ids) for ids in found], dtype=np.int64)),
                np.asarray([rank_of[sub_id] for ids in found for sub_id in ids], dtype=np.int64))
        elif found.size != len(papers):
            raise ValueError(f"matches of {found.size} papers for {len(papers)} papers")
        if not len(found.ranks):
            return Alerts.empty(papers)
        arrays = found.arrays
        subs = len(arrays.sub_ids)
        size = max(len(papers), 1)
        # One sort orders the pairs by chat, then paper, then subscription rank (id order), and
        # drops the repeats (a subscription filed under two keys that a paper both carries).
        codes = np.sort((arrays.chat_rank[found.ranks] * size + found.papers) * subs
                        + found.ranks)
        if len(codes) > 1:
            codes = codes[np.concatenate(([True], codes[1:] != codes[:-1]))]
        ranks = codes % subs
        chat_papers = codes // subs
        alert_starts = np.flatnonzero(np.concatenate(([True], chat_papers[1:] != chat_papers[:-1])))
        alert_codes = chat_papers[alert_starts]
        alert_chats = alert_codes // size
        alert_papers = alert_codes % size
        chat_starts = np.flatnonzero(np.concatenate(([True], alert_chats[1:] != alert_chats[:-1])))
        # Chats in the order they first match: by their first paper, then its lowest id.
        first_seen = alert_papers[chat_starts] * subs + ranks[alert_starts[chat_starts]]
        order = np.argsort(first_seen, kind="stable")
        chat_ends = np.append(chat_starts[1:], len(alert_starts))
        return Alerts(papers, arrays.chats[alert_chats[chat_starts[order]]],
                      chat_starts[order], chat_ends[order], alert_papers,
                      np.append(alert_starts, len(codes)), arrays.sub_ids[ranks])

    def match(self, papers: Sequence[Paper]) -> Alerts:
        """Per chat, each matching paper (in input order) with its matching subscription ids."""
        return self.alerts(papers, self.find_pairs(papers))


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, restoring its previous state afterwards.

    Matching a batch allocates an object per alert and frees almost nothing: the collector
    would rescan them, and the whole index, again and again without finding any garbage.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


@contextmanager
def survivors_frozen(enabled: bool = True) -> Iterator[None]:
    """Pause the collector over a big batch, then freeze whatever is alive at its end.

    A poll's alerts (an object each, half a million at scale) outlive the batch: the poll's
    report keeps them. Left young, the collector would scan them as they age, up to three
    passes that stop every thread, the event loop included, for a second or more each.
    Frozen (`gc.freeze`), they are never scanned, and still freed by reference counting when
    the report goes. A full collection first leaves only the batch's own cyclic garbage to be
    frozen with them (cheap once the index is frozen too: `freeze_long_lived`);
    `bench/responsiveness.py` prints how much that is. `enabled=False` does nothing: small
    batches are not worth it.
    """
    if not enabled:
        yield
        return
    gc.collect()
    with collector_paused():
        try:
            yield
        finally:
            gc.freeze()


def freeze_long_lived() -> None:
    """One full collection, then freeze everything alive, so later passes skip it.

    After start-up that is the index of every subscription and the libraries: millions of
    objects no pass needs to walk. Called again once a day, it also frees the cyclic garbage
    that polls' freezes (`survivors_frozen`) kept since; the full pass costs about a second at
    100,000 subscriptions, once a day.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()

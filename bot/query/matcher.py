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
from collections.abc import Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

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
from bot.query.text import PersonName, split_name, words


def _name_keys(authors: Iterable[PersonName]) -> dict[str, frozenset[str]]:
    """Index keys for authors' name parts: "e yoneki" for an initial, "eiko yoneki" for a name."""
    first_letters: set[str] = set()
    full: set[str] = set()
    abbreviated: set[str] = set()
    for name in authors:
        for part in name.leading():
            first_letters.add(f"{part.text[0]} {name.key}")
            (abbreviated if part.abbreviated else full).add(f"{part.text} {name.key}")
    return {"u1": frozenset(first_letters), "uf": frozenset(full), "ua": frozenset(abbreviated)}


def _pairs(tokens: list[str]) -> frozenset[str]:
    """Adjacent words as "graph neural": a two-word phrase is then one set lookup."""
    return frozenset(map(" ".join, pairwise(tokens)))


def _pairs_from(tokens: list[str], starts: AbstractSet[str]) -> set[str]:
    """The adjacent word pairs whose first word is one of `starts`."""
    return {f"{first} {second}" for first, second in pairwise(tokens) if first in starts}


class PaperFeatures:
    """A paper's normalised words, authors and categories, computed once per paper."""

    __slots__ = ("_pairs", "_positions", "_sorted", "abstract", "abstract_set", "archives",
                 "author_keys", "authors", "categories", "name_keys", "title", "title_set",
                 "word_set")

    def __init__(self, paper: Paper) -> None:
        self.title = words(paper.title)
        self.abstract = words(paper.abstract)
        self.title_set = frozenset(self.title)
        self.abstract_set = frozenset(self.abstract)
        self.word_set = self.title_set | self.abstract_set
        self.authors = tuple(n for n in map(split_name, paper.authors) if n is not None)
        self.author_keys = frozenset(name.key for name in self.authors)
        self.name_keys = _name_keys(self.authors)
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
            keys = _author_keys(name)
            return (keys, _COST["uf"]) if keys else (frozenset({("u", name.key)}), _COST["u"])
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


def _author_keys(name: PersonName) -> frozenset[AnchorKey]:
    """Keys that decide an author query exactly, or none if only evaluation can tell.

    Mirrors `PersonName.matches` for the common shapes: `Yoneki`, `E. Yoneki`, `Eiko Yoneki`.
    """
    leading = name.leading()
    if not leading:
        return frozenset({("u", name.key)})
    if len(leading) > 1:
        return frozenset()
    part = leading[0]
    if part.abbreviated:
        # An initial agrees with every part starting with that letter, and only with those.
        if len(part.text) > 1:
            return frozenset()
        return frozenset({("u1", f"{part.text} {name.key}")})
    if len(part.text) < 3:
        return frozenset()  # a longer abbreviation ("Eik.") could still agree with it
    # A full name agrees with itself and with its abbreviations (at most three letters).
    return frozenset({("uf", f"{part.text} {name.key}")} |
                     {("ua", f"{part.text[:size]} {name.key}") for size in (1, 2, 3)})


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


@dataclass(frozen=True, slots=True)
class _Plan:
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


_NOTHING: frozenset[str] = frozenset()
# Past this many distinct words, the cache of their prefixes starts afresh.
_MAX_WORDS_SEEN = 200_000


def _has_any(keys: Iterable[AnchorKey], paper_keys: dict[str, Collection[str]]) -> bool:
    return any(value in paper_keys[kind] for kind, value in keys)


def _csr(rows: list[int], size: int, *columns: list[int]) -> tuple[np.ndarray, ...]:
    """Row pointers of length `size + 1` and each column sorted by row (stable)."""
    row_array = np.asarray(rows, dtype=np.int64)
    order = np.argsort(row_array, kind="stable")
    pointers = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(row_array, minlength=size), out=pointers[1:])
    return (pointers, *(np.asarray(column, dtype=np.int64)[order] for column in columns))


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


class _Compiled:
    """The index as arrays, compiled from the plans when a batch needs it after a change.

    Every key a plan is filed under or pairs with gets an integer id. Subscriptions decided by
    one key are rows of a key -> subscription table, and those decided by two keys rows of a
    key -> (second key, subscription) table: a batch's matches among them are a few array
    operations over the keys its papers carry, with no Python work per match. Only candidates
    that need checking are looked at one by one. Subscriptions are numbered by id order (their
    rank), chats by chat id order.
    """

    def __init__(self, plans: dict[int, _Plan]) -> None:
        sub_ids = sorted(plans)
        key_ids: dict[AnchorKey, int] = {}
        checked: dict[AnchorKey, set[int]] = {}
        decided_keys: list[int] = []
        decided_ranks: list[int] = []
        paired_keys: list[int] = []
        paired_seconds: list[int] = []
        paired_ranks: list[int] = []
        pair_starts: set[str] = set()
        prefix_first: dict[str, set[str]] = {}
        chats: list[int] = []
        for rank, sub_id in enumerate(sub_ids):
            plan = plans[sub_id]
            chats.append(plan.chat_id)
            if not plan.decided or plan.exclude:
                for key in plan.first:
                    found = checked.get(key)
                    if found is None:
                        checked[key] = {sub_id}
                    else:
                        found.add(sub_id)
            elif plan.second:
                for key in plan.first:
                    first = key_ids.setdefault(key, len(key_ids))
                    for second in plan.second:
                        paired_keys.append(first)
                        paired_seconds.append(key_ids.setdefault(second, len(key_ids)))
                        paired_ranks.append(rank)
            else:
                for key in plan.first:
                    decided_keys.append(key_ids.setdefault(key, len(key_ids)))
                    decided_ranks.append(rank)
            for kind, value in plan.looked_at():
                if kind in _PAIR_KINDS:
                    pair_starts.add(value.partition(" ")[0])
                elif kind[0] == "p":
                    prefix_first.setdefault(value[:MIN_PREFIX_LENGTH], set()).add(value)
        self.key_count = len(key_ids)
        self.keys: dict[str, dict[str, int]] = {}
        for (kind, value), key_id in key_ids.items():
            self.keys.setdefault(kind, {})[value] = key_id
        self.checked: dict[str, dict[str, frozenset[int]]] = {}
        for (kind, value), ids in checked.items():
            self.checked.setdefault(kind, {})[value] = frozenset(ids)
        self.decided_pointers, self.decided_ranks = _csr(
            decided_keys, self.key_count, decided_ranks)
        self.paired_pointers, self.paired_seconds, self.paired_ranks = _csr(
            paired_keys, self.key_count, paired_seconds, paired_ranks)
        self.rank_of = dict(zip(sub_ids, range(len(sub_ids)), strict=True))
        self.sub_ids = np.asarray(sub_ids, dtype=np.int64)
        chat_of_rank = np.asarray(chats, dtype=np.int64)
        self.chats, self.chat_rank = np.unique(chat_of_rank, return_inverse=True)
        self.chat_rank = self.chat_rank.astype(np.int64, copy=False)
        self.pair_starts = frozenset(pair_starts)
        self.prefix_first = {head: tuple(group) for head, group in prefix_first.items()}
        # The registered prefixes of every word seen by this compiled index (only words that
        # have some), and every word looked at: the vocabulary of a poll is mostly the last one's.
        self.prefixes_of: dict[str, tuple[str, ...]] = {}
        self.words_seen: set[str] = set()


class FoundPairs:
    """What a batch matched, compactly: (paper index, subscription rank) pairs, unsorted."""

    __slots__ = ("compiled", "papers", "ranks", "size")

    def __init__(self, compiled: _Compiled, size: int, papers: np.ndarray,
                 ranks: np.ndarray) -> None:
        self.compiled = compiled
        self.size = size
        self.papers = papers
        self.ranks = ranks

    def id_sets(self) -> list[set[int]]:
        found: list[set[int]] = [set() for _ in range(self.size)]
        ids = self.compiled.sub_ids[self.ranks].tolist()
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
    rarest keys as candidates: checked against their other keys and exclusions, and evaluated on
    the paper only if keys cannot decide them.
    """

    def __init__(self) -> None:
        self._plans: dict[int, _Plan] = {}
        self._compiled: _Compiled | None = None

    @classmethod
    def build(cls, subscriptions: Iterable[tuple[int, int, Node]]) -> Matcher:
        """A matcher holding every `(sub_id, chat_id, node)`, compiled."""
        matcher = cls()
        plans = matcher._plans
        for sub_id, chat_id, node in subscriptions:
            plans[sub_id] = _checked_plan(sub_id, chat_id, node)
        matcher._compile()
        return matcher

    def __len__(self) -> int:
        return len(self._plans)

    def add(self, sub_id: int, chat_id: int, node: Node) -> None:
        """Index one subscription (replacing any earlier one with that id)."""
        self._plans[sub_id] = _checked_plan(sub_id, chat_id, node)
        self._compiled = None

    def remove(self, sub_id: int) -> bool:
        """Forget a subscription; False if it was not there."""
        if self._plans.pop(sub_id, None) is None:
            return False
        self._compiled = None
        return True

    def _compile(self) -> _Compiled:
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = _Compiled(self._plans)
        return compiled

    def _prefixes(self, compiled: _Compiled, features: PaperFeatures
                  ) -> tuple[set[str], set[str], set[str]]:
        """The registered prefixes of the paper's words: anywhere, in the title, the abstract."""
        if len(compiled.words_seen) > _MAX_WORDS_SEEN:
            compiled.prefixes_of.clear()
            compiled.words_seen.clear()
        prefixes_of = compiled.prefixes_of
        new_words = features.word_set.difference(compiled.words_seen)
        if new_words:
            prefix_first = compiled.prefix_first
            for word in new_words:
                group = prefix_first.get(word[:MIN_PREFIX_LENGTH], ())
                found = tuple(prefix for prefix in group if word.startswith(prefix))
                if found:
                    prefixes_of[word] = found
            compiled.words_seen.update(new_words)
        anywhere: set[str] = set()
        in_title: set[str] = set()
        in_abstract: set[str] = set()
        for word in prefixes_of.keys() & features.word_set:
            found = prefixes_of[word]
            anywhere.update(found)
            if word in features.title_set:
                in_title.update(found)
            if word in features.abstract_set:
                in_abstract.update(found)
        return anywhere, in_title, in_abstract

    def _paper_keys(self, compiled: _Compiled,
                    features: PaperFeatures) -> dict[str, Collection[str]]:
        keys: dict[str, Collection[str]] = {
            "c": features.categories, "a": features.archives, "u": features.author_keys,
            "w": features.word_set, "t": features.title_set, "b": features.abstract_set,
            **features.name_keys,
            "w2": _NOTHING, "t2": _NOTHING, "b2": _NOTHING,
            "pw": _NOTHING, "pt": _NOTHING, "pb": _NOTHING,
        }
        starts = compiled.pair_starts & features.word_set
        if starts:
            in_title = _pairs_from(features.title, starts)
            in_abstract = _pairs_from(features.abstract, starts)
            keys.update(t2=in_title, b2=in_abstract, w2=in_title | in_abstract)
        if compiled.prefix_first:
            keys["pw"], keys["pt"], keys["pb"] = self._prefixes(compiled, features)
        return keys

    def find_pairs(self, papers: Sequence[Paper]) -> FoundPairs:
        """Every (paper, subscription) match of the batch."""
        compiled = self._compile()
        plans = self._plans
        rank_of = compiled.rank_of
        key_kinds = list(compiled.keys.items())
        checked_kinds = list(compiled.checked.items())
        hit_keys: list[int] = []
        hit_counts: list[int] = []
        checked_papers: list[int] = []
        checked_ranks: list[int] = []
        with collector_paused():
            for index, paper in enumerate(papers):
                features = PaperFeatures(paper)
                keys = self._paper_keys(compiled, features)
                before = len(hit_keys)
                for kind, key_ids in key_kinds:
                    # Intersecting with the dict's keys runs in C: most words hit nothing.
                    hit_keys.extend(map(key_ids.__getitem__, key_ids.keys() & keys[kind]))
                hit_counts.append(len(hit_keys) - before)
                candidates: set[int] = set()
                for kind, by_value in checked_kinds:
                    for value in by_value.keys() & keys[kind]:
                        candidates |= by_value[value]
                for sub_id in candidates:
                    plan = plans[sub_id]
                    if plan.second and not _has_any(plan.second, keys):
                        continue
                    if plan.exclude and _has_any(plan.exclude, keys):
                        continue
                    # Only ORs have sure keys, and an OR has no exclusions: a hit is a match.
                    if (plan.decided or (plan.sure and _has_any(plan.sure, keys))
                            or evaluate_features(plan.node, features)):
                        checked_papers.append(index)
                        checked_ranks.append(rank_of[sub_id])
        hit_papers = np.repeat(np.arange(len(papers), dtype=np.int64),
                               np.asarray(hit_counts, dtype=np.int64))
        hits = np.asarray(hit_keys, dtype=np.int64)
        # Decided by one key: every row of every key hit.
        owner, positions = _expand(compiled.decided_pointers, hits)
        found_papers = [hit_papers[owner]]
        found_ranks = [compiled.decided_ranks[positions]]
        # Decided by two keys: the rows of a key hit whose second key the same paper carries.
        owner, positions = _expand(compiled.paired_pointers, hits)
        if len(positions):
            carried = np.sort(hit_papers * compiled.key_count + hits)
            wanted = hit_papers[owner] * compiled.key_count + compiled.paired_seconds[positions]
            where = np.searchsorted(carried, wanted)
            where[where == len(carried)] = 0
            both = carried[where] == wanted
            found_papers.append(hit_papers[owner][both])
            found_ranks.append(compiled.paired_ranks[positions][both])
        found_papers.append(np.asarray(checked_papers, dtype=np.int64))
        found_ranks.append(np.asarray(checked_ranks, dtype=np.int64))
        return FoundPairs(compiled, len(papers), np.concatenate(found_papers),
                      np.concatenate(found_ranks))

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
            compiled = self._compile()
            rank_of = compiled.rank_of
            found = FoundPairs(
                compiled, len(papers),
                np.repeat(np.arange(len(papers), dtype=np.int64),
                          np.asarray([len(ids) for ids in found], dtype=np.int64)),
                np.asarray([rank_of[sub_id] for ids in found for sub_id in ids], dtype=np.int64))
        elif found.size != len(papers):
            raise ValueError(f"matches of {found.size} papers for {len(papers)} papers")
        if not len(found.ranks):
            return Alerts.empty(papers)
        compiled = found.compiled
        subs = len(compiled.sub_ids)
        size = max(len(papers), 1)
        # One sort orders the pairs by chat, then paper, then subscription id, and drops the
        # repeats (a subscription filed under two keys that a paper both carries).
        codes = np.sort((compiled.chat_rank[found.ranks] * size + found.papers) * subs
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
        return Alerts(papers, compiled.chats[alert_chats[chat_starts[order]]],
                      chat_starts[order], chat_ends[order], alert_papers,
                      np.append(alert_starts, len(codes)), compiled.sub_ids[ranks])

    def match(self, papers: Sequence[Paper]) -> Alerts:
        """Per chat, each matching paper (in input order) with its matching subscription ids."""
        return self.alerts(papers, self.find_pairs(papers))


def _checked_plan(sub_id: int, chat_id: int, node: Node) -> _Plan:
    if not is_anchored(node):
        raise ValueError(f"subscription {sub_id} has no positive term to index")
    plan = _plan(chat_id, node)
    if any(kind[0] == "p" and len(value) < MIN_PREFIX_LENGTH
           for kind, value in plan.looked_at()):
        raise ValueError(f"subscription {sub_id} has a prefix shorter than "
                         f"{MIN_PREFIX_LENGTH} letters")
    return plan



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

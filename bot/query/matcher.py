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
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from itertools import pairwise

from bot.arxiv.taxonomy import listed_in
from bot.core.models import Match, Paper
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


class _Entry:
    """The subscriptions filed under one key; a part nobody uses stays None.

    (An empty set costs some 200 bytes, and there are about as many keys as subscriptions.)
    """

    __slots__ = ("checked", "decided", "paired")

    def __init__(self) -> None:
        self.decided: set[int] | None = None  # the key alone is a match
        # The key and one more (a category for `cat:cs.LG quantiz*`) are a match: the second
        # key is looked up only for papers that have this one.
        self.paired: dict[AnchorKey, set[int]] | None = None
        self.checked: set[int] | None = None  # candidates, checked one by one


_Index = dict[str, dict[str, _Entry]]  # kind -> value -> entry
_NOTHING: frozenset[str] = frozenset()
# Past this many distinct words, the cache of their prefixes starts afresh.
_MAX_WORDS_SEEN = 200_000


def _file(index: _Index, plan: _Plan, sub_id: int) -> None:
    for kind, value in plan.first:
        by_value = index.setdefault(kind, {})
        entry = by_value.get(value)
        if entry is None:
            entry = by_value[value] = _Entry()
        if not plan.decided or plan.exclude:
            if entry.checked is None:
                entry.checked = set()
            entry.checked.add(sub_id)
        elif plan.second:
            if entry.paired is None:
                entry.paired = {}
            for key in plan.second:
                entry.paired.setdefault(key, set()).add(sub_id)
        else:
            if entry.decided is None:
                entry.decided = set()
            entry.decided.add(sub_id)


def _unfile(index: _Index, plan: _Plan, sub_id: int) -> None:
    for kind, value in plan.first:
        by_value = index[kind]
        entry = by_value[value]
        if entry.decided is not None:
            entry.decided.discard(sub_id)
            entry.decided = entry.decided or None
        if entry.checked is not None:
            entry.checked.discard(sub_id)
            entry.checked = entry.checked or None
        if entry.paired is not None:
            for key in plan.second:
                ids = entry.paired.get(key)
                if ids is not None:
                    ids.discard(sub_id)
                    if not ids:
                        del entry.paired[key]
            entry.paired = entry.paired or None
        if entry.decided is None and entry.checked is None and entry.paired is None:
            del by_value[value]
            if not by_value:
                del index[kind]


def _lookup(index: _Index, keys: dict[str, Collection[str]]) -> tuple[set[int], set[int]]:
    """The ids filed under any of a paper's keys: those it matches, and those to check."""
    matched: set[int] = set()
    candidates: set[int] = set()
    for kind, by_value in index.items():
        # Intersecting with the dict's keys runs in C: most of a paper's words hit nothing.
        for value in by_value.keys() & keys[kind]:
            entry = by_value[value]
            if entry.decided:
                matched |= entry.decided
            if entry.paired:
                for (second_kind, second_value), ids in entry.paired.items():
                    if second_value in keys[second_kind]:
                        matched |= ids
            if entry.checked:
                candidates |= entry.checked
    return matched, candidates


def _has_any(keys: Iterable[AnchorKey], paper_keys: dict[str, Collection[str]]) -> bool:
    return any(value in paper_keys[kind] for kind, value in keys)


class Matcher:
    """All subscriptions, indexed by anchor keys, for matching batches of papers.

    Most subscriptions are decided by their keys: a category, an archive, a common shape of
    author name, a word, a prefix, a two-word phrase, an OR of those (filed under each key), or
    an AND of two of those (filed under the rarer one, paired with the other). A paper's matches
    among them are unions of the sets its keys find, with no work per subscription. The rest
    (exclusions, longer phrases, unusual names, deeper nesting) are filed under their rarest
    keys as candidates: checked against their other keys and exclusions, and evaluated on the
    paper only if keys cannot decide them.
    """

    def __init__(self) -> None:
        self._plans: dict[int, _Plan] = {}
        self._chat_of: dict[int, int] = {}
        self._index: _Index = {}
        # First words of the word pairs looked for: a paper's pairs starting elsewhere are
        # never looked up, so they are not even built.
        self._pair_starts: Counter[str] = Counter()
        # Registered prefixes by their first letters, with use counts: a word finds its prefixes
        # with one lookup (the parser guarantees at least MIN_PREFIX_LENGTH letters).
        self._prefix_first: dict[str, dict[str, int]] = {}
        # The registered prefixes of every word seen since they last changed (only words that
        # have some), and every word looked at: the vocabulary of a poll is mostly the last one's.
        self._prefixes_of: dict[str, tuple[str, ...]] = {}
        self._words_seen: set[str] = set()

    @classmethod
    def build(cls, subscriptions: Iterable[tuple[int, int, Node]]) -> Matcher:
        """A matcher holding every `(sub_id, chat_id, node)`."""
        matcher = cls()
        for sub_id, chat_id, node in subscriptions:
            matcher.add(sub_id, chat_id, node)
        return matcher

    def __len__(self) -> int:
        return len(self._plans)

    def add(self, sub_id: int, chat_id: int, node: Node) -> None:
        """Index one subscription (replacing any earlier one with that id)."""
        if not is_anchored(node):
            raise ValueError(f"subscription {sub_id} has no positive term to index")
        plan = _plan(chat_id, node)
        if any(kind[0] == "p" and len(value) < MIN_PREFIX_LENGTH
               for kind, value in plan.looked_at()):
            raise ValueError(f"subscription {sub_id} has a prefix shorter than "
                             f"{MIN_PREFIX_LENGTH} letters")
        self.remove(sub_id)
        self._plans[sub_id] = plan
        self._chat_of[sub_id] = chat_id
        _file(self._index, plan, sub_id)
        for kind, value in plan.looked_at():
            if kind in _PAIR_KINDS:
                self._pair_starts[value.partition(" ")[0]] += 1
            if kind[0] == "p":
                group = self._prefix_first.setdefault(value[:MIN_PREFIX_LENGTH], {})
                if value not in group:
                    self._forget_prefixes()
                group[value] = group.get(value, 0) + 1

    def remove(self, sub_id: int) -> bool:
        """Forget a subscription; False if it was not there."""
        plan = self._plans.pop(sub_id, None)
        if plan is None:
            return False
        del self._chat_of[sub_id]
        _unfile(self._index, plan, sub_id)
        for kind, value in plan.looked_at():
            if kind in _PAIR_KINDS:
                start = value.partition(" ")[0]
                self._pair_starts[start] -= 1
                if not self._pair_starts[start]:
                    del self._pair_starts[start]
            if kind[0] == "p":
                head = value[:MIN_PREFIX_LENGTH]
                group = self._prefix_first[head]
                group[value] -= 1
                if not group[value]:
                    self._forget_prefixes()
                    del group[value]
                    if not group:
                        del self._prefix_first[head]
        return True

    def _forget_prefixes(self) -> None:
        self._prefixes_of.clear()
        self._words_seen.clear()

    def _prefixes(self, features: PaperFeatures) -> tuple[set[str], set[str], set[str]]:
        """The registered prefixes of the paper's words: anywhere, in the title, the abstract."""
        if len(self._words_seen) > _MAX_WORDS_SEEN:
            self._forget_prefixes()
        prefixes_of = self._prefixes_of
        new_words = features.word_set.difference(self._words_seen)
        if new_words:
            prefix_first = self._prefix_first
            for word in new_words:
                group = prefix_first.get(word[:MIN_PREFIX_LENGTH], ())
                found = tuple(prefix for prefix in group if word.startswith(prefix))
                if found:
                    prefixes_of[word] = found
            self._words_seen.update(new_words)
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

    def _paper_keys(self, features: PaperFeatures) -> dict[str, Collection[str]]:
        keys: dict[str, Collection[str]] = {
            "c": features.categories, "a": features.archives, "u": features.author_keys,
            "w": features.word_set, "t": features.title_set, "b": features.abstract_set,
            **features.name_keys,
            "w2": _NOTHING, "t2": _NOTHING, "b2": _NOTHING,
            "pw": _NOTHING, "pt": _NOTHING, "pb": _NOTHING,
        }
        starts = self._pair_starts.keys() & features.word_set
        if starts:
            in_title = _pairs_from(features.title, starts)
            in_abstract = _pairs_from(features.abstract, starts)
            keys.update(t2=in_title, b2=in_abstract, w2=in_title | in_abstract)
        if self._prefix_first:
            keys["pw"], keys["pt"], keys["pb"] = self._prefixes(features)
        return keys

    def _match_one(self, features: PaperFeatures) -> set[int]:
        keys = self._paper_keys(features)
        matched, candidates = _lookup(self._index, keys)
        plans = self._plans
        for sub_id in candidates:
            plan = plans[sub_id]
            if plan.second and not _has_any(plan.second, keys):
                continue
            if plan.exclude and _has_any(plan.exclude, keys):
                continue
            # Only ORs have sure keys, and an OR has no exclusions: a hit is a match.
            if (plan.decided or (plan.sure and _has_any(plan.sure, keys))
                    or evaluate_features(plan.node, features)):
                matched.add(sub_id)
        return matched

    def matching(self, paper: Paper) -> set[int]:
        """The ids of the subscriptions that match one paper."""
        return self._match_one(PaperFeatures(paper))

    def find(self, papers: Iterable[Paper]) -> list[set[int]]:
        """For each paper, in order, the ids of the subscriptions that match it."""
        with collector_paused():
            return [self._match_one(PaperFeatures(paper)) for paper in papers]

    def alerts(self, papers: Sequence[Paper],
               found: Sequence[Collection[int]]) -> dict[int, list[Match]]:
        """Group what `find` returned into per-chat alerts: each paper with its subscriptions."""
        results: dict[int, list[Match]] = {}
        chat_of = self._chat_of
        with collector_paused():
            for paper, sub_ids in zip(papers, found, strict=True):
                per_chat: dict[int, tuple[int, ...]] = {}
                # Sorted, each chat's ids come out in order; walking the big dict in id order
                # (the order it was filled) is also several times faster than in set order.
                for sub_id in sorted(sub_ids):
                    chat_id = chat_of[sub_id]
                    ids = per_chat.get(chat_id)
                    per_chat[chat_id] = (sub_id,) if ids is None else (*ids, sub_id)
                for chat_id, ids in per_chat.items():
                    match = _new_match((chat_id, paper, ids))
                    for_chat = results.get(chat_id)
                    if for_chat is None:
                        results[chat_id] = [match]
                    else:
                        for_chat.append(match)
        return results

    def match(self, papers: Sequence[Paper]) -> dict[int, list[Match]]:
        """Per chat, each matching paper (in input order) with its matching subscription ids."""
        with collector_paused():
            return self.alerts(papers, self.find(papers))


# `Match._make` without its Python-level call: a poll at scale builds hundreds of thousands.
_new_match = partial(tuple.__new__, Match)


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

"""Matching papers against subscriptions: a naive evaluator and an indexed `Matcher`.

`evaluate` is the reference semantics: one query, one paper. `Matcher` holds every subscription
and files each under a few anchor keys (a category, an archive, an author's surname or initial
and surname, a word of the title or abstract, a prefix), keys of which every matching paper has
at least one. A paper then looks up only its own keys: most subscriptions are decided by those
set operations alone, and the few that are not are evaluated on the paper's precomputed
features.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Collection, Iterable, Iterator, Sequence
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


class PaperFeatures:
    """A paper's normalised words, authors and categories, computed once per paper."""

    __slots__ = ("_positions", "_sorted", "abstract", "abstract_set", "archives", "author_keys",
                 "authors", "categories", "name_keys", "title", "title_set", "word_set")

    def __init__(self, paper: Paper) -> None:
        self.title = words(paper.title)
        self.abstract = words(paper.abstract)
        self.title_set = frozenset(self.title)
        self.abstract_set = frozenset(self.abstract)
        self.word_set = self.title_set | self.abstract_set
        self.authors = tuple(n for n in map(split_name, paper.authors) if n is not None)
        self.author_keys = frozenset(name.key for name in self.authors)
        self.name_keys = _name_keys(self.authors)
        self.categories = frozenset(normalise_category(c) for c in paper.categories)
        self.archives = frozenset(archive_of(c) for c in paper.categories)
        self._positions: dict[tuple[bool, str], list[int]] = {}
        self._sorted: dict[bool, list[str]] = {}

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

# An anchor key is (kind, value): ("c", category), ("a", archive), ("u", surname), a word in
# the title or abstract ("w"), the title ("t") or the abstract ("b"), or a prefix of such a word
# ("pw", "pt", "pb").
AnchorKey = tuple[str, str]

_WORD_KIND = {"any": "w", "ti": "t", "abs": "b"}
_PREFIX_KIND = {"any": "pw", "ti": "pt", "abs": "pb"}
# Rough cost of an anchor (how many papers of a batch carry it), to pick the cheapest AND branch.
_COST = {"u": 1.0, "u1": 0.5, "uf": 0.3, "ua": 0.3, "w": 3.0, "t": 1.5, "b": 3.0, "pw": 6.0,
         "pt": 3.0, "pb": 6.0, "c": 20.0, "a": 60.0}


def _word_cost(kind: str, word: str) -> float:
    # Longer words tend to be rarer; numbers and short words are everywhere.
    rarity = 2.0 if len(word) <= 3 or word.isdigit() else 8.0 / min(len(word), 8)
    return _COST[kind] * rarity


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
            keys = _author_keys(name)
            return (keys, _COST["uf"]) if keys else (frozenset({("u", name.key)}), _COST["u"])
        case Text(field, text_words, prefix):
            whole = text_words[:-1] if prefix else text_words
            if whole:
                best = max(whole, key=len)
                kind = _WORD_KIND[field]
                return frozenset({(kind, best)}), _word_cost(kind, best)
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
        case Text(_, text_words):
            return len(text_words) == 1  # one word or prefix: exactly what its key records
        case Or(children):
            return all(map(_decidable, children))
    return False


@dataclass(frozen=True, slots=True)
class _Plan:
    """How the index filters one subscription before (or instead of) evaluating it."""

    chat_id: int
    node: Node
    groups: tuple[frozenset[AnchorKey], ...]  # one or two: a match hits a key of each
    exclude: frozenset[AnchorKey]  # a match hits none of these
    decided: bool  # the groups and exclusions are the whole query: no evaluation needed
    sure: frozenset[AnchorKey] = frozenset()  # hitting one of these is enough (OR branches)

    def filed_under(self) -> Iterator[tuple[str, AnchorKey]]:
        """Each (role, key) the subscription is indexed under."""
        # Only the first group is indexed: checking the second on the few papers that pass the
        # first is cheaper than collecting everything it hits (often a whole category).
        role = "one" if len(self.groups) == 1 else "first"
        for key in self.groups[0]:
            yield role, key
        for key in self.exclude:
            yield "exclude", key
        for key in self.sure:
            yield "sure", key


def _plan(chat_id: int, node: Node) -> _Plan:
    if _decidable(node):
        return _Plan(chat_id, node, (anchors(node),), frozenset(), True)
    match node:
        case Or(children):
            # The OR's decidable branches settle a match on their own; the rest are evaluated.
            sure = frozenset().union(*(anchors(c) for c in children if _decidable(c)))
            return _Plan(chat_id, node, (anchors(node),), frozenset(), False, sure)
        case And(children):
            positive = [c for c in children if not isinstance(c, Not)]
            negative = [c.child for c in children if isinstance(c, Not)]
            options = [o for o in map(_anchor_options, positive) if o is not None]
            options.sort(key=lambda option: option[1])
            excluded = [anchors(c) for c in negative if _decidable(c)]
            decided = (len(positive) <= 2 and all(map(_decidable, positive))
                       and len(excluded) == len(negative))
            return _Plan(chat_id, node, tuple(o[0] for o in options[:2]),
                         frozenset().union(*excluded), decided)
        case Text(field, text_words, prefix):
            # A phrase needs two of its words: a far tighter filter than one.
            whole = sorted(set(text_words[:-1] if prefix else text_words), key=len, reverse=True)
            if len(whole) >= 2:
                kind = _WORD_KIND[field]
                return _Plan(chat_id, node, (frozenset({(kind, whole[0])}),
                                             frozenset({(kind, whole[1])})), frozenset(), False)
    return _Plan(chat_id, node, (anchors(node),), frozenset(), False)


_Index = dict[str, dict[str, set[int]]]


class Matcher:
    """All subscriptions, indexed by anchor keys, for matching batches of papers.

    Each subscription is filed under one or two groups of keys (a matching paper hits a key of
    each) and, for `NOT` parts, keys that rule a paper out. Categories, single words, prefixes
    and their ORs, ANDs of two of those and their exclusions are decided by set operations
    alone; anything else (phrases, authors, deeper nesting) is evaluated only if it passes.
    """

    def __init__(self) -> None:
        self._plans: dict[int, _Plan] = {}
        self._chat_of: dict[int, int] = {}
        self._prefixes: dict[int, list[str]] = {}  # prefixes each subscription looks for
        self._decided: set[int] = set()
        # role ("one", "first", "exclude", "sure") -> kind -> value -> subscription ids
        self._index: dict[str, _Index] = {
            role: {kind: {} for kind in _COST}
            for role in ("one", "first", "exclude", "sure")
        }
        # Registered prefixes by their first letters, with use counts: a paper's word finds its
        # prefixes with one lookup (the parser guarantees at least MIN_PREFIX_LENGTH letters).
        self._prefix_first: dict[str, dict[str, int]] = {}

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
        prefixes = [value for _, (kind, value) in plan.filed_under() if kind[0] == "p"]
        if len(plan.groups) > 1:
            prefixes += [value for kind, value in plan.groups[1] if kind[0] == "p"]
        if any(len(prefix) < MIN_PREFIX_LENGTH for prefix in prefixes):
            raise ValueError(f"subscription {sub_id} has a prefix shorter than "
                             f"{MIN_PREFIX_LENGTH} letters")
        self.remove(sub_id)
        self._plans[sub_id] = plan
        self._prefixes[sub_id] = prefixes
        self._chat_of[sub_id] = chat_id
        if plan.decided:
            self._decided.add(sub_id)
        for role, (kind, value) in plan.filed_under():
            self._index[role][kind].setdefault(value, set()).add(sub_id)
        for prefix in prefixes:
            group = self._prefix_first.setdefault(prefix[:MIN_PREFIX_LENGTH], {})
            group[prefix] = group.get(prefix, 0) + 1

    def remove(self, sub_id: int) -> bool:
        """Forget a subscription; False if it was not there."""
        plan = self._plans.pop(sub_id, None)
        if plan is None:
            return False
        del self._chat_of[sub_id]
        self._decided.discard(sub_id)
        for role, (kind, value) in plan.filed_under():
            by_value = self._index[role][kind]
            by_value[value].discard(sub_id)
            if not by_value[value]:
                del by_value[value]
        for prefix in self._prefixes.pop(sub_id):
            head = prefix[:MIN_PREFIX_LENGTH]
            group = self._prefix_first[head]
            group[prefix] -= 1
            if not group[prefix]:
                del group[prefix]
                if not group:
                    del self._prefix_first[head]
        return True

    def _prefixes_of(self, words: Iterable[str], cache: dict[str, tuple[str, ...]]) -> set[str]:
        found: set[str] = set()
        prefix_first = self._prefix_first
        for word in words:
            hits = cache.get(word)
            if hits is None:
                group = prefix_first.get(word[:MIN_PREFIX_LENGTH], ())
                hits = tuple(prefix for prefix in group if word.startswith(prefix))
                cache[word] = hits
            found.update(hits)
        return found

    def _paper_keys(self, features: PaperFeatures,
                    cache: dict[str, tuple[str, ...]]) -> dict[str, Collection[str]]:
        keys: dict[str, Collection[str]] = {
            "c": features.categories, "a": features.archives, "u": features.author_keys,
            "w": features.word_set, "t": features.title_set, "b": features.abstract_set,
            **features.name_keys,
        }
        if self._prefix_first:
            in_title = self._prefixes_of(features.title_set, cache)
            in_abstract = self._prefixes_of(features.abstract_set, cache)
            keys.update(pt=in_title, pb=in_abstract, pw=in_title | in_abstract)
        return keys

    def _hits(self, role: str, keys: dict[str, Collection[str]]) -> set[int]:
        found: set[int] = set()
        for kind, by_value in self._index[role].items():
            if by_value:
                # Intersecting with the dict's keys runs in C: most words hit nothing.
                for value in by_value.keys() & keys.get(kind, ()):
                    found |= by_value[value]
        return found

    def _match_one(self, features: PaperFeatures,
                   cache: dict[str, tuple[str, ...]]) -> set[int]:
        keys = self._paper_keys(features, cache)
        passing = self._hits("one", keys)
        plans = self._plans
        for sub_id in self._hits("first", keys):
            for kind, value in plans[sub_id].groups[1]:
                if value in keys.get(kind, ()):
                    passing.add(sub_id)
                    break
        if passing:
            passing -= self._hits("exclude", keys)
        matched = passing & self._decided
        undecided = passing - self._decided
        sure = self._hits("sure", keys)
        if sure:
            # Only ORs have sure keys, and an OR has no exclusions: a hit is a match.
            matched |= sure
            undecided -= sure
        matched.update(sub_id for sub_id in undecided
                       if evaluate_features(plans[sub_id].node, features))
        return matched

    def matching(self, paper: Paper) -> set[int]:
        """The ids of the subscriptions that match one paper."""
        return self._match_one(PaperFeatures(paper), {})

    def match(self, papers: Sequence[Paper]) -> dict[int, list[Match]]:
        """Per chat, each matching paper (in input order) with its matching subscription ids."""
        results: dict[int, list[Match]] = {}
        chat_of = self._chat_of
        cache: dict[str, tuple[str, ...]] = {}
        for paper in papers:
            per_chat: dict[int, tuple[int, ...]] = {}
            for sub_id in self._match_one(PaperFeatures(paper), cache):
                chat_id = chat_of[sub_id]
                found = per_chat.get(chat_id)
                per_chat[chat_id] = (sub_id,) if found is None else (*found, sub_id)
            for chat_id, sub_ids in per_chat.items():
                if len(sub_ids) > 1:
                    sub_ids = tuple(sorted(sub_ids))
                match = Match(chat_id, paper, sub_ids)
                found_for_chat = results.get(chat_id)
                if found_for_chat is None:
                    results[chat_id] = [match]
                else:
                    found_for_chat.append(match)
        return results

"""A batch's alerts as compact arrays: what `Matcher.match` returns.

A poll at scale finds half a million (paper, chat) alerts. Built as one Python object each, they
cost more than finding them; here they stay a few numpy arrays, sorted and grouped once, and a
chat's `Match` objects are built only when someone asks for that chat.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from functools import cached_property

import numpy as np

from bot.core.models import GENERAL, Match, Paper, PlainAlerts


class Alerts(Mapping[int, list[Match]]):
    """Per chat, each matching paper (in input order) with its matching subscription ids.

    A read-only mapping from chat id to that chat's list of `Match`; chats come in the order
    they first match (the first paper, then by lowest subscription id), as a dict filled paper
    by paper would have them.
    """

    def __init__(self, papers: Sequence[Paper], chats: np.ndarray, chat_starts: np.ndarray,
                 chat_ends: np.ndarray, alert_papers: np.ndarray, alert_starts: np.ndarray,
                 subscription_ids: np.ndarray) -> None:
        self._papers = papers
        self._chats = chats  # in order of first appearance
        self._chat_starts = chat_starts  # chat i's alerts: chat_starts[i]:chat_ends[i]
        self._chat_ends = chat_ends
        self._alert_papers = alert_papers  # each alert's paper, an index into `papers`
        self._alert_starts = alert_starts  # alert j's ids: alert_starts[j]:alert_starts[j + 1]
        self._subscription_ids = subscription_ids

    @classmethod
    def empty(cls, papers: Sequence[Paper]) -> Alerts:
        nothing = np.zeros(0, dtype=np.int64)
        return cls(papers, nothing, nothing, nothing, nothing, np.zeros(1, dtype=np.int64),
                   nothing)

    @property
    def alert_count(self) -> int:
        """How many (paper, chat) alerts there are."""
        return len(self._alert_papers)

    @property
    def pair_count(self) -> int:
        """How many (paper, subscription) matches there are."""
        return len(self._subscription_ids)

    @cached_property
    def _position(self) -> dict[int, int]:
        return dict(zip(self._chats.tolist(), range(len(self._chats)), strict=True))

    @cached_property
    def _lists(self) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
        # Python ints once, not one numpy scalar per alert when the matches are built.
        return (self._chat_starts.tolist(), self._chat_ends.tolist(), self._alert_papers.tolist(),
                self._alert_starts.tolist(), self._subscription_ids.tolist())

    def __getitem__(self, chat_id: int) -> list[Match]:
        position = self._position[chat_id]
        chat_starts, chat_ends, alert_papers, alert_starts, ids = self._lists
        papers = self._papers
        return [
            Match(chat_id, papers[alert_papers[alert]],
                  tuple(ids[alert_starts[alert]:alert_starts[alert + 1]]))
            for alert in range(chat_starts[position], chat_ends[position])
        ]

    def __iter__(self) -> Iterator[int]:
        return iter(self._chats.tolist())

    def __len__(self) -> int:
        return len(self._chats)

    def __contains__(self, chat_id: object) -> bool:
        return chat_id in self._position

    def __repr__(self) -> str:
        return f"Alerts({dict(self.items())!r})"

    def plain_units(self, topics: Mapping[int, int], pairs: Pairs) -> PlainUnits:
        """These matches as plain alerts (new papers): one per chat, paper and forum topic
        (`topics`: the subscriptions bound to a topic), sorted by chat id, then paper, then
        each topic in the order of its lowest subscription id; see `PlainUnits`."""
        if not len(self._chats):
            return PlainUnits(self._papers, *(np.zeros(0, dtype=np.int64),) * 4, pairs)
        order = np.argsort(self._chats, kind="stable")
        chat_ids = self._chats[order]
        starts, ends = self._chat_starts[order], self._chat_ends[order]
        alerts = _ranges(starts, ends - starts)
        sizes = np.diff(self._alert_starts)[alerts]
        sub_ids = self._subscription_ids[_ranges(self._alert_starts[alerts], sizes)]
        pair_alerts = np.repeat(np.arange(len(alerts), dtype=np.int64), sizes)
        pair_topics = np.full(len(sub_ids), GENERAL, dtype=np.int64)
        if topics:
            bound = np.fromiter(topics, dtype=np.int64, count=len(topics))
            bound_topics = np.fromiter(topics.values(), dtype=np.int64, count=len(topics))
            sort = np.argsort(bound)
            bound, bound_topics = bound[sort], bound_topics[sort]
            at = np.minimum(np.searchsorted(bound, sub_ids), len(bound) - 1)
            hit = bound[at] == sub_ids
            pair_topics[hit] = bound_topics[at[hit]]
        if (pair_topics != GENERAL).any():
            # An alert's subscriptions bound to different topics are an alert per topic, in
            # the order of each topic's first (lowest) subscription id.
            _, topic_codes = np.unique(pair_topics, return_inverse=True)
            _, first, groups = np.unique(pair_alerts * (int(topic_codes.max()) + 1)
                                         + topic_codes, return_index=True,
                                         return_inverse=True)
            group_first = first[groups.reshape(-1)]
            regroup = np.lexsort((np.arange(len(sub_ids)), group_first))
            sub_ids, pair_alerts = sub_ids[regroup], pair_alerts[regroup]
            pair_topics, group_first = pair_topics[regroup], group_first[regroup]
            unit_starts = np.flatnonzero(np.concatenate(([True],
                                                         group_first[1:] != group_first[:-1])))
        else:
            unit_starts = np.concatenate(([0], np.cumsum(sizes)[:-1])).astype(np.int64)
        unit_alerts = pair_alerts[unit_starts]
        unit_sizes = np.diff(np.append(unit_starts, len(sub_ids)))
        # A unit's subscriptions as one key (`Pairs`): the id when it is one (most are).
        keys = sub_ids[unit_starts].copy()
        several = unit_sizes > 1
        if several.any():
            ids = sub_ids.tolist()
            number = pairs.number
            keys[several] = [number(tuple(ids[start:start + size])) for start, size in zip(
                unit_starts[several].tolist(), unit_sizes[several].tolist(), strict=True)]
        alert_chats = np.repeat(chat_ids, ends - starts)
        return PlainUnits(self._papers, alert_chats[unit_alerts],
                          self._alert_papers[alerts][unit_alerts], pair_topics[unit_starts],
                          keys, pairs)


def _ranges(starts: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The indexes start:start + size of each range, one after another."""
    total = int(sizes.sum())
    offsets = np.repeat(starts - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return (offsets + np.arange(total, dtype=np.int64)).astype(np.int64)


class Pairs(dict[int, tuple[tuple[int, ...], tuple[str, ...]]]):
    """Tuples of subscription ids with their matched queries (`query_text` of each, those
    it knows), by key: a subscription's id for itself alone, a number below zero
    (`number`) for several. Each pair is made once and is then the same object wherever it
    is named: the same subscriptions match many papers, and their pair is encoded once
    where it is staged. Kept for a poll."""

    def __init__(self, query_text: Callable[[int], str | None]) -> None:
        super().__init__()
        self._query_text = query_text
        self._numbers: dict[tuple[int, ...], int] = {}

    def __missing__(self, sub_id: int) -> tuple[tuple[int, ...], tuple[str, ...]]:
        if sub_id < 0:
            raise KeyError(sub_id)
        pair = self[sub_id] = self._made((sub_id,))
        return pair

    def _made(self, sub_ids: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        texts = map(self._query_text, sub_ids)
        return sub_ids, tuple(text for text in texts if text is not None)

    def number(self, sub_ids: tuple[int, ...]) -> int:
        """The key of several subscriptions' pair."""
        found = self._numbers.get(sub_ids)
        if found is None:
            found = self._numbers[sub_ids] = -1 - len(self._numbers)
            self[found] = self._made(sub_ids)
        return found

    def of(self, sub_ids: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[str, ...]]:
        """The pair of these subscriptions."""
        return self[sub_ids[0] if len(sub_ids) == 1 else self.number(sub_ids)]


class PlainUnits:
    """A batch's matches as plain alerts, in arrays: per alert its chat, paper (an index of
    `papers`), topic and subscriptions' key (see `Alerts.plain_units`); made into the
    `PlainAlerts` a part of the papers stages by `plain`."""

    def __init__(self, papers: Sequence[Paper], chats: np.ndarray, paper_indexes: np.ndarray,
                 topics: np.ndarray, keys: np.ndarray, pairs: Pairs) -> None:
        self._papers = papers
        self._arxiv_ids = np.array([paper.arxiv_id for paper in papers], dtype=object)
        self._versions = np.array([paper.version for paper in papers], dtype=object)
        self._chats = chats
        self._paper_indexes = paper_indexes
        self._topics = topics
        self._keys = keys
        self._pairs = pairs

    def __len__(self) -> int:
        return len(self._chats)

    def per_paper(self) -> list[int]:
        """How many alerts each paper makes."""
        return np.bincount(self._paper_indexes, minlength=len(self._papers)).tolist()

    def plain(self, wanted: Collection[int]) -> PlainAlerts:
        """The alerts of the papers at these indexes."""
        keep = np.zeros(len(self._papers), dtype=bool)
        keep[np.fromiter(wanted, dtype=np.int64, count=len(wanted))] = True
        mask = keep[self._paper_indexes]
        chats, papers = self._chats[mask], self._paper_indexes[mask]
        topics, keys = self._topics[mask], self._keys[mask]
        count = len(chats)
        if not count:
            return PlainAlerts([], [0], [], [], [], [], [0], [])
        chat_starts = np.flatnonzero(np.concatenate(([True], chats[1:] != chats[:-1])))
        chat_positions = np.cumsum(np.concatenate(([False], chats[1:] != chats[:-1])))
        # Each chat's distinct keys, in the order its alerts first name them.
        distinct_keys, key_codes = np.unique(keys, return_inverse=True)
        key_codes = key_codes.reshape(-1)
        codes, first, which = np.unique(chat_positions * len(distinct_keys) + key_codes,
                                        return_index=True, return_inverse=True)
        which = which.reshape(-1)
        by_first = np.argsort(first, kind="stable")
        group_chats = (codes // len(distinct_keys))[by_first]
        pair_starts = np.flatnonzero(np.concatenate(([True],
                                                     group_chats[1:] != group_chats[:-1])))
        rank = np.empty(len(codes), dtype=np.int64)
        rank[by_first] = np.arange(len(codes), dtype=np.int64)
        picks = rank[which] - pair_starts[chat_positions[first[which]]]
        pairs = list(map(self._pairs.__getitem__,
                         distinct_keys[codes[by_first] % len(distinct_keys)].tolist()))
        return PlainAlerts(
            chats[chat_starts].tolist(), [*chat_starts.tolist(), count],
            self._arxiv_ids[papers].tolist(), self._versions[papers].tolist(),
            topics.tolist(), picks.tolist(), [*pair_starts.tolist(), len(codes)], pairs)

"""A batch's alerts as compact arrays: what `Matcher.match` returns.

A poll at scale finds half a million (paper, chat) alerts. Built as one Python object each, they
cost more than finding them; here they stay a few numpy arrays, sorted and grouped once, and a
chat's `Match` objects are built only when someone asks for that chat.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property

import numpy as np

from bot.core.models import Match, Paper


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

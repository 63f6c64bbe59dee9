"""Reactions as feedback: which emoji on an alert mean 👍 ("more like this") or 👎 ("less")."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from bot.core.models import Feedback

# What people put on a paper they like; Telegram sends ❤ without the emoji variation selector.
LIKES = frozenset({"👍", "❤", "🔥", "👏"})
DISLIKES = frozenset({"👎"})
_VARIATION_SELECTOR = "\ufe0f"


@dataclass(frozen=True, slots=True)
class Rating:
    """What a change of reactions does to the paper's label: give it, or clear it (None)."""

    label: Feedback | None


def _labels(emojis: Iterable[str]) -> set[Feedback]:
    labels = set()
    for emoji in emojis:
        plain = emoji.replace(_VARIATION_SELECTOR, "")
        if plain in LIKES:
            labels.add(Feedback.MORE)
        elif plain in DISLIKES:
            labels.add(Feedback.LESS)
    return labels


def rating_of(old: Iterable[str], new: Iterable[str]) -> Rating | None:
    """The rating a chat gave by changing its reactions from `old` to `new`, or None when the
    change says nothing about the paper (a 😂 added, or both 👍 and 👎 left on it).

    Removing the last rating reaction clears the label; with both kinds on the message, the one
    just added counts.
    """
    before, after = _labels(old), _labels(new)
    if len(after) == 1:
        return Rating(next(iter(after)))
    if not after:
        return Rating(None) if before else None
    added = after - before
    return Rating(next(iter(added))) if len(added) == 1 else None

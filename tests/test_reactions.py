"""Which reaction changes rate a paper: the rule behind reactions as feedback."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.models import Feedback
from bot.ranking.reactions import DISLIKES, LIKES, Rating, rating_of

MORE, LESS = Rating(Feedback.MORE), Rating(Feedback.LESS)


@pytest.mark.parametrize(("old", "new", "rating"), [
    ((), ("👍",), MORE),
    ((), ("❤️",), MORE),  # as some clients send it, with the variation selector
    ((), ("🔥", "👏"), MORE),
    ((), ("👎",), LESS),
    (("👍",), ("👎",), LESS),
    (("👍",), (), Rating(None)),  # taken back: the label goes
    (("👍",), ("😂",), Rating(None)),
    ((), ("😂",), None),  # says nothing of the paper
    (("😂",), (), None),
    (("👍",), ("👍", "👎"), LESS),  # both on it: the one just added
    (("👎",), ("👍", "👎"), MORE),
    ((), ("👍", "👎"), None),  # both at once: no telling
])
def test_a_change_of_reactions_rates_as_people_mean_it(
        old: tuple[str, ...], new: tuple[str, ...], rating: Rating | None) -> None:
    assert rating_of(old, new) == rating


EMOJI = st.sampled_from(sorted(LIKES | DISLIKES | {"😂", "🤔", "❤️", "👀"}))


@given(st.lists(EMOJI, max_size=4), st.lists(EMOJI, max_size=4))
def test_any_change_gives_a_label_of_a_reaction_left_on_the_message(
        old: list[str], new: list[str]) -> None:
    rating = rating_of(old, new)
    if rating is None or rating.label is None:
        return
    kinds = {Feedback.MORE if e.replace("\ufe0f", "") in LIKES else Feedback.LESS
             for e in new if e.replace("\ufe0f", "") in LIKES | DISLIKES}
    assert rating.label in kinds

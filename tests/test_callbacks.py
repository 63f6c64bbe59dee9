"""Button data: compact, versioned, round-trips, and forged or stale data is refused quietly."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.models import ArxivId, Feedback
from bot.delivery.callbacks import (
    MAX_BYTES,
    DigestMore,
    DigestRest,
    Forget,
    Noop,
    Rate,
    RemoveSaved,
    SavedPage,
    ShowSimilar,
    ToggleAbstract,
    ToggleSave,
    Unfollow,
    decode,
    encode,
)

NEW_ID = ArxivId("2611.11450")
OLD_ID_V12 = ArxivId("math.AG/0601001", 12)


@pytest.mark.parametrize(
    ("action", "data"),
    [
        (ToggleSave(NEW_ID), "v1:s:2611.11450"),
        (ToggleSave(ArxivId("2611.11450", 2)), "v1:s:2611.11450v2"),
        (ToggleSave(ArxivId("2611.11450", 2), number=7), "v1:s:2611.11450v2:7"),
        (ToggleAbstract(ArxivId("2611.11450", 2), expand=True), "v1:a:2611.11450v2:1"),
        (ToggleAbstract(ArxivId("2611.11450", 2), expand=False), "v1:a:2611.11450v2:0"),
        (Unfollow(42), "v1:u:42"),
        (SavedPage(3), "v1:p:3"),
        (RemoveSaved(ArxivId("hep-th/9901001"), page=2), "v1:r:hep-th/9901001:2"),
        (Rate(NEW_ID, Feedback.MORE, give=True), "v1:f:2611.11450:m:1"),
        (Rate(ArxivId("hep-th/9901001"), Feedback.LESS, give=False), "v1:f:hep-th/9901001:l:0"),
        (Noop(), "v1:n"),
        (DigestMore(40), "v1:m:40"),
        (DigestMore(140, message_id=512), "v1:m:140:512"),
        (DigestRest(25, 0), "v1:d:25:0"),
        (DigestRest(42, 17, message_id=512), "v1:d:42:17:512"),
        (Forget(confirm=True), "v1:x:1"),
        (Forget(confirm=False), "v1:x:0"),
    ],
)
def test_wire_format(action: object, data: str) -> None:
    assert encode(action) == data  # type: ignore[arg-type]
    assert decode(data) == action


def test_old_style_ids_with_big_numbers_fit_in_64_bytes() -> None:
    longest = [
        ToggleSave(OLD_ID_V12, number=999),
        ToggleAbstract(OLD_ID_V12, expand=True),
        RemoveSaved(ArxivId("math.AG/0601001"), page=100_000),
        Unfollow(2**63 - 1),
    ]
    for action in longest:
        data = encode(action)
        assert len(data.encode()) <= MAX_BYTES
        assert decode(data) == action


def test_an_id_too_long_for_telegram_is_refused_when_encoding() -> None:
    with pytest.raises(ValueError, match="64 bytes"):
        encode(ToggleSave(ArxivId("a" + "-b" * 30 + "/0601001", 3), number=5))


@pytest.mark.parametrize(
    "build",
    [
        lambda: Unfollow(0),
        lambda: Unfollow(-1),
        lambda: Unfollow(2**63),
        lambda: SavedPage(0),
        lambda: ToggleSave(NEW_ID, number=0),
        lambda: ToggleSave(ArxivId("not an id")),
        lambda: ToggleAbstract(NEW_ID, expand=True),  # needs a version
        lambda: RemoveSaved(ArxivId("2611.11450", 2), page=1),  # library holds base ids
        lambda: Unfollow(True),
        lambda: ToggleSave(ArxivId("２６１１.１１４５０")),  # full-width digits
        lambda: Rate(ArxivId("2611.11450", 2), Feedback.MORE, give=True),  # labels: base ids
        lambda: Rate(NEW_ID, "more", give=True),  # type: ignore[arg-type]
        lambda: Rate(NEW_ID, Feedback.LESS, give=1),  # type: ignore[arg-type]
    ],
)
def test_invalid_actions_cannot_be_built(build: object) -> None:
    with pytest.raises(ValueError):
        build()  # type: ignore[operator]


@pytest.mark.parametrize(
    "data",
    [
        "",
        "v1",
        "v1:",
        "v2:s:2611.11450",  # a version this bot does not speak (yet, or any more)
        "V1:s:2611.11450",
        "v1:x:2611.11450",
        "v1:s:",
        "v1:s:2611.11450:",
        "v1:s:2611.11450::",
        "v1:s:arXiv:2611.11450",
        "v1:s:https://arxiv.org/abs/2611.11450",
        "v1:s:2611.11450v0",
        "v1:s:2611.114",
        "v1:s: 2611.11450",
        "v1:s:2611.11450v2:0",
        "v1:s:2611.11450v2:1000",
        "v1:a:2611.11450:1",  # the abstract button always names a version
        "v1:a:2611.11450v2:2",
        "v1:a:2611.11450v2",
        "v1:u:0",
        "v1:u:-5",
        "v1:u:+5",
        "v1:u:05",
        "v1:u:1e3",
        "v1:u:99999999999999999999",
        "v1:u:9223372036854775808",
        "v1:u:١٢",  # Arabic-Indic digits: int() would accept them
        "v1:p:0",
        "v1:p:100001",
        "v1:r:2611.11450v2:1",
        "v1:r:2611.11450",
        "v1:n:1",
        "v1:m",
        "v1:m:",
        "v1:m:-1",
        "v1:m:30:0",
        "v1:m:30:512:1",
        "v1:d:25",
        "v1:d:25:0:0",
        "v1:d:25:0:512:1",
        "v1:d:-1:0",
        "v1:f:2611.11450:m",
        "v1:f:2611.11450:x:1",
        "v1:f:2611.11450:m:2",
        "v1:f:2611.11450v2:m:1",  # a label is for the paper, not a version
        "v1:f:2611.11450:more:1",
        "v1:i:2611.11450v2",  # similar papers are found for a base id
        "v1:i:",
        "v1:s:2611.11450\n",
        "v1:p:1" + "0" * 70,
        "v1:s:" + "a" * 80 + "/0601001",
        "v1:s:２６１１.１１４５０",
        "v1:u:'; DROP TABLE subscriptions; --",
    ],
)
def test_malformed_data_decodes_to_none(data: str) -> None:
    assert decode(data) is None


def test_non_text_data_decodes_to_none() -> None:
    assert decode(None) is None
    assert decode(b"v1:n") is None
    assert decode(42) is None


base_ids = st.one_of(
    st.from_regex(r"[0-9]{4}\.[0-9]{4,5}", fullmatch=True),
    st.from_regex(r"[a-z][a-z\-]{0,12}(\.[A-Z]{2})?/[0-9]{7}", fullmatch=True),
)
versions = st.none() | st.integers(1, 999)
paper_ids = st.builds(ArxivId, base_ids, versions)
versioned_ids = st.builds(ArxivId, base_ids, st.integers(1, 999))
base_only_ids = st.builds(ArxivId, base_ids)

actions = st.one_of(
    st.builds(ToggleSave, paper_ids, st.none() | st.integers(1, 999)),
    st.builds(ToggleAbstract, versioned_ids, st.booleans()),
    st.builds(Unfollow, st.integers(1, 2**63 - 1)),
    st.builds(SavedPage, st.integers(1, 100_000)),
    st.builds(RemoveSaved, base_only_ids, st.integers(1, 100_000)),
    st.builds(DigestMore, st.integers(0, 2**63 - 1), st.none() | st.integers(1, 2**63 - 1)),
    st.builds(DigestRest, st.integers(0, 2**63 - 1), st.integers(0, 2**63 - 1),
              st.none() | st.integers(1, 2**63 - 1)),
    st.builds(Rate, base_only_ids, st.sampled_from(Feedback), st.booleans()),
    st.builds(ShowSimilar, base_only_ids),
    st.builds(Forget, st.booleans()),
    st.just(Noop()),
)


@settings(max_examples=500)
@given(actions)
def test_every_action_round_trips_within_64_ascii_bytes(action: object) -> None:
    data = encode(action)  # type: ignore[arg-type]
    assert data.isascii()
    assert len(data.encode()) <= MAX_BYTES
    assert decode(data) == action


@settings(max_examples=500)
@given(st.text(max_size=100) | st.binary(max_size=100).map(lambda b: b.decode("latin-1")))
def test_decode_never_raises_and_accepts_only_canonical_data(data: str) -> None:
    action = decode(data)
    if action is not None:
        assert encode(action) == data


@settings(max_examples=500)
@given(
    st.sampled_from(["v1:s:", "v1:a:", "v1:u:", "v1:p:", "v1:r:", "v1:n", "v1:"]),
    st.text(alphabet="0123456789.:/v-abcAG", max_size=40),
)
def test_near_miss_data_is_either_canonical_or_refused(prefix: str, tail: str) -> None:
    action = decode(prefix + tail)
    if action is not None:
        assert encode(action) == prefix + tail

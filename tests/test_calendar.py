"""arXiv's calendar, freshness decisions and the listing-page parser, without the network."""

from __future__ import annotations

import contextlib
from datetime import UTC, date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.arxiv.calendar import ArxivCalendar
from bot.arxiv.errors import ListingError
from bot.arxiv.freshness import PollTiming, assess, feed_content, next_poll_delay
from bot.arxiv.listing import parse_listing
from bot.core.models import AnnounceType, FeedState, Freshness
from tests.conftest import make_paper

FIXTURE = Path(__file__).parent / "fixtures" / "listing-new-cs.AI-2026-08-12.EXCERPT.html"
NEW_YORK = ZoneInfo("America/New_York")
CALENDAR = ArxivCalendar()
TIMING = PollTiming(tight=60, relaxed=3600, tight_window=7200, stale_after=1800, ceiling=3600)


def eastern(day: date, hour: int, minute: int = 0) -> float:
    return datetime(day.year, day.month, day.day, hour, minute, tzinfo=NEW_YORK).timestamp()


def test_feeds_are_rebuilt_at_midnight_new_york_across_daylight_saving() -> None:
    summer, winter = date(2026, 10, 30), date(2026, 11, 2)  # DST ends on 1 November 2026
    assert datetime.fromtimestamp(CALENDAR.rebuild_at(summer), UTC).hour == 4
    assert datetime.fromtimestamp(CALENDAR.rebuild_at(winter), UTC).hour == 5
    # The announcement dated Monday goes out on Sunday at 20:00 Eastern.
    announced = datetime.fromtimestamp(CALENDAR.announced_at(winter), NEW_YORK)
    assert (announced.date(), announced.hour) == (date(2026, 11, 1), 20)


def test_the_expected_announcement_skips_weekends_and_holidays() -> None:
    friday, monday = date(2026, 11, 20), date(2026, 11, 23)
    assert CALENDAR.expected(eastern(date(2026, 11, 21), 12)) == friday  # Saturday
    assert CALENDAR.expected(eastern(date(2026, 11, 22), 23, 59)) == friday  # Sunday night
    assert CALENDAR.expected(eastern(monday, 0, 1)) == monday
    thanksgiving = date(2026, 11, 26)
    assert not CALENDAR.is_announcement_date(thanksgiving)
    assert CALENDAR.expected(eastern(thanksgiving, 12)) == date(2026, 11, 25)
    assert CALENDAR.next_after(date(2026, 11, 25)) == date(2026, 11, 27)


@given(st.integers(min_value=0, max_value=3 * 365 * 86400))
def test_the_expected_date_is_the_latest_rebuilt_announcement_date(offset: int) -> None:
    now = eastern(date(2025, 6, 1), 0) + offset
    expected = CALENDAR.expected(now)
    assert CALENDAR.is_announcement_date(expected)
    assert CALENDAR.rebuild_at(expected) <= now < CALENDAR.next_rebuild(now)
    assert CALENDAR.next_rebuild(now) == CALENDAR.rebuild_at(CALENDAR.next_after(expected))


def test_polls_are_tight_from_a_due_rebuild_until_it_is_seen_then_relaxed() -> None:
    wednesday = date(2026, 11, 18)
    behind = FeedState(announced_on=date(2026, 11, 17))
    caught_up = FeedState(announced_on=wednesday)
    now = eastern(wednesday, 0, 2)
    assert next_poll_delay(now, [behind, caught_up], CALENDAR, TIMING) == 60
    assert next_poll_delay(now, [caught_up], CALENDAR, TIMING) == 3600
    # Behind for longer than the tight window: relaxed, to catch a late rebuild.
    assert next_poll_delay(eastern(wednesday, 3), [behind], CALENDAR, TIMING) == 3600
    # Caught up late in the evening: the next poll is at the next rebuild.
    assert next_poll_delay(eastern(wednesday, 23, 30), [caught_up], CALENDAR, TIMING) == 1800
    # POLL_INTERVAL_SECONDS is the ceiling.
    low = PollTiming(tight=60, relaxed=3600, tight_window=7200, stale_after=1800, ceiling=900)
    assert next_poll_delay(now, [caught_up], CALENDAR, low) == 900


def test_a_feed_that_has_not_moved_past_the_last_announcement_is_stale() -> None:
    tuesday, wednesday = date(2026, 11, 17), date(2026, 11, 18)
    yesterday = feed_content([make_paper(1), make_paper(2)],
                             datetime(2026, 11, 17, 5, tzinfo=UTC))
    assert yesterday is not None
    state = assess(FeedState(), yesterday, fetched=True, now=eastern(tuesday, 9),
                   calendar=CALENDAR, timing=TIMING)
    assert (state.announced_on, state.freshness) == (tuesday, Freshness.FRESH)
    # The same items with a current date on Wednesday: waiting, then stale.
    same = feed_content([make_paper(2), make_paper(1)], datetime(2026, 11, 18, 5, tzinfo=UTC))
    waiting = assess(state, same, fetched=True, now=eastern(wednesday, 0, 10),
                     calendar=CALENDAR, timing=TIMING)
    assert waiting.freshness is Freshness.WAITING and waiting.expected_on == wednesday
    stale = assess(waiting, same, fetched=True, now=eastern(wednesday, 0, 40),
                   calendar=CALENDAR, timing=TIMING)
    assert stale.freshness is Freshness.STALE and stale.stale_since == eastern(wednesday, 0, 40)
    later = assess(stale, None, fetched=True, now=eastern(wednesday, 3),
                   calendar=CALENDAR, timing=TIMING)
    assert later.stale_since == stale.stale_since, "stale since the first time it was seen so"
    moved = assess(later, feed_content([make_paper(3)], None), fetched=True,
                   now=eastern(wednesday, 4), calendar=CALENDAR, timing=TIMING)
    assert (moved.announced_on, moved.freshness, moved.stale_since) == \
        (wednesday, Freshness.FRESH, None)
    # Saturday: nothing due, an empty feed is quiet.
    weekend = assess(moved, None, fetched=True, now=eastern(date(2026, 11, 21), 9),
                     calendar=CALENDAR, timing=TIMING)
    assert weekend.freshness is Freshness.QUIET


def test_the_real_listing_page_parses_into_its_sections_and_entries() -> None:
    listing = parse_listing(FIXTURE.read_bytes())
    assert listing.announced_on == date(2026, 8, 12)
    assert [(s.kind, s.shown, s.total) for s in listing.sections] == [
        (AnnounceType.NEW, 2, 2), (AnnounceType.CROSS, 2, 2), (AnnounceType.REPLACE, 2, 2)]
    assert [(e.arxiv_id, e.kind, e.version) for e in listing.entries] == [
        ("2608.09949", AnnounceType.NEW, 1), ("2608.09967", AnnounceType.NEW, 1),
        ("2505.11635", AnnounceType.CROSS, 2), ("2607.28646", AnnounceType.CROSS, None),
        ("2112.07752", AnnounceType.REPLACE, 5), ("2505.23399", AnnounceType.REPLACE, 2)]
    first, _, cross, journal, _, _ = listing.entries
    assert first.title == "Closed-Loop LLM Co-Pilots for Digital Agriculture"
    assert first.authors == ("Serge Kernbach",)
    assert first.categories == ("cs.AI", "physics.bio-ph")
    assert first.abstract.startswith("This study evaluates the application of Large Language")
    assert cross.categories[0] == "cs.LG" and cross.comment is not None
    assert cross.authors[-1] == "Luke Theogarajan"
    assert journal.title.startswith('"YES! YES! I absolutely love this insight!"')
    assert journal.journal_ref == "2026 Narrative Inquiry 23 (2)"


@pytest.mark.parametrize("edit", [
    (b"New submissions (showing 2 of 2 entries)", b"New submissions (showing 3 of 3 entries)"),
    (b"Cross submissions (showing 2 of 2 entries)", b"Cross submissions (showing 1 of 1 entries)"),
    (b"Showing new listings for Wednesday, 12 August 2026", b"Showing listings"),
    (b'<a href ="/abs/2608.09949"', b'<a href ="/abs/not-an-id"'),
])
def test_a_listing_that_cannot_be_trusted_whole_raises(edit: tuple[bytes, bytes]) -> None:
    body = FIXTURE.read_bytes()
    assert edit[0] in body
    with pytest.raises(ListingError):
        parse_listing(body.replace(*edit))


def test_a_partial_section_is_flagged_for_a_second_request() -> None:
    body = FIXTURE.read_bytes().replace(b"(showing 2 of 2 entries)</h3>\n<dt>",
                                        b"(showing 2 of 250 entries)</h3>\n<dt>", 1)
    listing = parse_listing(body)
    assert listing.truncated and listing.largest_section == 250


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400), st.integers(min_value=0, max_value=20_000))
def test_the_listing_parser_raises_only_its_own_error(noise: bytes, cut: int) -> None:
    body = FIXTURE.read_bytes()
    for sample in (noise, body[:cut] + noise, body[:cut]):
        with contextlib.suppress(ListingError):  # anything else fails the test
            parse_listing(sample)


"""arXiv's announcement calendar, in New York time with its daylight saving.

arXiv announces Sunday to Thursday at 20:00 US Eastern, and rebuilds its RSS feeds once a day
at midnight Eastern. The listing page and the feed of the rebuild that follows carry the same
*announcement date*: the New York date of that midnight (Monday to Friday). So a Tuesday-evening
announcement is dated Wednesday, and Saturday and Sunday have none.

On a few holidays arXiv announces nothing. `HOLIDAYS` lists them by announcement date: the date
whose feed stays empty. **To update it**: each December read arXiv's schedule
(https://info.arxiv.org/help/availability.html, "Holiday schedule"), add the coming year's
dates with the holiday's name, and keep past years (the soak and tests replay them).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime, time, timedelta
from zoneinfo import ZoneInfo

ARXIV_ZONE = ZoneInfo("America/New_York")
ANNOUNCEMENT_HOUR = 20  # the mailing goes out at 20:00 Eastern, Sunday to Thursday
ANNOUNCEMENT_WEEKDAYS = frozenset(range(5))  # announcement dates fall Monday to Friday

HOLIDAYS: Mapping[date, str] = {
    date(2025, 11, 27): "Thanksgiving",
    date(2025, 12, 25): "Christmas Day",
    date(2026, 1, 1): "New Year's Day",
    date(2026, 11, 26): "Thanksgiving",
    date(2026, 12, 25): "Christmas Day",
    date(2027, 1, 1): "New Year's Day",
}


class ArxivCalendar:
    """Which dates carry an announcement, and when their feeds and listings appear."""

    def __init__(self, holidays: Mapping[date, str] | None = None) -> None:
        self.holidays: Mapping[date, str] = HOLIDAYS if holidays is None else holidays

    def is_announcement_date(self, day: date) -> bool:
        """True when arXiv's feeds dated `day` carry news: a weekday that is no holiday."""
        return day.weekday() in ANNOUNCEMENT_WEEKDAYS and day not in self.holidays

    def today(self, now: float) -> date:
        """The date in New York at `now` (Unix seconds)."""
        return datetime.fromtimestamp(now, ARXIV_ZONE).date()

    def rebuild_at(self, day: date) -> float:
        """When the feeds dated `day` are rebuilt: midnight in New York (Unix seconds)."""
        return datetime.combine(day, time(0), ARXIV_ZONE).timestamp()

    def announced_at(self, day: date) -> float:
        """When the announcement dated `day` goes out: 20:00 New York time the evening before."""
        return datetime.combine(day - timedelta(days=1), time(ANNOUNCEMENT_HOUR),
                                ARXIV_ZONE).timestamp()

    def expected(self, now: float) -> date:
        """The announcement date the feeds should carry at `now`: the latest announcement date
        whose rebuild has passed (on a Saturday, Friday's; on a holiday, the day before's)."""
        day = self.today(now)
        while not self.is_announcement_date(day):
            day -= timedelta(days=1)
        return day

    def next_after(self, day: date) -> date:
        """The first announcement date after `day`."""
        day += timedelta(days=1)
        while not self.is_announcement_date(day):
            day += timedelta(days=1)
        return day

    def next_rebuild(self, now: float) -> float:
        """The next rebuild that brings an announcement, after `now`."""
        return self.rebuild_at(self.next_after(self.expected(now)))

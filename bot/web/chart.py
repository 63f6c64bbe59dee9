"""The front page's 14-day chart, drawn on the server as SVG: per day, bars of new papers and
revisions side by side, and the chat's matches as a line over them on its own scale."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from bot.core.constants import DAY
from bot.services.overview import Day

WIDTH, HEIGHT = 340, 150  # the viewBox; the SVG scales to the page's width
TOP, BOTTOM, LEFT, RIGHT = 10, 20, 4, 4


@dataclass(frozen=True, slots=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    kind: str  # the CSS class: "new" or "revised"
    title: str  # the tooltip: the day and the count


@dataclass(frozen=True, slots=True)
class Chart:
    width: int
    height: int
    bars: tuple[Bar, ...]
    line: str  # the matches' polyline points, "x,y x,y …"
    dots: tuple[tuple[float, float, str], ...]  # each day's match point, with its tooltip
    labels: tuple[tuple[float, str], ...]  # x and the day ("12-01") under every other day
    peak: int  # the bars' scale: the largest day's count


def draw(days: Sequence[Day], zone: str) -> Chart:
    tz = ZoneInfo(zone)
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = inner_w / max(len(days), 1)
    peak = max([1, *(max(d.new, d.revised) for d in days)])
    matches_peak = max([1, *(d.matches for d in days)])
    bars, points, dots, labels = [], [], [], []
    for index, day in enumerate(days):
        left = LEFT + index * slot
        # Each span is the 24 h up to the same time of its day: named by the day it ends on.
        label = datetime.fromtimestamp(day.start + DAY, tz).strftime("%m-%d")
        width = slot * 0.38
        for offset, kind, value in ((0.1, "new", day.new), (0.5, "revised", day.revised)):
            height = inner_h * value / peak
            bars.append(Bar(round(left + slot * offset, 1), round(TOP + inner_h - height, 1),
                            round(width, 1), round(height, 1), kind, f"{label}: {value:,}"))
        x = round(left + slot / 2, 1)
        y = round(TOP + inner_h - inner_h * day.matches / matches_peak, 1)
        points.append(f"{x},{y}")
        dots.append((x, y, f"{label}: {day.matches:,}"))
        if (len(days) - 1 - index) % 2 == 0:  # every other day, ending with today
            labels.append((x, label))
    return Chart(WIDTH, HEIGHT, tuple(bars), " ".join(points), tuple(dots), tuple(labels), peak)

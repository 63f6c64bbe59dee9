"""When a chat's daily digest is due, in its own time zone (pure, so tests inject the time)."""

from __future__ import annotations

import re
import zoneinfo
from datetime import UTC, datetime, timedelta
from functools import cache

_HHMM = re.compile(r"^([01]?\d|2[0-3]):([0-5]\d)$")


def parse_hhmm(text: str) -> str | None:
    """'8:05' → '08:05'; None unless it is a time of day."""
    match = _HHMM.match(text.strip())
    return None if match is None else f"{int(match.group(1)):02d}:{match.group(2)}"


@cache
def _zones() -> dict[str, str]:
    return {name.lower(): name for name in zoneinfo.available_timezones()}


def canonical_zone(text: str) -> str | None:
    """The IANA name for `text` ('asia/shanghai' → 'Asia/Shanghai'), or None if unknown."""
    text = text.strip()
    if text.upper() == "UTC":
        return "UTC"
    return _zones().get(text.lower())


def next_digest_after(after: float, digest_time: str, zone: str) -> float:
    """The first moment strictly after `after` when the local clock in `zone` shows HH:MM."""
    tz = zoneinfo.ZoneInfo(zone)
    hour, minute = (int(part) for part in digest_time.split(":"))
    local = datetime.fromtimestamp(after, UTC).astimezone(tz)
    candidate = local.replace(hour=hour, minute=minute, second=0, microsecond=0)
    if candidate.timestamp() <= after:
        # Step a calendar day in local time (not 24 h), so DST changes keep the wall time.
        naive = candidate.replace(tzinfo=None) + timedelta(days=1)
        candidate = naive.replace(tzinfo=tz)
    return candidate.timestamp()


def digest_due(now: float, last_sent: float, digest_time: str, zone: str) -> bool:
    """Whether a digest scheduled at `digest_time` has come due since `last_sent`."""
    return now >= next_digest_after(last_sent, digest_time, zone)


def local_time(timestamp: float, zone: str, fmt: str = "%Y-%m-%d %H:%M") -> str:
    return datetime.fromtimestamp(timestamp, UTC).astimezone(zoneinfo.ZoneInfo(zone)).strftime(fmt)


FOR_YOU_DEFAULT_TIME = "09:00"  # local time, for a chat without a digest time


def for_you_time(digest_time: str | None) -> str:
    """When a chat's For-you message comes: its digest time, else the default hour."""
    return digest_time or FOR_YOU_DEFAULT_TIME

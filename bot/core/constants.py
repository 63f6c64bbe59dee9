"""Constants more than one room needs."""

from __future__ import annotations

DAY = 86400  # seconds
HOUR = 3600  # seconds

"""Small text helpers with one home: HTML escaping for Telegram, the length Telegram counts,
and short durations."""

from __future__ import annotations

import html

from bot.core.constants import DAY
from bot.core.i18n import t


def escape(text: str) -> str:
    """Text made safe inside a Telegram HTML message (quotes need no escaping there)."""
    return html.escape(text, quote=False)


def escape_attribute(value: str) -> str:
    """A value made safe inside a double-quoted HTML attribute, such as a link's href."""
    return html.escape(value, quote=True)


def utf16_len(text: str) -> int:
    """Length as Telegram counts it (UTF-16 code units)."""
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def duration(lang: str, seconds: float) -> str:
    """A short duration such as '45 s', '3 min', '2 h' or '4 days'."""
    seconds = max(0, int(seconds))
    if seconds < 60:
        return t(lang, "{n} s", n=seconds)
    if seconds < 3600:
        return t(lang, "{n} min", n=seconds // 60)
    if seconds < 2 * DAY:
        return t(lang, "{n} h", n=seconds // 3600)
    return t(lang, "{n} days", n=seconds // DAY)

"""Small text helpers with one home: HTML escaping for Telegram, the length Telegram counts,
short durations, and the invisible characters a paper's text may not carry."""

from __future__ import annotations

import html
import re

from bot.core.constants import DAY
from bot.core.i18n import t

# Characters that change how text around them reads without showing themselves, so a title or an
# author could display spoofed text: bidirectional marks, embeddings, overrides and isolates (and
# the deprecated shaping switches), zero-width spaces, joiners and invisible operators, the byte
# order mark, and the non-characters (U+FDD0-FDEF and the last two code points of every plane).
# Letters of every script are untouched; a ZWJ inside an emoji sequence goes too, which in a
# paper's title is rare and harmless.
_INVISIBLE = re.compile(
    "[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufdd0-\ufdef"
    + "".join(f"{chr(plane << 16 | 0xFFFE)}{chr(plane << 16 | 0xFFFF)}" for plane in range(17))
    + "]")
_SPACES = re.compile(r"\s+")


def visible(text: str) -> str:
    """`text` without direction controls, zero-width characters and non-characters.

    Where one was removed the spaces close up (`a`, a space, a zero-width space, a space and `b`
    read `a b`); text without any comes back unchanged.
    """
    if _INVISIBLE.search(text) is None:
        return text
    return _SPACES.sub(" ", _INVISIBLE.sub("", text)).strip()


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

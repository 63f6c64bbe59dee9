"""The small text helpers: HTML escaping, Telegram's length, short durations."""

from __future__ import annotations

import pytest

from bot.core.constants import DAY
from bot.core.text import duration, escape, escape_attribute, utf16_len


def test_escaping_for_text_and_for_attributes() -> None:
    assert escape('<b>"R&D"</b>') == '&lt;b&gt;"R&amp;D"&lt;/b&gt;'
    assert escape_attribute('https://x.org/?a="1"&b') == "https://x.org/?a=&quot;1&quot;&amp;b"


def test_utf16_length_counts_astral_characters_twice() -> None:
    assert utf16_len("abc") == 3
    assert utf16_len("数学") == 2
    assert utf16_len("𝔸🙂") == 4


@pytest.mark.parametrize(("seconds", "english", "chinese"), [
    (-5, "0 s", "0 秒"),
    (45, "45 s", "45 秒"),
    (90, "1 min", "1 分钟"),
    (3599, "59 min", "59 分钟"),
    (3600, "1 h", "1 小时"),
    (2 * DAY - 1, "47 h", "47 小时"),
    (9 * DAY, "9 days", "9 天"),
])
def test_durations_in_both_languages(seconds: float, english: str, chinese: str) -> None:
    assert duration("en", seconds) == english
    assert duration("zh", seconds) == chinese

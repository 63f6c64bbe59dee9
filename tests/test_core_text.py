"""The small text helpers: HTML escaping, Telegram's length, short durations."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.constants import DAY
from bot.core.text import duration, escape, escape_attribute, utf16_len, visible

# The characters a paper's text may not carry: direction controls, zero-width characters and
# non-characters (U+FDD0-FDEF and the last two code points of every plane).
DIRECTION = ["\u200e", "\u200f", "\u061c", *map(chr, range(0x202A, 0x202F)),
             *map(chr, range(0x2066, 0x206A))]
ZERO_WIDTH = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff"]
NON_CHARACTERS = [*map(chr, range(0xFDD0, 0xFDF0)),
                  *(chr(plane << 16 | last) for plane in range(17) for last in (0xFFFE, 0xFFFF))]
INVISIBLE = [*DIRECTION, *ZERO_WIDTH, *NON_CHARACTERS]


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


@given(st.lists(st.one_of(st.text(), st.sampled_from(INVISIBLE))).map("".join))
def test_no_invisible_character_survives(text: str) -> None:
    assert not set(visible(text)) & set(INVISIBLE)


@given(st.text().filter(lambda text: not set(text) & set(INVISIBLE)))
def test_text_without_invisible_characters_is_unchanged(text: str) -> None:
    assert visible(text) == text


@pytest.mark.parametrize("text", [
    "基于图神经网络的分子性质预测", "نموذج لغوي كبير للترجمة", "מודל שפה גדול", "Über Schrödinger",
    "한국어 자연어 처리", "🧪🔬 Lab notes", "x<y & z>w in $O(n^2)$",
])
def test_letters_of_every_script_stay(text: str) -> None:
    assert visible(text) == text


def test_spaces_close_up_where_a_character_was_removed() -> None:
    assert visible("Safe \u202etxt.exe\u202c title") == "Safe txt.exe title"
    assert visible("a \u200b b\ufeff") == "a b"
    assert visible("\u2066Right\u2069-to-left\U0010ffff") == "Right-to-left"

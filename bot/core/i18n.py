"""The one translation layer: gettext catalogs (`bot/locales/<lang>/LC_MESSAGES/bot.po`).

Message ids are the English texts, so English needs no catalog. The `.po` files are compiled
in memory with Babel when first used, which keeps the repository free of generated `.mo` files.
"""

from __future__ import annotations

import gettext
import io
from functools import cache
from pathlib import Path

from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

LOCALES_DIR = Path(__file__).resolve().parents[1] / "locales"
DOMAIN = "bot"
DEFAULT_LANGUAGE = "en"
SUPPORTED_LANGUAGES = ("en", "zh")


def language_from_telegram(language_code: str | None) -> str:
    """Map Telegram's `language_code` to a supported language: `zh*` is Chinese, else English."""
    if language_code and language_code.lower().startswith("zh"):
        return "zh"
    return DEFAULT_LANGUAGE


@cache
def catalog(language: str) -> gettext.NullTranslations:
    """The compiled catalog of one language (English and unknown languages: identity)."""
    po_path = LOCALES_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"
    if language == DEFAULT_LANGUAGE or not po_path.exists():
        return gettext.NullTranslations()
    with po_path.open("rb") as po_file:
        parsed = read_po(po_file, locale=language)
    buffer = io.BytesIO()
    write_mo(buffer, parsed)
    buffer.seek(0)
    return gettext.GNUTranslations(buffer)


def t(language: str, message: str, /, **values: object) -> str:
    """Translate `message` into `language`, then fill `{placeholders}` from `values`."""
    text = catalog(language).gettext(message)
    return text.format(**values) if values else text


def tn(language: str, singular: str, plural: str, count: int, /, **values: object) -> str:
    """Translate a message with a plural form; `{count}` is always available to the text."""
    text = catalog(language).ngettext(singular, plural, count)
    return text.format(count=count, **values)


def _(message: str) -> str:
    """Mark a string for extraction without translating it (translated later with `t`)."""
    return message

"""Every text the bot can send exists in Chinese, keeps its placeholders and markup, and renders.

The message ids are extracted afresh from `bot/` with Babel (not read from the committed
template), so a new English string without a Chinese translation fails here.
"""

from __future__ import annotations

import ast
import re
import string
from collections import Counter
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog, Message
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from bot.core.i18n import language_from_telegram, t, tn
from tests.fakes.telegram_server import EntityParseError, parse_html
from tests.glossary import forbidden_terms, violations_in_chat_text

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "bot"
ZH_CATALOG = PACKAGE / "locales" / "zh" / "LC_MESSAGES" / "bot.po"
TEMPLATE = PACKAGE / "locales" / "bot.pot"
TAG = re.compile(r"</?[A-Za-z][^<>]*>")
MARKERS = ("t", "tn", "_")

MessageId = str | tuple[str, str]


def _in_package(path: str) -> bool:
    relative = Path(path).resolve().relative_to(ROOT)
    return relative.parts[:1] in ((), ("bot",)) and not any(
        part.startswith((".", "_")) for part in relative.parts)


def extract_from_code() -> dict[MessageId, set[str]]:
    """Message id → the files using it, found by Babel with the keywords in babel.cfg."""
    with (ROOT / "babel.cfg").open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config, "babel.cfg")
    found: dict[MessageId, set[str]] = {}
    for filename, _line, message, _comments, _context in extract_from_dir(
        ROOT, method_map, options_map, keywords={}, directory_filter=_in_package
    ):
        key = message if isinstance(message, str) else (message[0], message[1])
        found.setdefault(key, set()).add(filename)
    return found


CODE_MESSAGES = extract_from_code()


def load_zh() -> Catalog:
    with ZH_CATALOG.open("rb") as po_file:
        return read_po(po_file, locale="zh", domain="bot")


ZH = load_zh()


def _key(message: Message) -> MessageId:
    return message.id if isinstance(message.id, str) else (message.id[0], message.id[1])


def _strings(message: Message) -> tuple[str, ...]:
    return message.string if isinstance(message.string, tuple) else (message.string,)


TRANSLATED = [message for message in ZH if message.id]


def placeholders(text: str) -> Counter[str]:
    """`{name}` and `{name:spec}` fields, with their format specs, as a multiset."""
    return Counter(f"{name}:{spec}" for _literal, name, spec, _conv
                   in string.Formatter().parse(text) if name is not None)


def tags(text: str) -> Counter[str]:
    return Counter(match.group(0) for match in TAG.finditer(text))


def sample_values(*texts: str) -> dict[str, object]:
    """A value for every placeholder that suits its format spec (`{n:,}` needs a number)."""
    values: dict[str, object] = {}
    for text in texts:
        for _literal, name, spec, _conv in string.Formatter().parse(text):
            if name is None:
                continue
            if spec and spec[-1] in "fe%":
                values[name] = 2.5
            elif spec:
                values[name] = 12345
            else:
                values.setdefault(name, "7")
    return values


def _label(key: MessageId) -> str:
    text = key if isinstance(key, str) else key[0]
    return text.splitlines()[0][:50]


# --------------------------------------------------------------------------- completeness


def test_extraction_sees_every_module_that_speaks_to_users() -> None:
    """A module calling t/tn/_ that yields no message would mean the extractor missed it."""
    call = re.compile(r"(?<![\w.])(?:t|tn|_)\(")
    speaking = {str(path.relative_to(ROOT)) for path in PACKAGE.rglob("*.py")
                if call.search(path.read_text(encoding="utf-8"))
                and path.name != "i18n.py"}
    covered = {name for names in CODE_MESSAGES.values() for name in names}
    assert speaking - covered == set()
    assert len(CODE_MESSAGES) > 100


def test_every_message_in_the_code_has_a_chinese_translation() -> None:
    translations = {_key(message): message for message in TRANSLATED}
    missing = [_label(key) for key in CODE_MESSAGES if key not in translations]
    empty = [_label(key) for key in CODE_MESSAGES if key in translations
             and not all(_strings(translations[key]))]
    fuzzy = [_label(key) for key in CODE_MESSAGES if key in translations
             and translations[key].fuzzy]
    assert missing == [], "run tools/extract_messages.py and translate these"
    assert empty == [], "these have an empty Chinese translation"
    assert fuzzy == [], "these changed in English; check their Chinese and drop the fuzzy flag"


def test_the_chinese_catalog_has_one_plural_form() -> None:
    assert ZH.plural_forms == "nplurals=1; plural=0;"
    for message in TRANSLATED:
        if message.pluralizable:
            assert len(_strings(message)) == 1 and _strings(message)[0]


def test_the_committed_template_lists_exactly_the_messages_in_the_code() -> None:
    with TEMPLATE.open("rb") as pot_file:
        template = read_po(pot_file)
    assert {_key(message) for message in template if message.id} == set(CODE_MESSAGES), (
        "bot/locales/bot.pot is stale: run tools/extract_messages.py")


def test_translated_text_is_always_a_literal_or_a_marked_constant() -> None:
    """t(lang, f"...") or t(lang, "a" + b) cannot be extracted, so it would stay English."""
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in MARKERS):
                continue
            first = 0 if node.func.id == "_" else 1
            count = 2 if node.func.id == "tn" else 1
            for arg in node.args[first:first + count]:
                literal = isinstance(arg, ast.Constant) and isinstance(arg.value, str)
                # A name is a constant marked with _() where it is defined (START_TEXT = _(...)).
                marked = node.func.id != "_" and isinstance(arg, ast.Name | ast.Attribute)
                if not (literal or marked):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == []


# --------------------------------------------------------------------------- faithfulness


@pytest.mark.parametrize("message", TRANSLATED, ids=lambda m: _label(_key(m)))
def test_a_translation_keeps_the_placeholders_and_html_of_its_message(message: Message) -> None:
    english = (message.id,) if isinstance(message.id, str) else message.id
    for translation in _strings(message):
        for source in english:
            assert placeholders(translation) == placeholders(source)
            assert tags(translation) == tags(source)


@pytest.mark.parametrize("message", TRANSLATED, ids=lambda m: _label(_key(m)))
def test_every_translation_renders_through_t_as_valid_telegram_html(message: Message) -> None:
    translation = _strings(message)[0]
    values = sample_values(*((message.id,) if isinstance(message.id, str) else message.id))
    if isinstance(message.id, str):
        rendered = t("zh", message.id, **values)
    else:
        values.pop("count", None)
        rendered = tn("zh", message.id[0], message.id[1], 3, **values)
        assert tn("zh", message.id[0], message.id[1], 1, **values) == \
            translation.format(count=1, **values)
        values["count"] = 3
    assert rendered == translation.format(**values)
    try:
        parse_html(rendered)
    except EntityParseError as exc:
        pytest.fail(f"Telegram would refuse {rendered!r}: {exc}")


def test_english_is_the_message_ids_themselves() -> None:
    for key in CODE_MESSAGES:
        if isinstance(key, str):
            values = sample_values(key)
            assert t("en", key, **values) == (key.format(**values) if values else key)
        else:
            values = sample_values(*key)
            values.pop("count", None)
            assert tn("en", key[0], key[1], 1, **values) == key[0].format(count=1, **values)
            assert tn("en", key[0], key[1], 4, **values) == key[1].format(count=4, **values)


def test_chinese_labels_read_as_chinese() -> None:
    assert t("zh", "⭐ Save") == "⭐ 收藏"
    assert t("zh", "⭐ Saved") == "⭐ 已收藏"
    assert t("zh", "📄 Full abstract") == "📄 展开摘要"
    assert t("zh", "🔼 Collapse") == "🔼 收起"
    assert tn("zh", "Removed {count} subscription.", "Removed {count} subscriptions.", 5) == \
        "已取消 5 个订阅。"
    assert t("zh", "{duration} ago", duration=t("zh", "{n} min", n=3)) == "3 分钟前"


# --------------------------------------------------------------------------- the chat's language


@pytest.mark.parametrize(("code", "language"), [
    ("zh-hans", "zh"), ("zh-TW", "zh"), ("zh", "zh"), ("ZH-Hant-HK", "zh"),
    ("en-GB", "en"), ("en", "en"), ("de", "en"), ("", "en"), (None, "en"),
])
def test_the_language_follows_telegrams_language_code(code: str | None, language: str) -> None:
    assert language_from_telegram(code) == language


# --------------------------------------------------------------------------- the glossary


GLOSSARY = forbidden_terms(ZH)


def test_the_glossary_is_read_from_the_catalogue_header() -> None:
    terms = {f.term: f for f in GLOSSARY}
    assert {"关注", "提醒", "摘要", "文献库", "命中", "保存", "查询"} <= set(terms)
    assert terms["摘要"].unless == "abstract"
    assert terms["关注"].unless is None


@pytest.mark.parametrize("message", TRANSLATED, ids=lambda m: _label(_key(m)))
def test_a_translation_uses_only_glossary_terms(message: Message) -> None:
    english = message.id if isinstance(message.id, str) else " ".join(message.id)
    for translation in _strings(message):
        broken = [f"{f.term} (for {f.concept})" for f in GLOSSARY
                  if f.breaks(translation, english)]
        assert broken == [], f"{translation!r} uses terms the glossary forbids"


@pytest.mark.parametrize(("translation", "english", "broken"), [
    ("每日摘要", "a daily digest", ["摘要"]),
    ("📄 展开摘要", "📄 Full abstract", []),
    ("已关注 #1", "Following #1", ["关注"]),
    ("暂停提醒", "Pause alerts", ["提醒"]),
    ("我的文献库", "Your library", ["文献库"]),
    ("命中订阅：", "Matched:", ["命中"]),
])
def test_the_glossary_check_catches_the_reviewed_mistakes(translation: str, english: str,
                                                         broken: list[str]) -> None:
    assert [f.term for f in GLOSSARY if f.breaks(translation, english)] == broken


def test_a_chat_text_check_allows_abstract_but_not_digest_as_摘要() -> None:
    assert violations_in_chat_text("⭐ 收藏 📄 展开摘要 摘要：新增 3 词，删去 1 词") == []
    assert violations_in_chat_text("📬 每日摘要 · 12 篇") == ["摘要"]

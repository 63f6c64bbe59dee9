"""A researcher whose Telegram is set to Chinese is answered in Chinese, and /lang switches.

Only the bot's own words are translated: paper titles, abstracts and author names stay as arXiv
has them.
"""

from __future__ import annotations

import re

from bot.chat.commands import menu
from bot.core.models import Paper
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage
from tests.glossary import violations_in_chat_text

CHAT = 8601
ZH = {"language_code": "zh-hans"}
HAN = re.compile(r"[\u4e00-\u9fff]")
# English wording of the bot's chrome that must not show up in a Chinese chat.
ENGLISH_LABELS = ("Save", "Saved", "Abstract", "Full abstract", "Collapse", "Following",
                  "Your subscriptions", "Your library", "matched", "Matched", "New", "Revised",
                  "et al.", "Title was", "Last 24 h", "ago", "This chat", "subscription",
                  "library", "Try:", "new matches", "revised")


def chrome(message: SentMessage, *papers: Paper) -> str:
    """What the bot wrote itself: the message and its buttons, minus the papers' own text."""
    text = "\n".join([message.text, *message.button_texts])
    for paper in papers:
        for own in (paper.title, paper.abstract, *paper.authors):
            text = text.replace(own, "")
    return text


def assert_no_english(text: str) -> None:
    left = [label for label in ENGLISH_LABELS if re.search(rf"\b{re.escape(label)}\b", text)]
    assert left == [], f"English left in a Chinese chat: {left}\n{text}"


def assert_glossary_terms(text: str) -> None:
    """Only the glossary's terms (bot.po's header): no 关注, 提醒, 文献库, 摘要 for a digest…"""
    assert violations_in_chat_text(text) == [], text


async def alerts_after_poll(harness: Harness, papers: list[Paper]) -> list[SentMessage]:
    before = len(harness.tg.messages(CHAT))
    harness.serve_feed(papers)
    await harness.poll()
    return harness.tg.messages(CHAT)[before:]


async def test_a_chinese_user_gets_chinese_from_the_first_message_until_lang_en(
        harness: Harness) -> None:
    start = await harness.ask(CHAT, "/start", **ZH)
    assert "arXiv 论文推送" in start.text and "/follow cs.LG" in start.text
    assert_no_english(chrome(start))

    help_text = (await harness.ask(CHAT, "/help", **ZH)).text
    assert "检索语法" in help_text and "前缀匹配" in help_text
    assert "全角" in help_text, "a line tells that full-width symbols work"
    for construct in ("cat:cs.LG", "au:", "ti:", "abs:", "quantiz*", "OR", "AND", "NOT"):
        assert construct in help_text, "query syntax stays as it is typed"
    for command in ("/follow", "/unfollow", "/list", "/saved", "/export", "/paper", "/pause",
                    "/resume", "/digest", "/tz", "/lang", "/stats"):
        assert command in help_text
    assert "The query language" not in help_text and "Following papers" not in help_text

    follow = await harness.ask(CHAT, "/follow cs.LG", **ZH)
    assert "✅ 已订阅 #1" in follow.text and "cs.LG" in follow.text
    assert "过去 7 天内可匹配到 0 篇论文" in follow.text
    assert_no_english(chrome(follow))

    paper = make_paper(1)
    [alert] = await alerts_after_poll(harness, [paper])
    assert paper.title in alert.text, "the paper's title is never translated"
    assert paper.abstract[:80] in alert.text
    assert alert.text.startswith(f"🆕 {paper.title}\n") and "🔎 匹配：cs.LG\n" in alert.text
    assert alert.button_texts == ["⭐ 收藏", "👍", "👎", "📄 展开摘要", "🌐 arXiv 页面", "📥 PDF"]
    assert_no_english(chrome(alert, paper))

    save = next(data for data in alert.callback_data if data.startswith("v1:s:"))
    answer = await harness.press(CHAT, alert.message_id, save, **ZH)
    assert answer.text == "已收藏 ✓"
    assert "⭐ 已收藏" in harness.tg.message(CHAT, alert.message_id).button_texts
    expand = next(data for data in alert.callback_data if data.startswith("v1:a:"))
    await harness.press(CHAT, alert.message_id, expand, **ZH)
    expanded = harness.tg.message(CHAT, alert.message_id)
    assert "🔼 收起" in expanded.button_texts and paper.abstract in expanded.text
    assert_no_english(chrome(expanded, paper))

    listing = await harness.ask(CHAT, "/list", **ZH)
    assert "我的订阅" in listing.text and "1. cs.LG" in listing.text
    assert listing.button_texts == ["✖ 1"]
    assert_no_english(chrome(listing))

    saved = await harness.ask(CHAT, "/saved", **ZH)
    assert "我的收藏 · 共 1 篇 · 第 1/1 页" in saved.text
    assert paper.title in saved.text
    assert_no_english(chrome(saved, paper))

    harness.clock.advance(180)
    stats = await harness.ask(CHAT, "/stats", **ZH)
    assert "arXiv 概览" in stats.text
    assert "近 24 小时：新增论文 +1 篇 · 修订 +0 篇（其中 AI 相关 1 篇）" in stats.text
    assert "上次扫描" in stats.text and "（3 分钟前）" in stats.text
    assert "当前会话：24 小时内匹配 1 篇" in stats.text and "已收藏 1 篇" in stats.text
    assert_no_english(chrome(stats))

    switched = await harness.ask(CHAT, "/lang en", **ZH)
    assert switched.text == "Language set to English."
    # The same Chinese-speaking user keeps English: the choice outranks Telegram's setting.
    again = await harness.ask(CHAT, "/list", **ZH)
    assert "Your subscriptions" in again.text and "我的订阅" not in again.text
    [english_alert] = await alerts_after_poll(harness, [make_paper(2)])
    assert english_alert.text.startswith(f"🆕 {make_paper(2).title}\n")
    assert "🔎 Matched: cs.LG\n" in english_alert.text
    assert "⭐ Save" in english_alert.button_texts
    assert not HAN.search(chrome(english_alert, make_paper(2)))


async def test_a_revision_and_a_digest_are_labelled_in_chinese(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG", **ZH)
    original = make_paper(1)
    [alert] = await alerts_after_poll(harness, [original])
    save = next(data for data in alert.callback_data if data.startswith("v1:s:"))
    await harness.press(CHAT, alert.message_id, save, **ZH)

    revised = make_paper(1, version=2, title="Sparse attention at any context length")
    [revision] = await alerts_after_poll(harness, [revised])
    assert revision.text.startswith(f"🔄 v2 · {revised.title}\n") and "原标题：" in revision.text
    assert revised.title in revision.text and original.title in revision.text
    assert "⭐ 已收藏" in revision.button_texts
    assert_no_english(chrome(revision, original, revised))

    papers = [make_paper(n) for n in range(10, 22)]
    digest = await alerts_after_poll(harness, papers)
    assert len(digest) == 1, "twelve matches arrive as one digest"
    assert digest[0].text.startswith("📬 12 篇新匹配\n"), "the count once, not twice"
    assert_no_english(chrome(digest[0], *papers))


async def test_lang_zh_switches_an_english_chat_to_chinese(harness: Harness) -> None:
    english = await harness.ask(CHAT, "/list")
    assert "follow anything yet" in english.text
    switched = await harness.ask(CHAT, "/lang zh")
    assert switched.text == "语言已切换为中文。"
    assert "你还没有任何订阅" in (await harness.ask(CHAT, "/list")).text
    unknown = await harness.ask(CHAT, "/lang fr")
    assert "/lang en" in unknown.text and "请选择" in unknown.text


async def test_the_command_menu_for_chinese_users_is_in_chinese(harness: Harness) -> None:
    english = dict(harness.tg.commands[""])
    chinese = dict(harness.tg.commands["zh"])
    assert english == {entry.command: entry.description
                       for entry in menu("en", harness.services.features)}
    assert set(chinese) == set(english)
    assert chinese["follow"] == "订阅分类、作者、关键词或检索式"
    assert chinese["saved"] == "我的收藏"
    assert chinese["digest"] == "每日汇总：设定时间或关闭"
    for description in chinese.values():
        assert_glossary_terms(description)
    for name, description in chinese.items():
        assert HAN.search(description), f"/{name} is described in English: {description}"
        assert description != english[name]


async def test_a_query_error_is_explained_in_chinese(harness: Harness) -> None:
    reply = await harness.ask(8801, "/follow (cs.LG OR au:Hinton", language_code="zh-hans")
    assert "couldn't" not in reply.text and "column" not in reply.text
    assert "^" in reply.text
    assert any("\u4e00" <= ch <= "\u9fff" for ch in reply.text)


async def test_a_chinese_chat_reads_only_glossary_terms(harness: Harness) -> None:
    """/start, /help, an alert, a revision, a digest, /saved and /stats, as a zh user sees
    them: one term per concept (订阅, 推送, 汇总, 收藏, 检索式, 匹配, 修订), never 关注, 提醒,
    文献库, 命中, or 摘要 for a digest."""
    seen: dict[str, str] = {}
    for command in ("/start", "/help", "/follow cs.LG"):
        seen[command] = chrome(await harness.ask(CHAT, command, **ZH))
    original = make_paper(1)
    [alert] = await alerts_after_poll(harness, [original])
    seen["alert"] = chrome(alert, original)
    save = next(data for data in alert.callback_data if data.startswith("v1:s:"))
    seen["save answer"] = (await harness.press(CHAT, alert.message_id, save, **ZH)).text or ""
    revised = make_paper(1, version=2, title="Sparse attention at any context length",
                         abstract=original.abstract + " Code is public.")
    [revision] = await alerts_after_poll(harness, [revised])
    seen["revision"] = chrome(revision, original, revised)
    papers = [make_paper(n) for n in range(10, 22)]
    digest = await alerts_after_poll(harness, papers)
    seen["digest"] = "\n".join(chrome(message, *papers) for message in digest)
    for command in ("/saved", "/stats", "/list", "/digest", "/pause", "/resume"):
        seen[command] = chrome(await harness.ask(CHAT, command, **ZH), original, revised)

    for what, text in seen.items():
        assert HAN.search(text), f"{what} is not in Chinese: {text}"
        assert violations_in_chat_text(text) == [], f"{what} breaks the glossary: {text}"
        assert_no_english(text)
    assert "汇总" in seen["/help"] and "推送" in seen["/help"] and "收藏夹" in seen["/help"]
    assert "📄 展开摘要" in seen["alert"] and "摘要：" in seen["revision"]
    assert seen["digest"].startswith("📬 12 篇新匹配")

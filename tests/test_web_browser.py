"""The Mini App in a real browser: Debian's headless Chromium driven by Playwright, opened with a
correctly signed initData (Telegram's script is a stand-in served by the test), at a phone's
size. Each page is screenshotted into the test's folder and has no horizontal scroll; each
change made in the page is seen by the chat (`/saved`, `/list`, `/digest` through the fake
Telegram).

One browser for the module; in CI (CI=true) a missing browser fails the run, elsewhere the
tests skip, naming the package to install."""

from __future__ import annotations

import os
import re
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from bot.core.clock import ManualClock
from tests.conftest import Harness, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.webapp import (
    WebUnderTest,
    announce_three_papers,
    init_data,
    telegram_stand_in,
    web_app,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
PHONE = {"width": 390, "height": 844}  # an iPhone 12-14's CSS pixels
TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"
ADA, LI = 7001, 7002

pytestmark = pytest.mark.asyncio(loop_scope="module")


def _missing_browser() -> str | None:
    try:
        import playwright.async_api  # noqa: F401
    except ImportError:
        return "Playwright is not installed (pip install -e '.[dev]')"
    if not CHROMIUM.exists():
        return "no Chromium at /usr/bin/chromium: apt-get install -y chromium"
    return None


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def browser() -> AsyncIterator[Any]:
    missing = _missing_browser()
    if missing is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"browser tests cannot run: {missing}")
        pytest.skip(missing)
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        launched = await playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                    args=CHROMIUM_ARGS)
        yield launched
        await launched.close()


@asynccontextmanager
async def running_bot(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer
                      ) -> AsyncIterator[WebUnderTest]:
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, tg, arxiv)
    app = await start_bot(settings, clock)
    harness = Harness(tg, arxiv, app, clock, settings)
    await announce_three_papers(harness)
    try:
        async with web_app(harness) as web:
            yield web
    finally:
        await stop_bot(app)


async def open_mini_app(browser: Any, web: WebUnderTest, init: str, *,
                        scheme: str = "light") -> Any:
    context = await browser.new_context(viewport=PHONE, device_scale_factor=2, is_mobile=True,
                                        has_touch=True)
    page = await context.new_page()

    async def stand_in(route: Any) -> None:
        await route.fulfill(content_type="application/javascript",
                            body=telegram_stand_in(init, scheme=scheme))

    await page.route(TELEGRAM_SCRIPT, stand_in)
    await page.goto(f"{web.url}/")
    return page


async def shown(page: Any, text: str) -> None:
    """Wait until the page shows `text` (Playwright's own waiting, no sleeps)."""
    from playwright.async_api import expect

    await expect(page.locator("#view")).to_contain_text(text, timeout=15_000)


async def check_page(page: Any, folder: Path, name: str) -> None:
    """A screenshot into the test's folder, and no horizontal scroll at a phone's width."""
    await page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    widths = await page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"{name} scrolls sideways: {widths}"


@dataclass(frozen=True)
class Words:
    """What the pages and the chat say in one language, as the change test looks for it."""

    language_code: str  # the user's Telegram's, which the chat takes at /start
    suffix: str  # of the screenshots' names
    front: str
    library: str
    subscriptions: str
    settings: str
    papers: str  # "{count} papers"
    removed: str
    saved: str
    unsave: str
    save: str
    follow_hint: str
    preview: str
    following: str
    instant: str
    digest_set: str
    digest_told: str  # a pattern of /digest's answer in the chat


ENGLISH = Words("en", "", "arXiv at a glance", "Library", "Subscriptions", "Settings",
                "{count} paper", "Removed from your library", "Saved to your library",
                "Unsave", "Save", "Follow a category", "would have matched 1 paper",
                "Following #1", "instant alerts", "a daily digest at 07:45",
                r"daily digest at 07:45")
CHINESE = Words("zh-hans", "-zh", "arXiv 速览", "收藏夹", "订阅", "设置", "{count} 篇论文",
                "已取消收藏", "已收藏", "取消收藏", "收藏", "订阅分类",
                "可匹配到 1 篇论文", "已订阅 #1", "即时推送", "已设为每天 07:45",
                r"每天 07:45")


@pytest.mark.parametrize("words", [ENGLISH, CHINESE], ids=["en", "zh"])
async def test_every_page_works_and_the_chat_sees_each_change(
        browser: Any, tmp_path: Path, fake_telegram: FakeTelegram,
        fake_arxiv: FakeArxivServer, words: Words) -> None:
    async with running_bot(tmp_path, fake_telegram, fake_arxiv) as web:
        harness = web.harness
        await harness.ask(ADA, "/start", language_code=words.language_code)
        for number in (1, 2, 3):
            await harness.services.library.save(ADA, f"2611.{10000 + number}", 1, None)
            harness.clock.advance(60)
        init = init_data(harness.settings.telegram_bot_token, ADA, harness.clock.now(),
                         language_code=words.language_code)
        page = await open_mini_app(browser, web, init)
        three, one = (words.papers.format(count=n) for n in (3, 1))

        await shown(page, words.front)
        assert await page.locator("svg.chart rect.new").count() == 14
        await check_page(page, tmp_path, "front" + words.suffix)

        await page.click(f"nav >> text={words.library}")
        await shown(page, three)
        await page.fill("input[name=q]", "nunez")
        await shown(page, one)
        assert await page.locator("ul.papers li").count() == 1
        await page.fill("input[name=q]", "")
        await shown(page, three)
        await page.select_option("select[name=sort]", "saved")
        await shown(page, three)
        titles = await page.locator("ul.papers .title").all_inner_texts()
        assert titles[0].startswith("Diffusion with α"), titles  # newest save first
        await check_page(page, tmp_path, "library" + words.suffix)

        await page.click("text=Graph neural networks for chemistry")
        await shown(page, "Ana Núñez")
        await check_page(page, tmp_path, "card" + words.suffix)
        await page.click("a:has-text('PDF')")
        assert await page.evaluate("window.__opened") == "https://arxiv.org/pdf/2611.10002v1"
        assert page.url == f"{web.url}/", "another site opens outside the Mini App"
        await page.click(f"button:text-is('{words.unsave}')")
        await shown(page, words.removed)
        saved = await harness.ask(ADA, "/saved", language_code=words.language_code)
        assert "Graph neural networks" not in saved.text
        await page.click(f"button:text-is('{words.save}')")
        await shown(page, words.saved)
        saved = await harness.ask(ADA, "/saved", language_code=words.language_code)
        assert "Graph neural networks" in saved.text

        await page.click(f"nav >> text={words.subscriptions}")
        await shown(page, words.follow_hint)
        await page.fill("input[name=query]", "ti:sparse")
        await shown(page, words.preview)
        await shown(page, "Sparse attention at scale")
        await page.click("form.follow button")
        await shown(page, words.following)
        await check_page(page, tmp_path, "subscriptions" + words.suffix)
        listed = await harness.ask(ADA, "/list", language_code=words.language_code)
        assert "ti:sparse" in listed.text

        await page.click(f"nav >> text={words.settings}")
        await shown(page, words.instant)
        await page.fill("input[type=time]", "07:45")
        await page.click("form:has(input[type=time]) button")
        await shown(page, words.digest_set)
        await check_page(page, tmp_path, "settings" + words.suffix)
        digest = await harness.ask(ADA, "/digest", language_code=words.language_code)
        assert re.search(words.digest_told, digest.text), digest.text
        await page.context.close()


async def test_the_pages_in_chinese_in_a_dark_theme(
        browser: Any, tmp_path: Path, fake_telegram: FakeTelegram,
        fake_arxiv: FakeArxivServer) -> None:
    async with running_bot(tmp_path, fake_telegram, fake_arxiv) as web:
        harness = web.harness
        await harness.ask(LI, "/start", language_code="zh-hans", first_name="李")
        await harness.services.library.save(LI, "2611.10003", 1, None)
        await harness.services.subscriptions.follow(LI, "ti:sparse OR cat:cs.CE")
        init = init_data(harness.settings.telegram_bot_token, LI, harness.clock.now(),
                         first_name="李", language_code="zh-hans")
        page = await open_mini_app(browser, web, init, scheme="dark")
        await shown(page, "arXiv 速览")
        assert await page.evaluate("document.documentElement.lang") == "zh"
        await check_page(page, tmp_path, "front-zh")
        for tab, text, name in (("收藏夹", "1 篇论文", "library-zh"),
                                ("订阅", "本周匹配 2 篇", "subscriptions-zh"),
                                ("设置", "每日汇总时间", "settings-zh")):
            await page.click(f"nav >> text={tab}")
            await shown(page, text)
            await check_page(page, tmp_path, name)
        await page.click("nav >> text=订阅")
        await shown(page, "订阅分类")
        await page.fill("input[name=query]", "cs.LG AND (")
        await shown(page, "无法解析这个检索式")
        await page.context.close()

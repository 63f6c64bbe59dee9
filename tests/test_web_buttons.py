"""The Mini App's way in: "Open library" under /saved, /list and /stats and the chats' menu
button, only while WEBAPP_URL is set; a group gets a link with its start parameter (Telegram
allows web_app buttons in private chats only)."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.core.clock import ManualClock
from bot.runtime import start_webapp
from tests.conftest import Harness, make_paper, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram, SentMessage

URL = "https://bot.example.org/app"
ADA, GROUP = 7001, -100_321


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
async def with_webapp(tmp_path: Path, fake_telegram: FakeTelegram,
                      fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, WEBAPP_URL=URL,
                             WEBAPP_PORT=str(free_port()))
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


def open_buttons(message: SentMessage) -> list[dict]:
    return [b for b in message.buttons if "Open library" in b["text"]]


async def test_saved_list_and_stats_open_the_mini_app_in_a_private_chat(
        with_webapp: Harness) -> None:
    harness = with_webapp
    harness.serve_feed([make_paper(1)])
    await harness.poll()
    for command, page in (("/saved", "library"), ("/list", "subscriptions"),
                          ("/stats", "front")):
        [button] = open_buttons(await harness.ask(ADA, command))
        assert button["web_app"] == {"url": f"{URL}/?page={page}"}, command


async def test_a_group_gets_a_link_with_its_start_parameter(with_webapp: Harness) -> None:
    reply = await with_webapp.ask(GROUP, "/saved", title="Lab")
    [button] = open_buttons(reply)
    assert button["url"].endswith(f"?startapp=g{-GROUP}") and "web_app" not in button


async def test_without_webapp_url_there_is_no_button(harness: Harness) -> None:
    for command in ("/saved", "/list", "/stats"):
        assert open_buttons(await harness.ask(ADA, command)) == [], command


async def test_the_runtime_serves_the_mini_app_and_sets_the_menu_button(
        with_webapp: Harness) -> None:
    harness = with_webapp
    webapp = start_webapp(harness.app, harness.services, harness.settings)
    try:
        await harness.tg.wait_for(lambda: harness.tg.menu_button().get("type") == "web_app",
                                  what="the menu button")
        assert harness.tg.menu_button()["web_app"] == {"url": URL}
        port = harness.settings.webapp_port
        async with httpx.AsyncClient() as client:
            shell = await client.get(f"http://127.0.0.1:{port}/app/")
        assert shell.status_code == 200 and "telegram-web-app.js" in shell.text
    finally:
        await webapp.stop()

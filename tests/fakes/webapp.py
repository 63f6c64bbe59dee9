"""The Mini App under test: its server started on 127.0.0.1 beside a harness's bot, initData
signed as Telegram signs it, and a stand-in for Telegram's telegram-web-app.js."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx

from bot.services.chats import start_param_of
from bot.web.auth import sign
from bot.web.server import WebApp
from tests.conftest import Harness, make_paper

PATH = "/app"


def init_data(token: str, user_id: int, auth_date: float, *, first_name: str = "Ada",
              language_code: str = "en", group: int | None = None,
              extra: dict[str, str] | None = None) -> str:
    """A signed initData for `user_id`, opening `group`'s pages when given."""
    fields = {
        "query_id": "AAHdF6IQAAAAAN0XohDhrOrc",
        "user": json.dumps({"id": user_id, "first_name": first_name,
                            "language_code": language_code}, separators=(",", ":")),
        "auth_date": str(int(auth_date)),
        **({"start_param": start_param_of(group)} if group is not None else {}),
        **(extra or {}),
    }
    return sign(fields, token)


def telegram_stand_in(init: str, *, scheme: str = "light") -> str:
    """telegram-web-app.js as the tests serve it: initData and a theme, nothing else."""
    theme = ({"bg_color": "#ffffff", "text_color": "#222222", "hint_color": "#888888",
              "link_color": "#2678b6", "button_color": "#50a8eb", "button_text_color": "#ffffff",
              "secondary_bg_color": "#efeff3"} if scheme == "light" else
             {"bg_color": "#212121", "text_color": "#ffffff", "hint_color": "#aaaaaa",
              "link_color": "#8774e1", "button_color": "#8774e1", "button_text_color": "#ffffff",
              "secondary_bg_color": "#181818"})
    web_app = ", ".join([
        f"initData: {json.dumps(init)}", f"colorScheme: {json.dumps(scheme)}",
        f"themeParams: {json.dumps(theme)}", "ready: function () {}",
        "expand: function () {}", "onEvent: function () {}",
        "openLink: function (url) { window.__opened = url; }"])
    return "window.Telegram = {WebApp: {" + web_app + "}};"


@dataclass
class WebUnderTest:
    harness: Harness
    app: WebApp
    url: str  # http://127.0.0.1:port/app
    client: httpx.AsyncClient

    def sign(self, user_id: int, **kwargs: object) -> str:
        return init_data(self.harness.settings.telegram_bot_token, user_id,
                         self.harness.clock.now(), **kwargs)  # type: ignore[arg-type]

    async def get(self, page: str, init: str | None, **params: str) -> httpx.Response:
        headers = {"Authorization": f"tma {init}"} if init is not None else {}
        return await self.client.get(f"{self.url}/view/{page}", params=params, headers=headers)

    async def post(self, action: str, init: str | None, data: dict[str, str],
                   **params: str) -> httpx.Response:
        headers = {"Authorization": f"tma {init}"} if init is not None else {}
        return await self.client.post(f"{self.url}/act/{action}", params=params, data=data,
                                      headers=headers)


@asynccontextmanager
async def web_app(harness: Harness) -> AsyncIterator[WebUnderTest]:
    app = WebApp(harness.services, harness.app.bot, path=PATH)
    port = app.listen("127.0.0.1", 0)
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            yield WebUnderTest(harness, app, f"http://127.0.0.1:{port}{PATH}", client)
    finally:
        await app.stop()


async def announce_three_papers(harness: Harness) -> None:
    """The pages' papers, announced and polled: one with an accented author, one with LaTeX in
    its title, in three categories."""
    harness.serve_feed([
        make_paper(1, title="Sparse attention at scale"),
        make_paper(2, title="Graph neural networks for chemistry", categories=("cs.CE",),
                   authors=("Ana Núñez",)),
        make_paper(3, title=r"Diffusion with $\alpha$-divergence", categories=("stat.ML",)),
    ])
    await harness.poll()

"""The Mini App's HTTP server: a tornado app on the bot's own event loop.

Tornado because the bot already depends on it (PTB's webhook extra, and our webhook server in
`bot/chat/webhook.py`): no second web framework, and it runs on the asyncio loop PTB runs, so
the pages call the very services the chat handlers call, in the same process.

Every page is a fragment fetched by `static/app.js` with Telegram's signed initData in the
`Authorization: tma …` header; the shell page and the static files carry no data and need none.
A request is judged before any page code runs: the signature, the age, the chat it may see
(`bot/web/access.py`) and the command budget. A refusal is one log line (its reason and the
source address, never the data), at most one per source a minute.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from functools import partial
from http import HTTPStatus
from pathlib import Path
from types import TracebackType
from typing import Any

import tornado.web
from jinja2 import Environment, PackageLoader, select_autoescape
from telegram import Bot, MenuButtonWebApp, WebAppInfo
from telegram.error import TelegramError
from tornado.httpserver import HTTPServer
from tornado.netutil import bind_sockets

from bot.core.i18n import t, tn
from bot.core.models import Chat
from bot.delivery import latex
from bot.query.matcher import freeze_long_lived
from bot.services.budget import COSTLY_COST, DEFAULT_COST
from bot.services.container import Services
from bot.web.access import AccessRefused, Memberships, Viewer, viewer_of
from bot.web.auth import InitDataRefused, verify
from bot.web.pages import BadRequest, NotAllowed, Pages, Rendered

log = logging.getLogger(__name__)

STATIC = Path(__file__).resolve().parent / "static"
TELEGRAM_SCRIPT = "https://telegram.org/js/telegram-web-app.js"
# Only our own files and Telegram's script; no inline script or style; shown only framed by
# Telegram's web clients (the apps do not frame it).
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self' https://telegram.org; style-src 'self'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors https://web.telegram.org https://*.telegram.org"
)
REFUSAL_LOG_SECONDS = 60.0
MAX_REMEMBERED_SOURCES = 4096
MENU_BUTTON_TEXT = "📚 arXiv"  # one text for every language: the menu button has no language
AUTH_SCHEME = "tma "  # Authorization: tma <initData>, as Telegram's Mini App docs suggest

# What each request costs from the chat's command budget, as the same commands cost in chat.
VIEW_COSTS = {"front": DEFAULT_COST, "library": DEFAULT_COST, "paper": DEFAULT_COST,
              "subscriptions": COSTLY_COST, "settings": DEFAULT_COST, "bibtex": COSTLY_COST}
ACTION_COSTS = {"save": DEFAULT_COST, "unsave": DEFAULT_COST, "preview": COSTLY_COST,
                "follow": COSTLY_COST, "unfollow": DEFAULT_COST, "move": DEFAULT_COST,
                "setting": DEFAULT_COST}


class RefusalLog:
    """One line per source address a minute, with how many more were refused meanwhile."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._sources: dict[str, tuple[float, int]] = {}

    def note(self, source: str, reason: str, status: int) -> None:
        now = self._clock()
        logged_at, unsaid = self._sources.get(source, (float("-inf"), 0))
        if now - logged_at < REFUSAL_LOG_SECONDS:
            self._sources[source] = (logged_at, unsaid + 1)
            return
        self._sources.pop(source, None)
        self._sources[source] = (now, 0)
        while len(self._sources) > MAX_REMEMBERED_SOURCES:
            del self._sources[next(iter(self._sources))]
        more = f" ({unsaid} more refused from it since its last line)" if unsaid else ""
        log.warning("web: refused %s (%d) from %s%s", reason, status, source, more)


def templates() -> Environment:
    return Environment(loader=PackageLoader("bot.web", "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True),
                       trim_blocks=True, lstrip_blocks=True)


class _Base(tornado.web.RequestHandler):
    def initialize(self, app: WebApp) -> None:
        self.app = app

    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Referrer-Policy", "no-referrer")
        self.set_header("Cache-Control", "no-store")

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(HTTPStatus(status_code).phrase)

    def log_exception(self, typ: type[BaseException] | None, value: BaseException | None,
                      tb: TracebackType | None) -> None:
        # Tornado's own line names the request, whose headers carry the initData.
        if isinstance(value, tornado.web.HTTPError):
            return
        log.error("web: a %s request for %s failed", self.request.method,
                  self.request.path, exc_info=(typ, value, tb))  # type: ignore[arg-type]


class ShellHandler(_Base):
    """The page Telegram opens: no data, only the script that fetches the signed pages."""

    def get(self) -> None:
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(self.app.render_shell())


class StaticHandler(tornado.web.StaticFileHandler):
    def set_default_headers(self) -> None:
        self.set_header("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        self.set_header("X-Content-Type-Options", "nosniff")


class _Signed(_Base):
    """A request that shows or changes a chat: signed, allowed, within budget."""

    viewer: Viewer
    record: Chat | None
    costs: Mapping[str, int] = {}

    async def judge(self, name: str) -> bool:
        if name not in self.costs:
            self._refuse(HTTPStatus.NOT_FOUND, "a request for an unknown page")
            return False
        header = self.request.headers.get("Authorization", "")
        raw = header[len(AUTH_SCHEME):] if header.startswith(AUTH_SCHEME) else None
        services = self.app.services
        try:
            signed = verify(raw, services.settings.telegram_bot_token, services.clock.now())
            self.viewer = await viewer_of(signed, self.get_query_argument("chat", None),
                                          self.app.memberships)
        except InitDataRefused as exc:
            self._refuse(HTTPStatus.UNAUTHORIZED, exc.reason.value)
            return False
        except AccessRefused as exc:
            self._refuse(exc.status, str(exc))
            return False
        decision = services.budget.charge(self.viewer.chat_id, self.viewer.budget_user,
                                          self.costs[name], services.clock.now())
        if not decision.allowed:
            self.set_status(HTTPStatus.TOO_MANY_REQUESTS)
            self.set_header("Retry-After", str(max(1, round(decision.retry_after))))
            self.finish(self.app.render(Rendered("error.html", {"retry": round(
                decision.retry_after)}), self.viewer.telegram_language, self.viewer))
            return False
        self.record = await self.app.pages.chat(self.viewer)
        if self.record is None:  # a group nobody has written in since the bot joined
            self._refuse(HTTPStatus.NOT_FOUND, "a group the bot has no record of")
            return False
        return True

    def _refuse(self, status: HTTPStatus, reason: str) -> None:
        self.app.refusals.note(self.request.remote_ip or "an unknown address", reason, status)
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.finish(status.phrase)

    @property
    def lang(self) -> str:
        return self.record.language if self.record is not None else \
            self.viewer.telegram_language

    async def show(self, make: Callable[[], Any]) -> None:
        try:
            rendered = await make()
        except NotAllowed:
            self.set_status(HTTPStatus.FORBIDDEN)
            rendered = Rendered("error.html", {"admins_only": True})
        except BadRequest:
            self.set_status(HTTPStatus.BAD_REQUEST)
            rendered = Rendered("error.html", {"bad": True})
        if isinstance(rendered, tuple):  # a change of settings returns the new record too
            rendered, self.record = rendered
        self.set_header("Content-Type", "text/html; charset=utf-8")
        body = self.app.render(rendered, self.lang, self.viewer)
        # The server's own time for the request, as browsers' developer tools show it (and
        # bench/webapp.py reads it).
        self.set_header("Server-Timing", f"app;dur={self.request.request_time() * 1000:.1f}")
        self.finish(body)

    def argument(self, name: str, limit: int = 1000) -> str:
        return (self.get_argument(name, "") or "")[:limit]


class ViewHandler(_Signed):
    costs = VIEW_COSTS

    async def get(self, name: str) -> None:
        if not await self.judge(name):
            return
        pages, viewer, record = self.app.pages, self.viewer, self.record
        arguments = {key: self.argument(key) for key in self.request.query_arguments}
        match name:
            case "front":
                await self.show(lambda: pages.front(viewer, record))
            case "library":
                await self.show(lambda: pages.library(viewer, record, arguments))
            case "bibtex":
                await self.show(lambda: pages.bibtex(viewer, arguments))
            case "paper":
                await self.show(lambda: pages.paper(viewer, record, self.argument("id", 40)))
            case "subscriptions":
                edit = self.argument("edit", 20)
                await self.show(lambda: pages.subscriptions(
                    viewer, record, editing=int(edit) if edit.isdecimal() else None))
            case "settings":
                await self.show(lambda: pages.settings(viewer, record))


class ActionHandler(_Signed):
    costs = ACTION_COSTS

    def check_xsrf_cookie(self) -> None:
        # Writes are signed by the Authorization header, which no other site can send.
        return None

    async def post(self, name: str) -> None:
        if not await self.judge(name):
            return
        pages, viewer, record = self.app.pages, self.viewer, self.record
        number = self._number
        match name:
            case "save":
                await self.show(lambda: pages.save(viewer, record, self.argument("id", 40)))
            case "unsave":
                await self.show(lambda: pages.unsave(viewer, record, self.argument("id", 40)))
            case "preview":
                await self.show(lambda: pages.preview(viewer, record, self.argument("query")))
            case "follow":
                await self.show(lambda: pages.follow(viewer, record, self.argument("query"),
                                                     number("replacing", required=False)))
            case "unfollow":
                await self.show(lambda: pages.unfollow(viewer, record, number("id")))
            case "move":
                await self.show(lambda: pages.move(viewer, record, number("id"),
                                                   number("topic")))
            case "setting":
                form = {key: self.argument(key, 100) for key in ("setting", "value", "count")}
                await self.show(lambda: pages.change_setting(viewer, record, form))

    def _number(self, name: str, *, required: bool = True) -> Any:
        text = self.argument(name, 20)
        if text.isdecimal():
            return int(text)
        if required:
            raise BadRequest
        return None


class WebApp:
    """The Mini App, served under the path of WEBAPP_URL."""

    def __init__(self, services: Services, bot: Bot, *, path: str = "",
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.services = services
        self.pages = Pages(services)
        self.memberships = Memberships(bot, clock)
        self.refusals = RefusalLog(clock)
        self.base = "/" + path.strip("/") if path.strip("/") else ""
        self._templates = templates()
        for name in self._templates.list_templates():  # compiled now, not at the first page
            self._templates.get_template(name)
        latex.prepare()  # likewise the LaTeX tables the titles are shown through
        base = self.base
        app = tornado.web.Application([
            (rf"{base}/?", ShellHandler, {"app": self}),
            (rf"{base}/static/(app\.js|app\.css)", StaticHandler, {"path": str(STATIC)}),
            (rf"{base}/view/(\w+)", ViewHandler, {"app": self}),
            (rf"{base}/act/(\w+)", ActionHandler, {"app": self}),
        ], log_function=lambda handler: None, default_handler_class=tornado.web.ErrorHandler,
            default_handler_args={"status_code": 404})
        self._http = HTTPServer(app, max_body_size=64 * 1024, body_timeout=30,
                                idle_connection_timeout=75, xheaders=False)

    def listen(self, address: str, port: int) -> int:
        """Start listening; the port bound (the one asked, or a free one for 0).

        What start-up made (modules, templates, the services) is frozen out of the garbage
        collector's passes first (`freeze_long_lived`): a full pass over it stops the event
        loop for 60-140 ms, and the first page after start-up met one (bench/webapp.py's
        first render of the library: 92-170 ms with, 37-54 ms without it, load 2.7-3.7).
        """
        freeze_long_lived()
        sockets = bind_sockets(port, address=address)
        self._http.add_sockets(sockets)
        return sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self._http.stop()
        await self._http.close_all_connections()

    def render_shell(self) -> str:
        return self._templates.get_template("shell.html").render(
            base=self.base, telegram_script=TELEGRAM_SCRIPT)

    def render(self, rendered: Rendered, lang: str, viewer: Viewer) -> str:
        # The templates' own messages are extracted from them (babel.cfg's jinja2 section).
        return self._templates.get_template(rendered.template).render({
            "_": partial(t, lang), "tn": partial(tn, lang), "lang": lang, "base": self.base,
            "chat_id": viewer.chat_id, "group": viewer.group, "admin": viewer.admin,
            **rendered.values})


async def show_menu_button(bot: Bot, url: str) -> None:
    """The chats' menu button opens the Mini App; best effort: the bot works without it."""
    try:
        await bot.set_chat_menu_button(menu_button=MenuButtonWebApp(MENU_BUTTON_TEXT,
                                                                    WebAppInfo(url)))
    except TelegramError as exc:
        log.warning("could not set the Mini App's menu button (%s)", type(exc).__name__)

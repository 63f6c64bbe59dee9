"""The webhook server: Telegram pushes updates here; everyone else is refused before their body
is read.

PTB's own server (tornado, with a 100 MB body limit) reads a whole request into memory before it
looks at the secret header, so six parallel 50 MB bodies from anybody cost the bot 300 MB; and
it logs each refusal with a traceback at DEBUG. This module is a small tornado app of our own,
served by `WebhookUpdater`, a subclass of PTB's `Updater` that overrides only its public webhook
methods. PTB keeps the rest (`run_webhook`'s start-up, stop and shutdown, the update queue), so
the polling and webhook modes still run the same way, and no private PTB API is touched.

A request is judged on its headers alone (path, method, the secret compared in constant time,
the content type and a declared length over `MAX_UPDATE_BYTES`); a refused one is answered and
its connection closed without reading on. An accepted body is read in chunks up to the limit.
Refusals are logged one line per source address a minute, with the count of those left unsaid.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from types import TracebackType
from typing import Any

import tornado.web
from telegram import Bot, Update
from telegram.error import InvalidToken, RetryAfter, TelegramError
from telegram.ext import ExtBot, Updater
from tornado.httpserver import HTTPServer

from bot.delivery.sender import error_reason, flood_wait_seconds, telegram_backoff

log = logging.getLogger(__name__)

MAX_UPDATE_BYTES = 1024 * 1024  # Telegram's updates are at most a few hundred kB
SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
REJECTION_LOG_SECONDS = 60.0  # one line per source address in this long
MAX_REMEMBERED_SOURCES = 4096  # sources whose last line is remembered; the oldest go first
BODY_TIMEOUT = 30.0  # seconds to send a body of at most 1 MB
IDLE_TIMEOUT = 75.0  # seconds a kept-alive connection may sit idle


@dataclass(slots=True)
class _Source:
    logged_at: float
    unsaid: int = 0  # refusals since the line at `logged_at`


class RejectionLog:
    """Logs refused requests: one line per source address per minute, however many it sends."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 interval: float = REJECTION_LOG_SECONDS) -> None:
        self._clock = clock
        self._interval = interval
        self._sources: dict[str, _Source] = {}

    def note(self, source: str, reason: str) -> None:
        now = self._clock()
        known = self._sources.get(source)
        if known is not None and now - known.logged_at < self._interval:
            known.unsaid += 1
            return
        unsaid = known.unsaid if known is not None else 0
        self._sources.pop(source, None)
        self._sources[source] = _Source(now)  # re-inserted: the dict keeps them oldest first
        while len(self._sources) > MAX_REMEMBERED_SOURCES:
            del self._sources[next(iter(self._sources))]
        more = f" ({unsaid} more refused from it since its last line)" if unsaid else ""
        log.warning("webhook: refused %s from %s%s", reason, source, more)


@tornado.web.stream_request_body
class UpdateHandler(tornado.web.RequestHandler):
    """Every request to the server: an update from Telegram is queued, anything else refused."""

    SUPPORTED_METHODS = ("GET", "HEAD", "POST", "DELETE", "PATCH", "PUT", "OPTIONS")

    def initialize(self, bot: Bot, update_queue: asyncio.Queue[object], path: str, secret: str,
                   rejections: RejectionLog) -> None:
        self._bot = bot
        self._queue = update_queue
        self._path = path.rstrip("/")
        self._secret = secret.encode()
        self._rejections = rejections
        self._body = bytearray()

    def prepare(self) -> None:
        refusal = self._refusal()
        if refusal is None:
            return
        # Tornado closes a connection whose request was answered before its body was read, so
        # the rest is never read; lifting this request's body limit keeps tornado from refusing
        # a long one a second time (with a 400 and a log line of its own) while it closes.
        self.request.connection.set_max_body_size(sys.maxsize)  # type: ignore[union-attr]
        self._refuse(*refusal)

    def _refusal(self) -> tuple[HTTPStatus, str] | None:
        headers = self.request.headers
        if self.request.path.rstrip("/") != self._path:
            return HTTPStatus.NOT_FOUND, "a request for another path"
        if self.request.method != "POST":
            return HTTPStatus.METHOD_NOT_ALLOWED, f"a {self.request.method} request"
        if not hmac.compare_digest(headers.get(SECRET_HEADER, "").encode(), self._secret):
            return HTTPStatus.FORBIDDEN, "a request without the right secret"
        if headers.get("Content-Type", "").split(";")[0].strip().lower() != "application/json":
            return HTTPStatus.FORBIDDEN, "a request that is not JSON"
        declared = headers.get("Content-Length", "")
        if declared.isdigit() and int(declared) > MAX_UPDATE_BYTES:
            return HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a body of {declared} bytes"
        return None

    def _refuse(self, status: HTTPStatus, reason: str) -> None:
        self._rejections.note(self.request.remote_ip or "an unknown address", reason)
        self.set_status(status)
        self.finish()

    def data_received(self, chunk: bytes) -> None:
        # Tornado stops at MAX_UPDATE_BYTES (the server's max_body_size), chunked bodies too;
        # what arrives after a refusal, before the connection closes, is dropped.
        if not self._finished:
            self._body += chunk

    async def post(self) -> None:
        try:
            update = Update.de_json(json.loads(self._body), self._bot)
        except Exception as exc:  # a body Telegram sent (the secret was right) but unreadable
            self._refuse(HTTPStatus.BAD_REQUEST,
                         f"an update that could not be read ({type(exc).__name__})")
            return
        if update is not None:
            if isinstance(self._bot, ExtBot):
                self._bot.insert_callback_data(update)
            await self._queue.put(update)
        self.set_status(HTTPStatus.OK)

    def log_exception(self, typ: type[BaseException] | None, value: BaseException | None,
                      tb: TracebackType | None) -> None:
        if isinstance(value, tornado.web.HTTPError):  # e.g. a method tornado does not know
            self._rejections.note(self.request.remote_ip or "an unknown address",
                                  f"a request answered {value.status_code}")
            return
        log.error("webhook: could not take an update", exc_info=(typ, value, tb))  # type: ignore[arg-type]


class WebhookServer:
    """The tornado server of `UpdateHandler`, listening on one address and port."""

    def __init__(self, bot: Bot, update_queue: asyncio.Queue[object], *, path: str,
                 secret: str) -> None:
        app = tornado.web.Application(
            [(r".*", UpdateHandler, {"bot": bot, "update_queue": update_queue, "path": path,
                                    "secret": secret, "rejections": RejectionLog()})],
            log_function=lambda handler: None)  # no access log: refusals are logged as above
        self._http = HTTPServer(app, max_body_size=MAX_UPDATE_BYTES, body_timeout=BODY_TIMEOUT,
                                idle_connection_timeout=IDLE_TIMEOUT)
        # Tornado notes each malformed request or body timeout, from anybody, at INFO: a flood
        # would be a flood of lines. Its warnings and errors still show.
        logging.getLogger("tornado.general").setLevel(logging.WARNING)

    def listen(self, address: str, port: int) -> None:
        self._http.listen(port, address=address)

    async def stop(self) -> None:
        self._http.stop()
        await self._http.close_all_connections()


class WebhookUpdater(Updater):
    """PTB's `Updater`, serving the webhook with `WebhookServer` instead of PTB's own server.

    Only the webhook methods PTB's `Application.run_webhook` and the runtime's stop call are
    overridden (`start_webhook`, `stop`, `running`); long polling is not offered.
    """

    def __init__(self, bot: Bot, update_queue: asyncio.Queue[object]) -> None:
        super().__init__(bot, update_queue)
        self._server: WebhookServer | None = None

    @property
    def running(self) -> bool:
        return self._server is not None

    async def start_webhook(  # type: ignore[override]
        self, listen: str, port: int, url_path: str = "", *, webhook_url: str,
        secret_token: str, allowed_updates: Sequence[str] | None = None,
        bootstrap_retries: int = 0, max_connections: int = 40, **unsupported: Any,
    ) -> asyncio.Queue[object]:
        """Listen on `listen:port`, then tell Telegram to push to `webhook_url` (retried,
        `bootstrap_retries` times or for ever when negative, as PTB does)."""
        used = {name for name, value in unsupported.items() if value is not None}
        if used or not secret_token:
            raise ValueError(f"the webhook needs a secret and takes none of {sorted(used)}")
        if self.running:
            raise RuntimeError("This Updater is already running!")
        server = WebhookServer(self.bot, self.update_queue, path=f"/{url_path.lstrip('/')}",
                               secret=secret_token)
        server.listen(listen, port)  # first: Telegram is told only of a server that listens
        try:
            await self._set_webhook(webhook_url, secret_token, allowed_updates,
                                    max_connections, bootstrap_retries)
        except BaseException:
            await server.stop()
            raise
        self._server = server
        return self.update_queue

    async def _set_webhook(self, url: str, secret: str, allowed_updates: Sequence[str] | None,
                           max_connections: int, retries: int) -> None:
        attempt = 0
        while True:
            attempt += 1
            try:
                await self.bot.set_webhook(url=url, allowed_updates=allowed_updates,
                                           max_connections=max_connections, secret_token=secret)
                return
            except InvalidToken:
                raise
            except RetryAfter as exc:
                delay, reason = max(flood_wait_seconds(exc), 1.0), "flood control"
                if 0 <= retries < attempt:
                    raise
            except TelegramError as exc:
                if 0 <= retries < attempt:
                    raise
                delay, reason = telegram_backoff(attempt), error_reason(exc)
            log.warning("could not set the webhook (%s); trying again in %.0f s (attempt %d)",
                        reason, delay, attempt)
            await asyncio.sleep(delay)

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            raise RuntimeError("This Updater is not running!")
        await server.stop()

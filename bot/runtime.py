"""Running the bot as a service: reach Telegram with backoff, poll or serve a webhook, and stop
within the stop timeout of systemd or a container."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from telegram.error import InvalidToken, NetworkError, RetryAfter, TelegramError
from telegram.ext import Application, ApplicationHandlerStop, CallbackContext

from bot import __version__
from bot.chat.application import ALLOWED_UPDATES, build_application
from bot.chat.webhook import WebhookUpdater
from bot.config import Settings
from bot.core.clock import Clock
from bot.delivery.pacing import Pacer
from bot.delivery.sender import error_reason, flood_wait_seconds, telegram_backoff
from bot.jobs.schedule import schedule_jobs
from bot.services.budget import BudgetPolicy
from bot.services.container import Services
from bot.storage.errors import DatabaseDamaged

if TYPE_CHECKING:
    from bot.web.server import WebApp

log = logging.getLogger(__name__)

# From the stop signal: running handlers and jobs may finish within the grace, then they are
# cancelled; whatever still runs at the deadline is cut off (systemd's default stop timeout
# is 90 s, Docker's 10 s: the bot stays inside both).
STOP_GRACE = 2.0
STOP_CANCEL_WAIT = 3.0
STOP_DEADLINE = 9.5
# The exit code of a leader that lost its lock or lease: a failure to its service manager,
# which starts it again (systemd's Restart=on-failure), and then it stands by.
LOST_LEADERSHIP = 3


def build_bot(settings: Settings, clock: Clock | None = None, *, pacer: Pacer | None = None,
              budget: BudgetPolicy | None = None) -> Application:
    """The whole bot: the chat edge, and the scheduled jobs once its services are open."""

    def start_jobs(application: Application, services: Services) -> None:
        schedule_jobs(application.job_queue, services)
        if settings.webapp_url:
            start_webapp(application, services, settings)

    application = build_application(settings, clock, on_ready=start_jobs, pacer=pacer,
                                    budget=budget)
    if settings.webhook_url:
        # Our own webhook server (bot/chat/webhook.py): PTB's reads every body whole first.
        application.updater = WebhookUpdater(application.bot, application.update_queue)
    return application


def start_webapp(application: Application, services: Services, settings: Settings) -> WebApp:
    """Serve the Mini App on the bot's event loop, and show it as the chats' menu button."""
    # Imported only when it is on: its templates' engine costs a bot without it start-up time.
    from bot.web.server import WebApp, show_menu_button

    webapp = WebApp(services, application.bot, path=urlsplit(settings.webapp_url).path)
    webapp.listen(settings.webapp_listen, settings.webapp_port)
    application.bot_data["webapp"] = webapp
    log.info("serving the Mini App %s on %s:%d", settings.webapp_url, settings.webapp_listen,
             settings.webapp_port)
    application.create_task(show_menu_button(application.bot, settings.webapp_url))
    return webapp


async def connect(application: Application, stop: asyncio.Event) -> bool:
    """Initialise the application (its first call is getMe), retrying until Telegram answers.

    Returns False when a stop was asked for first. A rejected token raises `InvalidToken`:
    no retry can fix it.
    """
    attempt = 0
    while not stop.is_set():
        attempt += 1
        try:
            await application.initialize()
            return True
        except InvalidToken:
            raise
        except RetryAfter as exc:
            delay = max(flood_wait_seconds(exc), 1.0)
            reason = f"flood control: {error_reason(exc)}"
        except (NetworkError, TelegramError) as exc:
            delay, reason = telegram_backoff(attempt), error_reason(exc)
        log.warning("Telegram is unreachable (%s); trying again in %.0f s (attempt %d)",
                    reason, delay, attempt)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
    return False


class Stopper:
    """Turns SIGTERM/SIGINT, or a damaged database, into a stop that ends within STOP_DEADLINE
    seconds.

    Updates stop coming first; handlers and jobs in progress get STOP_GRACE seconds and are
    then cancelled. A cancelled send leaves its outbox row pending (a row is marked sent only
    after Telegram accepted it), a cancelled poll rolls its transaction back; then PTB stops
    and `post_shutdown` closes the database.
    """

    def __init__(self, application: Application) -> None:
        self._application = application
        self.requested = asyncio.Event()
        self.damaged: DatabaseDamaged | None = None
        self.lost_leadership: str | None = None  # why, once another bot may lead
        self._task: asyncio.Task[None] | None = None

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.request, sig)
        self.watch_errors()

    def watch_errors(self) -> None:
        """Become the first error handler, so that no other logs a traceback for a damaged
        database (PTB calls them in the order they were added)."""
        others = dict(self._application.error_handlers)
        self._application.error_handlers.clear()
        self._application.add_error_handler(self.on_error)
        self._application.error_handlers.update(others)

    async def on_error(self, update: object, context: CallbackContext) -> None:
        """A damaged database, met by a handler or a job, stops the bot: every later update
        and job would fail the same way, and writing on could damage it further."""
        if isinstance(context.error, DatabaseDamaged):
            if self.damaged is None:
                self.damaged = context.error
            self._begin("the database is damaged")
            raise ApplicationHandlerStop

    def leadership_lost(self, reason: str) -> None:
        """The database lock or lease is gone (PostgreSQL): the sender already sends nothing
        (its lease check); the rest stops too, and the process exits for its service manager
        to start it again, as a standby."""
        if self.lost_leadership is None:
            self.lost_leadership = reason
        self._begin(f"no longer the leader: {reason}")

    def request(self, sig: signal.Signals = signal.SIGTERM) -> None:
        self._begin(signal.Signals(sig).name)

    def _begin(self, reason: str) -> None:
        if self.requested.is_set():
            return
        self.requested.set()
        log.info("stopping (%s)", reason)
        _start_deadline()
        if not self._application.running:
            # Still starting up: PTB checks this mark after post_init; the task below covers
            # a signal that lands later in the start-up.
            self._application.stop_running()
        self._task = asyncio.get_running_loop().create_task(self._stop())

    async def _stop(self) -> None:
        application = self._application
        while not application.running:  # start-up under way: stop once it has finished
            await asyncio.sleep(0.05)
        if application.updater is not None and application.updater.running:
            await application.updater.stop()
        webapp: WebApp | None = application.bot_data.pop("webapp", None)
        if webapp is not None:  # no new page request starts; the database is still open
            await webapp.stop()
        services = application.bot_data.get("services")
        if services is not None and services.sender is not None:
            # No new send starts from here; those in flight are answered and recorded (or
            # stay claimed, to be sent again at the next start), so the drain ends cleanly.
            await services.sender.stop(timeout=STOP_GRACE)
        work = set(services.run.work) if services is not None else set()
        processor = application.update_processor
        work |= getattr(processor, "running_tasks", set())
        if work:
            _, pending = await asyncio.wait(work, timeout=STOP_GRACE)
            if pending:
                log.info("abandoning %d task(s) still running", len(pending))
                for task in pending:
                    task.cancel()
                await asyncio.wait(pending, timeout=STOP_CANCEL_WAIT)
        application.stop_running()

    async def finish(self) -> None:
        """Cancel the stop task if start-up ended before it ran (the loop is about to close)."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)


def _start_deadline() -> None:
    """Past the deadline the process exits even if something still hangs (exit code 1)."""

    def cut_off() -> None:
        log.error("stopping took longer than %.1f s; exiting now", STOP_DEADLINE)
        logging.shutdown()
        os._exit(1)

    timer = threading.Timer(STOP_DEADLINE, cut_off)
    timer.daemon = True
    timer.start()


def run(application: Application, settings: Settings, *, leadership: object = None) -> int:
    """Connect, then long-poll or serve the webhook until a stop signal; the exit code.

    A database found damaged during the run raises its `DatabaseDamaged` once the bot has
    stopped: the start-up refusal's line and exit code, not a traceback per update.
    `leadership`: the database's lock; one that can be lost (PostgreSQL's, `on_lost`) stops
    the bot when it is, with exit code LOST_LEADERSHIP.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    stopper = Stopper(application)
    stopper.install(loop)
    on_lost = getattr(leadership, "on_lost", None)
    if on_lost is not None:
        on_lost(lambda reason: loop.call_soon_threadsafe(stopper.leadership_lost, reason))
    connected = False
    try:
        connected = loop.run_until_complete(connect(application, stopper.requested))
        if not connected:
            return 0
        log.info("arxiv-alert-bot %s connected to Telegram as @%s", __version__,
                 application.bot.username)
        if settings.webhook_url:
            parts = urlsplit(settings.webhook_url)
            log.info("serving the webhook %s on %s:%d", settings.webhook_url,
                     settings.webhook_listen, settings.webhook_port)
            application.run_webhook(
                listen=settings.webhook_listen, port=settings.webhook_port,
                url_path=parts.path.lstrip("/"), webhook_url=settings.webhook_url,
                secret_token=settings.webhook_secret, allowed_updates=ALLOWED_UPDATES,
                bootstrap_retries=-1, stop_signals=None, close_loop=False,
            )
        else:
            application.run_polling(allowed_updates=ALLOWED_UPDATES, bootstrap_retries=-1,
                                    stop_signals=None, close_loop=False)
        if stopper.damaged is not None:
            raise stopper.damaged
        if stopper.lost_leadership is not None:
            log.error("stopped: another bot may lead the database now (%s); start this one "
                      "again to stand by", stopper.lost_leadership)
            return LOST_LEADERSHIP
        return 0
    finally:
        loop.run_until_complete(stopper.finish())
        loop.close()
        if connected:
            log.info("stopped")

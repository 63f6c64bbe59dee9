"""Builds the PTB Application: handlers, the rate limiter, and the services opened from the
container (`bot/services/container.py`) in post_init."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from typing import Any

from telegram import LinkPreviewOptions
from telegram.constants import ParseMode
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    Defaults,
    InlineQueryHandler,
    MessageHandler,
    MessageReactionHandler,
    TypeHandler,
    filters,
)
from telegram.request import HTTPXRequest

from bot.chat.commands import COMMANDS, menu
from bot.chat.context import BotContext
from bot.chat.guard import BudgetGate
from bot.chat.handlers import basic, buttons, imports, inline, reactions, topics
from bot.chat.handlers.common import record_chat
from bot.chat.update_processor import PerChatUpdateProcessor
from bot.config import Settings
from bot.core.clock import Clock, SystemClock
from bot.core.i18n import SUPPORTED_LANGUAGES
from bot.delivery.pacing import PacedRateLimiter, Pacer
from bot.services.budget import BudgetPolicy
from bot.services.container import Services, Wiring, open_services
from bot.services.state import RunState

# The updates the handlers below take. Telegram leaves reactions out unless they are asked for.
ALLOWED_UPDATES = ["message", "callback_query", "my_chat_member", "message_reaction",
                   "inline_query"]

log = logging.getLogger(__name__)


# Called once the services are open, before updates are taken: the runtime schedules the jobs.
OnReady = Callable[[Application, Services], None]
GIL_SWITCH_INTERVAL = 0.0005  # seconds; bench/responsiveness.py measured 5 ms and this


class WatchedRequest(HTTPXRequest):
    """PTB's HTTP transport, calling `on_success()` after every Bot API call answered 200."""

    def __init__(self, on_success: Callable[[], None], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_success = on_success

    async def do_request(self, *args: Any, **kwargs: Any) -> tuple[int, bytes]:
        status, payload = await super().do_request(*args, **kwargs)
        if status == 200:
            self._on_success()
        return status, payload


async def _post_init(application: Application) -> None:
    """Open the services (they need the running loop and the bot), then schedule the jobs."""
    settings: Settings = application.bot_data["settings"]
    stack = application.bot_data["exit_stack"] = AsyncExitStack()
    services = await stack.enter_async_context(open_services(
        settings, bot=application.bot, wiring=application.bot_data["wiring"],
        run=application.bot_data["run"]))
    application.bot_data["services"] = services
    log.info("database ready at %s", settings.database_path)
    # A poll matches in a worker thread; at each turn the event loop then waits for the GIL
    # up to the switch interval (5 ms by default), and a reply takes many turns.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    await set_command_menus(application)
    on_ready: OnReady | None = application.bot_data["on_ready"]
    if on_ready is not None:
        on_ready(application, services)


async def set_command_menus(application: Application) -> None:
    """The command menu in each language; best effort: the bot works without it."""
    features = application.bot_data["services"].features
    try:
        for language in SUPPORTED_LANGUAGES:
            await application.bot.set_my_commands(
                menu(language, features), language_code=None if language == "en" else language
            )
    except TelegramError as exc:
        log.warning("could not set the command menu (%s); starting anyway", exc)


async def _post_shutdown(application: Application) -> None:
    stack: AsyncExitStack | None = application.bot_data.pop("exit_stack", None)
    if stack is not None:
        await stack.aclose()


def build_application(
    settings: Settings, clock: Clock | None = None, *, on_ready: OnReady | None = None,
    pacer: Pacer | None = None, budget: BudgetPolicy | None = None,
) -> Application:
    """The chat edge: handlers and the rate limiter now, the services in post_init, then
    `on_ready` (the runtime's jobs; tests that drive polls themselves pass none). Tests pass a
    faster `pacer` and may pass another command `budget`.
    """
    wiring = Wiring(clock=clock or SystemClock(), pacer=pacer or Pacer(),
                    budget=budget or BudgetPolicy())
    clock = wiring.clock
    run = RunState(started_at=clock.now())
    context_types = ContextTypes(context=BotContext)

    def telegram_answered() -> None:
        run.telegram_ok_at = clock.now()

    processor = PerChatUpdateProcessor()
    application = (
        ApplicationBuilder()
        .token(settings.telegram_bot_token)
        # PTB's own pool sizes (256 for calls, 1 for getUpdates), watched for /status, health.
        .request(WatchedRequest(telegram_answered, connection_pool_size=256))
        .get_updates_request(WatchedRequest(telegram_answered, connection_pool_size=1))
        .base_url(f"{settings.telegram_api_url}/bot")
        .base_file_url(f"{settings.telegram_api_url}/file/bot")
        .context_types(context_types)
        # Every message is HTML without link previews: set once here, not at each call.
        .defaults(Defaults(parse_mode=ParseMode.HTML,
                           link_preview_options=LinkPreviewOptions(is_disabled=True)))
        # One rate limiter for every message the bot sends: the Pacer (README, "Sending").
        .rate_limiter(PacedRateLimiter(wiring.pacer))
        .post_init(_post_init)
        .post_shutdown(_post_shutdown)
        .concurrent_updates(processor)
        .build()
    )
    # The services themselves are opened in post_init (they need the running loop).
    application.bot_data.update(settings=settings, wiring=wiring, run=run,
                                on_ready=on_ready)

    # Each update is first charged to its chat's command budget, on arrival; one over budget
    # never reaches a handler. Then group -1 records the chat, before every handler.
    processor.admission = BudgetGate(application)
    application.add_handler(TypeHandler(object, record_chat), group=-1)

    for command in COMMANDS:
        application.add_handler(CommandHandler(command.name, command.answer))
    application.add_handler(CallbackQueryHandler(buttons.on_button))
    application.add_handler(MessageReactionHandler(reactions.on_reaction))
    application.add_handler(InlineQueryHandler(inline.on_inline_query))
    # Last in the group: a command nobody above handled.
    application.add_handler(MessageHandler(filters.COMMAND, basic.unknown_command))
    # Plain text only in private chats: in a group people talk to each other, not to the bot.
    application.add_handler(MessageHandler(
        filters.ChatType.PRIVATE & filters.TEXT & ~filters.COMMAND & filters.UpdateType.MESSAGE,
        basic.plain_text,
    ))
    # A file: any in a private chat; in a group only with the caption /import.
    application.add_handler(MessageHandler(
        filters.Document.ALL & filters.UpdateType.MESSAGE
        & (filters.ChatType.PRIVATE | filters.CaptionRegex(imports.IMPORT_CAPTION)),
        imports.on_document,
    ))
    # Group 1, after any command: forum topics' names, from their service messages and from
    # every message inside a topic.
    application.add_handler(MessageHandler(
        filters.StatusUpdate.FORUM_TOPIC_CREATED | filters.StatusUpdate.FORUM_TOPIC_EDITED
        | filters.IS_TOPIC_MESSAGE, topics.remember_topic), group=1)
    application.add_error_handler(basic.on_error)
    return application

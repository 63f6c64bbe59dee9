"""Builds the Application: the one place that wires settings, storage, jobs and handlers."""

from __future__ import annotations

import logging

from telegram import BotCommand
from telegram.ext import (
    AIORateLimiter,
    Application,
    ApplicationBuilder,
    CommandHandler,
    ContextTypes,
    MessageHandler,
    TypeHandler,
    filters,
)

from bot.clock import Clock, SystemClock
from bot.config import Settings
from bot.context import BotContext, Services
from bot.handlers import basic
from bot.handlers.common import record_chat
from bot.i18n import SUPPORTED_LANGUAGES, _, t
from bot.storage import Storage

log = logging.getLogger(__name__)

COMMANDS: tuple[tuple[str, str], ...] = (
    ("follow", _("Follow a category, author, keyword or query")),
    ("list", _("Your subscriptions")),
    ("unfollow", _("Remove a subscription")),
    ("saved", _("Your saved papers")),
    ("export", _("Export saved papers as BibTeX")),
    ("paper", _("Look up a paper by id or link")),
    ("digest", _("Daily digest at a time, or off")),
    ("pause", _("Pause alerts")),
    ("resume", _("Resume alerts")),
    ("tz", _("Set your time zone")),
    ("lang", _("Language: en or zh")),
    ("stats", _("What arXiv announced lately")),
    ("help", _("How to write queries; all commands")),
    ("start", _("Introduction")),
)


async def _post_init(application: Application) -> None:
    services: Services = application.bot_data["services"]
    services.storage = await Storage.open(services.settings.database_path)
    log.info("database ready at %s", services.settings.database_path)
    for language in SUPPORTED_LANGUAGES:
        commands = [BotCommand(name, t(language, text)) for name, text in COMMANDS]
        await application.bot.set_my_commands(
            commands, language_code=None if language == "en" else language
        )


async def _post_shutdown(application: Application) -> None:
    services: Services = application.bot_data["services"]
    if getattr(services, "storage", None) is not None:
        await services.storage.close()


def build_application(settings: Settings, clock: Clock | None = None) -> Application:
    """Build the bot: handlers, jobs and services, ready for `run_polling` or manual start."""
    clock = clock or SystemClock()
    context_types = ContextTypes(context=BotContext)
    application = (
        ApplicationBuilder()
        .token(settings.telegram_bot_token)
        .base_url(f"{settings.telegram_api_url}/bot")
        .base_file_url(f"{settings.telegram_api_url}/file/bot")
        .context_types(context_types)
        .rate_limiter(AIORateLimiter(overall_max_rate=30, group_max_rate=20, max_retries=0))
        .post_init(_post_init)
        .post_shutdown(_post_shutdown)
        .concurrent_updates(False)
        .build()
    )
    services = Services(settings=settings, storage=None, clock=clock,  # type: ignore[arg-type]
                        started_at=clock.now())
    application.bot_data["services"] = services

    # Group -1 runs before every handler: each update first records its chat.
    application.add_handler(TypeHandler(object, record_chat), group=-1)

    application.add_handler(CommandHandler("start", basic.start))
    application.add_handler(CommandHandler("help", basic.help_command))
    # Last in the group: a command nobody above handled.
    application.add_handler(MessageHandler(filters.COMMAND, basic.unknown_command))
    application.add_error_handler(basic.on_error)
    return application

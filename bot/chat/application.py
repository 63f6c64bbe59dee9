"""Builds the Application: the one place that wires settings, storage, jobs and handlers."""

from __future__ import annotations

import logging
import sys

from telegram import BotCommand, LinkPreviewOptions
from telegram.constants import ParseMode
from telegram.error import TelegramError
from telegram.ext import (
    Application,
    ApplicationBuilder,
    CallbackQueryHandler,
    CommandHandler,
    ContextTypes,
    Defaults,
    MessageHandler,
    TypeHandler,
    filters,
)

from bot.arxiv.client import ArxivClient
from bot.arxiv.lookups import LookupQueue
from bot.chat.context import BotContext, Services
from bot.chat.guard import BudgetGate
from bot.chat.handlers import (
    basic,
    buttons,
    guides,
    imports,
    library,
    overview,
    subscriptions,
    topics,
    trending,
)
from bot.chat.handlers import settings as chat_settings
from bot.chat.handlers.common import record_chat
from bot.chat.update_processor import PerChatUpdateProcessor
from bot.config import Settings
from bot.core.clock import Clock, SystemClock
from bot.core.i18n import SUPPORTED_LANGUAGES, _, t
from bot.delivery.pacing import PacedRateLimiter, Pacer
from bot.delivery.sender import Sender
from bot.guides.client import GuideClient
from bot.guides.service import GuideService
from bot.importer.service import LibraryImporter
from bot.jobs.poll import schedule_polls
from bot.jobs.routine import (
    community_job,
    digest_job,
    drain_job,
    for_you_job,
    prune_job,
    telegram_heartbeat_job,
    tracked,
)
from bot.query.service import SubscriptionService
from bot.ranking.service import Ranker
from bot.services.budget import BudgetPolicy, CommandBudget
from bot.services.health import TELEGRAM_HEARTBEAT_INTERVAL, WatchedRequest
from bot.services.ingest import Pipeline
from bot.sources.huggingface import CommunityPicks
from bot.storage import Storage

log = logging.getLogger(__name__)

COMMANDS: tuple[tuple[str, str], ...] = (
    ("follow", _("Follow a category, author, keyword or query")),
    ("list", _("Your subscriptions")),
    ("unfollow", _("Remove a subscription")),
    ("move", _("In a forum topic: send a subscription's alerts here")),
    ("saved", _("Your saved papers")),
    ("export", _("Export saved papers as BibTeX")),
    ("paper", _("Look up a paper by arXiv ID or link")),
    ("import", _("Import papers: a .bib file or arXiv IDs")),
    ("digest", _("Daily digest at a time, or off")),
    ("pause", _("Pause alerts")),
    ("resume", _("Resume alerts")),
    ("tz", _("Set your time zone")),
    ("lang", _("Language: en or zh")),
    ("similar", _("Stored papers nearest to a paper")),
    ("foryou", _("Daily papers your subscriptions missed: on, off or N")),
    ("stats", _("What arXiv announced lately")),
    ("help", _("How to write queries; all commands")),
    ("start", _("Introduction")),
)
GUIDE_COMMAND = ("guide", _("AI reading guide of a paper"))  # listed when guides are on
TRENDING_COMMAND = ("trending", _("Today's Hugging Face community picks"))  # when HF is on
HF_FIRST_POLL_DELAY = 20.0  # after the first arXiv poll has had its turn


FIRST_POLL_DELAY = 3.0  # the spec asks for the first poll within 5 s of start-up
DIGEST_CHECK_INTERVAL = 30.0
GIL_SWITCH_INTERVAL = 0.0005  # seconds; bench/responsiveness.py measured 5 ms and this
DRAIN_INTERVAL = 2.0  # picks up retries that came due and alerts released by /resume


async def _post_init(application: Application) -> None:
    services: Services = application.bot_data["services"]
    settings = services.settings
    services.storage = await Storage.open(settings.database_path)
    log.info("database ready at %s", settings.database_path)
    services.subscriptions = SubscriptionService(services.storage, services.clock)
    services.ranker = Ranker(services.storage, services.clock.now)
    await services.subscriptions.load()
    # A poll matches in a worker thread; at each turn the event loop then waits for the GIL
    # up to the switch interval (5 ms by default), and a reply takes many turns.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    services.arxiv = ArxivClient(
        rss_url=settings.arxiv_rss_url, api_url=settings.arxiv_api_url,
        listing_url=settings.arxiv_listing_url, contact=settings.contact,
        min_interval=settings.arxiv_min_interval_seconds,
    )
    services.lookups = LookupQueue(services.arxiv)
    services.importer = LibraryImporter(services.storage, services.lookups)
    if settings.guides_enabled:
        services.guides = GuideService(
            services.storage, GuideClient(settings.llm_api_url, settings.llm_model,
                                          settings.llm_api_key,
                                          timeout=settings.llm_timeout_seconds),
            services.clock, chat_daily_limit=settings.guide_chat_daily_limit,
            daily_limit=settings.guide_daily_limit)
    if settings.hf_papers_url:
        services.community = CommunityPicks(settings.hf_papers_url, services.storage,
                                            services.arxiv, services.clock)
    pipeline = services.pipeline = Pipeline(settings, services.storage, services.arxiv,
                                            services.subscriptions, services.clock)
    services.sender = Sender(application.bot, services.storage, services.clock, services.pacer,
                             window=settings.send_window,
                             on_migrated=services.subscriptions.chat_migrated,
                             on_topic_gone=services.subscriptions.topic_gone,
                             guides=services.guides is not None,
                             relevance=services.ranker.chat_scores,
                             held_since=lambda: pipeline.storing_since)
    await set_command_menus(application)
    if not services.schedule_jobs:
        return
    jobs = application.job_queue
    schedule_polls(jobs, first=FIRST_POLL_DELAY, wrap=tracked)
    jobs.run_repeating(tracked(drain_job), interval=DRAIN_INTERVAL, first=DRAIN_INTERVAL,
                       name="drain")
    jobs.run_repeating(tracked(digest_job), interval=DIGEST_CHECK_INTERVAL,
                       first=DIGEST_CHECK_INTERVAL, name="digests")
    jobs.run_repeating(tracked(prune_job), interval=86400, first=600, name="prune")
    jobs.run_repeating(tracked(for_you_job), interval=DIGEST_CHECK_INTERVAL,
                       first=DIGEST_CHECK_INTERVAL, name="for-you")
    jobs.run_repeating(tracked(telegram_heartbeat_job), interval=TELEGRAM_HEARTBEAT_INTERVAL,
                       first=1.0, name="telegram-heartbeat")
    if services.community is not None:
        jobs.run_repeating(tracked(community_job), interval=settings.hf_poll_interval_seconds,
                           first=HF_FIRST_POLL_DELAY, name="huggingface")


async def set_command_menus(application: Application) -> None:
    """The command menu in each language; best effort: the bot works without it."""
    services: Services = application.bot_data["services"]
    extra = tuple(command for command, on in ((GUIDE_COMMAND, services.guides is not None),
                                              (TRENDING_COMMAND, services.community is not None))
                  if on)
    menu = (*COMMANDS[:7], *extra, *COMMANDS[7:])
    try:
        for language in SUPPORTED_LANGUAGES:
            commands = [BotCommand(name, t(language, text)) for name, text in menu]
            await application.bot.set_my_commands(
                commands, language_code=None if language == "en" else language
            )
    except TelegramError as exc:
        log.warning("could not set the command menu (%s); starting anyway", exc)


async def _post_shutdown(application: Application) -> None:
    services: Services = application.bot_data["services"]
    if services.lookups is not None:
        await services.lookups.aclose()
    if services.arxiv is not None:
        await services.arxiv.aclose()
    if services.guides is not None:
        await services.guides.aclose()
    if services.community is not None:
        await services.community.aclose()
    if getattr(services, "storage", None) is not None:
        await services.storage.close()


def build_application(
    settings: Settings, clock: Clock | None = None, *, schedule_jobs: bool = True,
    pacer: Pacer | None = None, budget: BudgetPolicy | None = None,
) -> Application:
    """Build the bot: handlers, jobs and services, ready for `run_polling` or manual start.

    Tests pass `schedule_jobs=False` to drive polls themselves, a faster `pacer`, and may pass
    another command `budget`.
    """
    clock = clock or SystemClock()
    pacer = pacer or Pacer()
    context_types = ContextTypes(context=BotContext)
    services = Services(settings=settings, storage=None, clock=clock,  # type: ignore[arg-type]
                        started_at=clock.now(), schedule_jobs=schedule_jobs, pacer=pacer,
                        budget=CommandBudget(budget or BudgetPolicy()))

    def telegram_answered() -> None:
        services.telegram_ok_at = clock.now()

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
        .rate_limiter(PacedRateLimiter(pacer))
        .post_init(_post_init)
        .post_shutdown(_post_shutdown)
        .concurrent_updates(processor)
        .build()
    )
    application.bot_data["services"] = services

    # Each update is first charged to its chat's command budget, on arrival; one over budget
    # never reaches a handler. Then group -1 records the chat, before every handler.
    processor.admission = BudgetGate(application)
    application.add_handler(TypeHandler(object, record_chat), group=-1)

    application.add_handler(CommandHandler("start", basic.start))
    application.add_handler(CommandHandler("help", basic.help_command))
    application.add_handler(CommandHandler("follow", subscriptions.follow))
    application.add_handler(CommandHandler("unfollow", subscriptions.unfollow))
    application.add_handler(CommandHandler("list", subscriptions.list_subscriptions))
    application.add_handler(CommandHandler("move", subscriptions.move))
    application.add_handler(CommandHandler("saved", library.saved))
    application.add_handler(CommandHandler("export", library.export))
    application.add_handler(CommandHandler("paper", library.paper))
    application.add_handler(CommandHandler("import", imports.import_command))
    application.add_handler(CommandHandler("guide", guides.guide))
    application.add_handler(CommandHandler("trending", trending.trending))
    application.add_handler(CommandHandler("similar", library.similar))
    application.add_handler(CommandHandler("foryou", chat_settings.for_you))
    application.add_handler(CommandHandler("pause", chat_settings.pause))
    application.add_handler(CommandHandler("resume", chat_settings.resume))
    application.add_handler(CommandHandler("digest", chat_settings.digest))
    application.add_handler(CommandHandler("tz", chat_settings.timezone))
    application.add_handler(CommandHandler("lang", chat_settings.language))
    application.add_handler(CommandHandler("stats", overview.stats))
    application.add_handler(CommandHandler("status", overview.status))
    application.add_handler(CallbackQueryHandler(buttons.on_button))
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

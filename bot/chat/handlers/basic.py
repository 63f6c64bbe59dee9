"""/start, /help, unknown commands and the error handler."""

from __future__ import annotations

import logging

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers import imports, library
from bot.chat.handlers.common import MAX_ARGUMENT_LENGTH, clean_argument, reply
from bot.core.i18n import _, t
from bot.core.models import ArxivId

log = logging.getLogger(__name__)

START_TEXT = _(
    "👋 <b>arXiv alerts, right here in the chat.</b>\n"
    "Tell me what you follow — categories, authors, keywords or a boolean query — and I "
    "check arXiv on a schedule and send every new paper and every new version that matches.\n"
    "Tap <b>Save</b> on a paper to keep it in your library; saved papers are watched for "
    "revisions and export to BibTeX.\n\n"
    "Try:\n"
    "<code>/follow cs.LG</code>\n"
    "<code>/follow au:\"Eiko Yoneki\"</code>\n"
    "<code>/follow cat:cs.CL \"large language model\" -survey</code>\n\n"
    "/help explains the query language and every command."
)

HELP_TEXT = _(
    "<b>Following papers</b>\n"
    "/follow &lt;query&gt; — add a subscription\n"
    "/unfollow &lt;number&gt; or /unfollow all — remove subscriptions\n"
    "/list — your subscriptions, each with a remove button\n\n"
    "<b>The query language</b>\n"
    "<code>cat:cs.LG</code> or <code>cs.LG</code> — a category (primary or cross-list)\n"
    "<code>cat:cs</code> or <code>cat:cs.*</code> — any category of an archive\n"
    "<code>au:Yoneki</code>, <code>au:\"E. Yoneki\"</code> — an author (a surname alone "
    "matches any given name; an initial matches a full name)\n"
    "<code>ti:word</code>, <code>ti:\"a phrase\"</code> — in the title\n"
    "<code>abs:word</code>, <code>abs:\"a phrase\"</code> — in the abstract\n"
    "<code>word</code>, <code>\"a phrase\"</code> — in the title or abstract\n"
    "<code>quantiz*</code> — any word starting with quantiz\n"
    "Terms side by side must all match; combine with <code>OR</code>, <code>AND</code>, "
    "<code>NOT</code> (or a leading <code>-</code>) and parentheses. Matching ignores case, "
    "accents and punctuation.\n"
    "Examples:\n"
    "<code>/follow cs.CL (\"retrieval augmented\" OR RAG) -survey</code>\n"
    "<code>/follow au:Hinton OR au:\"Y. LeCun\"</code>\n"
    "<code>/follow cat:quant-ph ti:error-correct*</code>\n\n"
    "<b>Your library</b>\n"
    "/saved — saved papers, newest first\n"
    "/export — the library as a BibTeX file\n"
    "/paper &lt;arXiv ID or link&gt; — one paper's card\n"
    "/import — .bib or arXiv IDs\n"
    "/similar &lt;arXiv ID&gt; — stored papers nearest to one paper; 👍 / 👎 on alerts and "
    "your saved papers teach the ranker (/stats shows whether it is on)\n\n"
    "<b>Delivery</b>\n"
    "/pause and /resume — stop and restart alerts (nothing is lost)\n"
    "/digest HH:MM — one daily digest at that time; /digest off — instant alerts\n"
    "/tz &lt;zone&gt; — your time zone, e.g. <code>/tz Asia/Shanghai</code>\n"
    "/lang en or /lang zh — language\n\n"
    "<b>Overview</b>\n"
    "/stats — what arXiv announced lately and what reached you\n"
    "/status — the bot's health (operators only)"
)


async def start(update: Update, context: BotContext) -> None:
    """Greet and show example /follow commands."""
    await reply(update, context, t(context.lang, START_TEXT))


GUIDE_HELP = _("/guide &lt;id&gt; — an AI reading guide written from the abstract (also the "
               "🧠 Guide button)")
TRENDING_HELP = _("/trending — today's Hugging Face community picks; /trending mine — those "
                  "matching your subscriptions")
# Only a forum group can bind subscriptions to topics, so only there does /help mention it.
TOPICS_HELP = _("/move &lt;number&gt; inside a topic — that subscription's alerts go to this "
                "topic; /follow inside a topic does the same for a new one")


async def help_command(update: Update, context: BotContext) -> None:
    """Explain the query language and every command (the optional ones where they work)."""
    chat = update.effective_chat
    extras = [t(context.lang, text) for text, on in (
        (GUIDE_HELP, context.services.features.guides),
        (TRENDING_HELP, context.services.features.trending),
        (TOPICS_HELP, chat is not None and bool(chat.is_forum))) if on]
    await reply(update, context, "\n".join([t(context.lang, HELP_TEXT), *extras]))


async def unknown_command(update: Update, context: BotContext) -> None:
    """A command the bot does not know gets pointed at /help; one for another bot is ignored."""
    message = update.effective_message
    command = (message.text or "").split(maxsplit=1)[0] if message is not None else ""
    _, at, addressee = command.partition("@")
    if at and addressee.lower() != (context.bot.username or "").lower():
        return  # `/start@otherbot` in a group with several bots is not ours to answer
    await reply(update, context, t(
        context.lang, "I don't know that command. /help lists what I can do."
    ))


async def plain_text(update: Update, context: BotContext) -> None:
    """Text that is not a command, in a private chat: an arXiv id or link shows that paper's
    card (what a researcher pasting a link wants); several are imported into the library;
    anything else gets a pointer to the commands.

    Registered for private chats only: in a group people talk to each other, not to the bot.
    """
    message = update.effective_message
    text = clean_argument(message.text or "") if message is not None else None
    if text and len(text) <= MAX_ARGUMENT_LENGTH and (arxiv_id := ArxivId.parse(text)):
        await library.show_paper(update, context, arxiv_id)
        return
    if await imports.import_message(update, context):  # several IDs or links: import them
        return
    await reply(update, context, t(
        context.lang, "I answer commands, such as <code>/follow cs.LG</code> or "
        "<code>/paper 2611.11450</code>. /help lists them all."
    ))


async def on_error(update: object, context: BotContext) -> None:
    """Log the error with its update and keep running; tell the chat something went wrong."""
    log.error("error while handling an update", exc_info=context.error)
    if isinstance(update, Update) and update.effective_message is not None:
        try:
            await reply(update, context, t(
                context.lang, "Sorry, something went wrong. Please try again in a moment."
            ))
        except Exception:  # the error handler must never raise
            log.warning("could not tell the chat about the error", exc_info=True)

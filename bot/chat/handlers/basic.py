"""/start, unknown commands, plain text and the error handler (/help: `chat/commands.py`)."""

from __future__ import annotations

import logging

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers import imports, library
from bot.chat.handlers.common import MAX_ARGUMENT_LENGTH, clean_argument, reply
from bot.core.i18n import _, t
from bot.core.models import ArxivId
from bot.delivery.callbacks import paper_of_start
from bot.services.state import RunState

log = logging.getLogger(__name__)
job_log = logging.getLogger("bot.jobs")

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


async def start(update: Update, context: BotContext, argument: str) -> None:
    """Greet and show example /follow commands; a link from a shared card (`?start=paper_…`)
    opens that paper's card instead, with its Save button."""
    if (arxiv_id := paper_of_start(argument)) is not None:
        await library.show_paper(update, context, arxiv_id)
        return
    await reply(update, context, t(context.lang, START_TEXT))


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
    """Log the error with its update and keep running; tell the chat something went wrong.
    A scheduled job's failure is logged as the job's (PTB hands both to this handler)."""
    if context.job is not None:
        job_failed(context.job.name or "unnamed", context.error, context.services.run)
        return
    log.error("error while handling an update", exc_info=context.error)
    if isinstance(update, Update) and update.effective_message is not None:
        try:
            await reply(update, context, t(
                context.lang, "Sorry, something went wrong. Please try again in a moment."
            ))
        except Exception:  # the error handler must never raise
            log.warning("could not tell the chat about the error", exc_info=True)


def job_failed(name: str, error: BaseException | None, run: RunState) -> None:
    """One log entry for a failed job, by its name: with the traceback the first time, one
    line while it fails the same way again (a full disk fails the drain every two seconds);
    the job's next clean run says so (bot/jobs/routine.py)."""
    reason = f"{type(error).__name__}: {error}"
    if run.failing_jobs.get(name) == reason:
        job_log.error("job %s failed again: %s", name, reason)
    else:
        job_log.error("job %s failed: %s", name, reason, exc_info=error)
    run.failing_jobs[name] = reason

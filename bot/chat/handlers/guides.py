"""AI reading guides: `/guide <id>` and the 🧠 Guide button."""

from __future__ import annotations

import logging

from telegram import Message, ReplyParameters, Update

from bot.arxiv.errors import ArxivError
from bot.arxiv.lookups import TooManyLookups
from bot.chat.context import BotContext
from bot.chat.handlers.common import reply, topic_of
from bot.core.i18n import t
from bot.core.models import ArxivId, Paper
from bot.core.text import escape
from bot.delivery import callbacks
from bot.guides.render import render_failure, render_guide, render_refusal, render_writing
from bot.guides.service import GuideService, Refusal

log = logging.getLogger(__name__)


async def guide(update: Update, context: BotContext, arxiv_id: ArxivId) -> None:
    """`/guide <id or link>`: the paper's reading guide, written now or from the cache."""
    service = context.services.guides
    if service is None:  # off: the command table has told the chat so, before this handler
        return
    paper = await _find(update, context, arxiv_id)
    if paper is None:
        return
    await _deliver(update, context, service, paper, reply_to=update.effective_message)


async def on_guide_button(update: Update, context: BotContext,
                          action: callbacks.ShowGuide) -> None:
    """🧠 Guide under an alert or card: the guide arrives as a reply to that message."""
    query = update.callback_query
    service = context.services.guides
    paper = await context.services.papers.stored(action.paper.base, action.paper.version)
    if service is None or paper is None:
        await query.answer(t(context.lang, "This button has expired. Please send the command "
                                           "again."))
        return
    await query.answer()
    message = query.message if isinstance(query.message, Message) else None
    await _deliver(update, context, service, paper, reply_to=message)


async def _find(update: Update, context: BotContext, arxiv_id: ArxivId) -> Paper | None:
    """The paper from the store, else from arXiv through the fair look-up queue (then kept);
    None once the chat was told why there is none."""
    lang = context.lang
    try:
        found = await context.services.papers.find(update.effective_chat.id, arxiv_id)
    except TooManyLookups:
        await reply(update, context, t(lang, "Your earlier look-ups are still waiting for arXiv; "
                                             "send this one again after they are answered."))
        return None
    except ArxivError as exc:
        log.info("arXiv look-up of %s failed: %s", arxiv_id, exc)
        await reply(update, context, t(lang, "arXiv is slow right now; try again in a minute."))
        return None
    if found is None:
        await reply(update, context, t(lang, "arXiv has no paper {id}.", id=escape(str(arxiv_id))))
    return found


async def _deliver(update: Update, context: BotContext, service: GuideService, paper: Paper,
                   reply_to: Message | None) -> None:
    """Send the cached guide, a refusal, or "writing…" that a background task edits."""
    lang = context.lang
    chat_id = update.effective_chat.id
    bot = context.bot
    # The message asked about may be gone by now: the guide then arrives on its own, still in
    # the forum topic it was asked in.
    topic = topic_of(update)
    reply_parameters = None if reply_to is None else ReplyParameters(
        reply_to.message_id, allow_sending_without_reply=True)

    async def send(text: str) -> Message:
        return await bot.send_message(chat_id, text, reply_parameters=reply_parameters,
                                      message_thread_id=topic or None)

    cached = await service.cached(paper, lang)
    if cached is not None:
        await send(render_guide(paper, cached, lang))
        return
    if not service.in_progress(paper, lang) and (refusal := await service.refusal(chat_id)):
        limit = service.chat_daily_limit if refusal == Refusal.CHAT_BUDGET \
            else service.daily_limit
        await send(render_refusal(refusal, limit, lang))
        return
    placeholder = await send(render_writing(paper, lang))
    # Written in the background: updates are handled one at a time, and a guide may take
    # up to 30 s, which must not hold up every other chat's commands.
    context.application.create_task(_write(context, service, chat_id, paper, lang, placeholder),
                                    update=update)


async def _write(context: BotContext, service: GuideService, chat_id: int, paper: Paper,
                 lang: str, placeholder: Message) -> None:
    outcome = await service.write(chat_id, paper, lang)
    text = render_guide(paper, outcome.guide, lang) if outcome.guide is not None \
        else render_failure(outcome.failure, lang)  # type: ignore[arg-type]
    await context.bot.edit_message_text(text, chat_id=chat_id,
                                        message_id=placeholder.message_id)

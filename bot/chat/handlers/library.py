"""The saved library: /saved with paging and remove buttons, /export, /paper."""

from __future__ import annotations

import io
import logging

from telegram import Message, Update
from telegram.constants import ChatAction

from bot.arxiv.errors import ArxivError
from bot.arxiv.lookups import TooManyLookups
from bot.chat.context import BotContext
from bot.chat.handlers.common import (
    admin_check,
    edit_quietly,
    group_member,
    reply,
    with_webapp_button,
)
from bot.chat.progress import Progress
from bot.core.i18n import t, tn
from bot.core.models import ArxivId, Paper
from bot.core.text import escape
from bot.delivery import callbacks
from bot.delivery.pages import render_saved_page
from bot.delivery.render import RenderedMessage, render_similar, saver_name
from bot.library.groups import Removal, RemovalResult

log = logging.getLogger(__name__)


async def _page_view(update: Update, context: BotContext, chat_id: int,
                     page: int) -> RenderedMessage:
    shown = await context.services.library.page(chat_id, page)
    view = render_saved_page(shown.entries, page=shown.page, total=shown.total,
                             lang=context.lang)
    markup = with_webapp_button(update, context, "library", view.reply_markup)
    return RenderedMessage(view.text, markup or view.reply_markup, view.entry_count)


async def saved(update: Update, context: BotContext) -> None:
    """The chat's saved papers, newest first, five a page."""
    view = await _page_view(update, context, update.effective_chat.id, 1)
    await reply(update, context, view.text, reply_markup=view.reply_markup)


async def _show_page(update: Update, context: BotContext, page: int) -> None:
    view = await _page_view(update, context, update.effective_chat.id, page)
    message = update.callback_query.message
    if isinstance(message, Message):
        await edit_quietly(message.edit_text(view.text, reply_markup=view.reply_markup))


async def on_page_button(update: Update, context: BotContext,
                         action: callbacks.SavedPage) -> None:
    """◀ / ▶ in /saved: the page edits in place."""
    await update.callback_query.answer()
    await _show_page(update, context, action.page)


async def on_remove_button(update: Update, context: BotContext,
                           action: callbacks.RemoveSaved) -> None:
    """✖ in /saved: remove from this chat's library only, then redraw the page. In a group
    only the member who saved the paper and the administrators may; anyone else is told so."""
    result = await context.services.library.remove(update.effective_chat.id,
                                                   action.paper.base, group_member(update),
                                                   admin_check(update, context))
    if result.outcome is Removal.REFUSED:
        await update.callback_query.answer(refusal(result, context.lang), show_alert=True)
        return
    await update.callback_query.answer(
        t(context.lang, "Removed from your library") if result.outcome is Removal.REMOVED
        else t(context.lang, "That paper was not in your library.")
    )
    await _show_page(update, context, action.page)


def refusal(result: RemovalResult, lang: str) -> str:
    """Why a group member may not remove that paper: who may."""
    if result.saver is None:
        return t(lang, "Only the group's administrators can remove this paper.")
    return t(lang, "Only {name}, who saved this paper, and the group's administrators can "
                   "remove it.", name=saver_name(result.saver.first_name))


async def export(update: Update, context: BotContext) -> None:
    """The library as a BibTeX document; a large one shows its progress while it is written."""
    lang = context.lang
    library = context.services.library
    papers = await library.papers(update.effective_chat.id)
    if not papers:
        await reply(update, context, t(
            lang, "Your library is empty, so there is nothing to export yet. "
            "Tap <b>Save</b> under a paper first."
        ))
        return
    total = len(papers)
    async with Progress(update, context, _exporting(lang, 0, total),
                        action=ChatAction.UPLOAD_DOCUMENT) as progress:
        async def written(done: int) -> None:
            await progress.advance(_exporting(lang, done, total))

        document = io.BytesIO((await library.bibtex(papers, written)).encode("utf-8"))
        await update.effective_message.reply_document(
            document, filename="arxiv-library.bib",
            caption=tn(lang, "{count} saved paper as BibTeX.",
                       "{count} saved papers as BibTeX.", total),
        )
        await progress.dismiss()


def _exporting(lang: str, done: int, total: int) -> str:
    return tn(lang, "📦 Exporting your library: {done}/{count} paper…",
              "📦 Exporting your library: {done}/{count} papers…", total, done=done)


async def paper(update: Update, context: BotContext, arxiv_id: ArxivId) -> None:
    """A paper's card by id or arXiv link, from the store or the arXiv API."""
    await show_paper(update, context, arxiv_id)


SIMILAR_COUNT = 5  # papers /similar lists


async def similar(update: Update, context: BotContext, arxiv_id: ArxivId) -> None:
    """The stored papers nearest to one paper (tf-idf cosine over title, abstract, authors)."""
    await show_similar(update, context, arxiv_id.base)


async def show_similar(update: Update, context: BotContext, arxiv_id: str) -> None:
    lang = context.lang
    paper, nearest = await context.services.papers.similar(arxiv_id, SIMILAR_COUNT)
    if paper is None:
        await reply(update, context, t(
            lang, "I don't have {id} stored yet. Look it up with /paper {id} first.",
            id=escape(arxiv_id)))
        return
    if not nearest:
        await reply(update, context, t(lang, "I know no paper close to {id} yet.",
                                       id=escape(arxiv_id)))
        return
    await reply(update, context, render_similar(paper, nearest, lang=lang))


async def show_paper(update: Update, context: BotContext, arxiv_id: ArxivId) -> None:
    """Reply with the card of `arxiv_id` from the store, else from an arXiv look-up.

    The look-up waits its turn in the queue that serves chats in turn, so another chat's
    flood of look-ups delays it by one request at most; while it waits, the chat sees progress.
    """
    papers = context.services.papers
    found = await papers.stored(arxiv_id.base, arxiv_id.version)
    if found is not None:
        card = await _card(update, context, found)
        await _shown(context, found, await reply(update, context, card.text,
                                                 reply_markup=card.reply_markup))
        return
    lang = context.lang
    try:
        pending = papers.look_up(update.effective_chat.id, arxiv_id)
    except TooManyLookups as exc:
        await reply(update, context, tn(
            lang, "You already have {count} look-up waiting for arXiv. I'll answer it "
            "first; send this one again after that.",
            "You already have {count} look-ups waiting for arXiv. I'll answer them first; "
            "send this one again after that.", exc.limit))
        return
    if pending.done():  # an id arXiv said lately it does not have: no request, no progress
        await reply(update, context, t(lang, "arXiv has no paper {id}.",
                                       id=escape(str(arxiv_id))))
        return
    async with Progress(update, context, t(
            lang, "🔎 Looking up {id} on arXiv…", id=escape(str(arxiv_id)))) as progress:
        try:
            found = await papers.kept(pending)
        except ArxivError as exc:
            log.info("arXiv look-up of %s failed: %s", arxiv_id, exc)
            await progress.finish(t(lang, "arXiv is slow right now; try again in a minute."))
            return
        if found is None:
            await progress.finish(t(lang, "arXiv has no paper {id}.", id=escape(str(arxiv_id))))
            return
        card = await _card(update, context, found)
        await _shown(context, found, await progress.finish(card.text,
                                                           reply_markup=card.reply_markup))


async def _shown(context: BotContext, paper: Paper, message: Message | None) -> None:
    """The card went out as `message`: a reaction on it rates the paper."""
    if message is not None:
        await context.services.papers.card_shown(message.chat_id, message.message_id, paper)


async def _card(update: Update, context: BotContext, paper: Paper) -> RenderedMessage:
    return await context.services.papers.card(update.effective_chat.id, context.lang, paper)

"""The saved library: /saved with paging and remove buttons, /export, /paper."""

from __future__ import annotations

import io
import logging

from telegram import Message, Update
from telegram.constants import ParseMode

from bot.arxiv.errors import ArxivError
from bot.delivery import callbacks
from bot.delivery.bibtex import to_bibtex
from bot.delivery.pages import PAGE_SIZE, page_count, render_saved_page
from bot.delivery.render import RenderedMessage, render_paper_card
from bot.handlers.common import (
    edit_quietly,
    quote,
    read_argument,
    reply,
)
from bot.handlers.context import BotContext
from bot.i18n import t
from bot.models import ArxivId

log = logging.getLogger(__name__)


async def _page_view(context: BotContext, chat_id: int, page: int) -> RenderedMessage:
    store = context.store
    total = await store.saved.count(chat_id)
    page = min(max(page, 1), page_count(total))  # a stale or forged page shows the nearest
    papers = await store.saved.page(chat_id, (page - 1) * PAGE_SIZE, PAGE_SIZE)
    return render_saved_page(papers, page=page, total=total, lang=context.lang)


async def saved(update: Update, context: BotContext) -> None:
    """The chat's saved papers, newest first, five a page."""
    view = await _page_view(context, update.effective_chat.id, 1)
    await reply(update, context, view.text, reply_markup=view.reply_markup)


async def _show_page(update: Update, context: BotContext, page: int) -> None:
    view = await _page_view(context, update.effective_chat.id, page)
    message = update.callback_query.message
    if isinstance(message, Message):
        await edit_quietly(message.edit_text(view.text, parse_mode=ParseMode.HTML,
                                             reply_markup=view.reply_markup,
                                             disable_web_page_preview=True))


async def on_page_button(update: Update, context: BotContext,
                         action: callbacks.SavedPage) -> None:
    """◀ / ▶ in /saved: the page edits in place."""
    await update.callback_query.answer()
    await _show_page(update, context, action.page)


async def on_remove_button(update: Update, context: BotContext,
                           action: callbacks.RemoveSaved) -> None:
    """✖ in /saved: remove from this chat's library only, then redraw the page."""
    removed = await context.store.saved.remove(update.effective_chat.id, action.paper.base)
    await update.callback_query.answer(
        t(context.lang, "Removed from your library") if removed
        else t(context.lang, "That paper was not in your library.")
    )
    await _show_page(update, context, action.page)


async def export(update: Update, context: BotContext) -> None:
    """The library as a BibTeX document."""
    papers = await context.store.saved.all(update.effective_chat.id)
    if not papers:
        await reply(update, context, t(
            context.lang, "Your library is empty, so there is nothing to export yet. "
            "Tap <b>Save</b> under a paper first."
        ))
        return
    document = io.BytesIO(to_bibtex(papers).encode("utf-8"))
    await update.effective_message.reply_document(
        document, filename="arxiv-library.bib",
        caption=t(context.lang, "{count} saved papers as BibTeX.", count=len(papers)),
    )


async def paper(update: Update, context: BotContext) -> None:
    """A paper's card by id or arXiv link, from the store or the arXiv API."""
    lang = context.lang
    argument = await read_argument(update, context, t(
        lang, "Which paper? For example <code>/paper 2611.11450</code> or "
        "<code>/paper https://arxiv.org/abs/2611.11450</code>."
    ))
    if argument is None:
        return
    arxiv_id = ArxivId.parse(argument)
    if arxiv_id is None:
        await reply(update, context, t(
            lang, "That doesn't look like an arXiv id. Try <code>2611.11450</code>, "
            "<code>hep-th/9901001</code> or an arxiv.org link."
        ))
        return
    await show_paper(update, context, arxiv_id)


async def show_paper(update: Update, context: BotContext, arxiv_id: ArxivId) -> None:
    """Reply with the card of `arxiv_id`, looked up in the store, else in the arXiv API."""
    lang = context.lang
    store = context.store
    found = await store.papers.get(arxiv_id.base, arxiv_id.version)
    if found is None:
        arxiv = context.services.arxiv
        try:
            fetched = await arxiv.lookup_ids([str(arxiv_id)]) if arxiv is not None else []
        except ArxivError as exc:
            log.warning("arXiv look-up of %s failed: %s", arxiv_id, exc)
            await reply(update, context, t(
                lang, "arXiv did not answer just now. Please try again in a minute."
            ))
            return
        if fetched:
            await store.papers.cache_lookups(fetched, context.now())
            found = fetched[0]
    if found is None:
        await reply(update, context, t(
            lang, "arXiv has no paper {id}.", id=quote(str(arxiv_id))
        ))
        return
    card = render_paper_card(
        found, saved=await store.saved.is_saved(update.effective_chat.id, found.arxiv_id),
        lang=lang,
    )
    await reply(update, context, card.text, reply_markup=card.reply_markup)

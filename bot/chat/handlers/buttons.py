"""Inline buttons: one router that decodes the data and hands each action to its handler."""

from __future__ import annotations

import logging

from telegram import InlineKeyboardMarkup, Message, Update

from bot.chat.context import BotContext
from bot.chat.handlers import guides, library, privacy, subscriptions
from bot.chat.handlers.common import admin_check, edit_quietly, group_member, reply
from bot.core.i18n import t
from bot.core.models import Feedback, Paper
from bot.delivery import callbacks
from bot.delivery.render import with_feedback_state, with_saved_state
from bot.library.groups import Removal, RemovalResult

log = logging.getLogger(__name__)


async def on_button(update: Update, context: BotContext) -> None:
    """Decode the pressed button's data; forged or stale data gets a polite answer."""
    query = update.callback_query
    action = callbacks.decode(query.data)
    if action is None or update.effective_chat is None or not _offered(query.message, query.data):
        await query.answer(t(context.lang, "This button has expired. Please send the command "
                                           "again."))
        return
    match action:
        case callbacks.ToggleSave():
            await on_save(update, context, action)
        case callbacks.ToggleAbstract():
            await on_abstract(update, context, action)
        case callbacks.Unfollow():
            await subscriptions.on_unfollow_button(update, context, action)
        case callbacks.SavedPage():
            await library.on_page_button(update, context, action)
        case callbacks.RemoveSaved():
            await library.on_remove_button(update, context, action)
        case callbacks.DigestMore() | callbacks.DigestRest():
            await on_more(update, context, action)
        case callbacks.ShowGuide():
            await guides.on_guide_button(update, context, action)
        case callbacks.Rate():
            await on_rate(update, context, action)
        case callbacks.ShowSimilar():
            await query.answer()
            await library.show_similar(update, context, action.paper.base)
        case callbacks.Forget():
            await privacy.on_forget_button(update, context, action)
        case callbacks.Noop():
            # Always answer, even with nothing to say, or the client shows a spinner.
            await query.answer()


def _offered(message: object, data: str | None) -> bool:
    """Whether the message carries a button with this data (a modified client can send any).

    A message Telegram no longer shows us (inaccessible) cannot be checked, so it passes; every
    handler still checks the data against the pressing chat.
    """
    if not isinstance(message, Message):
        return True
    markup = message.reply_markup
    rows = markup.inline_keyboard if markup is not None else ()
    return any(button.callback_data == data for row in rows for button in row)


async def on_save(update: Update, context: BotContext, action: callbacks.ToggleSave) -> None:
    """Save toggles to Saved and back. Anyone in a group may save; only who saved the paper
    and the administrators may unsave it. In a group the alert or card then names who saved
    it; elsewhere only the keyboard changes."""
    query = update.callback_query
    lang = context.lang
    paper = await context.services.papers.stored(action.paper.base)
    if paper is None:
        await query.answer(t(lang, "I no longer have that paper. Try /paper {id}.",
                             id=action.paper.base))
        return
    chat_id = update.effective_chat.id
    version = action.paper.version or paper.version
    message = query.message
    markup = message.reply_markup if isinstance(message, Message) else None
    wanted = _press_intent(markup, paper.arxiv_id, lang)
    member, is_admin = group_member(update), admin_check(update, context)
    saved_papers = context.services.library
    removal: RemovalResult | None = None
    if wanted is None:
        removal = await saved_papers.toggle(chat_id, paper.arxiv_id, version, member, is_admin)
    elif wanted:
        await saved_papers.save(chat_id, paper.arxiv_id, version, member)
    else:
        removal = await saved_papers.remove(chat_id, paper.arxiv_id, member, is_admin)
    if removal is not None and removal.outcome is Removal.REFUSED:
        await query.answer(library.refusal(removal, lang), show_alert=True)
        return
    saved = removal is None
    await query.answer(t(lang, "Saved to your library ✓") if saved
                       else t(lang, "Removed from your library"))
    if not isinstance(message, Message) or message.reply_markup is None:
        return
    if member is not None and action.number is None:
        shown = await context.services.papers.shown(action.paper.base,
                                                    action.paper.version) or paper
        await _redraw(update, context, message, shown,
                      expanded=_expanded(message.reply_markup, paper.arxiv_id))
        return
    markup = with_saved_state(message.reply_markup, paper.arxiv_id, saved=saved, lang=lang)
    await edit_quietly(message.edit_reply_markup(reply_markup=markup))


def _expanded(markup: InlineKeyboardMarkup, arxiv_id: str) -> bool:
    """Whether the message shows the full abstract (its button offers to collapse it)."""
    for row in markup.inline_keyboard:
        for button in row:
            action = callbacks.decode(button.callback_data)
            if isinstance(action, callbacks.ToggleAbstract) and action.paper.base == arxiv_id:
                return not action.expand
    return False


async def _redraw(update: Update, context: BotContext, message: Message, paper: Paper, *,
                  expanded: bool) -> None:
    """Draw an alert or card again from the store (the same alert, if it was one)."""
    rendered = await context.services.papers.redrawn(
        update.effective_chat.id, message.message_id, context.lang, paper, expanded=expanded)
    await edit_quietly(message.edit_text(rendered.text, reply_markup=rendered.reply_markup))


def _press_intent(markup: InlineKeyboardMarkup | None, arxiv_id: str, lang: str) -> bool | None:
    """Save (True) or unsave (False), as the button the user saw said; None if it can't tell.

    Two quick presses of "Save" both saw "Save": the paper ends up saved, not toggled back.
    """
    if markup is None:
        return None
    shows_unsaved = with_saved_state(markup, arxiv_id, saved=False, lang=lang)
    shows_saved = with_saved_state(markup, arxiv_id, saved=True, lang=lang)
    if shows_unsaved == shows_saved:  # no Save button for this paper on the message
        return None
    if markup == shows_unsaved:
        return True
    if markup == shows_saved:
        return False
    return None  # drawn in another language: fall back to toggling


async def on_rate(update: Update, context: BotContext, action: callbacks.Rate) -> None:
    """👍 / 👎: give or clear the chat's label; the library is left as it is."""
    query = update.callback_query
    lang = context.lang
    arxiv_id = action.paper.base
    given = action.label if action.give else None
    if not await context.services.papers.rate(update.effective_chat.id, arxiv_id, given):
        await query.answer(t(lang, "I no longer have that paper. Try /paper {id}.", id=arxiv_id))
        return
    if given is Feedback.MORE:
        await query.answer(t(lang, "👍 Noted: more like this"))
    elif given is Feedback.LESS:
        await query.answer(t(lang, "👎 Noted: less like this"))
    else:
        await query.answer(t(lang, "Feedback cleared"))
    message = query.message
    if isinstance(message, Message) and message.reply_markup is not None:
        markup = with_feedback_state(message.reply_markup, arxiv_id, given)
        if markup != message.reply_markup:
            await edit_quietly(message.edit_reply_markup(reply_markup=markup))


async def on_abstract(update: Update, context: BotContext,
                      action: callbacks.ToggleAbstract) -> None:
    """Expand the message to the full abstract, or collapse it; the keyboard is kept."""
    query = update.callback_query
    paper = await context.services.papers.shown(action.paper.base, action.paper.version)
    message = query.message
    if paper is None or not isinstance(message, Message):
        await query.answer(t(context.lang, "This button has expired. Please send the command "
                                           "again."))
        return
    await query.answer()
    await _redraw(update, context, message, paper, expanded=action.expand)


async def on_more(update: Update, context: BotContext,
                  action: callbacks.DigestMore | callbacks.DigestRest) -> None:
    """"Show more" under a capped digest: its next entries arrive as new messages."""
    query = update.callback_query
    message = query.message
    message_id = action.message_id or (message.message_id if isinstance(message, Message)
                                       else None)
    papers, chat_id = context.services.papers, update.effective_chat.id
    if message_id is None:
        pages = []
    elif isinstance(action, callbacks.DigestRest):
        pages = await papers.digest_page(chat_id, context.lang, message_id, action)
    else:
        pages = await papers.digest_more(chat_id, context.lang, message_id, action.offset)
    if not pages:
        await query.answer(t(context.lang, "This button has expired. Please send the command "
                                           "again."))
        return
    await query.answer()
    for page in pages:
        await reply(update, context, page.text, reply_markup=page.reply_markup)

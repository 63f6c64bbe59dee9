"""/forget: erase everything the bot keeps about a chat, once a button confirms it."""

from __future__ import annotations

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update

from bot.chat.context import BotContext
from bot.chat.handlers.common import admins_only, edit_quietly, reply
from bot.core.i18n import _, t
from bot.delivery import callbacks


async def forget(update: Update, context: BotContext) -> None:
    """Say what would be erased and ask for the confirming press; in a group, admins only."""
    if not await _may_forget(update, context):
        return
    lang = context.lang
    markup = InlineKeyboardMarkup([[
        InlineKeyboardButton(t(lang, "🗑 Erase everything"),
                             callback_data=callbacks.encode(callbacks.Forget(confirm=True))),
        InlineKeyboardButton(t(lang, "Keep it"),
                             callback_data=callbacks.encode(callbacks.Forget(confirm=False))),
    ]])
    await reply(update, context, t(
        lang, "This erases everything the bot keeps about this chat: its subscriptions, saved "
        "papers, 👍 / 👎 and what the ranker learnt from them, its settings, and the record of "
        "the alerts it was sent. It cannot be undone."), reply_markup=markup)


async def on_forget_button(update: Update, context: BotContext,
                           action: callbacks.Forget) -> None:
    """The confirming press erases the chat's data at once; the other keeps it."""
    query = update.callback_query
    if not await _may_forget(update, context):
        return
    lang = context.lang  # read before the chat's record goes
    if not action.confirm:
        await query.answer()
        await edit_quietly(query.edit_message_text(t(lang, "Nothing was erased.")))
        return
    await context.services.chats.forget(update.effective_chat.id)
    context.chat_data.clear()  # the record cached for this chat is gone with the rest
    await query.answer(t(lang, "Erased."))
    await edit_quietly(query.edit_message_text(t(
        lang, "Everything the bot kept about this chat is erased. If you write to it again, "
        "it starts afresh.")))


async def _may_forget(update: Update, context: BotContext) -> bool:
    """In a group only its administrators may erase its data; anyone else is told so."""
    return await admins_only(update, context, _(
        "Only this group's administrators can erase what the bot keeps about it."))

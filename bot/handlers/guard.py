"""The command budget at the chat edge: runs before every handler (see `app.py`)."""

from __future__ import annotations

import math

from telegram import Message, MessageEntity, Update
from telegram.constants import ChatType
from telegram.ext import ApplicationHandlerStop

from bot.budget import DEFAULT_COST, LOOKUP_COST, command_cost
from bot.handlers.common import clean_argument, reply
from bot.handlers.context import BotContext
from bot.i18n import t
from bot.models import ArxivId


async def budget_guard(update: Update, context: BotContext) -> None:
    """Charge the update to its chat's budget; over budget, say so once, then stay silent.

    Nothing after this runs for a refused update, not even recording the chat, so spam costs
    neither a database write nor an outgoing message. A refused button press is still
    answered (without text in the silent window), since Telegram expects every press answered.
    """
    chat = update.effective_chat
    if chat is None:
        return
    cost = update_cost(update, context.bot.username)
    if cost is None:
        return
    user = update.effective_user
    in_group = chat.type != ChatType.PRIVATE
    decision = context.services.budget.charge(
        chat.id, user.id if in_group and user is not None else None, cost, context.now())
    if decision.allowed:
        return
    query = update.callback_query
    if decision.notify:
        lang = await _language(context, chat.id)
        text = t(lang, "⏳ That is more than I can answer at once. Please try again in "
                       "{seconds} s.", seconds=math.ceil(decision.retry_after))
        if query is not None:
            await query.answer(text)
        else:
            await reply(update, context, text)
    elif query is not None:
        await query.answer()
    raise ApplicationHandlerStop


def update_cost(update: Update, bot_username: str | None) -> int | None:
    """What an update costs, or None if it is free: not ours to answer (a group's chatter, a
    command for another bot) or not a request at all (membership changes, edits of plain text).
    """
    if update.callback_query is not None:
        return DEFAULT_COST
    message = update.effective_message
    if message is None or not message.text:
        return None
    command = _command(message)
    if command is not None:
        name, _, addressee = command.partition("@")
        if addressee and addressee.lower() != (bot_username or "").lower():
            return None
        return command_cost(name)
    if message.chat.type != ChatType.PRIVATE or update.message is None:
        return None  # group chatter and edited text get no answer, so they cost nothing
    text = clean_argument(message.text)
    return LOOKUP_COST if text and ArxivId.parse(text) is not None else DEFAULT_COST


def _command(message: Message) -> str | None:
    """`name` or `name@bot` of a message that starts with a command, as Telegram marks it."""
    entities = message.entities or ()
    first = entities[0] if entities else None
    if first is None or first.type != MessageEntity.BOT_COMMAND or first.offset != 0:
        return None
    return message.text[1:first.length] if message.text else None


async def _language(context: BotContext, chat_id: int) -> str:
    """The chat's language; read from the store when this process has not seen the chat yet."""
    if context.chat_record is None:
        record = await context.store.chats.get(chat_id)
        if record is not None:
            return record.language
    return context.lang

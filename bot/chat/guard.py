"""The command budget at the chat edge: every update is charged on arrival (`application.py`)."""

from __future__ import annotations

import logging
import math

from telegram import Message, MessageEntity, Update
from telegram.constants import ChatType
from telegram.error import TelegramError
from telegram.ext import Application

from bot.chat.commands import command_cost
from bot.chat.handlers.common import clean_argument
from bot.chat.handlers.imports import MIN_MESSAGE_IDS, ids_named, is_import_upload
from bot.core.i18n import language_from_telegram, t
from bot.core.models import ArxivId
from bot.services.budget import DEFAULT_COST, LOOKUP_COST, Decision, import_cost, upload_cost
from bot.services.container import Services

log = logging.getLogger(__name__)


class BudgetGate:
    """The command budget, applied to each update as it arrives (`PerChatUpdateProcessor`'s
    admission), before it waits for its chat's turn: a chat whose earlier command still runs
    is charged for the flood it sends meanwhile at the time it sends it.

    Over budget, the chat is told once when to try again, reminded once within the window how
    long is left, and otherwise hears nothing; no handler runs, not even the one that records
    the chat, so spam costs neither a database write nor more than two outgoing messages a
    window. A refused button press is always answered, and the answer says it is limited
    (an answer is a pop-up on the presser's screen, not a message in the chat).
    """

    def __init__(self, application: Application) -> None:
        self._application = application

    async def __call__(self, update: object) -> bool:
        """Whether the update may be handled."""
        if not isinstance(update, Update) or (chat := update.effective_chat) is None:
            return True
        cost = update_cost(update, self._application.bot.username)
        if cost is None:
            return True
        services: Services = self._application.bot_data["services"]
        user = update.effective_user
        in_group = chat.type != ChatType.PRIVATE
        decision = services.budget.charge(
            chat.id, user.id if in_group and user is not None else None, cost,
            services.clock.now())
        if decision.allowed:
            return True
        try:
            await self._refuse(update, services, decision)
        except TelegramError as exc:  # the refusal is a courtesy; the update stays refused
            log.info("could not tell chat %s to slow down: %s", chat.id, exc)
        return False

    async def _refuse(self, update: Update, services: Services, decision: Decision) -> None:
        query = update.callback_query
        if not (decision.notify or decision.remind or query is not None):
            return
        lang = await self._language(update, services)
        seconds = math.ceil(decision.retry_after)
        if decision.notify:
            text = t(lang, "⏳ That is more than I can answer at once. Please try again in "
                           "{seconds} s.", seconds=seconds)
        else:
            text = t(lang, "⏳ Still limited: {seconds} s left.", seconds=seconds)
        if query is not None:
            await query.answer(text)
        elif (message := update.effective_message) is not None:
            await message.reply_text(text)

    async def _language(self, update: Update, services: Services) -> str:
        """The chat's language as recorded, else (a chat new to the bot) the user's."""
        chat_id = update.effective_chat.id
        record = self._application.chat_data.get(chat_id, {}).get("record")
        if record is None:
            record = await services.chats.get(chat_id)
        if record is not None:
            return record.language
        user = update.effective_user
        return language_from_telegram(user.language_code if user is not None else None)


def update_cost(update: Update, bot_username: str | None) -> int | None:
    """What an update costs, or None if it is free: not ours to answer (a group's chatter, a
    command for another bot) or not a request at all (membership changes, edits of plain text).
    """
    if update.callback_query is not None or update.message_reaction is not None:
        return DEFAULT_COST  # a press or a reaction: one label written, one answer
    message = update.effective_message
    if message is not None and update.message is not None and is_import_upload(message):
        return upload_cost(message.document.file_size)  # charged by size, before the download
    if message is None or not message.text:
        return None
    command = _command(message)
    if command is not None:
        name, _, addressee = command.partition("@")
        if addressee and addressee.lower() != (bot_username or "").lower():
            return None
        return command_cost(name, message.text)
    if message.chat.type != ChatType.PRIVATE or update.message is None:
        return None  # group chatter and edited text get no answer, so they cost nothing
    text = clean_argument(message.text)
    if text and ArxivId.parse(text) is not None:
        return LOOKUP_COST
    named = ids_named(message.text)
    return import_cost(named) if named >= MIN_MESSAGE_IDS else DEFAULT_COST


def _command(message: Message) -> str | None:
    """`name` or `name@bot` of a message that starts with a command, as Telegram marks it."""
    entities = message.entities or ()
    first = entities[0] if entities else None
    if first is None or first.type != MessageEntity.BOT_COMMAND or first.offset != 0:
        return None
    return message.text[1:first.length] if message.text else None

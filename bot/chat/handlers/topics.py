"""Forum topics' names, learnt from what Telegram sends in each topic."""

from __future__ import annotations

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers.common import topic_of
from bot.core.models import GENERAL


async def remember_topic(update: Update, context: BotContext) -> None:
    """A topic's name from its service messages (created, renamed), or, for a topic made
    before the bot joined, from the opening message that each message in it replies to."""
    message, chat = update.effective_message, update.effective_chat
    topic = topic_of(update)
    if message is None or chat is None or topic == GENERAL:
        return
    topics = context.services.topics
    if message.forum_topic_created is not None:
        if name := message.forum_topic_created.name:
            await topics.named(chat.id, topic, name)
    elif message.forum_topic_edited is not None:
        if name := message.forum_topic_edited.name:  # None when only the icon changed
            await topics.named(chat.id, topic, name)
    else:
        opener = message.reply_to_message
        if (opener is not None and opener.forum_topic_created is not None
                and opener.message_id == topic and (name := opener.forum_topic_created.name)):
            await topics.opened_as(chat.id, topic, name)

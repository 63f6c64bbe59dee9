"""Reactions on the bot's alerts: 👍 ❤ 🔥 👏 teach the ranker "more like this", 👎 "less"."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from telegram import Message, ReactionType, ReactionTypeEmoji, Update
from telegram.error import TelegramError

from bot.chat.context import BotContext
from bot.delivery.render import RenderedMessage
from bot.delivery.sender import html_to_plain

log = logging.getLogger(__name__)


def _emojis(reactions: Sequence[ReactionType]) -> tuple[str, ...]:
    """The plain emoji among reactions (custom and paid reactions say nothing of a paper)."""
    return tuple(reaction.emoji for reaction in reactions
                 if isinstance(reaction, ReactionTypeEmoji))


async def on_reaction(update: Update, context: BotContext) -> None:
    """Label the alert's paper as its buttons would, and show the label on its 👍 / 👎 as a
    tap would; a reaction gets no other answer."""
    change = update.message_reaction
    if change is None:
        return
    rated = await context.services.papers.react(
        change.chat.id, change.message_id, _emojis(change.old_reaction),
        _emojis(change.new_reaction))
    if rated is None:
        return
    log.debug("chat %s rated %s by a reaction", change.chat.id, rated)
    drawn = await context.services.papers.drawn_after_rating(
        change.chat.id, change.message_id, context.lang, rated)
    if drawn is None:
        return
    collapsed, expanded = drawn
    try:
        edited = await context.bot.edit_message_reply_markup(
            change.chat.id, change.message_id, reply_markup=collapsed.reply_markup)
        # The edit answers with the message: a text longer than the collapsed one's is the
        # expanded abstract, whose keyboard offers to collapse it.
        if isinstance(edited, Message) and _looks_expanded(edited, collapsed, expanded):
            await context.bot.edit_message_reply_markup(
                change.chat.id, change.message_id, reply_markup=expanded.reply_markup)
    except TelegramError as exc:  # "not modified" (the label was shown already), or gone
        log.debug("could not redraw the keyboard after a reaction in chat %s: %s",
                  change.chat.id, exc)


def _looks_expanded(message: Message, collapsed: RenderedMessage,
                    expanded: RenderedMessage) -> bool:
    short, long = len(html_to_plain(collapsed.text)), len(html_to_plain(expanded.text))
    return long > short and len(message.text or "") > (short + long) / 2

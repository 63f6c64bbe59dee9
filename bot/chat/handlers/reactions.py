"""Reactions on the bot's alerts: 👍 ❤ 🔥 👏 teach the ranker "more like this", 👎 "less"."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from telegram import ReactionType, ReactionTypeEmoji, Update
from telegram.error import TelegramError

from bot.chat.context import BotContext

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
    markup = await context.services.papers.keyboard_after_rating(
        change.chat.id, change.message_id, context.lang, rated)
    if markup is None:
        return
    try:
        await context.bot.edit_message_reply_markup(change.chat.id, change.message_id,
                                                    reply_markup=markup)
    except TelegramError as exc:  # "not modified" (the label was shown already), or gone
        log.debug("could not redraw the keyboard after a reaction in chat %s: %s",
                  change.chat.id, exc)

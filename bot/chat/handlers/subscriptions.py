"""/follow, /unfollow, /list and /move, and the remove buttons of /list."""

from __future__ import annotations

from dataclasses import dataclass

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Update
from telegram.constants import MessageLimit

from bot.chat.context import BotContext
from bot.chat.handlers.common import (
    clip,
    edit_quietly,
    may_change_settings,
    reply,
    topic_of,
    with_webapp_button,
)
from bot.core.i18n import t, tn
from bot.core.models import GENERAL, MAX_SUBSCRIPTIONS_PER_CHAT, FollowStatus, Subscription
from bot.core.text import escape
from bot.delivery import callbacks
from bot.delivery.render import topic_label

# Of Telegram's 4096 units, leaving room for the heading.
LIST_TEXT_BUDGET = MessageLimit.MAX_TEXT_LENGTH - 196


async def follow(update: Update, context: BotContext, query: str) -> None:
    """Add a subscription; the reply shows it as typed, its number and a 7-day preview."""
    lang = context.lang
    if not await may_change_settings(update, context):
        return
    topic = topic_of(update)
    result = await context.subscriptions.follow(update.effective_chat.id, query, topic)
    if result.status is FollowStatus.INVALID and result.error is not None:
        column = result.error.position
        pointer = " " * max(column - 1, 0) + "^"
        await reply(update, context, t(
            lang, "I couldn't read that query: {reason}\n<code>{query}\n{pointer}</code>\n"
            "/help shows the query language.",
            reason=escape(t(lang, result.error.template, **result.error.values)),
            query=escape(query), pointer=pointer,
        ))
    elif result.status is FollowStatus.DUPLICATE and result.subscription is not None:
        await reply(update, context, t(
            lang, "You already follow that, as #{number}: <code>{query}</code>",
            number=result.subscription.number, query=escape(result.subscription.display),
        ))
    elif result.status is FollowStatus.LIMIT:
        await reply(update, context, t(
            lang, "This chat already has {limit} subscriptions, the most it can have. "
            "Remove one with /unfollow first.", limit=MAX_SUBSCRIPTIONS_PER_CHAT,
        ))
    elif result.subscription is not None:
        preview = tn(lang, "In the last 7 days it would have matched {count} paper.",
                     "In the last 7 days it would have matched {count} papers.",
                     result.preview_matches)
        here = "\n" + t(lang, "Its alerts come to this topic.") if topic != GENERAL else ""
        await reply(update, context, t(
            lang, "✅ Following #{number}: <code>{query}</code>\n{preview}",
            number=result.subscription.number, query=escape(result.subscription.display),
            preview=preview,
        ) + here + _cjk_note(lang, result.cjk_terms))


def _cjk_note(lang: str, terms: tuple[str, ...]) -> str:
    """A warning for CJK keywords: accepted, but arXiv's titles and abstracts are English."""
    if not terms:
        return ""
    return "\n" + t(
        lang, "ℹ️ arXiv titles and abstracts are in English, so {terms} matches only papers "
        "that contain these very characters. English keywords find far more.",
        terms=", ".join(f"<code>{escape(term)}</code>" for term in terms),
    )


async def unfollow(update: Update, context: BotContext, argument: str) -> None:
    """Remove one subscription by its number in /list, or all of them."""
    lang = context.lang
    argument = argument.lower()
    if not await may_change_settings(update, context):
        return
    chat_id = update.effective_chat.id
    if argument == "all":
        removed = await context.subscriptions.unfollow_all(chat_id)
        await reply(update, context, tn(
            lang, "Removed {count} subscription.", "Removed {count} subscriptions.", removed
        ))
        return
    number = int(argument) if argument.isdecimal() and len(argument) <= 6 else None
    sub = None if number is None else await context.subscriptions.unfollow(chat_id, number)
    if sub is None:
        await reply(update, context, t(
            lang, "There is no subscription with that number. /list shows them, numbered."
        ))
        return
    await reply(update, context, t(
        lang, "Removed #{number}: <code>{query}</code>", number=number, query=escape(sub.display)
    ))


def _list_view(lang: str, subs: list[Subscription], topics: _Topics | None = None
               ) -> tuple[str, InlineKeyboardMarkup | None]:
    """The /list message: every subscription, or in a forum those of the topic it is asked in
    (`topics.here`), or all of them grouped by topic when asked in General."""
    if not subs:
        return t(lang, "You don't follow anything yet. Try <code>/follow cs.LG</code>."), None
    heading = t(lang, "<b>Your subscriptions</b> ({count}/{limit})", count=len(subs),
                limit=MAX_SUBSCRIPTIONS_PER_CHAT)
    sections: list[tuple[str | None, list[Subscription]]] = [(None, subs)]
    footer = ""
    if topics is not None and topics.here != GENERAL:
        subs = [sub for sub in subs if sub.topic_id == topics.here]
        if not subs:
            return t(lang, "No subscription posts in this topic yet. Send /follow here, or "
                           "/move with a number from /list."), None
        heading = t(lang, "<b>Subscriptions in {topic}</b> ({count})",
                    topic=topics.label(topics.here, lang), count=len(subs))
        sections = [(None, subs)]
    elif topics is not None:
        grouped: dict[int, list[Subscription]] = {}
        for sub in sorted(subs, key=lambda s: (s.topic_id != GENERAL, s.topic_id)):
            grouped.setdefault(sub.topic_id, []).append(sub)
        sections = [(f"\n<b>{topics.label(topic, lang)}</b>", members)
                    for topic, members in grouped.items()]
        footer = "\n\n" + t(lang, "Send /move with a number inside a topic to send that "
                                  "subscription's alerts there.")
    lines = [heading]
    titles = sum(len(title) + 1 for title, _ in sections if title) + len(footer)
    # Fifty long queries would overflow one message (4096 units): share the room out evenly.
    room = max((LIST_TEXT_BUDGET - titles) // len(subs) - len("50. \n"), 8)
    for title, members in sections:
        if title:
            lines.append(title)
        lines += [f"{sub.number}. <code>{escape(clip(sub.display, room))}</code>"
                  for sub in members]
    shown = [sub for _, members in sections for sub in members]
    buttons = [
        InlineKeyboardButton(t(lang, "✖ {number}", number=sub.number),
                             callback_data=callbacks.encode(callbacks.Unfollow(sub.id)))
        for sub in shown
    ]
    rows = [buttons[i:i + 5] for i in range(0, len(buttons), 5)]
    return "\n".join(lines) + footer, InlineKeyboardMarkup(rows)


@dataclass(frozen=True, slots=True)
class _Topics:
    """A forum's topics as /list shows them: where it was asked, and the names learnt."""

    here: int
    names: dict[int, str]

    def label(self, topic_id: int, lang: str) -> str:
        return topic_label(self.names.get(topic_id), topic_id, lang)


async def _topics(update: Update, context: BotContext, subs: list[Subscription]
                  ) -> _Topics | None:
    """The chat's topics, or None for a chat without them (a forum, or one whose
    subscriptions were bound to topics before it stopped being one)."""
    chat = update.effective_chat
    if not chat.is_forum and all(sub.topic_id == GENERAL for sub in subs):
        return None
    return _Topics(topic_of(update), await context.services.topics.names(chat.id))


async def list_subscriptions(update: Update, context: BotContext) -> None:
    """The chat's subscriptions, numbered, with a remove button each; in a forum topic, that
    topic's; in a forum's General, all of them under their topics' names."""
    subs = await context.subscriptions.for_chat(update.effective_chat.id)
    text, markup = _list_view(context.lang, subs, await _topics(update, context, subs))
    await reply(update, context, text,
                reply_markup=with_webapp_button(update, context, "subscriptions", markup))


async def move(update: Update, context: BotContext, argument: str) -> None:
    """Bind a subscription to the forum topic the command is sent in (General included)."""
    lang = context.lang
    chat = update.effective_chat
    if not chat.is_forum:
        await reply(update, context, t(
            lang, "/move is for groups with topics: send it inside the topic that should get "
            "a subscription's alerts."))
        return
    if not await may_change_settings(update, context):
        return
    number = int(argument) if argument.isdecimal() and len(argument) <= 6 else None
    topic = topic_of(update)
    sub = None if number is None else await context.subscriptions.move(chat.id, number, topic)
    if sub is None:
        await reply(update, context, t(
            lang, "There is no subscription with that number. /list shows them, numbered."
        ))
        return
    names = await context.services.topics.names(chat.id)
    await reply(update, context, t(
        lang, "Moved #{number} <code>{query}</code> to {topic}: its alerts come here from now "
        "on.", number=sub.number, query=escape(sub.display),
        topic=topic_label(names.get(topic), topic, lang)))


async def on_unfollow_button(update: Update, context: BotContext,
                             action: callbacks.Unfollow) -> None:
    """A remove button of /list: only the chat that owns the subscription can remove it."""
    query = update.callback_query
    lang = context.lang
    if not await may_change_settings(update, context):
        return
    chat_id = update.effective_chat.id
    removed = await context.subscriptions.unfollow_id(chat_id, action.subscription_id)
    if removed is None:
        await query.answer(t(lang, "That subscription is already gone."))
    else:
        # An answer holds at most 200 UTF-16 units; a query of astral letters is twice as long.
        await query.answer(t(lang, "Removed: {query}", query=clip(removed.display, 150)))
    subs = await context.subscriptions.for_chat(chat_id)
    text, markup = _list_view(lang, subs, await _topics(update, context, subs))
    if query.message is not None:
        # The second of two quick presses finds the list already redrawn.
        await edit_quietly(query.edit_message_text(text, reply_markup=with_webapp_button(
            update, context, "subscriptions", markup)))

"""Per-chat settings: /pause, /resume, /digest, /tz, /lang."""

from __future__ import annotations

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers.common import (
    may_change_settings,
    reply,
    topic_of,
)
from bot.core.i18n import SUPPORTED_LANGUAGES, t, tn
from bot.core.models import DeliveryMode
from bot.core.text import escape
from bot.delivery.schedule import (
    canonical_zone,
    for_you_time,
    local_time,
    next_digest_after,
    parse_hhmm,
)
from bot.ranking.model import MIN_POSITIVES
from bot.services.chats import FOR_YOU_MAX_COUNT


async def pause(update: Update, context: BotContext) -> None:
    """Stop alerts; matches keep being collected."""
    if not await may_change_settings(update, context):
        return
    await context.services.chats.pause(update.effective_chat.id)
    await reply(update, context, t(
        context.lang, "⏸ Alerts paused. I keep collecting matches; /resume delivers them."
    ))


async def resume(update: Update, context: BotContext) -> None:
    """Restart alerts; what matched meanwhile arrives now (as a digest when many)."""
    if not await may_change_settings(update, context):
        return
    waiting = await context.services.chats.resume(update.effective_chat.id)
    await reply(update, context, tn(
        context.lang, "▶️ Alerts resumed. {count} match from the pause is on its way.",
        "▶️ Alerts resumed. {count} matches from the pause are on their way.", waiting,
    ) if waiting else t(context.lang, "▶️ Alerts resumed."))


async def digest(update: Update, context: BotContext, argument: str) -> None:
    """`/digest HH:MM` for one daily digest at local time, `/digest off` for instant alerts."""
    lang = context.lang
    record = context.chat_record
    if not argument:
        current = (t(lang, "a daily digest at {time} ({zone})", time=record.digest_time,
                     zone=record.timezone)
                   if record and record.delivery_mode == DeliveryMode.DIGEST
                   else t(lang, "instant alerts"))
        await reply(update, context, t(
            lang, "You get {current}. Send <code>/digest 08:00</code> for one daily digest at "
            "that time, or <code>/digest off</code> for instant alerts.", current=current,
        ))
        return
    if not await may_change_settings(update, context):
        return
    chat_id = update.effective_chat.id
    if argument.lower() == "off":
        await context.services.chats.set_digest(chat_id, None)
        await reply(update, context, t(lang, "Instant alerts are back on."))
        return
    when = parse_hhmm(argument)
    if when is None:
        await reply(update, context, t(
            lang, "Please give a time as HH:MM, for example <code>/digest 08:00</code>, "
            "or <code>/digest off</code>."
        ))
        return
    zone = record.timezone if record else "UTC"
    await context.services.chats.set_digest(chat_id, when)
    first = next_digest_after(context.now(), when, zone)
    await reply(update, context, t(
        lang, "🗞 One daily digest at {time} ({zone}); the first comes {first}. "
        "/tz changes the time zone, <code>/digest off</code> returns to instant alerts.",
        time=when, zone=zone, first=local_time(first, zone),
    ))


async def timezone(update: Update, context: BotContext, argument: str) -> None:
    """Set the chat's IANA time zone (used for digests and dates)."""
    lang = context.lang
    record = context.chat_record
    if not argument:
        await reply(update, context, t(
            lang, "Your time zone is {zone}. Change it with, for example, "
            "<code>/tz Asia/Shanghai</code> or <code>/tz Europe/Berlin</code>.",
            zone=record.timezone if record else "UTC",
        ))
        return
    zone = canonical_zone(argument)
    if zone is None:
        await reply(update, context, t(
            lang, "I don't know the time zone “{zone}”. Use an IANA name such as "
            "<code>Asia/Shanghai</code>, <code>America/New_York</code> or <code>UTC</code>.",
            zone=escape(argument[:60]),
        ))
        return
    if not await may_change_settings(update, context):
        return
    await context.services.chats.set_timezone(update.effective_chat.id, zone)
    await reply(update, context, t(
        lang, "🕗 Time zone set to {zone} (now {time} there).",
        zone=zone, time=local_time(context.now(), zone, "%H:%M"),
    ))


async def language(update: Update, context: BotContext, argument: str) -> None:
    """Switch the chat's language: `/lang en` or `/lang zh`."""
    choice = argument.lower()
    if choice not in SUPPORTED_LANGUAGES:
        await reply(update, context, t(
            context.lang, "Choose <code>/lang en</code> (English) or <code>/lang zh</code> (中文)."
        ))
        return
    if not await may_change_settings(update, context):
        return
    context.chat_data["record"] = await context.services.chats.set_language(
        update.effective_chat.id, choice)
    await reply(update, context, t(choice, "Language set to English."))


async def thumbs(update: Update, context: BotContext, argument: str) -> None:
    """`/thumbs off` leaves the 👍 / 👎 buttons out of the chat's alerts (it rates by reaction),
    `/thumbs on` brings them back."""
    lang = context.lang
    word = argument.lower()
    if word not in ("on", "off"):
        record = context.chat_record
        shown = record is None or record.rating_buttons
        await reply(update, context, t(
            lang, "The 👍 / 👎 buttons are {state} under your alerts. A reaction rates a paper "
            "too (👍 ❤ 🔥 👏 or 👎): send <code>/thumbs off</code> to leave the buttons out, "
            "<code>/thumbs on</code> to bring them back.",
            state=t(lang, "shown") if shown else t(lang, "left out")))
        return
    if not await may_change_settings(update, context):
        return
    await context.services.chats.set_rating_buttons(update.effective_chat.id, word == "on")
    context.chat_data.pop("record", None)  # read again: it has a new setting
    await reply(update, context, t(lang, "👍 / 👎 buttons are back under new alerts.")
                if word == "on" else
                t(lang, "New alerts come without 👍 / 👎 buttons; rate them by reaction."))


async def for_you(update: Update, context: BotContext, argument: str) -> None:
    """`/foryou on|off|N`: a daily message of papers the subscriptions missed but the chat's
    model scores highly."""
    lang = context.lang
    word = argument.strip().lower()
    if not (word in ("on", "off") or (word.isdigit() and 1 <= int(word) <= FOR_YOU_MAX_COUNT)):
        await reply(update, context, t(
            lang, "Send <code>/foryou on</code>, <code>/foryou off</code> or "
            "<code>/foryou N</code> (1–{maximum} papers a day).", maximum=FOR_YOU_MAX_COUNT))
        return
    if not await may_change_settings(update, context):
        return
    chat_id = update.effective_chat.id
    if word == "off":
        await context.services.chats.for_you_off(chat_id)
        await reply(update, context, t(lang, "For you is off."))
        return
    on = await context.services.chats.for_you_on(
        chat_id, None if word == "on" else int(word), topic_of(update))
    record = context.chat_record
    lines = [t(lang, "✨ For you is on: once a day at {time} ({zone}), up to {count} papers "
                     "your subscriptions did not match but your saved and 👍 papers suggest.",
               time=for_you_time(record.digest_time if record else None),
               zone=record.timezone if record else "UTC", count=on.count)]
    if not on.ranking.active:
        lines.append(t(lang, "It starts once you have {minimum} saved or 👍 papers "
                             "({missing} to go).", minimum=MIN_POSITIVES,
                       missing=MIN_POSITIVES - on.ranking.positives))
    await reply(update, context, "\n".join(lines))

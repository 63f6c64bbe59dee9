"""`/zotero`: how to make a key, `/zotero <key> [group]` links a Zotero library (the message
holding the key is deleted at once), `/zotero off` unlinks and forgets the key."""

from __future__ import annotations

import logging
import re

from telegram import Update
from telegram.constants import ChatType
from telegram.error import TelegramError

from bot.chat.context import BotContext
from bot.chat.handlers.common import reply
from bot.core.i18n import t
from bot.core.models import ZoteroLibraryKind, ZoteroLink
from bot.services.zotero import LinkOutcome

log = logging.getLogger(__name__)

# Zotero's API keys are 24 letters and digits; a little leeway for whatever it issues next.
_KEY = re.compile(r"[A-Za-z0-9]{16,64}")
_GROUP = re.compile(r"(?:(?:https?://)?(?:www\.)?zotero\.org/groups/)?(\d{1,12})(?:[/?#].*)?",
                    re.IGNORECASE)


async def _say(update: Update, text: str) -> None:
    """Send into the chat without replying: the message that held the key is gone."""
    chat = update.effective_chat
    if chat is not None:
        await chat.send_message(text)


async def _delete_key_message(update: Update) -> None:
    """The message holds a key: take it out of the chat before anything else."""
    message = update.effective_message
    if message is None:
        return
    try:
        await message.delete()
    except TelegramError as exc:
        log.warning("could not delete the message holding a Zotero key in chat %s: %s",
                    message.chat_id, exc)


def _library_name(lang: str, link: ZoteroLink) -> str:
    if link.kind is ZoteroLibraryKind.USER:
        return t(lang, "your own Zotero library")
    return t(lang, "the Zotero group library {group}", group=link.library_id)


async def zotero(update: Update, context: BotContext, argument: str) -> None:
    lang = context.lang
    service = context.services.zotero
    if service is None:  # off: the command table has told the chat so
        return
    words = argument.split()
    chat = update.effective_chat
    if chat is None or chat.type != ChatType.PRIVATE:
        if words and words[0].lower() != "off":
            await _delete_key_message(update)
        await _say(update, t(
            lang, "Link Zotero in your private chat with me: a key sent here would be seen "
            "by everyone in this group."))
        return
    if not words:
        await _explain(update, context)
        return
    if words[0].lower() == "off":
        unlinked = await service.unlink(chat.id)
        await reply(update, context, t(
            lang, "Unlinked: I forgot your Zotero key. Papers already here stay, and nothing "
            "is deleted in Zotero.") if unlinked else t(lang, "No Zotero library is linked."))
        return
    await _delete_key_message(update)
    group = _GROUP.fullmatch(words[1]) if len(words) > 1 else None
    if not _KEY.fullmatch(words[0]) or len(words) > 2 or (len(words) == 2 and group is None):
        await _say(update, t(
            lang, "That doesn't look like a Zotero API key (24 letters and digits). Send "
            "<code>/zotero</code> to see how to make one."))
        return
    result = await service.link(chat.id, words[0], int(group[1]) if group else None)
    match result.outcome:
        case LinkOutcome.KEY_REJECTED:
            await _say(update, t(
                lang, "Zotero does not accept that key. Check it at "
                "zotero.org/settings/keys, or make a new one."))
            return
        case LinkOutcome.NO_LIBRARY:
            await _say(update, t(
                lang, "That key cannot reach that library. Give it access to the group "
                "(zotero.org/settings/keys), or check the group's number."))
            return
        case LinkOutcome.UNAVAILABLE | LinkOutcome.OFF:
            await _say(update, t(
                lang, "Zotero did not answer. Try again in a few minutes."))
            return
    link = result.link
    assert link is not None
    lines = [t(lang, "✓ Linked to {library}. I deleted your message with the key and keep "
                     "the key encrypted.", library=_library_name(lang, link))]
    if not link.can_write:
        lines.append(t(lang, "The key may only read: papers you save here will not be added "
                             "to Zotero. Allow write access to change that."))
    await _say(update, "\n".join(lines))
    report = await service.pull(chat.id)
    if report.revoked:
        return  # the chat has been told
    if report.failed:
        await _say(update, t(
            lang, "Zotero did not answer while I read your library; I try again within the "
            "hour."))
        return
    await _say(update, t(
        lang, "Zotero's arXiv papers are in your library now: {added} added. From now on I "
        "read it once a day, and papers you save here go to its collection "
        "“arXiv alerts”.", added=report.added))


async def _explain(update: Update, context: BotContext) -> None:
    lang = context.lang
    service = context.services.zotero
    assert service is not None
    link = await service.link_of(update.effective_chat.id)
    text = t(
        lang, "<b>Zotero</b>\nLink your Zotero library: papers you save here are added to its "
        "collection “arXiv alerts”, and once a day the arXiv papers in Zotero join your "
        "library here (and teach the ranker).\n"
        "1. Make a key at https://www.zotero.org/settings/keys/new with “Allow library "
        "access” and “Allow write access” (for a group library, give it that group too).\n"
        "2. Send <code>/zotero YOUR_KEY</code>, or <code>/zotero YOUR_KEY GROUP_ID</code> for "
        "a group library (the number in the group's address). I delete that message at once "
        "and keep the key encrypted.\n"
        "<code>/zotero off</code> unlinks and forgets the key.")
    if link is not None:
        text += "\n\n" + t(lang, "Linked now: {library}.", library=_library_name(lang, link))
    await _say(update, text)

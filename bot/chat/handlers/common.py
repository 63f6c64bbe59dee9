"""What every handler shares: recording the chat, replies, argument checks, group admins."""

from __future__ import annotations

import logging
import unicodedata
from collections.abc import Awaitable

from telegram import InlineKeyboardButton, InlineKeyboardMarkup, Message, Update, WebAppInfo
from telegram.constants import ChatMemberStatus, ChatType
from telegram.error import BadRequest, TelegramError

from bot.chat.context import BotContext
from bot.core.i18n import _, language_from_telegram, t
from bot.core.models import GENERAL, ArxivId, GroupMember
from bot.core.text import utf16_len
from bot.library import groups as group_library
from bot.query.text import normalise_input
from bot.services.chats import start_param_of

log = logging.getLogger(__name__)

MAX_ARGUMENT_LENGTH = 300
# Control characters that only lay text out: read as spaces, never refused.
_LINE_SPACES = frozenset("\t\n\r\v\f")


async def record_chat(update: Update, context: BotContext) -> None:
    """Record every chat that writes to the bot (re-activating it if it had blocked the bot)."""
    chat = update.effective_chat
    if chat is None:
        return
    membership = update.my_chat_member
    if membership is not None and membership.new_chat_member.status in (
        ChatMemberStatus.BANNED, ChatMemberStatus.LEFT
    ):
        # Blocked, or removed from the group: that is no sign of life. Hold its alerts.
        context.chat_data["record"] = await context.services.chats.gone(chat.id)
        return
    user = update.effective_user
    language = language_from_telegram(user.language_code if user else None)
    title = chat.title or (user.full_name if user else None)
    record, reactivated = await context.services.chats.seen(
        chat.id, chat.type, title, language, group_member(update))
    context.chat_data["record"] = record
    if reactivated:
        log.info("chat %s is active again; its held alerts are released", chat.id)


async def reply(update: Update, context: BotContext, text: str, **kwargs: object
                ) -> Message | None:
    """Reply in HTML without link previews (the application's `Defaults`); the reply sent."""
    message = update.effective_message
    if message is None:
        return None
    return await message.reply_text(text, **kwargs)  # type: ignore[arg-type]


def topic_of(update: Update) -> int:
    """The forum topic an update comes from (the topic of a pressed button's message), or
    General's 0 (also in every chat without topics)."""
    message = update.effective_message
    if message is None or not message.is_topic_message or not message.message_thread_id:
        return GENERAL
    return message.message_thread_id


def command_argument(update: Update) -> str:
    """The text after `/command` (and after `/command@botname`), stripped."""
    message = update.effective_message
    text = (message.text or "") if message else ""
    parts = text.split(maxsplit=1)
    return parts[1].strip() if len(parts) > 1 else ""


def clean_argument(text: str) -> str | None:
    """The argument without zero-width or direction marks, full-width forms as ASCII (NFKC);
    None if control characters remain.

    Newlines and tabs are spaces: a query pasted over two lines means what it says.
    """
    stripped = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    if any(unicodedata.category(ch) == "Cc" and ch not in _LINE_SPACES for ch in stripped):
        return None
    return " ".join(normalise_input(stripped).split())


def argument_problem(context: BotContext, raw: str) -> str | None:
    """A short reply for an argument that is overlong or holds control characters; else None."""
    if len(raw) > MAX_ARGUMENT_LENGTH:
        return t(context.lang, "That is too long: at most {limit} characters, please.",
                 limit=MAX_ARGUMENT_LENGTH)
    if clean_argument(raw) is None:
        return t(context.lang, "That contains control characters; please type plain text.")
    return None


async def edit_quietly(edit: Awaitable[object]) -> None:
    """Await an edit; "message is not modified" (a second quick press) is not an error."""
    try:
        await edit
    except BadRequest as exc:
        if "not modified" not in str(exc).lower():
            raise


def clip(text: str, units: int) -> str:
    """`text` cut to at most `units` UTF-16 code units (Telegram's measure), with "…" if cut."""
    if utf16_len(text) <= units:
        return text
    kept, used = [], 1  # room for the ellipsis
    for ch in text:
        used += 2 if ord(ch) > 0xFFFF else 1
        if used > units:
            break
        kept.append(ch)
    return "".join(kept).rstrip() + "…"


async def read_argument(update: Update, context: BotContext,
                        usage: str | None = None) -> str | None:
    """The command's argument, cleaned; None once the chat was told what is wrong with it.

    Overlong or control-laden arguments are refused; with `usage`, so is a missing one
    (nothing, or only invisible characters), and `usage` is the reply.
    """
    raw = command_argument(update)
    if (problem := argument_problem(context, raw)) is not None:
        await reply(update, context, problem)
        return None
    argument = clean_argument(raw) or ""
    if not argument and usage is not None:
        await reply(update, context, usage)
        return None
    return argument


async def read_arxiv_id(update: Update, context: BotContext, usage: str) -> ArxivId | None:
    """The command's argument as an arXiv ID or link; None once the chat was told why not."""
    argument = await read_argument(update, context, usage)
    if argument is None:
        return None
    arxiv_id = ArxivId.parse(argument)
    if arxiv_id is None:
        await reply(update, context, t(
            context.lang, "That doesn't look like an arXiv ID. Try <code>2611.11450</code>, "
            "<code>hep-th/9901001</code> or an arxiv.org link."
        ))
    return arxiv_id


async def is_group_admin(context: BotContext, chat_id: int, user_id: int) -> bool:
    """Whether Telegram says the user administers (or owns) the group; False if it cannot say."""
    try:
        member = await context.bot.get_chat_member(chat_id, user_id)
    except TelegramError as exc:
        log.warning("could not check admin rights in chat %s: %s", chat_id, exc)
        return False
    return member.status in (ChatMemberStatus.ADMINISTRATOR, ChatMemberStatus.OWNER)


def admin_check(update: Update, context: BotContext) -> group_library.IsAdmin:
    """Asks Telegram, when called, whether the user acting administers this group."""
    async def is_admin() -> bool:
        chat, user = update.effective_chat, update.effective_user
        return chat is not None and user is not None and await is_group_admin(
            context, chat.id, user.id)
    return is_admin


def group_member(update: Update) -> GroupMember | None:
    """Who acts in a group (user id and first name); None in a private chat."""
    chat, user = update.effective_chat, update.effective_user
    if chat is None or user is None or chat.type not in (ChatType.GROUP, ChatType.SUPERGROUP):
        return None
    return GroupMember.of(user.id, user.first_name)


async def may_change_settings(update: Update, context: BotContext) -> bool:
    """In groups only administrators may change subscriptions and settings; says so if not."""
    return await admins_only(update, context, _(
        "Only this group's administrators can change its subscriptions and settings."))


async def admins_only(update: Update, context: BotContext, refusal: str) -> bool:
    """Whether who acts may do what a group reserves to its administrators (anyone may, in a
    private chat); anyone else is told `refusal` (a msgid), on the button they pressed or in
    a reply."""
    chat, user = update.effective_chat, update.effective_user
    if chat is None or chat.type == ChatType.PRIVATE:
        return chat is not None
    if user is None:
        return False
    if await is_group_admin(context, chat.id, user.id):
        return True
    refusal = t(context.lang, refusal)
    if update.callback_query is not None:
        await update.callback_query.answer(refusal, show_alert=True)
    else:
        await reply(update, context, refusal)
    return False


def with_webapp_button(update: Update, context: BotContext, page: str,
                       markup: InlineKeyboardMarkup | None) -> InlineKeyboardMarkup | None:
    """`markup` with an "Open library" row when the Mini App is on (WEBAPP_URL): in a private
    chat a web_app button opening `page`; in a group, where Telegram allows no web_app button,
    a t.me link opening the bot's main Mini App with the group's start parameter."""
    url, chat = context.settings.webapp_url, update.effective_chat
    if not url or chat is None:
        return markup
    text = t(context.lang, "📚 Open library")
    if chat.type == ChatType.PRIVATE:
        button = InlineKeyboardButton(text, web_app=WebAppInfo(f"{url}/?page={page}"))
    else:
        button = InlineKeyboardButton(
            text, url=f"https://t.me/{context.bot.username}?startapp={start_param_of(chat.id)}")
    rows = list(markup.inline_keyboard) if markup is not None else []
    return InlineKeyboardMarkup([*rows, [button]])

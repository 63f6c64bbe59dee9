"""Who may see which chat's pages: a private chat's to its user, a group's to its current
members (asked of Telegram with getChatMember, remembered briefly).

The chat a page shows comes from the signed initData only: the user's own private chat, or the
group named by the signed start parameter (`g` and the group's id without its minus sign, as
the "Open library" links write it, `bot/services/chats.py`). A request naming any other chat
is refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus

from telegram import Bot
from telegram.constants import ChatMemberStatus
from telegram.error import TelegramError

from bot.core.i18n import language_from_telegram
from bot.core.models import GroupMember
from bot.services.chats import group_of_start_param
from bot.web.auth import InitData

log = logging.getLogger(__name__)

MEMBERSHIP_SECONDS = 60.0  # how long Telegram's word on a membership is believed
MAX_REMEMBERED = 10_000  # memberships remembered at once; the oldest go first
_MEMBERS = (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR, ChatMemberStatus.MEMBER)
_ADMINS = (ChatMemberStatus.OWNER, ChatMemberStatus.ADMINISTRATOR)


class AccessRefused(Exception):
    """A signed user asking for a chat they may not see (403)."""

    def __init__(self, reason: str, status: HTTPStatus = HTTPStatus.FORBIDDEN) -> None:
        super().__init__(reason)
        self.status = status


@dataclass(frozen=True, slots=True)
class Viewer:
    """A signed user looking at one chat's pages."""

    user_id: int
    first_name: str
    chat_id: int
    group: bool
    admin: bool  # owner or administrator of the group (a private chat's user: True)
    telegram_language: str  # from the user's Telegram client, for a chat the bot has no record of

    @property
    def member(self) -> GroupMember | None:
        """Who acts, as the group library records savers; None in a private chat."""
        return GroupMember.of(self.user_id, self.first_name) if self.group else None

    @property
    def budget_user(self) -> int | None:
        """The person charged beside the chat (groups only, as the chat's budget does)."""
        return self.user_id if self.group else None


class Memberships:
    """getChatMember's answers, each believed for MEMBERSHIP_SECONDS."""

    def __init__(self, bot: Bot, clock: Callable[[], float] = time.monotonic,
                 ttl: float = MEMBERSHIP_SECONDS) -> None:
        self._bot = bot
        self._clock = clock
        self._ttl = ttl
        self._known: dict[tuple[int, int], tuple[float, str]] = {}

    async def status(self, chat_id: int, user_id: int) -> str:
        now = self._clock()
        known = self._known.get((chat_id, user_id))
        if known is not None and now - known[0] < self._ttl:
            return known[1]
        try:
            member = await self._bot.get_chat_member(chat_id, user_id)
        except TelegramError as exc:
            log.warning("web: could not check a membership of chat %s (%s)", chat_id,
                        type(exc).__name__)
            raise AccessRefused("a membership Telegram could not confirm") from None
        status = str(member.status)
        if status == ChatMemberStatus.RESTRICTED and getattr(member, "is_member", False):
            status = ChatMemberStatus.MEMBER
        self._known.pop((chat_id, user_id), None)
        self._known[(chat_id, user_id)] = (now, status)
        while len(self._known) > MAX_REMEMBERED:
            del self._known[next(iter(self._known))]
        return status


async def viewer_of(signed: InitData, asked_chat: str | None,
                    memberships: Memberships) -> Viewer:
    """The chat `signed` opens, if its user may see it; AccessRefused otherwise, also when the
    request names (`asked_chat`) a chat other than the signed one."""
    user = signed.user
    language = language_from_telegram(user.language_code)
    chat_id, group = user.id, False
    if signed.start_param:
        named = group_of_start_param(signed.start_param)
        if named is None:
            raise AccessRefused("a start parameter naming no group")
        chat_id, group = named, True
    if asked_chat not in (None, "", str(chat_id)):
        raise AccessRefused("a request for another chat than the signed one")
    if not group:
        return Viewer(user.id, user.first_name, chat_id, False, True, language)
    status = await memberships.status(chat_id, user.id)
    if status not in _MEMBERS:
        raise AccessRefused("a user who is not a member of the group")
    return Viewer(user.id, user.first_name, chat_id, True, status in _ADMINS, language)

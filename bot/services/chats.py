"""The chats the bot talks to: recording each as it writes, and its settings (pause, resume,
digest, time zone, language, For you)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from bot.core.clock import Clock
from bot.core.models import GENERAL, Chat, GroupMember
from bot.library import groups as group_library
from bot.query.service import SubscriptionService
from bot.ranking.service import Ranker, RankerStatus
from bot.services import upkeep
from bot.storage import Storage

# A group's Mini App pages open with this start parameter: "g" and its id without the minus
# (Telegram allows only A-Z a-z 0-9 _ - in it).
_GROUP_START = re.compile(r"^g(\d{1,20})$")

FOR_YOU_DEFAULT_COUNT = 5  # papers a day, when a chat turns For you on without a number
FOR_YOU_MAX_COUNT = 20


def start_param_of(chat_id: int) -> str:
    """The Mini App start parameter that opens a group's pages."""
    return f"g{-chat_id}"


def group_of_start_param(param: str) -> int | None:
    """The group a start parameter names, or None when it names none."""
    matched = _GROUP_START.match(param)
    return -int(matched.group(1)) if matched else None


@dataclass(frozen=True, slots=True)
class ForYou:
    """For you as a chat just turned it on: papers a day, and whether its model runs yet."""

    count: int
    ranking: RankerStatus


class ChatSettings:
    """Every write to a chat's record and settings goes through here."""

    def __init__(self, storage: Storage, ranker: Ranker, clock: Clock,
                 subscriptions: SubscriptionService) -> None:
        self._storage = storage
        self._ranker = ranker
        self._clock = clock
        self._subscriptions = subscriptions

    async def get(self, chat_id: int) -> Chat | None:
        return await self._storage.chats.get(chat_id)

    async def seen(self, chat_id: int, chat_type: str, title: str | None, language: str,
                   member: GroupMember | None) -> tuple[Chat, bool]:
        """A chat wrote to the bot: record it (re-activated if it had blocked the bot: True),
        and in a group refresh the name beside the member's saves."""
        recorded = await self._storage.chats.record(chat_id, chat_type, title, language,
                                                    self._clock.now())
        if member is not None:
            await group_library.member_seen(self._storage, chat_id, member)
        return recorded

    async def gone(self, chat_id: int) -> Chat | None:
        """The bot was blocked, or removed from the group: hold the chat's alerts."""
        await self._storage.chats.mark_inactive(chat_id, "the bot was blocked or removed",
                                                self._clock.now())
        return await self._storage.chats.get(chat_id)

    async def forget(self, chat_id: int) -> None:
        """Erase everything the bot keeps about the chat (`/forget`, confirmed)."""
        await upkeep.forget_chat(self._storage, self._subscriptions, chat_id)

    async def pause(self, chat_id: int) -> None:
        """Alerts stop; matches keep being collected."""
        await self._storage.chats.set_paused(chat_id, True)

    async def resume(self, chat_id: int) -> int:
        """Alerts start again; returns how many matched meanwhile and wait to be sent."""
        await self._storage.chats.set_paused(chat_id, False)
        return len(await self._storage.outbox.pending_for_chat(chat_id))

    async def set_digest(self, chat_id: int, digest_time: str | None) -> None:
        """One daily digest at `digest_time` ('HH:MM' local), or instant alerts when None."""
        await self._storage.chats.set_digest(chat_id, digest_time, self._clock.now())

    async def set_timezone(self, chat_id: int, zone: str) -> None:
        await self._storage.chats.set_timezone(chat_id, zone)

    async def set_rating_buttons(self, chat_id: int, shown: bool) -> None:
        """Show the 👍 / 👎 buttons under the chat's alerts and cards, or leave them out."""
        await self._storage.chats.set_rating_buttons(chat_id, shown)

    async def set_language(self, chat_id: int, language: str) -> Chat | None:
        """Choose the chat's language; returns its record as it now is."""
        await self._storage.chats.set_language(chat_id, language)
        return await self._storage.chats.get(chat_id)

    async def for_you_on(self, chat_id: int, count: int | None,
                         topic_id: int = GENERAL) -> ForYou:
        """Turn For you on with `count` papers a day (None: the chat's earlier count, or the
        default), sent to forum topic `topic_id`."""
        if count is None:
            current = await self._storage.rankings.for_you(chat_id)
            count = current.count if current else FOR_YOU_DEFAULT_COUNT
        await self._storage.rankings.set_for_you(chat_id, count, self._clock.now(), topic_id)
        return ForYou(count, await self._ranker.status(chat_id))

    async def for_you(self, chat_id: int) -> int | None:
        """For you's papers a day, or None while it is off."""
        current = await self._storage.rankings.for_you(chat_id)
        return current.count if current is not None else None

    async def for_you_off(self, chat_id: int) -> None:
        await self._storage.rankings.set_for_you(chat_id, None, self._clock.now())

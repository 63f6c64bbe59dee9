"""A group's shared library: who saved each paper into it, and who may remove it.

A group shares one library. Anyone in it may save; the member who saved a paper first is
recorded (user id and first name, nothing else) and shown beside it; a save may be removed by
that member or by the group's administrators. A private chat's library is its user's own:
nobody is recorded, every removal is allowed. Telegram is asked who is an administrator by the
caller (`is_admin`), only when the answer matters.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum

from bot.core.models import GroupMember
from bot.storage import Storage

# Whether the member acting is one of the group's administrators (asks Telegram).
IsAdmin = Callable[[], Awaitable[bool]]


class Removal(StrEnum):
    """What came of asking to remove a paper from a library."""

    REMOVED = "removed"
    NOT_SAVED = "not-saved"  # nothing to remove (removed meanwhile, or a stale button)
    REFUSED = "refused"  # a group member who neither saved it nor administers the group


@dataclass(frozen=True, slots=True)
class RemovalResult:
    outcome: Removal
    saver: GroupMember | None = None  # who saved it, for the refusal's answer


async def save(store: Storage, chat_id: int, arxiv_id: str, version: int, now: float,
               member: GroupMember | None) -> bool:
    """Save a paper; in a group (`member` set) with who saved it. False if saved already."""
    return await store.saved.save(chat_id, arxiv_id, version, now, saver=member)


async def remove(store: Storage, chat_id: int, arxiv_id: str, member: GroupMember | None,
                 is_admin: IsAdmin) -> RemovalResult:
    """Remove a paper if `member` may: in a private chat (`member` None) always; in a group
    when they saved it, or are an administrator (a save with no known saver: only then)."""
    record = await store.saved.record(chat_id, arxiv_id)
    if record is None:
        return RemovalResult(Removal.NOT_SAVED)
    if member is not None and not _saved_it(record.saver, member) and not await is_admin():
        return RemovalResult(Removal.REFUSED, record.saver)
    removed = await store.saved.remove(chat_id, arxiv_id)
    return RemovalResult(Removal.REMOVED if removed else Removal.NOT_SAVED, record.saver)


async def toggle(store: Storage, chat_id: int, arxiv_id: str, version: int, now: float,
                 member: GroupMember | None, is_admin: IsAdmin) -> RemovalResult | None:
    """Save the paper if it is not saved (None), else remove it as `remove` does."""
    if await store.saved.save(chat_id, arxiv_id, version, now, saver=member):
        return None
    return await remove(store, chat_id, arxiv_id, member, is_admin)


async def member_seen(store: Storage, chat_id: int, member: GroupMember) -> None:
    """A member wrote in the group: the name beside their saves follows a rename."""
    await store.saved.refresh_saver_name(chat_id, member)


def _saved_it(saver: GroupMember | None, member: GroupMember) -> bool:
    return saver is not None and saver.user_id == member.user_id

"""The daily messages: each digest-mode chat's digest and each chat's For-you message, at the
chat's own local time."""

from __future__ import annotations

import logging

from bot.core.models import ForYouPick, ForYouRound
from bot.delivery.schedule import digest_due, for_you_time, local_time
from bot.delivery.sender import Sender
from bot.ranking.service import Ranker
from bot.storage import Storage

log = logging.getLogger(__name__)


async def send_due_digests(storage: Storage, sender: Sender, now: float) -> int:
    """Send every digest that is due at `now`; returns how many chats received one.

    A chat with nothing waiting at its hour gets no message (an empty digest is noise), and
    its next digest counts from now. A digest cut short (Telegram failed a part; the rest was
    not sent) is not marked: the next check sends what is left of it, not the next day's.
    """
    # Read and marked in bulk: behind an evening's drain each round trip to the database
    # waits its turn, and a chat at a time kept 25,000 digests 36 minutes late at 100,000 chats.
    due = [chat.id for chat in await storage.chats.in_digest_mode()
           if chat.digest_time is not None and not chat.paused
           and digest_due(now, chat.last_digest_at if chat.last_digest_at is not None else now,
                          chat.digest_time, chat.timezone)]
    if not due:
        return 0
    owed = await storage.outbox.pending_ids(due, now)
    report = await sender.send_daily_digests(due)
    still = await storage.outbox.pending_ids(list(owed))
    sent = 0
    cut_short: dict[int, int] = {}  # chat → its alerts left
    done = []
    for chat_id in due:
        left = owed.get(chat_id, set()) & still.get(chat_id, set())
        if left:
            cut_short[chat_id] = len(left)
            continue
        sent += chat_id in report.digest_chats
        done.append(chat_id)
    await storage.chats.mark_digests_sent(done, now)
    if cut_short:
        # One line, not one per chat: an evening's held or slowed digests are thousands.
        log.info("%d digest(s) cut short with %d alert(s) left (chat %s first); the next "
                 "check sends them", len(cut_short), sum(cut_short.values()),
                 next(iter(cut_short)))
    if report.digests:
        log.info("digests: %d chat(s), %d message(s) of %d alert(s)", sent, report.digests,
                 report.sent)
    return sent


async def queue_for_you(storage: Storage, ranker: Ranker, now: float) -> int:
    """Queue every For-you message due at `now` (the sender delivers them like alerts); returns
    how many were queued. A chat whose papers all score below the threshold gets nothing that
    day. A paused chat's message waits for /resume. A chat that blocked the bot gets no round,
    as it gets no alerts, until it writes again (a message it blocked is held until then)."""
    due = []
    settings = await storage.rankings.for_you_chats()
    chats = await storage.chats.get_many([setting.chat_id for setting in settings])
    for setting in settings:
        chat = chats.get(setting.chat_id)
        if chat is None or not chat.active:
            continue
        last = setting.last_sent_at if setting.last_sent_at is not None else setting.enabled_at
        if digest_due(now, last, for_you_time(chat.digest_time), chat.timezone):
            due.append((chat, setting.count))
    if not due:
        return 0
    picks = await ranker.suggestions([(chat.id, count) for chat, count in due], now)
    return await storage.for_you_outbox.enqueue([ForYouRound(
        chat.id, local_time(now, chat.timezone, "%Y-%m-%d"),
        tuple(ForYouPick(s.paper.arxiv_id, s.paper.version, s.like.title if s.like else None,
                         s.terms) for s in picks.get(chat.id, ())))
        for chat, _count in due], now)

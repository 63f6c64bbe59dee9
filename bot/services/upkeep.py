"""Daily upkeep of the database: what is kept how long, what is forgotten, and the engine's
own care."""

from __future__ import annotations

import logging

from bot.core.constants import DAY
from bot.delivery.paid import utc_day
from bot.query.service import SubscriptionService
from bot.storage import Storage

log = logging.getLogger(__name__)

OUTBOX_RETENTION_DAYS = 30
PAPER_RETENTION_DAYS = 90  # far beyond /stats' 7 days and /follow's 7-day preview
# Where each paper's first alert went, for threading its revisions: they often come months
# after v1, so a year (one small row per paper a chat was alerted to on its own).
THREAD_RETENTION_DAYS = 365
# A chat that blocked or removed the bot and has not come back is forgotten after this long.
DEPARTED_RETENTION_DAYS = 180
PAID_SPEND_RETENTION_DAYS = 60  # each UTC day's paid-broadcast spend, for the record


async def prune(storage: Storage, now: float) -> tuple[int, int]:
    """Delivered alerts after 30 days, papers nobody saved or awaits after 90 days; then the
    planner statistics, and a VACUUM when pruning left a significant share of the file free."""
    expired = await storage.outbox.expire_held(now)
    expired += await storage.for_you_outbox.expire_held(now)
    if expired:
        log.info("%d messages held for chats that blocked the bot expired", expired)
    alerts = await storage.outbox.prune(now - OUTBOX_RETENTION_DAYS * DAY)
    await storage.for_you_outbox.prune(now - OUTBOX_RETENTION_DAYS * DAY)
    await storage.outbox.prune_threads(now - THREAD_RETENTION_DAYS * DAY)
    papers = await storage.papers.prune(now - PAPER_RETENTION_DAYS * DAY)
    await storage.guides.prune(now - PAPER_RETENTION_DAYS * DAY)
    await storage.community.prune(now - PAPER_RETENTION_DAYS * DAY)
    # A reaction on a card a month old still rates, as one on an alert kept that long does.
    await storage.cards.prune(now - OUTBOX_RETENTION_DAYS * DAY)
    await storage.paid_broadcasts.prune(utc_day(now - PAID_SPEND_RETENTION_DAYS * DAY))
    if alerts or papers:
        log.info("pruned %d delivered alerts and %d papers", alerts, papers)
    compacted = await storage.upkeep()
    if compacted is not None:
        before, after = compacted.before, compacted.after
        log.info("vacuum freed %.1f MB of %.1f MB (%.0f %%)", (before - after) / 1e6,
                 before / 1e6, 100 * (before - after) / before)
    return alerts, papers


async def forget_chat(storage: Storage, subscriptions: SubscriptionService, chat_id: int) -> None:
    """Erase everything the bot keeps about a chat. Its subscriptions leave the matcher first,
    so no poll queues it anything again (one already storing finds no chat to queue for)."""
    await subscriptions.unfollow_all(chat_id)
    await storage.chats.forget(chat_id)


async def forget_departed(storage: Storage, subscriptions: SubscriptionService,
                          now: float) -> int:
    """Forget the chats that blocked or removed the bot over DEPARTED_RETENTION_DAYS ago;
    returns how many."""
    departed = await storage.chats.departed_before(now - DEPARTED_RETENTION_DAYS * DAY)
    for chat_id in departed:
        await forget_chat(storage, subscriptions, chat_id)
    if departed:
        log.info("forgot %d chat(s) that left the bot over %d days ago", len(departed),
                 DEPARTED_RETENTION_DAYS)
    return len(departed)

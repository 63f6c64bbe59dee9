"""Daily upkeep of the database: what is kept how long, and the engine's own care."""

from __future__ import annotations

import logging

from bot.core.constants import DAY
from bot.storage import Storage

log = logging.getLogger(__name__)

OUTBOX_RETENTION_DAYS = 30
PAPER_RETENTION_DAYS = 90  # far beyond /stats' 7 days and /follow's 7-day preview
# Where each paper's first alert went, for threading its revisions: they often come months
# after v1, so a year (one small row per paper a chat was alerted to on its own).
THREAD_RETENTION_DAYS = 365


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
    if alerts or papers:
        log.info("pruned %d delivered alerts and %d papers", alerts, papers)
    compacted = await storage.upkeep()
    if compacted is not None:
        before, after = compacted.before, compacted.after
        log.info("vacuum freed %.1f MB of %.1f MB (%.0f %%)", (before - after) / 1e6,
                 before / 1e6, 100 * (before - after) / before)
    return alerts, papers

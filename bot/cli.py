"""Operator commands that print: `poll-once` (with or without `--dry-run`), `backup`, `health`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from bot.arxiv.client import ArxivClient
from bot.config import Settings
from bot.core.models import Alert
from bot.delivery.compose import DIGEST_THRESHOLD
from bot.query.service import SubscriptionService
from bot.services.ingest import Pipeline, PollReport
from bot.storage import Storage


def format_dry_run(report: PollReport, chat_titles: dict[int, str]) -> str:
    """The operator's view of a dry run: per source, then per chat what would be sent."""
    lines = [f"poll: {len(report.sources)} source(s), {report.count('new')} new, "
             f"{report.count('revised')} revised, {report.count('seen')} already seen, "
             f"{len(report.alerts)} alert(s) in {report.seconds:.1f} s"]
    for source in report.sources:
        detail = f"error: {source.error}" if source.error else (
            f"{source.items} items, {source.new} new, {source.revised} revised, "
            f"{source.seen} seen")
        lines.append(f"  {source.url} [{source.outcome}] {detail}")
    papers = {c.paper.arxiv_id: c.paper for c in report.changes}
    by_chat: dict[int, list[Alert]] = {}
    for alert in report.alerts:
        by_chat.setdefault(alert.chat_id, []).append(alert)
    if not by_chat:
        lines.append("no chat would receive anything")
    for chat_id in sorted(by_chat):
        alerts = by_chat[chat_id]
        title = chat_titles.get(chat_id)
        name = f"chat {chat_id} {title}" if title else f"chat {chat_id}"
        mode = " (as a digest)" if len(alerts) > DIGEST_THRESHOLD else ""
        lines.append(f"{name}: {len(alerts)} alert(s){mode}")
        for alert in alerts:
            paper = papers.get(alert.arxiv_id)
            label = alert.kind
            why = ", ".join(alert.matched_queries) or "saved paper"
            paper_title = paper.title if paper else ""
            lines.append(f"  [{label}] {alert.arxiv_id}v{alert.version} {paper_title[:90]}"
                         f" — matched: {why}")
    return "\n".join(lines)


async def poll_once_cli(settings: Settings, *, dry_run: bool) -> int:
    """`python -m bot poll-once`: one poll; print the report; deliver unless it is a dry run."""
    from telegram import Bot

    from bot.core.clock import SystemClock
    from bot.delivery.sender import Sender

    clock = SystemClock()
    storage = await Storage.open(settings.database_path)
    try:
        subscriptions = SubscriptionService(storage, clock)
        await subscriptions.load()
        async with ArxivClient(rss_url=settings.arxiv_rss_url, api_url=settings.arxiv_api_url,
                               listing_url=settings.arxiv_listing_url,
                               contact=settings.contact,
                               min_interval=settings.arxiv_min_interval_seconds) as arxiv:
            pipeline = Pipeline(settings, storage, arxiv, subscriptions, clock)
            report = await pipeline.poll(dry_run=dry_run)
        titles = {}
        for chat_id in {a.chat_id for a in report.alerts}:
            chat = await storage.chats.get(chat_id)
            titles[chat_id] = chat.title if chat and chat.title else ""
        print(format_dry_run(report, titles))
        if not dry_run:
            async with Bot(settings.telegram_bot_token,
                           base_url=f"{settings.telegram_api_url}/bot") as bot:
                drained = await Sender(bot, storage, clock, window=settings.send_window,
                                       on_migrated=subscriptions.chat_migrated,
                                       on_topic_gone=subscriptions.topic_gone).drain()
            print(f"sent {drained.sent} alert(s), {drained.digests} digest(s), "
                  f"{drained.failed} failed, {drained.retried} to retry")
        else:
            print("dry run: nothing was sent or stored")
        return 1 if report.sources and len(report.failed_sources) == len(report.sources) else 0
    finally:
        await storage.close()


async def backup_cli(settings: Settings, path: Path) -> int:
    """`python -m bot backup PATH`: a consistent copy of the database, safe beside a running bot."""
    from bot.storage.sqlite.db import Database

    # A mistyped DATABASE_PATH must fail, not "back up" a new empty database.
    db = await Database.open(settings.database_path, create=False, migrate=False)
    try:
        await db.backup(path)
    finally:
        await db.close()
    print(f"backup written to {path}")
    return 0


async def health_cli(settings: Settings) -> int:
    """`python -m bot health`: one line; exit 0 only if arXiv and Telegram beats are recent."""
    from bot.core.clock import SystemClock
    from bot.services.health import assess
    from bot.storage.sqlite.db import Database
    from bot.storage.sqlite.heartbeats import HeartbeatRepository

    db = await Database.open(settings.database_path, create=False, migrate=False)
    try:
        beats = await HeartbeatRepository(db).all()
    except sqlite3.OperationalError:  # a database the (new) bot has not migrated yet
        beats = {}
    finally:
        await db.close()
    health = assess(beats, settings, SystemClock().now())
    print(health.line())
    return 0 if health.ok else 1

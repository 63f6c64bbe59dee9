"""Operator commands that print: `poll-once` (with or without `--dry-run`), `backup`, `health`.
Each is one call to `bot/services/operations.py`; this module only formats."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.config import Settings
from bot.services import operations

if TYPE_CHECKING:
    # For types only: the ingest brings the matcher and numpy, which `health`, `backup` and
    # `migrate` (an operator's or a monitor's every-minute command) need not import.
    from bot.core.models import Alert
    from bot.delivery.compose import Outgoing
    from bot.services.ingest import PollReport


def format_poll(report: PollReport, chat_titles: dict[int, str]) -> str:
    """The operator's view of a poll: per source, then per chat its alerts."""
    lines = [f"poll: {len(report.sources)} source(s), {report.count('new')} new, "
             f"{report.count('revised')} revised, {report.count('seen')} already seen, "
             f"{report.alert_count} alert(s) in {report.seconds:.1f} s"]
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
        lines.append(f"{name}: {len(alerts)} alert(s)")
        for alert in alerts:
            paper = papers.get(alert.arxiv_id)
            label = alert.kind
            why = ", ".join(alert.matched_queries) or "saved paper"
            paper_title = paper.title if paper else ""
            lines.append(f"  [{label}] {alert.arxiv_id}v{alert.version} {paper_title[:90]}"
                         f" — matched: {why}")
    return "\n".join(lines)


def format_previews(previews: dict[int, list[Outgoing]]) -> str:
    """Each chat's messages exactly as the bot would send them (HTML as sent), one block each."""
    blocks = []
    for chat_id in sorted(previews):
        messages = previews[chat_id]
        for number, outgoing in enumerate(messages, 1):
            topic = f", topic {outgoing.topic_id}" if outgoing.topic_id else ""
            blocks.append(f"{PREVIEW_RULE} chat {chat_id}{topic}: message {number} of "
                          f"{len(messages)} {PREVIEW_RULE}\n{outgoing.message.text}")
    return "\n".join(blocks)


PREVIEW_RULE = "──"


async def poll_once_cli(settings: Settings, *, dry_run: bool) -> int:
    """`python -m bot poll-once`: one poll; print the report; deliver unless it is a dry run,
    which prints each chat's messages as the bot would send them instead."""
    from telegram import Bot

    # A dry run never talks to Telegram: the bot is not even initialised.
    bot = Bot(settings.telegram_bot_token, base_url=f"{settings.telegram_api_url}/bot")
    if dry_run:
        result = await operations.poll_once(settings, bot, dry_run=True)
    else:
        async with bot:
            result = await operations.poll_once(settings, bot, dry_run=False)
    print(format_poll(result.report, result.chat_titles))
    if result.drained is not None:
        drained = result.drained
        for_you = f", {drained.for_you} For-you message(s)" if drained.for_you else ""
        print(f"sent {drained.sent} alert(s), {drained.digests} digest(s), "
              f"{drained.failed} failed, {drained.retried} to retry{for_you}")
    else:
        if result.previews:
            print(format_previews(result.previews))
        print("dry run: nothing was sent or stored")
    report = result.report
    return 1 if report.sources and len(report.failed_sources) == len(report.sources) else 0


async def backup_cli(settings: Settings, path: Path) -> int:
    """`python -m bot backup PATH`: a consistent copy of the database, safe beside a running bot."""
    await operations.backup(settings, path)
    print(f"backup written to {path}")
    return 0


async def migrate_cli(settings: Settings, target: str) -> int:
    """`python -m bot migrate --to postgresql://…`: the SQLite database, copied whole into an
    empty PostgreSQL database; a line per table, then what to set."""
    copied = await operations.migrate(settings, target,
                                      lambda table, rows: print(f"{table}: {rows} rows"))
    print(f"moved {sum(copied.values())} rows; now set DATABASE_URL to the PostgreSQL "
          "database and start the bot")
    return 0


async def health_cli(settings: Settings) -> int:
    """`python -m bot health`: one line; exit 0 only if arXiv and Telegram beats are recent
    and the database's last integrity check (if any yet) passed."""
    health = await operations.health(settings)
    print(health.line())
    return 0 if health.ok else 1

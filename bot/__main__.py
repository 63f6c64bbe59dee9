"""Command line: `python -m bot` runs the bot; sub-commands for operators."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

from bot import __version__
from bot.config import (
    ConfigError,
    Settings,
    configure_logging,
    database_secrets,
    load_settings,
)
from bot.core.memory import cap_malloc_arenas, fix_mmap_threshold
from bot.core.redaction import install as install_redaction
from bot.storage.errors import DatabaseError, DatabaseLocked

log = logging.getLogger("bot")

TOKEN_REJECTED = ("telegram error: the bot token was rejected (401); "
                  "check TELEGRAM_BOT_TOKEN")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bot",
        description="arXiv alerts for Telegram. Settings come from the environment and .env "
        "(see .env.example).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.add_parser("run", help="run the bot with long polling (the default)")
    poll = commands.add_parser(
        "poll-once", help="fetch arXiv once and print what would be sent, per chat"
    )
    poll.add_argument("--dry-run", action="store_true",
                      help="send nothing and store nothing as sent (the operator's check)")
    backup = commands.add_parser(
        "backup", help="write a consistent copy of the database (safe while the bot runs)"
    )
    backup.add_argument("path", type=Path, help="where to write the copy")
    commands.add_parser(
        "health", help="exit 0 if the last arXiv poll and Telegram call are recent and the "
        "database's last integrity check passed; one line"
    )
    migrate = commands.add_parser(
        "migrate", help="copy the SQLite database (the bot stopped) into an empty PostgreSQL "
        "database, then point DATABASE_URL at it"
    )
    migrate.add_argument("--to", required=True, metavar="postgresql://…",
                         help="the empty PostgreSQL database")
    return parser


def _run(settings: Settings, lock: object) -> int:
    # Database trouble (a damaged file, a schema newer than this code) is reported before
    # Telegram is tried (and before the second it takes to import the bot); a database
    # damaged during the run ends it with the same line.
    from bot.services.operations import check_database

    asyncio.run(check_database(settings))

    from telegram.error import InvalidToken

    from bot.runtime import build_bot, run

    try:
        return run(build_bot(settings), settings, leadership=lock)
    except InvalidToken:
        print(TOKEN_REJECTED, file=sys.stderr)
        return 2


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, load settings and run the chosen command."""
    cap_malloc_arenas()  # before any thread allocates: see bot/core/memory.py
    fix_mmap_threshold()
    args = _parser().parse_args(argv)
    try:
        settings = load_settings()
    except ConfigError as exc:
        print(f"config error: {exc}", file=sys.stderr)
        return 2
    # Before anything can fail: every byte written to stdout or stderr passes the redaction.
    # `migrate --to`'s password is as secret as DATABASE_URL's.
    secrets = [*settings.secrets(), *database_secrets(getattr(args, "to", None))]
    install_redaction(secrets, _one_line_errors(args.command))
    configure_logging(settings)
    # Whatever sends or stores alerts holds the database's lock for as long as it runs;
    # a dry run and a backup only read, so they may run beside the bot.
    from bot.services.operations import hold_database

    lock = None
    # `migrate` too: the SQLite bot must be stopped while its database is copied.
    if (args.command in (None, "run", "migrate")
            or (args.command == "poll-once" and not args.dry_run)):
        try:
            # On PostgreSQL the running bot stands by until it leads (a second host's bot).
            with _stop_standing_by():
                lock = hold_database(settings, stand_by=args.command in (None, "run"))
        except KeyboardInterrupt:  # SIGTERM or Ctrl-C while standing by: a clean stop
            return 0
        except DatabaseLocked as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        except DatabaseError as exc:  # PostgreSQL's lock: the server cannot be reached
            print(f"database error: {exc}", file=sys.stderr)
            return 2
        except OSError as exc:  # e.g. DATABASE_PATH inside a file, or a read-only folder
            print(f"database error: cannot lock the database {str(settings.database_path)!r} "
                  f"({exc.strerror}): check DATABASE_PATH", file=sys.stderr)
            return 2
    try:
        return _dispatch(args, settings, lock)
    except DatabaseError as exc:
        print(f"database error: {exc}", file=sys.stderr)
        return 2
    finally:
        if lock is not None:
            lock.release()


def _one_line_errors(command: str | None) -> dict[type[BaseException], str]:
    """A rejected token, uncaught, as its one line, for the commands that talk to Telegram;
    `health`, `backup` and `migrate` never do, and skip importing PTB (a third of their
    start-up's CPU)."""
    if command not in (None, "run", "poll-once"):
        return {}
    from telegram.error import InvalidToken

    return {InvalidToken: TOKEN_REJECTED}


@contextlib.contextmanager
def _stop_standing_by() -> Iterator[None]:
    """SIGTERM while waiting for the lock ends the wait as Ctrl-C does (the standby then
    takes its row out of the database's list of processes), not by the signal's default."""

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _dispatch(args: argparse.Namespace, settings: Settings, lock: object) -> int:
    if args.command in (None, "run"):
        return _run(settings, lock)
    if args.command == "poll-once":
        from bot.cli import poll_once_cli

        return asyncio.run(poll_once_cli(settings, dry_run=args.dry_run))
    if args.command == "backup":
        from bot.cli import backup_cli

        return asyncio.run(backup_cli(settings, args.path))
    if args.command == "health":
        from bot.cli import health_cli

        return asyncio.run(health_cli(settings))
    if args.command == "migrate":
        from bot.cli import migrate_cli

        return asyncio.run(migrate_cli(settings, args.to))
    return 2


if __name__ == "__main__":
    sys.exit(main())

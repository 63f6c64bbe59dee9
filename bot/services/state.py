"""What changes while the bot runs, apart from the database."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


@dataclass
class RunState:
    """What changes while the bot runs, apart from the database."""

    started_at: float
    failed_polls: int = 0  # polls in a row with a failed source: sets the retry backoff
    telegram_ok_at: float | None = None  # the last Bot API call Telegram answered (clock time)
    # Jobs running right now (polls, drains, digests), for a stop that must end in time.
    work: set[asyncio.Task[None]] = field(default_factory=set)
    # Scheduled jobs whose last run failed, by name, with the failure: its repeats are logged
    # in one line until the job runs clean again.
    failing_jobs: dict[str, str] = field(default_factory=dict)

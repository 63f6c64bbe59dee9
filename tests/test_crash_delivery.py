"""A crash in the middle of delivery loses nothing: kill the real bot process, start it again.

The bot runs as `python -m bot poll-once` (a poll, then delivery) against the fake arXiv and a
slow fake Telegram, is SIGKILLed while alerts are still going out, and is started again on the
same database: 15 alerts to 15 chats. Every alert must arrive; the only repeat allowed is the one
message Telegram accepted just as the process died, before the bot could mark it sent (the bot
keeps a single request unconfirmed at any time).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from bot.clock import SystemClock
from bot.models import Paper
from bot.query.service import SubscriptionService
from bot.storage import Storage
from tests.conftest import make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
CHATS = range(8001, 8016)  # chat 8000 + n follows paper n's title
SEND_DELAY = 0.4  # each sendMessage is answered only after this long


def day_of_papers() -> list[Paper]:
    """Fifteen papers, each matched by exactly one chat."""
    return [make_paper(n) for n in range(1, 16)]


async def seed(database: Path) -> None:
    storage = await Storage.open(database)
    try:
        clock = SystemClock()
        subscriptions = SubscriptionService(storage, clock)
        for chat_id in CHATS:
            await storage.chats.record(chat_id, "private", f"chat {chat_id}", "en", clock.now())
            result = await subscriptions.follow(chat_id, f'ti:"part {chat_id - 8000}"')
            assert result.status == "added", result
    finally:
        await storage.close()


def start_bot(folder: Path) -> subprocess.Popen[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "bot", "poll-once"], cwd=folder, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def arrived(tg: FakeTelegram, chat_id: int) -> list[str]:
    """The versioned ids of the alerts that reached a chat, repeats included."""
    found = []
    for message in tg.messages(chat_id):
        found.extend(word.removeprefix("arXiv:") for word in message.text.split()
                     if word.startswith("arXiv:"))
    return found


def test_a_killed_bot_restarted_on_its_database_loses_nothing_and_repeats_at_most_one(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer
) -> None:
    database = tmp_path / "data" / "bot.sqlite3"
    (tmp_path / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={fake_telegram.token}\n"
        f"TELEGRAM_API_URL={fake_telegram.api_url}\n"
        f"ARXIV_RSS_URL={fake_arxiv.rss_url}\n"
        f"ARXIV_API_URL={fake_arxiv.api_url}\n"
        f"DATABASE_PATH={database}\n"
        "ARXIV_MIN_INTERVAL_SECONDS=0\n"
    )
    asyncio.run(seed(database))
    papers = day_of_papers()
    fake_arxiv.set_feed(None, rss_feed(papers, names=("cs",),
                                       announce_date=datetime(2026, 11, 30, 5, tzinfo=UTC)))
    fake_telegram.delay_next("sendMessage", SEND_DELAY, times=1000)

    first = start_bot(tmp_path)
    try:
        fake_telegram.wait_for_sync(
            lambda: len(fake_telegram.all_messages()) >= 5, timeout=30,
            what="delivery to be well under way")
    finally:
        first.send_signal(signal.SIGKILL)
        first.communicate(timeout=10)
    before_restart = len(fake_telegram.all_messages())
    assert before_restart < len(papers), "the kill came before delivery was over"

    second = start_bot(tmp_path)
    stdout, stderr = second.communicate(timeout=60)

    assert second.returncode == 0, stderr
    delivered = {chat_id: arrived(fake_telegram, chat_id) for chat_id in CHATS}
    for chat_id, ids in delivered.items():
        assert set(ids) == {papers[chat_id - 8001].versioned_id}, f"chat {chat_id}: {ids}"
    repeats = sum(len(ids) - 1 for ids in delivered.values())
    assert repeats <= 1, f"at most the one in-flight message repeats: {delivered}"
    assert "sent" in stdout

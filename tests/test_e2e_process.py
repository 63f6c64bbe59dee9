"""`python -m bot` as an operator runs it: a .env file, long polling, logs without the token."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]


def test_python_m_bot_answers_start_and_never_logs_the_token(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer
) -> None:
    (tmp_path / ".env").write_text(
        f"TELEGRAM_BOT_TOKEN={fake_telegram.token}\n"
        f"TELEGRAM_API_URL={fake_telegram.api_url}\n"
        f"ARXIV_RSS_URL={fake_arxiv.rss_url}\n"
        f"ARXIV_API_URL={fake_arxiv.api_url}\n"
        "LOG_LEVEL=DEBUG\nARXIV_MIN_INTERVAL_SECONDS=0\n"
    )
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_"))}
    env["PYTHONPATH"] = str(ROOT)
    # The log goes to a file, not a pipe: a DEBUG log outgrows a pipe's buffer before anyone
    # reads it, and the bot would then block on its next log line.
    log_file = (tmp_path / "stderr.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "-m", "bot"], cwd=tmp_path, env=env,
        stdout=subprocess.DEVNULL, stderr=log_file, text=True,
    )
    try:
        fake_telegram.wait_for_sync(lambda: fake_telegram.waiting_polls > 0, timeout=30,
                                    what="the bot to start long polling")
        fake_telegram.send_command(4242, "/start")
        fake_telegram.wait_for_sync(lambda: fake_telegram.messages(4242), timeout=15,
                                    what="a reply to /start")
        # The scheduled poll runs (that it is set within 5 s of start-up is read from the
        # schedule in test_poll_once.py; a wall-clock bound here would fail on a busy machine).
        fake_telegram.wait_for_sync(lambda: fake_arxiv.requests, timeout=60,
                                    what="the first poll of arXiv")
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log_file.close()
    stderr = (tmp_path / "stderr.log").read_text()
    assert "/follow cs.LG" in fake_telegram.messages(4242)[0].text
    assert (tmp_path / "data" / "bot.sqlite3").exists(), "the database is created on start"
    secret = fake_telegram.token.split(":")[1]
    assert "DEBUG" in stderr, "the log level from .env is applied"
    assert secret not in stderr, "the token must never appear in a log line"
    assert process.returncode == 0

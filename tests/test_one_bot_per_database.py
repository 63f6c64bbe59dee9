"""One bot per database: a second `python -m bot` (an overlapping deploy, a second terminal) on
the same DATABASE_PATH refuses to start, so two processes never send the same alerts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.postgres_server import PostgresServer

ROOT = Path(__file__).resolve().parents[1]


def bot_env(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_"))}
    env.update(
        PYTHONPATH=str(ROOT), TELEGRAM_BOT_TOKEN=tg.token, TELEGRAM_API_URL=tg.api_url,
        ARXIV_RSS_URL=arxiv.rss_url, ARXIV_API_URL=arxiv.api_url,
        DATABASE_PATH=str(tmp_path / "data" / "bot.sqlite3"), ARXIV_MIN_INTERVAL_SECONDS="0",
        POLL_INTERVAL_SECONDS="3600",
    )
    return env


def run(env: dict[str, str], cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "bot", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


@pytest.fixture
def running_bot(tmp_path: Path, fake_telegram: FakeTelegram,
                fake_arxiv: FakeArxivServer) -> Iterator[subprocess.Popen[str]]:
    """A bot started as an operator starts it, up and long polling."""
    process = subprocess.Popen(
        [sys.executable, "-m", "bot"], cwd=tmp_path,
        env=bot_env(tmp_path, fake_telegram, fake_arxiv),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        fake_telegram.wait_for_sync(lambda: fake_telegram.waiting_polls > 0, timeout=30,
                                    what="the first bot to start long polling")
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def test_a_second_bot_on_the_same_database_exits_at_once_naming_the_lock_and_its_holder(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        running_bot: subprocess.Popen[str]) -> None:
    second = run(bot_env(tmp_path, fake_telegram, fake_arxiv), tmp_path)

    assert second.returncode == 2
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1, second.stderr
    assert "bot.sqlite3.lock" in lines[0]
    assert f"pid {running_bot.pid}" in lines[0]
    assert "Traceback" not in second.stderr
    assert running_bot.poll() is None, "the first bot keeps running"
    fake_telegram.send_command(4242, "/start")
    fake_telegram.wait_for_sync(lambda: fake_telegram.messages(4242), timeout=15,
                                what="the first bot to still answer")


def test_poll_once_needs_the_lock_but_a_dry_run_and_a_backup_do_not(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        running_bot: subprocess.Popen[str]) -> None:
    env = bot_env(tmp_path, fake_telegram, fake_arxiv)

    refused = run(env, tmp_path, "poll-once")
    assert refused.returncode == 2
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert f"pid {running_bot.pid}" in refused.stderr

    dry_run = run(env, tmp_path, "poll-once", "--dry-run")
    assert "dry run: nothing was sent or stored" in dry_run.stdout, dry_run.stderr

    backup = run(env, tmp_path, "backup", str(tmp_path / "copy.sqlite3"))
    assert backup.returncode == 0, backup.stderr
    assert (tmp_path / "copy.sqlite3").stat().st_size > 0


def test_the_lock_dies_with_a_killed_bot(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        running_bot: subprocess.Popen[str]) -> None:
    running_bot.send_signal(signal.SIGKILL)
    running_bot.wait(timeout=30)

    after = run(bot_env(tmp_path, fake_telegram, fake_arxiv), tmp_path, "poll-once")

    assert after.returncode != 2, after.stderr
    assert "another bot" not in after.stderr
    assert "poll:" in after.stdout, after.stderr


def test_on_postgresql_poll_once_anywhere_is_refused_until_the_running_bot_dies(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
        postgres_server: PostgresServer) -> None:
    """Two working folders stand for two hosts: no file lock is shared, the server's is. (A
    second `run` stands by instead: tests/test_standby.py.)"""
    url = postgres_server.new_database()
    first_host, second_host = tmp_path / "a", tmp_path / "b"
    first_host.mkdir()
    second_host.mkdir()
    env = {**bot_env(tmp_path, fake_telegram, fake_arxiv), "DATABASE_URL": url}
    env.pop("DATABASE_PATH")
    first = subprocess.Popen([sys.executable, "-m", "bot"], cwd=first_host, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        fake_telegram.wait_for_sync(lambda: fake_telegram.waiting_polls > 0, timeout=30,
                                    what="the first bot to start long polling")
        second = run(env, second_host, "poll-once")
        assert second.returncode == 2
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert "advisory lock" in lines[0] and f"pid {first.pid}" in lines[0]
        assert "test-pw" not in second.stderr, "the password is never shown"
        assert first.poll() is None, "the first bot keeps running"

        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        after = run(env, second_host, "poll-once")
        assert after.returncode != 2, after.stderr
        assert "another bot" not in after.stderr
        assert "poll:" in after.stdout, after.stderr
    finally:
        if first.poll() is None:
            first.kill()
        first.communicate()
        postgres_server.drop_database(url)

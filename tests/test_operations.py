"""Operating `python -m bot` as a service: a rejected token, Telegram away at start-up, SIGTERM.

Each test runs the real process against the fake servers, as systemd or a container would.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from bot.__main__ import TOKEN_REJECTED
from bot.core.clock import SystemClock
from bot.query.service import SubscriptionService
from bot.storage import open_storage
from tests.conftest import make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram

ROOT = Path(__file__).resolve().parents[1]
STOP_TIMEOUT = 10.0  # the bound, and Docker's default stop timeout


class BotProcess:
    """`python -m bot` in a folder with its own .env; stderr goes to a file we can read live."""

    def __init__(self, folder: Path, settings: dict[str, str], *args: str) -> None:
        self.folder = folder
        lines = [f"{key}={value}" for key, value in settings.items()]
        (folder / ".env").write_text("\n".join(lines) + "\n")
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_", "WEBHOOK_",
                                    "ADMIN_", "POLL_"))}
        env["PYTHONPATH"] = str(ROOT)
        self.stdout_path = folder / "stdout.txt"
        self.stderr_path = folder / "stderr.txt"
        with self.stdout_path.open("w") as out, self.stderr_path.open("w") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "bot", *args], cwd=folder,
                                            env=env, stdout=out, stderr=err, text=True)

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    @property
    def stdout(self) -> str:
        return self.stdout_path.read_text()

    def wait_for_log(self, text: str, count: int = 1, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while self.stderr.count(text) < count:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no {count}x {text!r} in the log:\n{self.stderr}")
            time.sleep(0.05)

    def wait(self, timeout: float) -> int:
        return self.process.wait(timeout=timeout)

    def terminate_and_wait(self, timeout: float = STOP_TIMEOUT) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=timeout)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def bots() -> Iterator[list[BotProcess]]:
    started: list[BotProcess] = []
    yield started
    for bot in started:
        bot.kill()


def bot_settings(tg_url: str, token: str, arxiv: FakeArxivServer, folder: Path,
                 **more: str) -> dict[str, str]:
    return {
        "TELEGRAM_BOT_TOKEN": token,
        "TELEGRAM_API_URL": tg_url,
        "ARXIV_RSS_URL": arxiv.rss_url,
        "ARXIV_API_URL": arxiv.api_url,
        "DATABASE_PATH": str(folder / "data" / "bot.sqlite3"),
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        **more,
    }


REJECTED_TOKEN = "987654321:SECRETrejectedTokenDoNotPrint_abc"


@pytest.mark.parametrize("level", ["INFO", "DEBUG"])
def test_a_rejected_token_is_one_line_without_the_token_and_exit_2(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess], level: str,
) -> None:
    bot = BotProcess(tmp_path, bot_settings(fake_telegram.api_url, REJECTED_TOKEN, fake_arxiv,
                                            tmp_path, LOG_LEVEL=level))
    bots.append(bot)
    assert bot.wait(timeout=30) == 2
    output = bot.stdout + bot.stderr
    assert "SECRETrejected" not in output
    assert TOKEN_REJECTED in bot.stderr
    if level == "INFO":
        assert bot.stderr.strip() == TOKEN_REJECTED
        assert bot.stdout == ""


def test_every_path_a_traceback_takes_is_redacted(tmp_path: Path) -> None:
    """The token inside exception messages: logging.exception, a warning, a thread's uncaught
    exception, an unretrieved task exception, and finally the uncaught exception itself."""
    secret = REJECTED_TOKEN.split(":")[1]
    script = f"""
import asyncio, gc, logging, threading, warnings
from bot.core.redaction import install, token_secrets
install(token_secrets({REJECTED_TOKEN!r}))
logging.basicConfig(level=logging.INFO)
token = {REJECTED_TOKEN!r}
try:
    raise ValueError("request to /bot" + token + "/getMe failed")
except ValueError:
    logging.getLogger("telegram.ext.Application").exception("No error handlers are registered")
warnings.warn("the token " + token + " leaked into a warning")
thread = threading.Thread(target=lambda: (_ for _ in ()).throw(OSError(token.split(":")[1])))
thread.start(); thread.join()
async def fail():
    raise RuntimeError("task saw " + token)
async def main():
    asyncio.get_running_loop().create_task(fail())
    await asyncio.sleep(0.05)
asyncio.run(main())
gc.collect()
print("stdout has", token)
raise RuntimeError("uncaught with " + token)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", script], env=env, cwd=tmp_path,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    output = result.stdout + result.stderr
    for sign_of_each_path in ("No error handlers", "leaked into a warning", "OSError",
                              "task saw", "stdout has", "uncaught with"):
        assert sign_of_each_path in output, f"{sign_of_each_path!r} not printed:\n{output}"
    assert secret not in output
    assert output.count("***") >= 6


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_telegram_unreachable_at_start_then_reachable_the_bot_starts_without_tracebacks(
    tmp_path: Path, fake_arxiv: FakeArxivServer, bots: list[BotProcess],
) -> None:
    port = free_port()
    tg = FakeTelegram()
    bot = BotProcess(tmp_path, bot_settings(f"http://127.0.0.1:{port}", tg.token, fake_arxiv,
                                            tmp_path, LOG_LEVEL="INFO"))
    bots.append(bot)
    try:
        bot.wait_for_log("Telegram is unreachable", count=3)
        tg.start(port)
        tg.wait_for_sync(lambda: tg.waiting_polls > 0, timeout=30,
                         what="the bot to start long polling once Telegram answers")
        tg.send_command(4242, "/start")
        tg.wait_for_sync(lambda: tg.messages(4242), timeout=15, what="a reply to /start")
        assert bot.terminate_and_wait() == 0
    finally:
        tg.stop()
    log = bot.stderr
    attempts = [line for line in log.splitlines() if "Telegram is unreachable" in line]
    assert len(attempts) >= 3
    assert all("trying again in" in line and "attempt" in line for line in attempts)
    assert "trying again in 1 s (attempt 1)" in attempts[0]
    assert "trying again in 2 s (attempt 2)" in attempts[1]
    assert "Traceback" not in log
    assert "connected to Telegram" in log


async def seed_followers(database: Path, chats: range) -> None:
    storage = await open_storage(database)
    try:
        clock = SystemClock()
        subscriptions = SubscriptionService(storage, clock)
        for chat_id in chats:
            await storage.chats.record(chat_id, "private", f"chat {chat_id}", "en", clock.now())
            result = await subscriptions.follow(chat_id, "cs.LG")
            assert result.status == "added", result
    finally:
        await storage.close()


def outbox_statuses(database: Path) -> dict[str, int]:
    connection = sqlite3.connect(database)
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return dict(connection.execute(
            "SELECT status, COUNT(*) FROM outbox GROUP BY status").fetchall())
    finally:
        connection.close()


@pytest.mark.parametrize("stall", ["retry-after", "slow-send"])
def test_sigterm_mid_drain_exits_0_in_time_and_marks_nothing_sent_that_telegram_refused(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess], stall: str,
) -> None:
    chats = range(7001, 7006)
    database = tmp_path / "data" / "bot.sqlite3"
    asyncio.run(seed_followers(database, chats))
    fake_arxiv.set_feed(None, rss_feed([make_paper(n) for n in range(1, 4)], names=("cs",),
                                       announce_date=datetime(2026, 11, 30, 5, tzinfo=UTC)))
    if stall == "retry-after":
        # Telegram asks for a minute's pause: the drain waits it out, unless stopped.
        fake_telegram.fail_next("sendMessage", 429, retry_after=60, times=1000)
    else:
        fake_telegram.delay_next("sendMessage", 25.0, times=1000)
    bot = BotProcess(tmp_path, bot_settings(fake_telegram.api_url, fake_telegram.token,
                                            fake_arxiv, tmp_path, LOG_LEVEL="INFO"))
    bots.append(bot)
    bot.wait_for_log("poll source=")  # the poll queued 15 alerts; the drain follows at once
    fake_telegram.wait_for_sync(
        (lambda: fake_telegram.rate_limited_count > 0) if stall == "retry-after"
        else (lambda: fake_telegram.delayed_requests > 0),
        timeout=60, what="the drain to stall on Telegram")
    assert bot.process.poll() is None, bot.stderr
    assert bot.terminate_and_wait(timeout=STOP_TIMEOUT) == 0, bot.stderr
    accepted = len(fake_telegram.all_messages())
    statuses = outbox_statuses(database)
    assert statuses.get("sent", 0) == accepted == 0, statuses
    assert sum(statuses.values()) == 3 * len(chats), "every alert is still queued"
    stopping = bot.stderr.split("stopping (SIGTERM)", 1)[1]
    assert "Traceback" not in stopping, "the stop itself is clean"
    assert "stopped" in stopping


WEBHOOK_SECRET = "hook-secret_0123456789abcdef"


def test_webhook_mode_answers_updates_with_the_secret_and_refuses_the_rest(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    port = free_port()
    bot = BotProcess(tmp_path, bot_settings(
        fake_telegram.api_url, fake_telegram.token, fake_arxiv, tmp_path,
        WEBHOOK_URL="https://bot.example.org/telegram/hook", WEBHOOK_LISTEN="127.0.0.1",
        WEBHOOK_PORT=str(port), WEBHOOK_SECRET=WEBHOOK_SECRET,
    ))
    bots.append(bot)
    fake_telegram.wait_for_sync(lambda: fake_telegram.webhook, timeout=30,
                                what="the bot to set its webhook")
    assert fake_telegram.webhook == {"url": "https://bot.example.org/telegram/hook",
                                     "secret_token": WEBHOOK_SECRET}
    bot.wait_for_log("Application started")
    hook = f"http://127.0.0.1:{port}/telegram/hook"

    def push(chat_id: int, command: str, headers: dict[str, str]) -> int:
        fake_telegram.send_command(chat_id, command)
        (update,) = fake_telegram.pop_updates()
        return httpx.post(hook, json=update, headers=headers, timeout=10).status_code

    assert push(5001, "/follow cs.LG", {}) == 403
    assert push(5002, "/follow cs.LG",
                {"X-Telegram-Bot-Api-Secret-Token": "not-the-secret"}) == 403
    assert push(5003, "/start", {"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET}) == 200
    fake_telegram.wait_for_sync(lambda: fake_telegram.messages(5003), timeout=15,
                                what="the answer to the update with the right secret")
    assert "/follow" in fake_telegram.messages(5003)[0].text
    assert bot.terminate_and_wait() == 0
    assert not fake_telegram.calls_of("getUpdates"), "webhook mode does not long-poll"
    assert fake_telegram.messages(5001) == fake_telegram.messages(5002) == []
    connection = sqlite3.connect(tmp_path / "data" / "bot.sqlite3")
    try:
        chats = {row[0] for row in connection.execute("SELECT id FROM chats")}
        subscriptions = connection.execute("SELECT COUNT(*) FROM subscriptions").fetchone()[0]
    finally:
        connection.close()
    assert chats == {5003}, "the refused updates changed nothing"
    assert subscriptions == 0


def test_the_webhook_secret_stays_out_of_debug_logs(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    """At DEBUG, PTB logs each Bot API call with its parameters, setWebhook's secret_token too."""
    bot = BotProcess(tmp_path, bot_settings(
        fake_telegram.api_url, fake_telegram.token, fake_arxiv, tmp_path, LOG_LEVEL="DEBUG",
        WEBHOOK_URL="https://bot.example.org/telegram/hook", WEBHOOK_LISTEN="127.0.0.1",
        WEBHOOK_PORT=str(free_port()), WEBHOOK_SECRET=WEBHOOK_SECRET,
    ))
    bots.append(bot)
    fake_telegram.wait_for_sync(lambda: fake_telegram.webhook, timeout=30,
                                what="the bot to set its webhook")
    bot.wait_for_log("Application started")
    assert bot.terminate_and_wait() == 0
    assert fake_telegram.webhook["secret_token"] == WEBHOOK_SECRET
    output = bot.stdout + bot.stderr
    assert "setWebhook" in output, "PTB logged the call"
    assert WEBHOOK_SECRET not in output


async def test_the_bot_starts_when_the_command_menu_cannot_be_set(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from bot.core.clock import ManualClock
    from tests.conftest import make_settings, start_bot, stop_bot

    fake_telegram.fail_next("setMyCommands", 500, times=5)
    with caplog.at_level("WARNING", logger="bot.chat.application"):
        app = await start_bot(make_settings(tmp_path, fake_telegram, fake_arxiv),
                              ManualClock(time.time()))
    try:
        fake_telegram.send_command(4242, "/start")
        await fake_telegram.wait_for_message(4242)
    finally:
        await stop_bot(app)
    warnings = [r.getMessage() for r in caplog.records if "command menu" in r.getMessage()]
    assert len(warnings) == 1, "logged once"
    assert "starting anyway" in warnings[0]


def test_sigterm_lets_sends_in_flight_be_recorded_so_none_repeats(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    chats = range(7101, 7106)
    database = tmp_path / "data" / "bot.sqlite3"
    asyncio.run(seed_followers(database, chats))
    fake_arxiv.set_feed(None, rss_feed([make_paper(n) for n in range(1, 4)], names=("cs",),
                                       announce_date=datetime(2026, 11, 30, 5, tzinfo=UTC)))
    # Telegram is slow but answers: a stop must wait for the answers it can still record.
    fake_telegram.delay_next("sendMessage", 1.5, times=1000)
    bot = BotProcess(tmp_path, bot_settings(fake_telegram.api_url, fake_telegram.token,
                                            fake_arxiv, tmp_path, LOG_LEVEL="INFO"))
    bots.append(bot)
    bot.wait_for_log("poll source=")
    fake_telegram.wait_for_sync(lambda: fake_telegram.delayed_requests > 0, timeout=60,
                                what="sends in flight, waiting on Telegram's answer")
    assert bot.terminate_and_wait(timeout=STOP_TIMEOUT) == 0, bot.stderr
    accepted = len(fake_telegram.all_messages())
    statuses = outbox_statuses(database)
    assert accepted > 0, "some requests were in flight at the stop"
    assert statuses.get("sent", 0) == accepted, (
        f"Telegram accepted {accepted} alerts but {statuses} were recorded: "
        "the unrecorded ones would be sent again at the next start")


SLOW_CHAT, OTHER_CHAT = 8001, 8002


def test_the_process_answers_another_chat_while_paper_waits_on_a_hanging_arxiv(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    paper = make_paper(7)
    fake_arxiv.set_feed(None, rss_feed([], names=("cs",)))
    fake_arxiv.set_api_papers([paper])
    # arXiv hangs on the look-up until the other chat has its answer; then it answers within
    # the interactive timeout, so the chat gets the card (the timeout's "arXiv is slow right
    # now" reply is tested in-process: waiting out 8 s here would only slow the suite).
    release = fake_arxiv.hold_next(path="/api")
    bot = BotProcess(tmp_path, bot_settings(fake_telegram.api_url, fake_telegram.token,
                                            fake_arxiv, tmp_path, LOG_LEVEL="INFO"))
    bots.append(bot)
    fake_telegram.wait_for_sync(lambda: fake_telegram.waiting_polls > 0, timeout=30,
                                what="the bot to start long polling")
    fake_telegram.send_command(SLOW_CHAT, f"/paper {paper.arxiv_id}")
    fake_telegram.wait_for_sync(lambda: fake_arxiv.held == 1, timeout=15,
                                what="the look-up to reach arXiv and hang there")
    fake_telegram.send_command(OTHER_CHAT, "/start")
    (welcome,) = fake_telegram.wait_for_sync(lambda: fake_telegram.messages(OTHER_CHAT),
                                             timeout=15, what="the other chat's answer")
    assert "/follow" in welcome.text
    # At most the look-up's progress note: no card, and no "arXiv is slow" either (a bot
    # serving chats one at a time answers the other chat only after the look-up times out).
    answers = [m.text for m in fake_telegram.messages(SLOW_CHAT) if "Looking up" not in m.text]
    assert answers == [], "the other chat was answered only after the look-up"
    release.set()

    def card() -> list[str]:
        return [m.text for m in fake_telegram.messages(SLOW_CHAT) if paper.title in m.text]

    (text,) = fake_telegram.wait_for_sync(card, timeout=15, what="the card once arXiv answers")
    assert paper.arxiv_id in text
    assert [r.status for r in fake_arxiv.requests if r.path == "/api/query"] == [200]
    assert bot.terminate_and_wait() == 0, bot.stderr


def test_a_stop_that_cannot_finish_is_cut_off_with_exit_1_and_one_line(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    """Telegram answers getMe, then fails every deleteWebhook: PTB retries that start-up step
    without end (`bootstrap_retries=-1`) and no stop signal reaches its loop, so only the
    watchdog can end the process, before a container's 10 s stop timeout kills it."""
    fake_telegram.fail_next("deleteWebhook", 500, times=1000)
    bot = BotProcess(tmp_path, bot_settings(fake_telegram.api_url, fake_telegram.token,
                                            fake_arxiv, tmp_path, LOG_LEVEL="INFO"))
    bots.append(bot)
    fake_telegram.wait_for_sync(lambda: fake_telegram.calls_of("deleteWebhook"), timeout=30,
                                what="the bot's first try to delete the webhook")
    assert bot.process.poll() is None, bot.stderr
    assert bot.terminate_and_wait(timeout=STOP_TIMEOUT + 5) == 1, bot.stderr
    after_the_signal = bot.stderr.split("stopping (SIGTERM)", 1)[1].strip().splitlines()
    assert len(after_the_signal) == 1, after_the_signal
    assert "ERROR bot.runtime: stopping took longer than 9.5 s; exiting now" in after_the_signal[0]
    assert bot.stdout == ""
    connection = sqlite3.connect(tmp_path / "data" / "bot.sqlite3")
    try:
        assert connection.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        connection.close()

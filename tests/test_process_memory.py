"""What a hostile peer can make `python -m bot` hold in memory, measured on the real process.

The bot's resident memory is read from /proc/PID/status: the peak (VmHWM) is reset through
/proc/PID/clear_refs once the bot is warmed up, so the figure is what the attack itself cost.
"""

from __future__ import annotations

import contextlib
import itertools
import select
import socket
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.test_operations import BotProcess, bot_settings, free_port

MB = 1024 * 1024
CHAT = 4242


def memory_kb(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (the peak since start or since the last reset) of a process, in kB."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return {key: int(value.split()[0]) for key, _, value in (line.partition(":")
                                                               for line in lines)
            if key in ("VmRSS", "VmHWM")}


def reset_peak(pid: int) -> int:
    """Reset the process's peak to its current RSS; return that RSS in kB."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")
    return memory_kb(pid)["VmRSS"]


@pytest.fixture
def bots() -> list[BotProcess]:
    started: list[BotProcess] = []
    yield started  # type: ignore[misc]
    for bot in started:
        bot.kill()


def start_polling_bot(folder: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
                      bots: list[BotProcess]) -> BotProcess:
    bot = BotProcess(folder, bot_settings(tg.api_url, tg.token, arxiv, folder,
                                          LOG_LEVEL="INFO", HF_PAPERS_URL="off"))
    bots.append(bot)
    tg.wait_for_sync(lambda: tg.waiting_polls > 0, timeout=60,
                     what="the bot to start long polling")
    return bot


def upload_and_wait(tg: FakeTelegram, **kwargs: object) -> str:
    """A user sends a .bib file; the text of the bot's answer."""
    before = len(tg.messages(CHAT))
    tg.send_document(CHAT, b"@misc{a, eprint = {2211.00593}}\n", "library.bib",
                     **kwargs)  # type: ignore[arg-type]
    tg.wait_for_sync(lambda: len(tg.messages(CHAT)) > before, timeout=120,
                     what="the bot's answer to the upload")
    return tg.messages(CHAT)[before].text


@pytest.mark.parametrize("chunked", [False, True], ids=["with-its-length", "chunked"])
def test_an_upload_that_lies_about_its_size_is_refused_within_the_limit(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess], chunked: bool,
) -> None:
    """getFile says 1,000 bytes, the download streams 200 MB: with a true Content-Length (the
    bot refuses before reading) or in chunks without one (the bot stops at the limit)."""
    bot = start_polling_bot(tmp_path, fake_telegram, fake_arxiv, bots)
    lie = {"file_size": 1000, "get_file_size": 1000, "chunked": chunked}
    # Warm up the path the attack takes (the HTTP client, the reply) with a smaller liar.
    warm_up = upload_and_wait(fake_telegram, **lie, served_size=3 * MB)
    assert "too large" in warm_up, warm_up

    start_kb = reset_peak(bot.process.pid)
    answer = upload_and_wait(fake_telegram, **lie, served_size=200 * MB)
    peak_kb = memory_kb(bot.process.pid)["VmHWM"]

    assert "too large" in answer and "1 MB" in answer, answer
    grown_mb = (peak_kb - start_kb) / 1024
    print(f"upload of 200 MB claiming 1,000 bytes ({'chunked' if chunked else 'with length'}): "
          f"RSS {start_kb / 1024:.1f} MB at start, peak {peak_kb / 1024:.1f} MB "
          f"(+{grown_mb:.1f} MB)")
    assert grown_mb < 30, f"the bot's peak memory grew by {grown_mb:.1f} MB"
    assert "Traceback" not in bot.stderr
    assert fake_telegram.server_errors == []
    assert bot.terminate_and_wait() == 0


WEBHOOK_SECRET = "hook-secret_0123456789abcdef"
LOG_TIME = "%Y-%m-%d %H:%M:%S,%f"  # the log line's asctime
HOOK_PATH = "/telegram/hook"
BODY_BYTES = 50 * MB


@dataclass
class Sent:
    """What one unauthenticated POST got: its status (None: closed unanswered), bytes sent."""

    status: int | None = None
    sent: int = 0


def post_a_large_body_without_the_secret(port: int, source: str) -> Sent:
    """POST 50 MB of JSON-ish bytes from `source`, streamed (never held), reading the answer as
    soon as one comes; stop sending once answered or closed."""
    result = Sent()
    chunk = b"[" + b"0," * (32 * 1024) + b"0]"
    with socket.create_connection(("127.0.0.1", port), timeout=30,
                                  source_address=(source, 0)) as sock:
        sock.sendall((f"POST {HOOK_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
                      f"Content-Type: application/json\r\nContent-Length: {BODY_BYTES}\r\n\r\n"
                      ).encode())
        answer = b""
        with contextlib.suppress(OSError):  # reset by the server once it has answered
            while result.sent < BODY_BYTES:
                readable, writable, _ = select.select([sock], [sock], [], 30)
                if readable:
                    data = sock.recv(65536)
                    answer += data
                    if not data or b"\r\n" in answer:
                        break
                if writable:
                    result.sent += sock.send(chunk[:BODY_BYTES - result.sent])
            while b"\r\n" not in answer and (data := sock.recv(65536)):
                answer += data
    if answer.startswith(b"HTTP/1.1 "):
        result.status = int(answer.split()[1])
    return result


def test_six_large_bodies_without_the_secret_are_refused_before_they_are_read(
    tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer,
    bots: list[BotProcess],
) -> None:
    port = free_port()
    bot = BotProcess(tmp_path, bot_settings(
        fake_telegram.api_url, fake_telegram.token, fake_arxiv, tmp_path, LOG_LEVEL="DEBUG",
        HF_PAPERS_URL="off", WEBHOOK_URL=f"https://bot.example.org{HOOK_PATH}",
        WEBHOOK_LISTEN="127.0.0.1", WEBHOOK_PORT=str(port), WEBHOOK_SECRET=WEBHOOK_SECRET))
    bots.append(bot)
    bot.wait_for_log("Application started", timeout=60)
    # Warm up: one refused request before the measure.
    assert post_a_large_body_without_the_secret(port, "127.0.0.1").status in (403, None)

    start_kb = reset_peak(bot.process.pid)
    sources = ["127.0.0.1", "127.0.0.2"] * 3  # two source addresses, three requests each
    with ThreadPoolExecutor(len(sources)) as pool:
        results = list(pool.map(post_a_large_body_without_the_secret, [port] * 6, sources))
    peak_kb = memory_kb(bot.process.pid)["VmHWM"]

    grown_mb = (peak_kb - start_kb) / 1024
    print(f"six 50 MB bodies without the secret: RSS {start_kb / 1024:.1f} MB at start, "
          f"peak {peak_kb / 1024:.1f} MB (+{grown_mb:.1f} MB); sent before the refusal "
          f"{[round(r.sent / MB, 1) for r in results]} MB; answers {[r.status for r in results]}")
    assert grown_mb < 10, f"the bot's peak memory grew by {grown_mb:.1f} MB"
    assert all(r.status in (403, None) for r in results), results
    assert all(r.sent < BODY_BYTES for r in results), "no body was read to its end"

    # Telegram's own update, with the secret, still gets through.
    fake_telegram.send_command(5003, "/start")
    (update,) = fake_telegram.pop_updates()
    answer = httpx.post(f"http://127.0.0.1:{port}{HOOK_PATH}", json=update, timeout=10,
                        headers={"X-Telegram-Bot-Api-Secret-Token": WEBHOOK_SECRET})
    assert answer.status_code == 200
    fake_telegram.wait_for_sync(lambda: fake_telegram.messages(5003), timeout=30,
                                what="the answer to the update with the secret")
    assert bot.terminate_and_wait() == 0

    log = bot.stderr
    refusals: dict[str, list[datetime]] = {}
    for line in log.splitlines():
        if "webhook: refused" in line:
            source = line.split(" from ")[1].split()[0]
            refusals.setdefault(source, []).append(datetime.strptime(line[:23], LOG_TIME))
    assert set(refusals) == {"127.0.0.1", "127.0.0.2"}, log
    for source, times in refusals.items():  # seven requests in all: one line a minute each
        gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
        assert all(gap >= timedelta(seconds=60) for gap in gaps), (source, times)
    assert "Traceback" not in log
    assert WEBHOOK_SECRET not in log

"""What a hostile peer can make `python -m bot` hold in memory, measured on the real process.

The bot's resident memory is read from /proc/PID/status: the peak (VmHWM) is reset through
/proc/PID/clear_refs once the bot is warmed up, so the figure is what the attack itself cost.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.test_operations import BotProcess, bot_settings

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

"""A scheduled job's failure is logged as the job's, once, by its name, and a digest cut short
is finished at the next check, not the next day; a job that outlasts its interval skips its
turns without a warning for each, and many digests cut short are one line."""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from bot.jobs.routine import REPEATING, digest_job, tracked
from bot.storage.errors import DatabaseError
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage

CHAT = 7401
SHANGHAI = ZoneInfo("Asia/Shanghai")


async def test_a_failing_job_is_logged_by_its_name_once_with_one_traceback(
        harness: Harness, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    chats = harness.services.storage.chats
    healthy = chats.in_digest_mode

    async def disk_full() -> list[object]:
        raise DatabaseError("database or disk is full")

    monkeypatch.setattr(chats, "in_digest_mode", disk_full)
    job = tracked(harness.services, digest_job)  # as bot/jobs/schedule.py schedules it
    jobs = harness.app.job_queue

    async def run_once(records: int) -> None:
        jobs.run_once(job, when=0, name="digests")
        await harness.tg.wait_for(lambda: len(job_records()) >= records,
                                  what=f"{records} log record(s) of the digest job")

    def job_records() -> list[logging.LogRecord]:
        return [r for r in caplog.records if "job digests" in r.getMessage()]

    with caplog.at_level(logging.INFO):
        await run_once(1)
        await run_once(2)
        monkeypatch.setattr(chats, "in_digest_mode", healthy)
        await run_once(3)
    first, again, recovered = job_records()
    assert (first.name, first.levelname) == ("bot.jobs", "ERROR")
    assert first.getMessage() == "job digests failed: DatabaseError: database or disk is full"
    assert first.exc_info is not None, "the first failure has its traceback"
    assert again.getMessage() == "job digests failed again: DatabaseError: database or disk is full"
    assert again.exc_info is None, "the same failure again is one line"
    assert recovered.getMessage() == "job digests runs again"
    assert not [r for r in caplog.records if "handling an update" in r.getMessage()], \
        "a job is not an update"
    assert sum(r.exc_info is not None for r in caplog.records) == 1, "one traceback in all"


def papers_in(messages: list[SentMessage]) -> list[int]:
    """The numbers of the papers the messages list, in order (titles end "part N")."""
    return [int(n) for m in messages for n in re.findall(r"long-context models, part (\d+)",
                                                          m.text)]


async def test_a_digest_cut_short_by_telegram_is_finished_at_the_next_check(
        three_message_digests: Harness) -> None:
    harness = three_message_digests  # a digest of several messages, that one can cut short
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    await harness.ask(CHAT, "/follow cs.LG")
    await harness.ask(CHAT, "/tz Asia/Shanghai")
    await harness.ask(CHAT, "/digest 08:00")
    before = len(harness.tg.messages(CHAT))
    harness.serve_feed([make_paper(n) for n in range(1, 41)])
    await harness.poll()
    # Telegram takes the digest's first part and fails the second (a passing fault).
    harness.tg.fail_next("sendMessage", 502, chat_id=CHAT, after=1)
    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    await harness.send_due_digests()
    first_part = papers_in(harness.tg.messages(CHAT)[before:])
    assert 0 < len(first_part) < 40, "one part went, the rest waited"

    harness.clock.advance(30)  # the digest job's next check, past the failed send's backoff
    await harness.send_due_digests()
    await harness.settle()
    assert sorted(papers_in(harness.tg.messages(CHAT)[before:])) == list(range(1, 41)), \
        "every paper once, the same day"
    chat = await harness.services.storage.chats.get(CHAT)
    assert chat.last_digest_at == harness.clock.now(), "finished: the day is marked"
    sent = len(harness.tg.messages(CHAT))
    harness.clock.advance(30)
    assert await harness.send_due_digests() == 0, "once a day"
    assert len(harness.tg.messages(CHAT)) == sent


async def test_a_job_outlasting_its_interval_skips_its_turns_without_a_warning_each(
        harness: Harness, caplog: pytest.LogCaptureFixture) -> None:
    """An evening's drain runs for many minutes on a 2 s interval: APScheduler warned "skipped:
    maximum number of running instances reached" at every turn (443 lines in 18 minutes of
    bench/evening.py at 10,000 chats)."""
    running, most, runs = 0, 0, 0
    done = asyncio.Event()

    async def slow_drain(services: object, context: object) -> None:
        nonlocal running, most, runs
        running += 1
        most = max(most, running)
        await asyncio.sleep(0.3)
        running -= 1
        runs += 1
        if runs == 3:
            done.set()

    with caplog.at_level(logging.INFO):
        job = harness.app.job_queue.run_repeating(
            tracked(harness.services, slow_drain, one_at_a_time=True), interval=0.05, first=0,
            name="slow-drain", job_kwargs=REPEATING)
        try:
            await asyncio.wait_for(done.wait(), 30)
        finally:
            job.schedule_removal()
    assert most == 1, "never two at once"
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], \
        [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


async def test_many_digests_cut_short_are_one_log_line(
        three_message_digests: Harness, caplog: pytest.LogCaptureFixture) -> None:
    harness = three_message_digests  # digests of several messages, that one can cut short
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    chats = [CHAT + n for n in range(1, 4)]
    for chat in chats:
        await harness.ask(chat, "/follow cs.LG")
        await harness.ask(chat, "/tz Asia/Shanghai")
        await harness.ask(chat, "/digest 08:00")
    harness.serve_feed([make_paper(n) for n in range(1, 41)])
    await harness.poll()
    for chat in chats:
        harness.tg.fail_next("sendMessage", 502, chat_id=chat, after=1)
    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    with caplog.at_level(logging.INFO):
        await harness.send_due_digests()
    lines = [r.getMessage() for r in caplog.records if "cut short" in r.getMessage()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("3 digest(s) cut short with ")

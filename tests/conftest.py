"""The end-to-end harness: the real Application against fake Telegram and fake arXiv servers."""

from __future__ import annotations

import asyncio
import compileall
import concurrent.futures
import contextlib
import dataclasses
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, settings
from telegram.ext import Application

from bot.arxiv.client import ArxivClient
from bot.chat.application import ALLOWED_UPDATES, build_application
from bot.config import Settings, load_settings
from bot.core.clock import Clock, ManualClock
from bot.core.models import AnnounceType, Paper
from bot.delivery.pacing import Pacer
from bot.runtime import build_bot
from bot.services.budget import UNLIMITED, BudgetPolicy
from bot.services.container import Services
from bot.services.daily import queue_for_you, send_due_digests
from bot.services.ingest import Pipeline, PollReport
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.loopback import take_handler_errors
from tests.fakes.telegram_server import CallbackAnswer, FakeTelegram, SentMessage
from tests.postgres_server import (
    PostgresServer,
    ServerMissing,
    shared_folder,
    start_shared_server,
    stop_shared_server,
)

# Property tests check what a function returns, not how fast: on a busy 2-core machine a
# 200 ms deadline or a slow-generation health check fails for reasons that are not bugs.
settings.register_profile("shared-machine", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("shared-machine")

TOKEN = "123456:TEST-token_abcdefghijklmnopqrstuvwxyz"


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for `-n auto` (pyproject's addopts): two per core for the whole suite, whose
    end-to-end tests mostly wait on servers, timers and subprocesses; none (one process) for a
    run naming files or tests, where starting workers, each importing everything, costs more
    than it saves. `-n N` on the command line overrides both."""
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return 0
    return min(8, 2 * len(os.sched_getaffinity(0)))


def pytest_configure(config: pytest.Config) -> None:
    """The controller names the run's PostgreSQL folder before it starts any worker, so that
    every worker shares one server (started only if a test asks for it), and compiles the bot
    for them."""
    if not hasattr(config, "workerinput"):
        shared_folder()
        # Every worker and each of the suite's hundred-odd `python -m bot` processes imports the
        # bot; without bytecode on disk (a clean clone, or PYTHONDONTWRITEBYTECODE set) each
        # compiled it all again, about 0.3 s of CPU a process. Compiled once here (0.4 s), they
        # all read it; py_compile writes even where PYTHONDONTWRITEBYTECODE is set.
        compileall.compile_dir(Path(__file__).resolve().parents[1] / "bot", quiet=1)


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        stop_shared_server()


@pytest.fixture(scope="session")
def postgres_server() -> PostgresServer:
    """The run's PostgreSQL server. Missing, it fails the test in CI (`CI=true`) and skips it
    elsewhere, naming the package to install."""
    try:
        return start_shared_server()
    except ServerMissing as exc:
        if os.environ.get("CI") == "true":
            pytest.fail(f"{exc}: CI needs the server")
        pytest.skip(str(exc))


ENGINES = ("sqlite", "postgresql")
# A test (or module, as `pytestmark`) marked so runs its `harness` on each engine in turn.
ON_BOTH_ENGINES = pytest.mark.parametrize("harness", ENGINES, indirect=True)


@pytest.fixture(params=ENGINES)
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A new, empty database on each engine in turn, as its `DATABASE_URL`."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'data' / 'bot.sqlite3'}"
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    url = server.new_database()
    yield url
    server.drop_database(url)


class RecordingSleep:
    """Stands in for asyncio.sleep in backoff so retries don't wait; remembers each delay."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


class InstantTime:
    """A pacer's clock where sleeping only moves the clock (and is remembered): for one chat's
    sends, one after another."""

    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)


@pytest.fixture(autouse=True)
def fakes_stay_sound() -> Iterator[None]:
    """Fails the test if any fake server's handler raised while it ran (a bug in the fake
    would otherwise pass as a 500 or a dropped connection, which the bot retries past)."""
    yield
    if errors := take_handler_errors():
        pytest.fail("a fake server broke while the test ran:\n" + "\n".join(errors),
                    pytrace=False)


@pytest.fixture
def timedelta_retry_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """PTB gives a 429's retry_after as a timedelta (its coming default; the int warns)."""
    monkeypatch.setenv("PTB_TIMEDELTA", "true")


@dataclasses.dataclass
class Harness:
    """A running bot and the fakes it talks to, with the moves a test needs."""

    tg: FakeTelegram
    arxiv: FakeArxivServer
    app: Application
    clock: ManualClock
    settings: Settings

    @property
    def services(self) -> Services:
        return self.app.bot_data["services"]

    async def ask(self, chat_id: int, command: str, *, timeout: float = 10.0,
                  **kwargs: object) -> SentMessage:
        """Send a command (or text) and return the bot's next message in that chat."""
        before = len(self.tg.messages(chat_id))
        if command.startswith("/"):
            self.tg.send_command(chat_id, command, **kwargs)
        else:
            self.tg.send_text(chat_id, command, **kwargs)
        messages = await self.tg.wait_for(
            lambda: len(found := self.tg.messages(chat_id)) > before and found,
            timeout, what=f"a reply to {command[:60]!r} in chat {chat_id}",
        )
        return messages[before]

    async def press(self, chat_id: int, message_id: int, data: str, **kwargs: object
                    ) -> CallbackAnswer:
        """Press a button of a bot message and return the bot's answer to the press."""
        query_id = self.tg.press_button(chat_id, message_id, data, **kwargs)
        answers = await self.tg.wait_for(
            lambda: [a for a in self.tg.callback_answers if a.callback_query_id == query_id],
            what=f"an answer to the press of {data!r}",
        )
        # Let the edit that follows an answer land too.
        await self.settle()
        return answers[0]

    async def forge(self, chat_id: int, message_id: int, data: str, **kwargs: object
                    ) -> CallbackAnswer:
        """A forged press (any data) on a real bot message; returns the bot's answer."""
        query_id = self.tg.forge_press(chat_id, message_id, data, **kwargs)
        answers = await self.tg.wait_for(
            lambda: [a for a in self.tg.callback_answers if a.callback_query_id == query_id],
            what=f"an answer to the forged press of {data!r}",
        )
        await self.settle()
        return answers[0]

    async def settle(self) -> None:
        """Wait until the bot has no update in hand and no request in flight."""
        await self.tg.wait_for(
            lambda: self.tg.pending_updates == 0 and self.app.update_queue.empty(),
            what="the bot to take every update",
        )
        # One more round trip guarantees every update fetched so far is in a handler's hands.
        before = len(self.tg.calls)
        # A group, where plain text gets no reply, so the ping adds no message of its own.
        self.tg.send_text(-999_999_999, "ping from the harness", title="harness")
        await self.tg.wait_for(lambda: len(self.tg.calls) > before and
                               self.tg.pending_updates == 0, what="the settling round trip")
        # Chats are handled side by side: the ping's answer does not mean another chat's
        # updates are done, so wait until no update is running or waiting for its turn.
        processor = self.app.update_processor
        await self.tg.wait_for(lambda: not getattr(processor, "running_tasks", ()),
                               what="every update to be handled")

    async def poll(self) -> PollReport:
        """One scheduled poll, as the job runs it: ingest, match, queue, deliver."""
        report = await self.services.pipeline.poll(keep_alerts=True)
        await self.services.sender.drain()
        return report

    async def drain(self) -> None:
        await self.services.sender.drain()

    def rows(self, sql: str, params: Sequence[object] = ()) -> list[tuple]:
        """Rows as last committed, read from the database itself (the SQLite file, or the
        PostgreSQL server on its own connection): what a test checks beneath the
        repositories. `?` placeholders on both."""
        if self.settings.database_url is not None:
            return postgres_rows(self.settings.database_url, sql, params)
        with self.reader() as rows:
            return rows(sql, params)

    @contextlib.contextmanager
    def reader(self) -> Iterator[Callable[..., list[tuple]]]:
        """`rows` for many queries in a row: on SQLite one read-only connection serves them all
        (each query still reads what was last committed: the connection holds no transaction
        open between them); on PostgreSQL each query is `rows`. Opening a SQLite connection
        reads the whole schema, about 1 ms: a snapshot of every table one connection per query
        cost 50 ms of CPU, one connection for the lot 3 ms."""
        if self.settings.database_url is not None:
            yield self.rows
            return
        uri = f"{self.settings.database_path.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as db:
            yield lambda sql, params=(): db.execute(sql, params).fetchall()

    @contextlib.asynccontextmanager
    async def backoff_recorded(self) -> AsyncIterator[RecordingSleep]:
        """Polls (the job's too) use an arXiv client whose retries record their backoff
        instead of waiting it out (seconds each, doubling)."""
        sleep = RecordingSleep()
        arxiv = ArxivClient(rss_url=self.settings.arxiv_rss_url,
                            api_url=self.settings.arxiv_api_url,
                            listing_url=self.settings.arxiv_listing_url, min_interval=0,
                            sleep=sleep)
        services = self.services
        assert services.storage is not None and services.subscriptions is not None
        services.pipeline = Pipeline(self.settings, services.storage, arxiv,
                                     services.subscriptions, self.clock)
        try:
            yield sleep
        finally:
            await arxiv.aclose()

    async def send_due_digests(self) -> int:
        return await send_due_digests(self.services.storage, self.services.sender,
                                      self.clock.now())

    async def send_for_you(self) -> int:
        """A For-you round as the job runs it: queue what is due, deliver; returns how many
        For-you messages went out."""
        await queue_for_you(self.services.storage, self.services.ranker, self.clock.now())
        return (await self.services.sender.drain()).for_you

    def serve_feed(self, papers: list[Paper], names: tuple[str, ...] = ("cs",),
                   announce_date: datetime | None = None) -> None:
        """Make the fake arXiv announce `papers` on every feed URL."""
        self.arxiv.set_feed(None, rss_feed(
            papers, names=names, announce_date=announce_date or datetime.now(UTC)))


def postgres_rows(url: str, sql: str, params: Sequence[object] = ()) -> list[tuple]:
    """A query's rows from a PostgreSQL database, from sync code (or beside a running loop)."""
    import asyncpg

    from bot.storage.postgres.db import placeholders

    query, args = placeholders(sql, params)

    async def fetch() -> list[tuple]:
        conn = await asyncpg.connect(url)
        try:
            return [tuple(row) for row in await conn.fetch(query, *args)]
        finally:
            await conn.close()

    with concurrent.futures.ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, fetch()).result()


def make_settings(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
                  **overrides: str) -> Settings:
    env = {
        "TELEGRAM_BOT_TOKEN": tg.token,
        "TELEGRAM_API_URL": tg.api_url,
        "ARXIV_RSS_URL": arxiv.rss_url,
        "ARXIV_API_URL": arxiv.api_url,
        "ARXIV_LISTING_URL": arxiv.listing_url,
        "DATABASE_PATH": str(tmp_path / "data" / "bot.sqlite3"),
        "ARXIV_MIN_INTERVAL_SECONDS": "0",
        "ADMIN_CHAT_IDS": "1",
        "HF_PAPERS_URL": "off",  # nothing may reach the internet; tests that want it pass a fake
        **overrides,
    }
    return load_settings(env, env_file=None)


@pytest.fixture
def fake_telegram() -> Iterator[FakeTelegram]:
    tg = FakeTelegram(TOKEN).start()
    yield tg
    tg.stop()


@pytest.fixture
def fake_arxiv() -> Iterator[FakeArxivServer]:
    server = FakeArxivServer().start()
    yield server
    server.stop()


async def start_bot(settings: Settings, clock: Clock, pacer: Pacer | None = None,
                    budget: BudgetPolicy = UNLIMITED) -> Application:
    """The bot, started. Scripted chats type far faster than any person, so the command budget
    is off unless a test passes one (the budget's own tests pass the real `BudgetPolicy()`)."""
    return await _started(build_application(
        settings, clock, pacer=pacer or Pacer(rate=1000, private_interval=0, group_interval=0),
        budget=budget))


async def start_bot_with_jobs(settings: Settings, clock: Clock) -> Application:
    """The whole bot as `python -m bot` builds it (`runtime.build_bot`): the chat edge and its
    scheduled jobs, started and polling the fake Telegram."""
    return await _started(build_bot(settings, clock, pacer=Pacer(
        rate=1000, private_interval=0, group_interval=0)))


async def _started(app: Application) -> Application:
    """`app` initialised, its services opened (post_init), started and polling the fake
    Telegram for the updates the bot asks for."""
    await app.initialize()
    await app.post_init(app)
    await app.start()
    await app.updater.start_polling(poll_interval=0, timeout=1, allowed_updates=ALLOWED_UPDATES)
    return app


SHANGHAI = ZoneInfo("Asia/Shanghai")


async def digest_at_eight_in_shanghai(harness: Harness, chat_id: int) -> None:
    """At 20:00 on 1 December in Shanghai, the chat follows cs.LG with one daily digest at
    08:00 Shanghai time."""
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    await harness.ask(chat_id, "/follow cs.LG")
    await harness.ask(chat_id, "/tz Asia/Shanghai")
    await harness.ask(chat_id, "/digest 08:00")


async def stop_bot(app: Application) -> None:
    if app.updater.running:
        await app.updater.stop()
    if app.running:
        await app.stop()
    await app.post_shutdown(app)
    await app.shutdown()


@pytest.fixture
async def harness(request: pytest.FixtureRequest, tmp_path: Path, fake_telegram: FakeTelegram,
                  fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    """The bot on SQLite, or on the engine `ON_BOTH_ENGINES` gives it."""
    clock = ManualClock(time.time())
    overrides: dict[str, str] = {}
    server: PostgresServer | None = None
    if getattr(request, "param", "sqlite") == "postgresql":
        server = request.getfixturevalue("postgres_server")
        overrides["DATABASE_URL"] = server.new_database()
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, **overrides)
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)
    if server is not None:
        server.drop_database(overrides["DATABASE_URL"])


@contextlib.asynccontextmanager
async def harness_with(tmp_path: Path, tg: FakeTelegram, arxiv: FakeArxivServer,
                       **overrides: str) -> AsyncIterator[Harness]:
    """A harness whose bot runs with these settings (environment variables) changed."""
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, tg, arxiv, **overrides)
    app = await start_bot(settings, clock)
    try:
        yield Harness(tg, arxiv, app, clock, settings)
    finally:
        await stop_bot(app)


@pytest.fixture
async def three_message_digests(tmp_path: Path, fake_telegram: FakeTelegram,
                                fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    """The bot with DIGEST_MESSAGES=3: a digest's first delivery takes up to three messages,
    as all did before one became the default."""
    async with harness_with(tmp_path, fake_telegram, fake_arxiv, DIGEST_MESSAGES="3") as bot:
        yield bot


def digest_entry_ids(messages: Sequence[SentMessage]) -> list[str]:
    """The versioned ids digest messages list, in order, from their save-by-number buttons."""
    return [data.split(":")[2] for m in messages for data in m.callback_data
            if data.startswith("v1:s:")]


def make_paper(number: int, *, version: int = 1, title: str | None = None,
               authors: tuple[str, ...] = ("Eiko Yoneki", "Dirk Wübben"),
               categories: tuple[str, ...] = ("cs.LG",), abstract: str | None = None,
               announce_type: AnnounceType | None = None, **changes: object) -> Paper:
    """A realistic paper numbered `number` (id 2611.1NNNN)."""
    return Paper(
        arxiv_id=f"2611.{10000 + number}",
        version=version,
        title=title or f"Sparse attention for long-context models, part {number}",
        authors=authors,
        abstract=abstract or (
            "We study how sparse attention patterns scale with context length and show that "
            "a learned router recovers dense quality at a fraction of the cost. " * 3
        ).strip(),
        categories=categories,
        announce_type=announce_type or (AnnounceType.NEW if version == 1
                                        else AnnounceType.REPLACE),
        **changes,  # type: ignore[arg-type]
    )

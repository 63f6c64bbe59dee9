"""A leader and a standby on one PostgreSQL database, as two hosts run them.

Each bot is `python -m bot run` in a folder of its own (no file is shared: the server's lock is)
with its own fake Telegram and fake arXiv, so that every request says which bot made it. The
fakes share the test process's clock, so the order of two bots' requests can be compared.
Every alert goes to a chat of its own: each chat must get its alert, the repeats (Telegram has
no idempotency key) are at most the send window, and the standby sends nothing before the
leader has stopped.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.core.clock import SystemClock
from bot.query.service import SubscriptionService
from bot.runtime import LOST_LEADERSHIP
from bot.storage import open_storage
from tests.conftest import TOKEN, make_paper, postgres_rows
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed
from tests.fakes.telegram_server import FakeTelegram
from tests.postgres_server import PostgresServer
from tests.test_crash_delivery import arrived, start_bot, write_env

ROOT = Path(__file__).resolve().parents[1]
FIRST_CHAT = 9001  # chat FIRST_CHAT + n - 1 follows paper n
WINDOW = 10
TAKEOVER = 30.0  # the bound: a standby takes over within 30 s of the leader's death


async def seed(url: str, alerts: int) -> None:
    storage = await open_storage(url)
    try:
        clock = SystemClock()
        subscriptions = SubscriptionService(storage, clock)
        for n in range(1, alerts + 1):
            chat_id = FIRST_CHAT + n - 1
            await storage.chats.record(chat_id, "private", f"chat {chat_id}", "en", clock.now())
            assert (await subscriptions.follow(chat_id, f'ti:"part {n}"')).status == "added"
    finally:
        await storage.close()


@dataclass
class Host:
    """One bot's host: its folder, fakes and process."""

    name: str
    folder: Path
    telegram: FakeTelegram
    arxiv: FakeArxivServer
    process: subprocess.Popen[str] | None = None

    def start(self) -> subprocess.Popen[str]:
        self.process = start_bot(self.folder, self.name, "-m", "bot", "run")
        return self.process

    def sends(self) -> list[float]:
        """When this host's Telegram took each sendMessage (the test process's clock)."""
        return [call.at for call in self.telegram.calls_of("sendMessage", ok_only=True)]

    def log(self) -> str:
        return (self.folder / f"{self.name}.err").read_text()

    def health(self) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("TELEGRAM_", "ARXIV_", "DATABASE_", "LOG_", "INSTANCE_"))}
        env["PYTHONPATH"] = str(ROOT)
        return subprocess.run([sys.executable, "-m", "bot", "health"], cwd=self.folder,
                              env=env, capture_output=True, text=True, timeout=60)

    def stop(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def two_hosts(tmp_path: Path, url: str, alerts: int, *more: str) -> Iterator[tuple[Host, Host]]:
    """Hosts a and b on one database, each with its fakes announcing the same papers; `more`:
    lines for both .env files."""
    papers = [make_paper(n) for n in range(1, alerts + 1)]
    feed = rss_feed(papers, names=("cs",), announce_date=datetime.now(UTC))
    hosts = []
    try:
        for name in ("a", "b"):
            folder = tmp_path / name
            folder.mkdir()
            host = Host(name, folder, FakeTelegram(TOKEN).start(), FakeArxivServer().start())
            hosts.append(host)
            host.arxiv.set_feed(None, feed)
            write_env(folder, host.telegram, host.arxiv, url, WINDOW, f"INSTANCE_NAME={name}",
                      *more)
        asyncio.run(seed(url, alerts))
        yield hosts[0], hosts[1]
    finally:
        for host in hosts:
            host.stop()
        for host in hosts:
            host.telegram.stop()
            host.arxiv.stop()


def delivered(hosts: tuple[Host, ...], alerts: int) -> dict[int, list[str]]:
    """Each chat's alerts, as received by either host's Telegram, repeats included."""
    return {n: [i for host in hosts for i in arrived(host.telegram, FIRST_CHAT + n - 1)]
            for n in range(1, alerts + 1)}


def claimed(url: str) -> int:
    [(count,)] = postgres_rows(url, "SELECT COUNT(*) FROM outbox WHERE status = 'sending'")
    return count


def wait_for_standby(host: Host, timeout: float = 60) -> None:
    host.telegram.wait_for_sync(lambda: "standing by" in host.log(), timeout=timeout,
                                what=f"bot {host.name} to stand by")


def lead_then_stand_by(a: Host, b: Host) -> None:
    """a leads and sends the 3 alerts; then b starts and stands by."""
    a.start()
    a.telegram.wait_for_sync(lambda: len(a.sends()) == 3, timeout=60,
                             what="the leader to send the 3 alerts")
    b.start()
    wait_for_standby(b)


def test_a_standby_takes_over_from_a_killed_leader_and_every_alert_arrives(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    alerts = 200
    url = postgres_server.new_database()
    with two_hosts(tmp_path, url, alerts) as (a, b):
        a.telegram.set_round_trip("sendMessage", 0.1)
        b.telegram.set_round_trip("sendMessage", 0.1)
        a.start()
        a.telegram.wait_for_sync(lambda: a.telegram.waiting_polls > 0, timeout=60,
                                 what="bot a to lead and long-poll")
        b.start()
        wait_for_standby(b)
        a.telegram.wait_for_sync(lambda: len(a.sends()) >= 50, timeout=60,
                                 what="50 alerts to go out")
        assert a.process is not None
        a.process.send_signal(signal.SIGKILL)
        killed_at = time.time()  # the fakes' clock: only printed, the bound is the timeout
        a.process.wait(timeout=10)
        before = len(a.sends())
        uncertain = claimed(url)
        assert before < alerts, "the kill came in the middle of the drain"
        assert uncertain <= WINDOW

        b.telegram.wait_for_sync(lambda: b.sends(), timeout=TAKEOVER,
                                 what="the standby's first send after the leader's death")
        b.telegram.wait_for_sync(
            lambda: all(delivered((a, b), alerts).values()), timeout=120,
            what="every alert to arrive")
        final = delivered((a, b), alerts)
        papers = [make_paper(n) for n in range(1, alerts + 1)]
        for n, ids in final.items():
            assert set(ids) == {papers[n - 1].versioned_id}, f"chat {FIRST_CHAT + n - 1}: {ids}"
        repeats = sum(len(ids) - 1 for ids in final.values())
        assert repeats <= uncertain <= WINDOW, "only rows left claimed can repeat"
        assert max(a.sends()) < min(b.sends())
        assert "term 2" in b.log(), b.log()
        b.telegram.wait_for_sync(lambda: claimed(url) == 0, timeout=30,
                                 what="no row to stay claimed")
        print(f"\nleader killed after {before} of {alerts} alerts; {uncertain} rows claimed, "
              f"{repeats} repeated; the standby sent {len(b.sends())}, the first "
              f"{min(b.sends()) - killed_at:.1f} s after the kill")


@pytest.mark.parametrize("cut", ["the lock's", "every"])
def test_a_leader_whose_database_connection_is_cut_stops_sending_before_the_standby_starts(
        tmp_path: Path, postgres_server: PostgresServer, cut: str) -> None:
    """The lock's connection alone is ended: the leader's data connections still work, so only
    its fencing (the lease, the term its claims carry) keeps it from sending on. Or every
    connection of the leader is ended, as a database restart or a network cut would. Its
    Telegram is slow enough that without fencing it would still be sending when the standby
    starts."""
    alerts = 120
    url = postgres_server.new_database()
    with two_hosts(tmp_path, url, alerts, "SEND_WINDOW=2") as (a, b):
        a.telegram.set_round_trip("sendMessage", 0.5)
        b.telegram.set_round_trip("sendMessage", 0.02)
        a.start()
        a.telegram.wait_for_sync(lambda: a.telegram.waiting_polls > 0, timeout=60,
                                 what="bot a to lead and long-poll")
        b.start()
        wait_for_standby(b)
        a.telegram.wait_for_sync(lambda: len(a.sends()) >= 10, timeout=60,
                                 what="10 alerts to go out")
        assert a.process is not None
        # The lock's connection is named "arxiv-alert-bot pid N on HOST", the data ones the
        # same with " (data)".
        pid = a.process.pid
        if cut == "every":
            where, value = "application_name LIKE ?", f"arxiv-alert-bot pid {pid} %"
        else:
            where, value = ("application_name = ?",
                            f"arxiv-alert-bot pid {pid} on {os.uname().nodename}"[:63])
        ended = postgres_rows(
            url, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE {where}", (value,))
        if cut == "every":
            assert len(ended) > 1 and all(row == (True,) for row in ended), ended
        else:
            assert ended == [(True,)], "the leader's lock connection was found and ended"
        cut_at = len(a.sends())

        b.telegram.wait_for_sync(lambda: all(delivered((a, b), alerts).values()),
                                 timeout=120, what="every alert to arrive")
        assert max(a.sends()) < min(b.sends()), "the old leader sent after the new one began"
        a.process.wait(timeout=TAKEOVER)
        assert a.process.returncode == LOST_LEADERSHIP, a.log()
        assert "no longer the leader" in a.log()
        assert len(a.sends()) - cut_at <= 2, "at most its window was in flight when cut"
        final = delivered((a, b), alerts)
        repeats = sum(len(ids) - 1 for ids in final.values())
        assert repeats <= 2, final
        assert len(a.sends()) < alerts - 10, "the old leader stopped long before the end"


def test_a_frozen_leaders_stale_lock_is_cut_off_and_the_leader_stops_when_it_wakes(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    """A host gone without the server noticing (here: the leader frozen by SIGSTOP, its
    connections still open) keeps its lock; the standby ends that connection two leases after
    the last renewal, takes over, and the leader, woken, finds it no longer leads and exits
    without sending."""
    url = postgres_server.new_database()
    with two_hosts(tmp_path, url, 3, "LEADER_LEASE_SECONDS=3") as (a, b):
        lead_then_stand_by(a, b)
        assert a.process is not None
        a.process.send_signal(signal.SIGSTOP)
        try:
            b.telegram.wait_for_sync(lambda: "term 2" in b.log(), timeout=TAKEOVER,
                                     what="the standby to take over from the frozen leader")
            assert "still holds the lock: its connection (backend" in b.log(), b.log()
        finally:
            a.process.send_signal(signal.SIGCONT)
        a.process.wait(timeout=TAKEOVER)
        assert a.process.returncode == LOST_LEADERSHIP, a.log()
        assert len(a.sends()) == 3, "the woken leader sent nothing more"
        b.telegram.wait_for_sync(lambda: b.telegram.waiting_polls > 0, timeout=60,
                                 what="the new leader to long-poll")
        assert b.sends() == [], "nothing already sent was sent again"


def test_a_standby_answers_health_as_standby_and_asks_telegram_and_arxiv_nothing(
        tmp_path: Path, postgres_server: PostgresServer) -> None:
    url = postgres_server.new_database()
    with two_hosts(tmp_path, url, 3, "LEADER_LEASE_SECONDS=5") as (a, b):
        lead_then_stand_by(a, b)

        standby = b.health()
        assert standby.returncode == 0, standby
        assert assert_one_line(standby).startswith("healthy: standby (the leader is pid "
                                                    f"{a.process and a.process.pid} on ")
        leader = a.health()
        assert leader.returncode == 0, leader
        assert assert_one_line(leader).startswith("healthy: leader (term 1, lease renewed ")

        assert b.telegram.calls == [], "the standby asked Telegram nothing"
        assert b.arxiv.requests == [], "the standby asked arXiv nothing"
        assert b.process is not None
        [(connections,)] = postgres_rows(
            url, "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name LIKE ?",
            (f"arxiv-alert-bot pid {b.process.pid} %",))
        assert connections == 1, "a standby holds one connection: the lock's"
        rss = next(line for line in Path(f"/proc/{b.process.pid}/status").read_text()
                   .splitlines() if line.startswith("VmRSS:"))
        print(f"\nthe standby's {rss}")

        b.stop()
        assert b.process.returncode == 0, b.log()
        gone = b.health()
        assert gone.returncode == 1
        assert "no bot of this instance" in gone.stdout


def assert_one_line(result: subprocess.CompletedProcess[str]) -> str:
    lines = result.stdout.strip().splitlines()
    assert len(lines) == 1, result
    return lines[0]


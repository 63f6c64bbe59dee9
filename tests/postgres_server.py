"""A real PostgreSQL server for the tests: one cluster in a temporary folder per test run.

Debian's `postgresql` package provides the server (its programs are under
/usr/lib/postgresql/NN/bin, not on PATH). PostgreSQL refuses to run as root, and CI runs as
root: then the cluster belongs to the package's `postgres` user (`runuser`). The first test
that asks for a database starts the cluster; every xdist worker shares it (a file lock in the
run's folder decides who starts it), each test gets a database of its own, and the controller
stops the cluster when the run ends (`stop_shared_server`, from conftest's unconfigure).
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import itertools
import os
import shutil
import socket
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

INSTALL = "apt-get install -y postgresql"
FOLDER_VARIABLE = "BOT_TEST_POSTGRES_FOLDER"  # set by the controller, inherited by workers
SERVER_USER = "postgres"
# Connections over TCP (the bot's) need the password, as on a real server; the socket in the
# folder (the fixtures' psql) is trusted.
PASSWORD = "test-pw-0f3a9c"


class ServerMissing(Exception):
    """No PostgreSQL programs on this machine; the message says what to install."""


def _programs() -> Path:
    """The folder of `initdb` and `pg_ctl`: the newest of Debian's, else the one on PATH."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                   key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0)
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    if on_path:
        return Path(on_path).resolve().parent
    raise ServerMissing(f"PostgreSQL is not installed (`{INSTALL}`)")


def _as_server_user(command: list[str]) -> list[str]:
    if os.geteuid() != 0:
        return command
    return ["runuser", "-u", SERVER_USER, "--", *command]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def shared_folder() -> Path:
    """The run's folder for the cluster, made by the first process that asks and named in the
    environment so that workers started afterwards find the same one."""
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder is None:
        folder = tempfile.mkdtemp(prefix="bot-postgres-")
        os.environ[FOLDER_VARIABLE] = folder
    return Path(folder)


@dataclass(frozen=True)
class PostgresServer:
    """A running cluster on 127.0.0.1 (password) and in its folder's socket (trusted)."""

    port: int
    folder: Path
    user: str = SERVER_USER

    def url(self, database: str, password: str = PASSWORD) -> str:
        return f"postgresql://{self.user}:{password}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database; its URL."""
        name = f"test_{uuid.uuid4().hex[:12]}"
        self.psql(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def drop_database(self, url: str) -> None:
        name = url.rsplit("/", 1)[1]
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def psql(self, sql: str) -> str:
        result = subprocess.run(
            [str(_programs() / "psql"), "-X", "-q", "-At", "-h", str(self.folder), "-p",
             str(self.port), "-U", self.user, "-d", "postgres", "-c", sql],
            capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise RuntimeError(f"psql {sql!r}: {result.stderr.strip()}")
        return result.stdout


def start_shared_server(*, durable: bool = False) -> PostgresServer:
    """The run's server, started by whichever process asks first. The tests' skips fsync;
    `durable` (the benches) keeps the server's defaults, so that commits cost what they cost
    on a real server."""
    folder = shared_folder()
    with open(folder / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        port_file = folder / "port"
        if port_file.is_file():
            return PostgresServer(int(port_file.read_text()), folder, _server_user())
        server = _start(folder, durable)
        port_file.write_text(str(server.port))
        return server


def _start(folder: Path, durable: bool = False) -> PostgresServer:
    programs = _programs()
    data = folder / "data"
    if os.geteuid() == 0:
        shutil.chown(folder, SERVER_USER)
    user = _server_user()
    run = dict(capture_output=True, text=True, check=False, cwd=folder)
    password_file = folder / "password"
    password_file.write_text(PASSWORD)
    if os.geteuid() == 0:
        shutil.chown(password_file, SERVER_USER)
    result = subprocess.run(_as_server_user(
        [str(programs / "initdb"), "-D", str(data), "-U", user, "--auth-local=trust",
         "--auth-host=scram-sha-256", f"--pwfile={password_file}", "--no-sync", "-E", "UTF8",
         "--locale=C.UTF-8"]), **run)
    if result.returncode != 0:
        raise RuntimeError(f"initdb failed: {result.stderr.strip()[-500:]}")
    for attempt in itertools.count():
        port = _free_port()
        # Durability is the production server's business; the tests' cluster skips the fsyncs.
        options = f"-k {folder} -c listen_addresses=127.0.0.1 -p {port} -c max_connections=200"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        result = subprocess.run(_as_server_user(
            [str(programs / "pg_ctl"), "-D", str(data), "-l", str(folder / "server.log"),
             "-o", options, "-w", "-t", "60", "start"]), **run)
        if result.returncode == 0:
            return PostgresServer(port, folder, user)
        if attempt >= 2:
            log = (folder / "server.log").read_text(errors="replace")[-800:]
            raise RuntimeError(f"the test PostgreSQL server did not start: {log}")


def _server_user() -> str:
    """The cluster's superuser: `postgres` when run as root, else whoever runs the tests."""
    if os.geteuid() == 0:
        return SERVER_USER
    import pwd

    return pwd.getpwuid(os.geteuid()).pw_name


def stop_shared_server() -> None:
    """Stop the run's cluster (if a test started one) and remove its folder."""
    folder = os.environ.get(FOLDER_VARIABLE)
    if folder is None:
        return
    data = Path(folder) / "data"
    if (data / "postmaster.pid").is_file():
        with contextlib.suppress(ServerMissing):
            subprocess.run(_as_server_user(
                [str(_programs() / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w",
                 "stop"]), capture_output=True, check=False, cwd=folder)
    shutil.rmtree(folder, ignore_errors=True)

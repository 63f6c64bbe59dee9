"""The lifecycle every HTTP fake shares: a threaded server on 127.0.0.1, started and stopped,
and the record of the fakes' own errors.

A bug inside a fake must fail the test that met it: answered as a 500 or a dropped connection it
would look like an ordinary fault of the service, which the bot retries past. Every fake in the
process records its handler errors here, and an autouse fixture (tests/conftest.py) fails the
test on any.
"""

from __future__ import annotations

import contextlib
import threading
import traceback
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self

# The client went away (a timeout, a cancelled long poll): nothing is wrong with the fake.
CLIENT_GONE = (BrokenPipeError, ConnectionResetError, ConnectionAbortedError)

_handler_errors: list[str] = []
_handler_errors_lock = threading.Lock()


def record_handler_error(fake: str, trace: str) -> None:
    """Remember an exception inside a fake's handler, for the test it happened in."""
    with _handler_errors_lock:
        _handler_errors.append(f"inside {fake}:\n{trace}")


def take_handler_errors() -> list[str]:
    """Every handler error recorded since the last call, and forget them."""
    with _handler_errors_lock:
        errors = list(_handler_errors)
        _handler_errors.clear()
    return errors


class FakeHandler(BaseHTTPRequestHandler):
    """A keep-alive request handler that answers with `respond` and logs nothing (each fake
    keeps its own request log)."""

    protocol_version = "HTTP/1.1"
    fake_name = "a fake HTTP server"

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except CLIENT_GONE:
            self.close_connection = True
        except Exception:
            record_handler_error(self.fake_name, traceback.format_exc())
            self.close_connection = True
            # The client may not have had its answer yet: a 500 ends its wait (and then the
            # fixture fails the test).
            with contextlib.suppress(OSError):
                self.send_response(500)
                self.send_header("Content-Length", "0")
                self.end_headers()

    def respond(self, status: int, headers: dict[str, str], body: bytes) -> None:
        """Send one response; a 304 has no body. A client that gave up (a timeout test) is
        left alone: there is nothing left to tell it."""
        try:
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", "0" if status == 304 else str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


class LoopbackServer:
    """Serves `handler` on a free port of 127.0.0.1 (or the given port) in a daemon thread.

    `_stopping` is set by `stop()`: handlers sleeping out an injected delay wait on it, so a
    stop never waits for them.
    """

    _thread_name = "fake-http"

    def __init__(self, handler: Callable[[Self], type[BaseHTTPRequestHandler]],
                 host: str = "127.0.0.1", port: int = 0) -> None:
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        handler_class = handler(self)
        handler_class.fake_name = self._thread_name
        self._httpd = ThreadingHTTPServer((host, port), handler_class)
        self._httpd.daemon_threads = True
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                name=self._thread_name, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def root(self) -> str:
        """`http://127.0.0.1:PORT`, no trailing slash."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

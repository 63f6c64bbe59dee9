"""Keeps the bot token, and every other secret, out of every byte the process writes to stdout
and stderr.

Logging handlers, Python's traceback printer, `warnings`, asyncio's "exception was never
retrieved" and PTB's own error logs all end in `sys.stdout` or `sys.stderr`, so the streams
themselves are wrapped: whatever path a traceback takes, it passes through `redact`.
"""

from __future__ import annotations

import logging
import re
import sys
import threading
from collections.abc import Iterable, Mapping
from typing import Any, TextIO

MASK = "***"
# Uncaught errors that are the operator's to fix, each printed as its one line (no traceback);
# `install` sets them (the token rejected, a database the bot cannot use).
_ONE_LINE_ERRORS: dict[type[BaseException], str] = {}


# What follows /zotero in a message is a chat's Zotero API key: hidden wherever the update is
# written (a debug log of getUpdates shows it before any handler has read it).
_SECRET_ARGUMENTS = re.compile(r"(/zotero(?:@\w+)?[ \t]+)([A-Za-z0-9]{8,})", re.IGNORECASE)
# Secrets learnt while the bot runs (a chat's Zotero API key, once it is read or opened):
# every Redactor hides them too, beside the settings' own.
_LEARNT: set[str] = set()
_LEARNT_LOCK = threading.Lock()


def hide(secret: str) -> None:
    """Redact `secret` from now on, wherever a Redactor writes (stdout, stderr, log handlers)."""
    if secret:
        with _LEARNT_LOCK:
            _LEARNT.add(secret)


def token_secrets(token: str) -> list[str]:
    """The token, and its secret half alone (URL-encoded paths split it at the colon)."""
    return [s for s in (token, token.split(":", 1)[-1]) if s]


class Redactor:
    """Replaces each secret with `***`; the longest first, so a part never hides a whole."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted({s for s in secrets if s}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            if secret in text:
                text = text.replace(secret, MASK)
        if "/zotero" in text.lower():
            text = _SECRET_ARGUMENTS.sub(lambda match: match[1] + MASK, text)
        if _LEARNT:
            with _LEARNT_LOCK:
                learnt = sorted(_LEARNT, key=len, reverse=True)
            for secret in learnt:
                if secret in text:
                    text = text.replace(secret, MASK)
        return text


class RedactingStream:
    """A text stream that redacts before writing to the stream it wraps."""

    def __init__(self, stream: TextIO, redact: Redactor) -> None:
        self._stream = stream
        self._redact = redact

    @property
    def wrapped(self) -> TextIO:
        return self._stream

    def write(self, text: str) -> int:
        self._stream.write(self._redact(text))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:  # flush, fileno, isatty, encoding …
        return getattr(self._stream, name)


class RedactingFilter(logging.Filter):
    """Redacts each record's message and traceback, for handlers that write elsewhere."""

    def __init__(self, secrets: Iterable[str]) -> None:
        super().__init__()
        self._redact = Redactor(secrets)

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        redacted = self._redact(message)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        if redacted != message:
            record.msg, record.args = redacted, None
        return True


def _one_line(error: BaseException | None) -> str | None:
    for kind, line in _ONE_LINE_ERRORS.items():
        if isinstance(error, kind):
            return line
    return None


def _excepthook(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    """An operator's error is its one line; anything else the usual (redacted) traceback."""
    if (line := _one_line(value)) is not None:
        print(line, file=sys.stderr)
        return
    sys.__excepthook__(kind, value, tb)


def _thread_excepthook(args: threading.ExceptHookArgs) -> None:
    if (line := _one_line(args.exc_value)) is not None:
        print(line, file=sys.stderr)
        return
    threading.__excepthook__(args)


def install(secrets: Iterable[str],
            one_line_errors: Mapping[type[BaseException], str] | None = None) -> Redactor:
    """Wrap stdout and stderr, and route warnings through logging; idempotent per secret set.
    An uncaught error of a kind in `one_line_errors` prints that line instead of a traceback."""
    redact = Redactor(secrets)
    _ONE_LINE_ERRORS.update(one_line_errors or {})
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(stream, RedactingStream):
            stream = stream.wrapped
        setattr(sys, name, RedactingStream(stream, redact))
    sys.excepthook = _excepthook
    threading.excepthook = _thread_excepthook
    logging.captureWarnings(True)
    return redact

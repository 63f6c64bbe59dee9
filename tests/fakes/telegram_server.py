"""A fake Telegram Bot API server for end-to-end tests.

A real HTTP server on 127.0.0.1 (stdlib ``ThreadingHTTPServer`` in a daemon thread), so the same
fake serves an in-process ``telegram.ext.Application`` and a bot running as ``python -m bot``.
Point the bot at ``TELEGRAM_API_URL=tg.api_url``; PTB is built with ``base_url=f"{api_url}/bot"``.

It behaves like Telegram where our bot would notice: the ``{"ok": ..}`` envelope, HTML parse errors,
the 4096 limit, "message is not modified", long polling with offsets, 403/429/ChatMigrated, files
users send (``send_document``, ``getFile``, the file download URL), and (optionally) Telegram's
flood limits. Forum supergroups have topics (``create_topic``, ``close_topic``,
``delete_topic``): users write inside them, the bot's messages record their
``message_thread_id`` and ``reply_parameters``, and a send into a deleted or closed topic gets
Telegram's own error. Deliberate differences, so that bot bugs surface in tests:

* An unknown named entity such as ``&foo;`` is refused (Telegram shows it literally, which only
  happens when the bot forgot to escape); a bare ``&`` is accepted, as Telegram does.
* Lengths are counted in UTF-16 code units, like entity offsets (the stricter reading).
* ``MarkdownV2``/``Markdown`` text is stored as sent, without parsing.
* Only sends (``sendMessage``, ``sendDocument``) count towards the flood limits, not edits.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import re
import socket
import socketserver
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, TypeVar
from urllib.parse import parse_qsl, unquote, urlsplit

import pytest

from tests.fakes.loopback import record_handler_error

T = TypeVar("T")

DEFAULT_TOKEN = "123456789:TEST-fake-telegram-token"
DEFAULT_BOT_USERNAME = "arxiv_alert_test_bot"
# A user id for messages injected into groups when the test does not name a sender.
DEFAULT_GROUP_USER_ID = 4242

MAX_MESSAGE_LENGTH = 4096
MAX_CAPTION_LENGTH = 1024
MAX_CALLBACK_DATA_BYTES = 64
MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024  # getFile refuses larger files ("file is too big")
MAX_LONG_POLL_SECONDS = 50
_POLL_STEP = 0.02

_TOO_LONG = "Bad Request: message is too long"
_EMPTY = "Bad Request: message text is empty"
_NOT_MODIFIED = (
    "Bad Request: message is not modified: specified new message content and reply markup "
    "are exactly the same as a current content and reply markup of the message"
)
_QUERY_INVALID = "Bad Request: query is too old and response timeout expired or query ID is invalid"
# What Telegram answers a send into a forum topic that was deleted (or never was), or closed.
TOPIC_NOT_FOUND = "Bad Request: message thread not found"
TOPIC_CLOSED = "Bad Request: TOPIC_CLOSED"

# Update types Telegram leaves out unless asked for explicitly in allowed_updates.
_OPT_IN_UPDATES = frozenset({"chat_member", "message_reaction", "message_reaction_count"})
_SEND_METHODS = frozenset({"sendMessage", "sendDocument"})
# Methods that act in a chat, and so fail for a blocked or migrated chat.
_CHAT_WRITE_METHODS = frozenset(
    {
        "sendMessage",
        "sendDocument",
        "editMessageText",
        "editMessageReplyMarkup",
        "sendChatAction",
        "deleteMessage",
    }
)
_CHAT_ACTIONS = frozenset(
    {
        "typing",
        "upload_photo",
        "record_video",
        "upload_video",
        "record_voice",
        "upload_voice",
        "upload_document",
        "choose_sticker",
        "find_location",
        "record_video_note",
        "upload_video_note",
    }
)
_PARSE_MODES = frozenset({"HTML", "MarkdownV2", "Markdown"})

# PTB sends form fields as strings (JSON-encoded when not a string); Telegram types them per
# parameter, and so do we.
_JSON_FIELDS = frozenset(
    {
        "reply_markup",
        "menu_button",
        "entities",
        "caption_entities",
        "allowed_updates",
        "commands",
        "results",
        "scope",
        "link_preview_options",
        "reply_parameters",
    }
)
_INT_FIELDS = frozenset(
    {
        "chat_id",
        "message_id",
        "offset",
        "limit",
        "timeout",
        "user_id",
        "cache_time",
        "message_thread_id",
        "reply_to_message_id",
    }
)
_BOOL_FIELDS = frozenset(
    {
        "disable_notification",
        "protect_content",
        "allow_paid_broadcast",
        "show_alert",
        "drop_pending_updates",
        "allow_sending_without_reply",
        "disable_content_type_detection",
        "for_channels",
        "disable_web_page_preview",
    }
)


# --------------------------------------------------------------------------- public values


class Call(NamedTuple):
    """One request the bot made, in the order the fake answered them."""

    method: str
    params: dict[str, Any]
    at: float
    status: int = 200


@dataclass(frozen=True)
class SentMessage:
    """A message the bot sent, as it currently stands (edits applied)."""

    chat_id: int
    message_id: int
    text: str  # what the user sees: entities parsed out, like Message.text
    sent_text: str  # what the bot sent, markup included
    parse_mode: str | None
    entities: tuple[dict[str, Any], ...]
    reply_markup: dict[str, Any] | None
    date: int
    edit_date: int | None = None
    edit_count: int = 0
    params: Mapping[str, Any] = field(default_factory=dict, repr=False)
    message_thread_id: int | None = None  # the forum topic it went to; None: General or no forum
    reply_to_message_id: int | None = None  # the message it answers, when that one still existed

    @property
    def reply_parameters(self) -> dict[str, Any] | None:
        """The reply_parameters the bot sent, as sent."""
        value = self.params.get("reply_parameters")
        return value if isinstance(value, dict) else None

    @property
    def buttons(self) -> list[dict[str, Any]]:
        """The inline keyboard's buttons, row by row, flattened."""
        rows = (self.reply_markup or {}).get("inline_keyboard") or []
        return [button for row in rows for button in row]

    @property
    def button_texts(self) -> list[str]:
        """The labels of the inline keyboard's buttons."""
        return [button.get("text", "") for button in self.buttons]

    @property
    def callback_data(self) -> list[str]:
        """The callback_data of every callback button."""
        return [b["callback_data"] for b in self.buttons if "callback_data" in b]


@dataclass(frozen=True)
class SentDocument:
    """A document the bot uploaded (or re-sent by file_id)."""

    chat_id: int
    message_id: int
    filename: str
    content: bytes
    mime_type: str | None
    caption: str | None
    sent_caption: str | None
    parse_mode: str | None
    file_id: str
    date: int
    reply_markup: dict[str, Any] | None = None
    message_thread_id: int | None = None
    reply_to_message_id: int | None = None


@dataclass(frozen=True)
class CallbackAnswer:
    """An answerCallbackQuery the bot made."""

    callback_query_id: str
    text: str | None
    show_alert: bool
    url: str | None
    cache_time: int | None


@dataclass
class InlineAnswer:
    """An answerInlineQuery the bot made."""

    inline_query_id: str
    results: list[dict[str, Any]]
    cache_time: int | None
    is_personal: bool


@dataclass
class Topic:
    """A forum topic: its thread id is the id of the service message that created it."""

    thread_id: int
    name: str
    closed: bool = False


@dataclass(frozen=True)
class RateLimits:
    """Telegram's flood limits as the fake enforces them with ``enforce_limits=True``.

    Private chats get a token bucket: ``private_burst`` messages at once, then
    ``private_per_second``; Telegram tolerates short bursts in a private chat, but not a flood.
    """

    global_per_second: int = 30
    paid_per_second: int = 1000  # messages sent with allow_paid_broadcast (not in the 30)
    private_per_second: float = 1.0
    private_burst: int = 3
    group_per_minute: int = 20


# --------------------------------------------------------------------------- HTML entities


class EntityParseError(ValueError):
    """Text that Telegram would refuse with "can't parse entities"."""


_ENTITY_RE = re.compile(r"&(#[0-9]+|#[xX][0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
_NAMED_ENTITIES = {"lt": "<", "gt": ">", "amp": "&", "quot": '"'}
_TAG_ENTITY = {
    "b": "bold",
    "strong": "bold",
    "i": "italic",
    "em": "italic",
    "u": "underline",
    "ins": "underline",
    "s": "strikethrough",
    "strike": "strikethrough",
    "del": "strikethrough",
    "a": "text_link",
    "code": "code",
    "pre": "pre",
    "tg-spoiler": "spoiler",
    "span": "spoiler",
    "blockquote": "blockquote",
    "tg-emoji": "custom_emoji",
}
_UNQUOTED_VALUE = re.compile(r"[A-Za-z0-9.\-]*")


def _sender_id(chat: dict[str, Any], user_id: int | None) -> int:
    """Who writes when a test names nobody: the user of a private chat, else a default member."""
    if user_id is not None:
        return user_id
    return chat["id"] if chat["type"] == "private" else DEFAULT_GROUP_USER_ID


def utf16_len(text: str) -> int:
    """Length in UTF-16 code units, Telegram's unit for offsets and lengths."""
    return len(text.encode("utf-16-le")) // 2


def _decode_entity(body: str) -> str | None:
    if body.startswith("#"):
        code = int(body[2:], 16) if body[1:2] in ("x", "X") else int(body[1:])
        if code == 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            return None
        return chr(code)
    return _NAMED_ENTITIES.get(body)


def _unescape_attribute(value: str) -> str:
    def decode(match: re.Match[str]) -> str:
        return _decode_entity(match.group(1)) or match.group(0)

    return _ENTITY_RE.sub(decode, value)


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]]:
    """Parse Bot API HTML into (plain text, entities), raising EntityParseError like Telegram."""
    out: list[str] = []
    pos16 = 0
    entities: list[dict[str, Any]] = []
    stack: list[tuple[str, dict[str, str], int]] = []
    i, n = 0, len(text)

    def at(index: int) -> str:
        return f"at byte offset {len(text[:index].encode())}"

    while i < n:
        char = text[i]
        if char == "&" and (match := _ENTITY_RE.match(text, i)):
            decoded = _decode_entity(match.group(1))
            if decoded is None:
                raise EntityParseError(f'Unsupported HTML entity "{match.group(0)}" {at(i)}')
            out.append(decoded)
            pos16 += utf16_len(decoded)
            i = match.end()
            continue
        if char != "<":
            out.append(char)
            pos16 += utf16_len(char)
            i += 1
            continue
        if text.startswith("</", i):
            end = text.find(">", i)
            if end == -1:
                raise EntityParseError(f"Unclosed end tag {at(i)}")
            name = text[i + 2 : end].strip().lower()
            if not stack:
                raise EntityParseError(f"Unexpected end tag {at(i)}")
            open_name, attrs, begin16 = stack.pop()
            if name and name != open_name:
                raise EntityParseError(
                    f'Unmatched end tag {at(i)}, expected "</{open_name}>", found "</{name}>"'
                )
            _close_tag(open_name, attrs, begin16, pos16, stack, entities)
            i = end + 1
            continue
        i = _open_tag(text, i, pos16, stack, at)

    if stack:
        raise EntityParseError(f'Can\'t find end tag corresponding to start tag "{stack[-1][0]}"')
    entities.sort(key=lambda e: (e["offset"], -e["length"]))
    return "".join(out), entities


def _open_tag(
    text: str,
    start: int,
    pos16: int,
    stack: list[tuple[str, dict[str, str], int]],
    at: Callable[[int], str],
) -> int:
    n = len(text)
    j = start + 1
    while j < n and not text[j].isspace() and text[j] != ">":
        j += 1
    if j >= n:
        raise EntityParseError(f"Unclosed start tag {at(start)}")
    name = text[start + 1 : j].lower()
    if name not in _TAG_ENTITY:
        raise EntityParseError(f'Unsupported start tag "{name}" {at(start)}')
    attrs: dict[str, str] = {}
    while True:
        while j < n and text[j].isspace():
            j += 1
        if j >= n:
            raise EntityParseError(f"Unclosed start tag {at(start)}")
        if text[j] == ">":
            j += 1
            break
        k = j
        while k < n and not text[k].isspace() and text[k] not in "=>":
            k += 1
        attribute = text[j:k].lower()
        if not attribute:
            raise EntityParseError(f'Empty attribute name in the tag "{name}" {at(start)}')
        j = k
        while j < n and text[j].isspace():
            j += 1
        if j < n and text[j] != "=" and name == "blockquote" and attribute == "expandable":
            attrs[attribute] = ""
            continue
        if j >= n or text[j] != "=":
            raise EntityParseError(
                "Expected equal sign in declaration of an attribute of the tag "
                f'"{name}" {at(start)}'
            )
        j += 1
        while j < n and text[j].isspace():
            j += 1
        if j < n and text[j] in "'\"":
            close = text.find(text[j], j + 1)
            if close == -1:
                raise EntityParseError(f"Unclosed end of attribute value {at(start)}")
            value, j = text[j + 1 : close], close + 1
        else:
            match = _UNQUOTED_VALUE.match(text, j)
            value = match.group(0) if match else ""
            j += len(value)
        attrs[attribute] = _unescape_attribute(value)
    if name == "span" and attrs.get("class") != "tg-spoiler":
        raise EntityParseError(f'Tag "span" must have class "tg-spoiler" {at(start)}')
    if name == "tg-emoji" and not attrs.get("emoji-id", "").isdigit():
        raise EntityParseError(f'Tag "tg-emoji" must have a numeric "emoji-id" {at(start)}')
    stack.append((name, attrs, pos16))
    return j


def _close_tag(
    name: str,
    attrs: dict[str, str],
    begin16: int,
    end16: int,
    stack: list[tuple[str, dict[str, str], int]],
    entities: list[dict[str, Any]],
) -> None:
    language = attrs.get("class", "").removeprefix("language-")
    if name == "code" and stack and stack[-1][0] == "pre" and attrs.get("class", "") != language:
        # <pre><code class="language-x"> is one pre entity with a language, as in Telegram.
        stack[-1][1]["language"] = language
        return
    length = end16 - begin16
    if length <= 0:
        return
    entity: dict[str, Any] = {"type": _TAG_ENTITY[name], "offset": begin16, "length": length}
    if name == "a":
        if not attrs.get("href"):
            return
        entity["url"] = attrs["href"]
    elif name == "pre" and attrs.get("language"):
        entity["language"] = attrs["language"]
    elif name == "blockquote" and "expandable" in attrs:
        entity["type"] = "expandable_blockquote"
    elif name == "tg-emoji":
        entity["custom_emoji_id"] = attrs["emoji-id"]
    entities.append(entity)


def _strip_entities(
    text: str, entities: list[dict[str, Any]]
) -> tuple[str, tuple[dict[str, Any], ...]]:
    """Trim surrounding whitespace like Telegram does, moving and clipping entities along."""
    stripped = text.strip(" \t\r\n")
    if not stripped:
        return "", ()
    lead = utf16_len(text[: len(text) - len(text.lstrip(" \t\r\n"))])
    total = utf16_len(stripped)
    kept = []
    for entity in entities:
        start = max(entity["offset"] - lead, 0)
        end = min(entity["offset"] + entity["length"] - lead, total)
        if end > start:
            kept.append({**entity, "offset": start, "length": end - start})
    return stripped, tuple(kept)


# --------------------------------------------------------------------------- request decoding


class _Upload(NamedTuple):
    filename: str
    content: bytes
    mime_type: str | None


@dataclass(frozen=True)
class _UserFile:
    """A file a user sent, served by getFile and the file download URL.

    The download streams `served_size` bytes (`content` repeated, never held whole); getFile
    says `claimed_size`. Both are the content's length unless the test makes Telegram lie.
    """

    file_id: str
    path: str
    content: bytes
    served_size: int
    claimed_size: int | None
    chunked: bool = False  # sent without a Content-Length, in chunks

    def chunks(self, size: int = 64 * 1024) -> Iterator[bytes]:
        """The served bytes, `size` at a time."""
        if self.served_size == len(self.content):
            yield self.content
            return
        pattern = self.content or b" "
        block = pattern * max(1, size // len(pattern))
        left = self.served_size
        while left > 0:
            yield block[:left]
            left -= len(block)


class _ApiError(Exception):
    def __init__(self, code: int, description: str, parameters: dict[str, Any] | None = None):
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters


def _bad_request(description: str) -> _ApiError:
    return _ApiError(400, f"Bad Request: {description}")


def _coerce(name: str, value: Any) -> Any:
    if not isinstance(value, str):
        return value
    if name in _JSON_FIELDS:
        try:
            return json.loads(value)
        except ValueError:
            raise _bad_request(f"can't parse {name} JSON object") from None
    if name in _INT_FIELDS:
        with contextlib.suppress(ValueError):
            return int(value)
        return value
    if name in _BOOL_FIELDS:
        return value.lower() in ("true", "1")
    return value


_DISPOSITION_PARAM = re.compile(r'\b(name|filename)="((?:[^"\\]|\\.)*)"')


def _parse_multipart(content_type: str, body: bytes) -> tuple[dict[str, str], dict[str, _Upload]]:
    match = re.search(r'boundary="?([^";]+)"?', content_type)
    if not match:
        raise _bad_request("multipart boundary is missing")
    delimiter = b"--" + match.group(1).encode("latin-1")
    fields: dict[str, str] = {}
    files: dict[str, _Upload] = {}
    for raw in body.split(delimiter)[1:]:
        if raw.startswith(b"--"):
            break
        head, _, content = raw.removeprefix(b"\r\n").partition(b"\r\n\r\n")
        content = content.removesuffix(b"\r\n")
        headers = {}
        for line in head.decode("utf-8", "replace").split("\r\n"):
            key, _, value = line.partition(":")
            headers[key.strip().lower()] = value.strip()
        params = {
            key: unquote(value.replace('\\"', '"').replace("\\\\", "\\"))
            for key, value in _DISPOSITION_PARAM.findall(headers.get("content-disposition", ""))
        }
        name = params.get("name")
        if name is None:
            continue
        if "filename" in params:
            files[name] = _Upload(params["filename"], content, headers.get("content-type"))
        else:
            fields[name] = content.decode("utf-8")
    return fields, files


def _decode_request(
    query: str, content_type: str, body: bytes
) -> tuple[dict[str, Any], dict[str, _Upload]]:
    raw: dict[str, Any] = dict(parse_qsl(query, keep_blank_values=True))
    files: dict[str, _Upload] = {}
    kind = content_type.split(";")[0].strip().lower()
    if body and kind == "application/json":
        try:
            decoded = json.loads(body)
        except ValueError:
            raise _bad_request("can't parse JSON body") from None
        if not isinstance(decoded, dict):
            raise _bad_request("JSON body must be an object")
        raw.update(decoded)
    elif body and kind == "multipart/form-data":
        fields, files = _parse_multipart(content_type, body)
        raw.update(fields)
    elif body:
        raw.update(parse_qsl(body.decode("utf-8"), keep_blank_values=True))
    return {name: _coerce(name, value) for name, value in raw.items()}, files


# --------------------------------------------------------------------------- HTTP plumbing


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeTelegram, port: int = 0):
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.connections_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind does a reverse DNS lookup (getfqdn) that can stall for seconds.
        socketserver.TCPServer.server_bind(self)
        host, port = self.server_address[:2]
        self.server_name, self.server_port = str(host), int(port)

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], OSError):
            return  # the client went away (e.g. PTB cancelled a long poll on shutdown)
        self.fake._record_server_error(traceback.format_exc())

    def close_connections(self) -> None:
        with self.connections_lock:
            connections = list(self.connections)
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in two writes; without this, Nagle + delayed ACK add ~40 ms.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.connections_lock:
            self.server.connections.add(self.connection)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self.server.connections_lock:
                self.server.connections.discard(self.connection)

    def do_POST(self) -> None:
        body = self._read_body()
        url = urlsplit(self.path)
        status, payload = self.server.fake._handle(
            url.path, url.query, self.headers.get("Content-Type", ""), body
        )
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        match = re.fullmatch(r"/file/bot([^/]+)/(.+)", url.path)
        if match is None:
            self.do_POST()
            return
        self._read_body()
        found = self.server.fake._user_file(unquote(match[1]), unquote(match[2]))
        if found is None:
            self.send_response(404)
            self.send_header("Content-Length", "9")
            self.end_headers()
            self.wfile.write(b"Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if found.chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Content-Length", str(found.served_size))
        self.end_headers()
        # A client that stops reading closes the connection: the OSError ends this thread
        # quietly (handle_error), as it would end Telegram's upload to it.
        for chunk in found.chunks():
            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if found.chunked else chunk)
        if found.chunked:
            self.wfile.write(b"0\r\n\r\n")

    def _read_body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet: the request log would print the bot token."""


# --------------------------------------------------------------------------- the fake


@dataclass
class _Failure:
    method: str
    error_code: int
    description: str
    parameters: dict[str, Any] | None
    chat_id: int | str | None
    remaining: int
    passing: int = 0  # calls that still go through first


class FakeTelegram:
    """A fake Bot API server: inject updates, inspect what the bot did, inject failures."""

    def __init__(
        self,
        token: str = DEFAULT_TOKEN,
        *,
        bot_username: str = DEFAULT_BOT_USERNAME,
        bot_name: str = "arXiv Alerts (test)",
        enforce_limits: bool = False,
        limits: RateLimits | None = None,
        clock: Callable[[], float] = time.monotonic,
        stars_balance: float = 0.0,
    ) -> None:
        """`stars_balance` is the bot's Telegram Stars, which paid broadcasts spend (0.1
        each)."""
        bot_id, sep, _ = token.partition(":")
        if not sep or not bot_id.isdigit():
            raise ValueError(f"a bot token looks like '123456:ABC...', got {token!r}")
        self.token = token
        self.bot_id = int(bot_id)
        self.bot_username = bot_username
        self.bot_name = bot_name
        self.enforce_limits = enforce_limits
        self.limits = limits or RateLimits()
        self._clock = clock
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._ids = itertools.count(1)

        self._calls: list[Call] = []
        self._updates: list[dict[str, Any]] = []
        self._next_update_id = 100_000
        self._allowed_updates: frozenset[str] | None = None
        self._poll_generation = 0
        self._chats: dict[int, dict[str, Any]] = {}
        self._users: dict[int, dict[str, Any]] = {}
        self._message_ids: dict[int, int] = {}
        self._user_messages: dict[int, set[int]] = {}
        self._messages: dict[int, dict[int, SentMessage]] = {}
        self._documents: dict[int, list[SentDocument]] = {}
        self._topics: dict[int, dict[int, Topic]] = {}  # forum chat → thread id → topic
        self._threads: dict[int, dict[int, int]] = {}  # chat → message id → its topic
        self._topic_openers: dict[tuple[int, int], dict[str, Any]] = {}
        self._files: dict[str, SentDocument] = {}
        self._user_files: dict[str, _UserFile] = {}
        self._downloads: list[str] = []
        self._callback_queries: set[str] = set()
        self._callback_answers: list[CallbackAnswer] = []
        self._inline_queries: set[str] = set()
        self._inline_answers: dict[str, InlineAnswer] = {}
        self._commands: dict[tuple[str, str], list[tuple[str, str]]] = {}
        self._descriptions: dict[tuple[str, str], str] = {}
        self._admins: dict[int, set[int]] = {}
        self._creators: dict[int, int] = {}
        self._statuses: dict[tuple[int, int], str] = {}
        self._blocked: set[int] = set()
        self._migrated: dict[int, int] = {}
        self._failures: list[_Failure] = []
        self._delays: list[list[Any]] = []
        self._round_trips: dict[str, float] = {}
        self._global_sends: deque[float] = deque()
        self._paid_sends: deque[float] = deque()
        self._balance_tenths = round(stars_balance * 10)  # tenths of a Star: 1 a paid message
        self._paid_messages = 0
        self._private_buckets: dict[int, tuple[float, float]] = {}
        self._group_sends: dict[int, deque[float]] = {}
        self._rate_limited = 0
        self._server_errors: list[str] = []
        self._active_requests = 0
        self._in_flight: dict[str, int] = {}  # requests of each method being handled now
        self._peak_in_flight: dict[str, int] = {}
        self._waiting_polls = 0
        self._delayed_requests = 0
        self._webhook: dict[str, Any] = {}
        self._menu_buttons: dict[int | None, dict[str, Any]] = {}  # by chat (None: default)

        self._methods: dict[str, Callable[[dict[str, Any], dict[str, _Upload]], Any]] = {
            "getMe": self._get_me,
            "logOut": lambda p, f: True,
            "close": lambda p, f: True,
            "deleteWebhook": self._delete_webhook,
            "setWebhook": self._set_webhook,
            "getWebhookInfo": lambda p, f: {
                "url": self._webhook.get("url", ""),
                "has_custom_certificate": False,
                "pending_update_count": len(self._updates),
            },
            "getUpdates": self._get_updates,
            "sendMessage": self._send_message,
            "editMessageText": self._edit_message_text,
            "editMessageReplyMarkup": self._edit_message_reply_markup,
            "deleteMessage": self._delete_message,
            "answerCallbackQuery": self._answer_callback_query,
            "answerInlineQuery": self._answer_inline_query,
            "sendDocument": self._send_document,
            "getFile": self._get_file,
            "setMyCommands": self._set_my_commands,
            "getMyCommands": self._get_my_commands,
            "deleteMyCommands": self._delete_my_commands,
            "setMyDescription": self._description_setter("description", 512),
            "getMyDescription": self._description_getter("description"),
            "setMyShortDescription": self._description_setter("short_description", 120),
            "getMyShortDescription": self._description_getter("short_description"),
            "setMyName": self._description_setter("name", 64),
            "getMyName": self._description_getter("name"),
            "getChat": self._get_chat,
            "getChatMember": self._get_chat_member,
            "getChatAdministrators": self._get_chat_administrators,
            "sendChatAction": self._send_chat_action,
            "setChatMenuButton": self._set_chat_menu_button,
            "getChatMenuButton": self._get_chat_menu_button,
        }
        # Bot API method names are case-insensitive.
        self._canonical = {name.lower(): name for name in self._methods}

    # ------------------------------------------------------------------ lifecycle

    def start(self, port: int = 0) -> FakeTelegram:
        """Start serving on 127.0.0.1 (on a free port unless `port` is given); returns self."""
        if self._server is not None:
            raise RuntimeError("FakeTelegram is already running")
        self._stopping.clear()
        self._server = _Server(self, port)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="fake-telegram",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: pending long polls return at once, open connections are closed."""
        server, thread = self._server, self._thread
        if server is None or thread is None:
            return
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
            # Let woken long polls write their (empty) answer before connections are cut.
            self._cond.wait_for(lambda: self._active_requests == 0, timeout=2)
        server.shutdown()
        server.server_close()
        server.close_connections()
        thread.join(timeout=5)
        self._server = self._thread = None

    def __enter__(self) -> FakeTelegram:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def api_url(self) -> str:
        """The value for TELEGRAM_API_URL, e.g. ``http://127.0.0.1:PORT``."""
        if self._server is None:
            raise RuntimeError("FakeTelegram is not running; call start() or use `with`")
        return f"http://127.0.0.1:{self._server.server_port}"

    @property
    def base_url(self) -> str:
        """The value for PTB's ``base_url`` (it appends token and method)."""
        return f"{self.api_url}/bot"

    # ------------------------------------------------------------------ injecting updates

    def add_update(self, update: Mapping[str, Any]) -> int:
        """Queue a raw update for getUpdates; assigns update_id when missing and returns it."""
        with self._cond:
            raw = dict(update)
            if "update_id" not in raw:
                raw["update_id"] = self._next_update_id
            self._next_update_id = max(self._next_update_id, raw["update_id"]) + 1
            self._updates.append(raw)
            self._cond.notify_all()
            return raw["update_id"]

    def send_text(
        self,
        chat_id: int,
        text: str,
        *,
        user_id: int | None = None,
        chat_type: str | None = None,
        language_code: str | None = "en",
        first_name: str = "Ada",
        username: str | None = None,
        title: str | None = None,
        entities: list[dict[str, Any]] | None = None,
        reply_to_message_id: int | None = None,
        thread_id: int | None = None,
    ) -> int:
        """A user writes ``text`` in the chat (inside forum topic ``thread_id`` when given);
        returns the new message's id."""
        with self._cond:
            if thread_id is not None and thread_id not in self._topics.get(chat_id, {}):
                raise AssertionError(f"chat {chat_id} has no open topic {thread_id}")
            message = self._user_message(chat_id, user_id, chat_type, language_code,
                                         first_name, username, title)
            message["text"] = text
            if entities:
                message["entities"] = entities
            if reply_to_message_id is not None:
                replied = self._messages.get(chat_id, {}).get(reply_to_message_id)
                if replied is not None:
                    message["reply_to_message"] = self._message_json(replied)
            if thread_id is not None:
                self._place_in_topic(chat_id, thread_id, message)
            self.add_update({"message": message})
            return message["message_id"]

    def send_document(
        self,
        chat_id: int,
        content: bytes,
        filename: str,
        *,
        caption: str | None = None,
        mime_type: str | None = None,
        file_size: int | None = -1,
        served_size: int | None = None,
        get_file_size: int | None = -1,
        chunked: bool = False,
        user_id: int | None = None,
        chat_type: str | None = None,
        language_code: str | None = "en",
        first_name: str = "Ada",
        username: str | None = None,
        title: str | None = None,
    ) -> int:
        """A user sends a file; returns the new message's id. The bot fetches it as Telegram
        serves files: ``getFile`` gives a ``file_path``, then ``GET /file/bot<token>/<path>``.

        ``file_size`` is what the update reports: the content's length unless given (``None``
        leaves it out, as Telegram may). ``downloads`` lists what the bot fetched.
        A lying server: ``served_size`` makes the download stream that many bytes (``content``
        repeated, so 200 MB cost the test no memory) and ``get_file_size`` is what getFile says
        (the served size unless given; ``None`` leaves it out); ``chunked`` sends the download
        without a Content-Length.
        """
        with self._cond:
            message = self._user_message(chat_id, user_id, chat_type, language_code,
                                         first_name, username, title)
            number = next(self._ids)
            file_id = f"BQACAgIAAxUser{number:08d}"
            served = len(content) if served_size is None else served_size
            self._user_files[file_id] = _UserFile(
                file_id, f"documents/file_{number}", content, served,
                served if get_file_size == -1 else get_file_size, chunked)
            document: dict[str, Any] = {"file_id": file_id, "file_unique_id": file_id[-12:],
                                        "file_name": filename}
            if mime_type is not None:
                document["mime_type"] = mime_type
            reported = len(content) if file_size == -1 else file_size
            if reported is not None:
                document["file_size"] = reported
            message["document"] = document
            if caption is not None:
                message["caption"] = caption
            self.add_update({"message": message})
            return message["message_id"]

    def _user_message(self, chat_id: int, user_id: int | None, chat_type: str | None,
                      language_code: str | None, first_name: str, username: str | None,
                      title: str | None) -> dict[str, Any]:
        """A new message from a user in the chat, without its content (lock held)."""
        chat = self._remember_chat(chat_id, chat_type, first_name, username, title)
        user = self._remember_user(_sender_id(chat, user_id), first_name, username, language_code)
        message_id = self._new_message_id(chat_id)
        self._user_messages.setdefault(chat_id, set()).add(message_id)
        return {"message_id": message_id, "from": user, "chat": chat, "date": int(time.time())}

    @property
    def downloads(self) -> list[str]:
        """The file paths the bot downloaded, in order."""
        with self._cond:
            return list(self._downloads)

    def download(self, token: str, file_path: str) -> bytes | None:
        """The content served at ``/file/bot<token>/<file_path>``; None: 404 as Telegram."""
        found = self._user_file(token, file_path)
        return None if found is None else b"".join(found.chunks())

    def _user_file(self, token: str, file_path: str) -> _UserFile | None:
        """The file a download of ``/file/bot<token>/<file_path>`` is for, recorded."""
        with self._cond:
            if token != self.token:
                return None
            found = next((f for f in self._user_files.values() if f.path == file_path), None)
            if found is not None:
                self._downloads.append(file_path)
            return found

    def send_command(self, chat_id: int, command: str, **kwargs: Any) -> int:
        """A user sends ``/cmd args`` (or ``/cmd@botname``); returns the message id.

        Takes the keyword arguments of :meth:`send_text`.
        """
        if not command.startswith("/"):
            raise ValueError(f"a command starts with '/', got {command!r}")
        token = command.split(maxsplit=1)[0]
        entity = {"type": "bot_command", "offset": 0, "length": utf16_len(token)}
        return self.send_text(chat_id, command, entities=[entity], **kwargs)

    def press_button(
        self,
        chat_id: int,
        message_id: int,
        data: str | None = None,
        *,
        text: str | None = None,
        user_id: int | None = None,
        language_code: str | None = "en",
        first_name: str = "Ada",
    ) -> str:
        """A user presses a callback button of a bot message (by data or label); returns the id.

        Raises AssertionError when the message has no such button: users can only press what
        they see.
        """
        if (data is None) == (text is None):
            raise ValueError("pass exactly one of data= or text=")
        with self._cond:
            message = self._messages.get(chat_id, {}).get(message_id)
            if message is None:
                raise AssertionError(
                    f"chat {chat_id} has no bot message {message_id}\n{self._dump_locked()}"
                )
            button = next(
                (
                    b
                    for b in message.buttons
                    if "callback_data" in b
                    and (b["callback_data"] == data if data is not None else b["text"] == text)
                ),
                None,
            )
            if button is None:
                raise AssertionError(
                    f"message {message_id} in chat {chat_id} has no callback button "
                    f"{'data=' + repr(data) if data is not None else 'text=' + repr(text)}; "
                    f"buttons: {message.buttons}"
                )
            chat = self._chat_json(chat_id)
            sender_id = (
                user_id
                if user_id is not None
                else (chat_id if chat["type"] == "private" else DEFAULT_GROUP_USER_ID)
            )
            user = self._remember_user(sender_id, first_name, None, language_code)
            query_id = str(self.bot_id * 1000 + next(self._ids))
            self._callback_queries.add(query_id)
            self.add_update(
                {
                    "callback_query": {
                        "id": query_id,
                        "from": user,
                        "message": self._message_json(message),
                        "chat_instance": str(-chat_id if chat_id < 0 else chat_id * 7),
                        "data": button["callback_data"],
                    }
                }
            )
            return query_id

    def forge_press(
        self,
        chat_id: int,
        message_id: int,
        data: str,
        *,
        user_id: int | None = None,
        language_code: str | None = "en",
    ) -> str:
        """A modified client presses a button that is not there, with any ``data``.

        Telegram delivers whatever callback data a client sends for a real message, so the
        bot must check it; returns the callback query id.
        """
        with self._cond:
            message = self._messages.get(chat_id, {}).get(message_id)
            if message is None:
                raise AssertionError(f"chat {chat_id} has no bot message {message_id}")
            chat = self._chat_json(chat_id)
            sender_id = user_id if user_id is not None else (
                chat_id if chat["type"] == "private" else DEFAULT_GROUP_USER_ID)
            user = self._remember_user(sender_id, "Eve", None, language_code)
            query_id = str(self.bot_id * 1000 + next(self._ids))
            self._callback_queries.add(query_id)
            self.add_update({"callback_query": {
                "id": query_id, "from": user, "message": self._message_json(message),
                "chat_instance": str(chat_id), "data": data,
            }})
            return query_id

    def inline_query(self, user_id: int, text: str, *, first_name: str = "Ada",
                     language_code: str | None = "en") -> str:
        """A user types `@bot text` in some chat; returns the inline query's id."""
        with self._cond:
            user = self._remember_user(user_id, first_name, None, language_code)
            query_id = str(self.bot_id * 1000 + next(self._ids))
            self._inline_queries.add(query_id)
            self.add_update({"inline_query": {
                "id": query_id, "from": user, "query": text, "offset": "",
                "chat_type": "supergroup",
            }})
            return query_id

    def inline_answer(self, query_id: str) -> InlineAnswer | None:
        with self._cond:
            return self._inline_answers.get(query_id)

    def send_inline_result(self, chat_id: int, query_id: str, result_id: str) -> SentMessage:
        """The user picks a result of the bot's answer: its message is posted in the chat
        ("via @bot"), as the result made it; returns that message."""
        with self._cond:
            answer = self._inline_answers[query_id]
            result = next(r for r in answer.results if r["id"] == result_id)
            content = result["input_message_content"]
            params = {"text": content["message_text"], "parse_mode": content.get("parse_mode"),
                      "reply_markup": result.get("reply_markup")}
            text, entities = self._parse_text(params, "text", MAX_MESSAGE_LENGTH)
            self._remember_chat(chat_id, None, "Ada", None, None)
            message = SentMessage(
                chat_id=chat_id, message_id=self._new_message_id(chat_id), text=text,
                sent_text=params["text"], parse_mode=params["parse_mode"], entities=entities,
                reply_markup=self._reply_markup(params), date=int(time.time()), params=params)
            self._messages.setdefault(chat_id, {})[message.message_id] = message
            return message

    def react(
        self,
        chat_id: int,
        message_id: int,
        emojis: tuple[str, ...],
        *,
        old: tuple[str, ...] = (),
        user_id: int | None = None,
        first_name: str = "Ada",
        language_code: str | None = "en",
    ) -> int | None:
        """A user changes their reactions on a bot message from ``old`` to ``emojis``; returns
        the update id, or None where Telegram tells the bot nothing: in a group whose
        administrators the bot is not among."""
        with self._cond:
            if self._messages.get(chat_id, {}).get(message_id) is None:
                raise AssertionError(f"chat {chat_id} has no bot message {message_id}")
            chat = self._chat_json(chat_id)
            if chat["type"] != "private" and self.bot_id not in self._admins.get(chat_id, set()):
                return None
            user = self._remember_user(_sender_id(chat, user_id), first_name, None,
                                       language_code)
            return self.add_update({"message_reaction": {
                "chat": chat, "message_id": message_id, "user": user, "date": int(time.time()),
                "old_reaction": [{"type": "emoji", "emoji": e} for e in old],
                "new_reaction": [{"type": "emoji", "emoji": e} for e in emojis],
            }})

    def my_chat_member(
        self,
        chat_id: int,
        new_status: str,
        *,
        old_status: str | None = None,
        user_id: int | None = None,
        chat_type: str | None = None,
        title: str | None = None,
        first_name: str = "Ada",
        language_code: str | None = "en",
    ) -> int:
        """The bot's own membership changed (added, removed, blocked); returns the update id.

        "kicked"/"left" also block sends to the chat (403), "member"/"administrator" unblock,
        as on Telegram.
        """
        if old_status is None:
            old_status = "left" if new_status in ("member", "administrator") else "member"
        with self._cond:
            chat = self._remember_chat(chat_id, chat_type, first_name, None, title)
            user = self._remember_user(_sender_id(chat, user_id), first_name, None, language_code)
            bot = self._bot_user()
            if new_status in ("kicked", "left"):
                self._blocked.add(chat_id)
            else:
                self._blocked.discard(chat_id)
            return self.add_update(
                {
                    "my_chat_member": {
                        "chat": chat,
                        "from": user,
                        "date": int(time.time()),
                        "old_chat_member": _chat_member_json(bot, old_status),
                        "new_chat_member": _chat_member_json(bot, new_status),
                    }
                }
            )

    # ------------------------------------------------------------------ forum topics

    def create_topic(
        self, chat_id: int, name: str, *, user_id: int = DEFAULT_GROUP_USER_ID,
        title: str | None = None,
    ) -> int:
        """A member creates a topic in forum ``chat_id`` (a supergroup, made a forum now);
        returns its thread id. The bot gets the ``forum_topic_created`` service message."""
        with self._cond:
            chat = self._remember_chat(chat_id, "supergroup", "Ada", None, title)
            chat["is_forum"] = True
            self._chats[chat_id]["is_forum"] = True
            thread_id = self._new_message_id(chat_id)
            self._topics.setdefault(chat_id, {})[thread_id] = Topic(thread_id, name)
            opener = self._service_message(chat_id, thread_id, user_id, thread_id,
                                           {"forum_topic_created": {"name": name,
                                                                    "icon_color": 7322096}})
            self._topic_openers[(chat_id, thread_id)] = opener
            self.add_update({"message": opener})
            return thread_id

    def rename_topic(self, chat_id: int, thread_id: int, name: str, *,
                     user_id: int = DEFAULT_GROUP_USER_ID) -> None:
        """A member renames a topic: the bot gets ``forum_topic_edited``."""
        with self._cond:
            self._topic(chat_id, thread_id).name = name
            self._post_service(chat_id, thread_id, user_id, {"forum_topic_edited": {"name": name}})

    def close_topic(self, chat_id: int, thread_id: int, *,
                    user_id: int = DEFAULT_GROUP_USER_ID) -> None:
        """An admin closes a topic: sends into it fail with TOPIC_CLOSED until reopened."""
        with self._cond:
            self._topic(chat_id, thread_id).closed = True
            self._post_service(chat_id, thread_id, user_id, {"forum_topic_closed": {}})

    def reopen_topic(self, chat_id: int, thread_id: int, *,
                     user_id: int = DEFAULT_GROUP_USER_ID) -> None:
        """Undo :meth:`close_topic`."""
        with self._cond:
            self._topic(chat_id, thread_id).closed = False
            self._post_service(chat_id, thread_id, user_id, {"forum_topic_reopened": {}})

    def delete_topic(self, chat_id: int, thread_id: int) -> None:
        """An admin deletes a topic and, as on Telegram, every message in it; no update comes.
        Sends into it then fail with "message thread not found"."""
        with self._cond:
            self._topic(chat_id, thread_id)
            del self._topics[chat_id][thread_id]
            self._topic_openers.pop((chat_id, thread_id), None)
            threads = self._threads.get(chat_id, {})
            for message_id in [m for m, t in threads.items() if t == thread_id]:
                del threads[message_id]
                self._messages.get(chat_id, {}).pop(message_id, None)
                self._user_messages.get(chat_id, set()).discard(message_id)

    def topics(self, chat_id: int) -> list[Topic]:
        """The chat's topics as they stand (deleted ones gone), oldest first."""
        with self._cond:
            return [replace(t) for _, t in sorted(self._topics.get(chat_id, {}).items())]

    def messages_in(self, chat_id: int, thread_id: int | None) -> list[SentMessage]:
        """The bot's messages in one topic of a forum (None: General, or the whole chat when
        it is no forum), as they stand now."""
        return [m for m in self.messages(chat_id) if m.message_thread_id == thread_id]

    # ------------------------------------------------------------------ configuring the world

    def set_admins(self, chat_id: int, user_ids: set[int], *, creator: int | None = None) -> None:
        """Make ``user_ids`` administrators of a group (``creator`` its owner)."""
        with self._cond:
            self._admins[chat_id] = set(user_ids)
            if creator is not None:
                self._creators[chat_id] = creator

    def set_member_status(self, chat_id: int, user_id: int, status: str) -> None:
        """Force getChatMember's status ("member", "left", "kicked", ...) for one user."""
        with self._cond:
            self._statuses[(chat_id, user_id)] = status

    def block_chat(self, chat_id: int) -> None:
        """Sends to this chat fail with 403 until :meth:`unblock_chat`."""
        with self._cond:
            self._blocked.add(chat_id)

    def unblock_chat(self, chat_id: int) -> None:
        """Undo :meth:`block_chat`."""
        with self._cond:
            self._blocked.discard(chat_id)

    def migrate_chat(self, chat_id: int, new_chat_id: int) -> None:
        """The group became a supergroup: requests to ``chat_id`` fail with ChatMigrated."""
        with self._cond:
            self._migrated[chat_id] = new_chat_id

    def fail_next(
        self,
        method: str,
        error_code: int = 429,
        *,
        retry_after: int | None = None,
        description: str | None = None,
        migrate_to_chat_id: int | None = None,
        chat_id: int | str | None = None,
        times: int = 1,
        after: int = 0,
    ) -> None:
        """Make the next ``times`` calls of ``method`` (to ``chat_id``, if given) fail, once
        ``after`` such calls have gone through (the third part of a digest: ``after=2``)."""
        parameters: dict[str, Any] | None = None
        if error_code == 429:
            retry_after = 3 if retry_after is None else retry_after
            parameters = {"retry_after": retry_after}
        if migrate_to_chat_id is not None:
            parameters = {"migrate_to_chat_id": migrate_to_chat_id}
        if description is None:
            description = {
                429: f"Too Many Requests: retry after {retry_after}",
                403: "Forbidden: bot was blocked by the user",
                400: (
                    "Bad Request: group chat was upgraded to a supergroup chat"
                    if migrate_to_chat_id is not None
                    else "Bad Request: chat not found"
                ),
                500: "Internal Server Error",
                502: "Bad Gateway",
            }.get(error_code, "Error")
        with self._cond:
            self._failures.append(
                _Failure(method, error_code, description, parameters, chat_id, times, after)
            )

    def delay_next(self, method: str, seconds: float, *, times: int = 1) -> None:
        """Answer the next ``times`` calls of ``method`` only after ``seconds``."""
        with self._cond:
            self._delays.append([method, seconds, times])

    def set_round_trip(self, method: str, seconds: float) -> None:
        """Answer every call of ``method`` ``seconds`` after it arrives, as over a real network:
        Telegram handles (and counts) it half-way, then the answer travels back. 0 turns it off.
        """
        with self._cond:
            self._round_trips[method] = seconds

    # ------------------------------------------------------------------ inspecting

    @property
    def calls(self) -> list[Call]:
        """Every request so far, in answer order (getUpdates included)."""
        with self._cond:
            return list(self._calls)

    def calls_of(self, method: str, *, ok_only: bool = False) -> list[Call]:
        """The requests of one method; ``ok_only`` keeps the successful ones."""
        with self._cond:
            return [
                c for c in self._calls if c.method == method and (not ok_only or c.status == 200)
            ]

    def messages(self, chat_id: int) -> list[SentMessage]:
        """The bot's messages in a chat as they stand now (edits applied, deletions gone)."""
        with self._cond:
            return [m for _, m in sorted(self._messages.get(chat_id, {}).items())]

    def message(self, chat_id: int, message_id: int) -> SentMessage:
        """One bot message as it stands now; KeyError when there is none."""
        with self._cond:
            return self._messages[chat_id][message_id]

    def all_messages(self) -> list[SentMessage]:
        """The bot's messages in every chat, in chat then message order."""
        with self._cond:
            return [
                m
                for chat in sorted(self._messages)
                for _, m in sorted(self._messages[chat].items())
            ]

    def take_messages(self) -> list[SentMessage]:
        """Every message the bot sent so far, forgotten along with the call log.

        For long runs (the soak) that read deliveries day by day with memory kept flat.
        """
        with self._cond:
            taken = [m for chat in self._messages.values() for m in chat.values()]
            self._messages.clear()
            self._calls.clear()
            return taken

    def documents(self, chat_id: int) -> list[SentDocument]:
        """Documents the bot sent to a chat, oldest first."""
        with self._cond:
            return list(self._documents.get(chat_id, []))

    @property
    def callback_answers(self) -> list[CallbackAnswer]:
        """Every answerCallbackQuery, in order."""
        with self._cond:
            return list(self._callback_answers)

    @property
    def commands(self) -> dict[str, list[tuple[str, str]]]:
        """Default-scope command lists by language_code ("" for all languages)."""
        with self._cond:
            return {
                lang: list(cmds)
                for (scope, lang), cmds in self._commands.items()
                if scope == "default"
            }

    def commands_for(
        self, scope: str = "default", language_code: str = ""
    ) -> list[tuple[str, str]]:
        """Commands for a scope key ("default", "all_private_chats", "chat:ID", ...)."""
        with self._cond:
            return list(self._commands.get((scope, language_code), []))

    def description(self, kind: str = "description", language_code: str = "") -> str | None:
        """What set{My,MyShort}Description/setMyName stored (kind: description/short_description
        /name)."""
        with self._cond:
            return self._descriptions.get((kind, language_code))

    def menu_button(self, chat_id: int | None = None) -> dict[str, Any]:
        """The menu button set for a chat (None: the default for private chats)."""
        with self._cond:
            return dict(self._menu_buttons.get(chat_id) or self._menu_buttons.get(None)
                        or {"type": "default"})

    @property
    def webhook(self) -> dict[str, Any]:
        """What the bot set with setWebhook (url, secret_token); empty when polling."""
        with self._cond:
            return dict(self._webhook)

    def pop_updates(self) -> list[dict[str, Any]]:
        """Take the queued updates out, to push them to the bot's webhook instead."""
        with self._cond:
            updates, self._updates = self._updates, []
            return updates

    @property
    def delayed_requests(self) -> int:
        """How many requests are waiting out a `delay_next` right now (arrived, unanswered)."""
        with self._cond:
            return self._delayed_requests

    @property
    def waiting_polls(self) -> int:
        """How many getUpdates requests are blocked in long polling right now."""
        with self._cond:
            return self._waiting_polls

    @property
    def pending_updates(self) -> int:
        """Updates not yet confirmed by getUpdates."""
        with self._cond:
            return len(self._updates)

    def peak_in_flight(self, method: str) -> int:
        """The most requests of `method` the fake was handling at once so far."""
        with self._cond:
            return self._peak_in_flight.get(method, 0)

    @property
    def stars_balance(self) -> float:
        """The bot's Stars left for paid broadcasts."""
        with self._cond:
            return self._balance_tenths / 10

    @property
    def paid_messages(self) -> int:
        """Messages Telegram took (and charged 0.1 Stars for) as paid broadcasts."""
        with self._cond:
            return self._paid_messages

    @property
    def rate_limited_count(self) -> int:
        """How many 429 responses the fake has given (enforced or injected)."""
        with self._cond:
            return self._rate_limited

    @property
    def server_errors(self) -> list[str]:
        """Tracebacks of bugs inside the fake itself (should stay empty)."""
        with self._cond:
            return list(self._server_errors)

    def dump(self) -> str:
        """A readable summary of everything received, for assertion messages."""
        with self._cond:
            return self._dump_locked()

    # ------------------------------------------------------------------ waiting

    async def wait_for(
        self, predicate: Callable[[], T], timeout: float = 10.0, *, what: str = "condition"
    ) -> T:
        """Poll ``predicate()`` until truthy and return its value; AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise self._timed_out(what, timeout)
            await asyncio.sleep(_POLL_STEP)

    def wait_for_sync(
        self, predicate: Callable[[], T], timeout: float = 10.0, *, what: str = "condition"
    ) -> T:
        """Blocking :meth:`wait_for`, for synchronous tests."""
        deadline = time.monotonic() + timeout
        while True:
            result = predicate()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise self._timed_out(what, timeout)
            time.sleep(_POLL_STEP)

    def _timed_out(self, what: str, timeout: float) -> AssertionError:
        return AssertionError(f"timed out after {timeout}s waiting for {what}\n{self.dump()}")

    def _matching(self, chat_id: int, contains: str | None) -> list[SentMessage]:
        return [m for m in self.messages(chat_id) if contains is None or contains in m.text]

    async def wait_for_messages(
        self, chat_id: int, contains: str | None = None, count: int = 1, timeout: float = 10.0
    ) -> list[SentMessage]:
        """Wait until ``count`` bot messages in the chat show ``contains``; returns all matches."""
        return await self.wait_for(
            lambda: len(found := self._matching(chat_id, contains)) >= count and found,
            timeout,
            what=f"{count} message(s) in chat {chat_id}"
            + (f" containing {contains!r}" if contains is not None else ""),
        )

    async def wait_for_message(
        self, chat_id: int, contains: str | None = None, count: int = 1, timeout: float = 10.0
    ) -> SentMessage:
        """Like :meth:`wait_for_messages`, returning the newest matching message."""
        return (await self.wait_for_messages(chat_id, contains, count, timeout))[-1]

    async def wait_for_call(self, method: str, count: int = 1, timeout: float = 10.0) -> Call:
        """Wait until ``method`` was called successfully ``count`` times; returns the last call."""
        calls = await self.wait_for(
            lambda: len(found := self.calls_of(method, ok_only=True)) >= count and found,
            timeout,
            what=f"{count} successful {method} call(s)",
        )
        return calls[-1]

    # ------------------------------------------------------------------ request handling

    def _handle(
        self, path: str, query: str, content_type: str, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        requested = path.rstrip("/").rsplit("/", 1)[-1]
        # Counted under the method's own name: Bot API method names are case-insensitive.
        method = self._canonical.get(requested.lower(), requested)
        with self._cond:
            self._active_requests += 1
            self._in_flight[method] = in_flight = self._in_flight.get(method, 0) + 1
            self._peak_in_flight[method] = max(self._peak_in_flight.get(method, 0), in_flight)
        try:
            return self._handle_counted(path, query, content_type, body)
        finally:
            with self._cond:
                self._active_requests -= 1
                self._in_flight[method] -= 1
                self._cond.notify_all()

    def _handle_counted(
        self, path: str, query: str, content_type: str, body: bytes
    ) -> tuple[int, dict[str, Any]]:
        arrived = time.time()
        match = re.fullmatch(r"/bot([^/]+)/([A-Za-z0-9_]+)/?", path)
        if match is None:
            return 404, {"ok": False, "error_code": 404, "description": "Not Found"}
        token, requested = match.groups()
        method = self._canonical.get(requested.lower(), requested)
        recorded: dict[str, Any] = {}
        try:
            params, files = _decode_request(query, content_type, body)
            recorded = {
                **params,
                **{k: {"filename": f.filename, "size": len(f.content)} for k, f in files.items()},
            }
            if token != self.token:
                raise _ApiError(401, "Unauthorized")
            handler = self._methods.get(method)
            if handler is None:
                raise _ApiError(404, "Not Found")
            self._apply_delay(method)
            half_trip = self._round_trips.get(method, 0.0) / 2
            self._stopping.wait(half_trip)  # the request's way there
            try:
                with self._cond:
                    result = self._run(method, handler, params, files)
            finally:
                self._stopping.wait(half_trip)  # the answer's way back
            status, payload = 200, {"ok": True, "result": result}
        except _ApiError as error:
            status = error.code
            payload = {"ok": False, "error_code": error.code, "description": error.description}
            if error.parameters:
                payload["parameters"] = error.parameters
        except Exception:
            self._record_server_error(traceback.format_exc())
            status = 500
            payload = {"ok": False, "error_code": 500, "description": "Internal Server Error"}
        with self._cond:
            self._calls.append(Call(method, recorded, arrived, status))
            if status == 429:
                self._rate_limited += 1
            self._cond.notify_all()
        return status, payload

    def _run(
        self,
        method: str,
        handler: Callable[[dict[str, Any], dict[str, _Upload]], Any],
        params: dict[str, Any],
        files: dict[str, _Upload],
    ) -> Any:
        chat_id = params.get("chat_id")
        for failure in self._failures:
            if failure.method == method and failure.chat_id in (None, chat_id):
                if failure.passing > 0:
                    failure.passing -= 1
                    continue
                failure.remaining -= 1
                if failure.remaining <= 0:
                    self._failures.remove(failure)
                raise _ApiError(failure.error_code, failure.description, failure.parameters)
        if isinstance(chat_id, int):
            if chat_id in self._migrated:
                raise _ApiError(
                    400,
                    "Bad Request: group chat was upgraded to a supergroup chat",
                    {"migrate_to_chat_id": self._migrated[chat_id]},
                )
            if method in _CHAT_WRITE_METHODS and chat_id in self._blocked:
                raise _ApiError(
                    403,
                    "Forbidden: bot was blocked by the user"
                    if chat_id > 0
                    else "Forbidden: bot was kicked from the group chat",
                )
        paid = method in _SEND_METHODS and params.get("allow_paid_broadcast") is True
        if paid and self._balance_tenths < 1:
            # Telegram's error for a payment the Stars balance cannot cover.
            raise _ApiError(400, "Bad Request: BALANCE_TOO_LOW")
        limited = method in _SEND_METHODS and self.enforce_limits and isinstance(chat_id, int)
        if limited and (retry_after := self._retry_after(chat_id, paid)) is not None:
            raise _ApiError(
                429, f"Too Many Requests: retry after {retry_after}", {"retry_after": retry_after}
            )
        result = handler(params, files)
        if paid:
            self._balance_tenths -= 1
            self._paid_messages += 1
        if limited:
            self._count_send(chat_id, paid)
        return result

    def _apply_delay(self, method: str) -> None:
        with self._cond:
            delay = next((d for d in self._delays if d[0] == method), None)
            if delay is None:
                return
            delay[2] -= 1
            if delay[2] <= 0:
                self._delays.remove(delay)
            self._delayed_requests += 1
            self._cond.notify_all()
        try:
            self._stopping.wait(delay[1])
        finally:
            with self._cond:
                self._delayed_requests -= 1

    def _retry_after(self, chat_id: int, paid: bool = False) -> int | None:
        now = self._clock()
        sends = self._paid_sends if paid else self._global_sends
        while sends and sends[0] <= now - 1:
            sends.popleft()
        overall = self.limits.paid_per_second if paid else self.limits.global_per_second
        if len(sends) >= overall:
            return max(1, math.ceil(sends[0] + 1 - now))
        if chat_id > 0:
            burst, rate = self.limits.private_burst, self.limits.private_per_second
            tokens, last = self._private_buckets.get(chat_id, (float(burst), now))
            tokens = min(float(burst), tokens + (now - last) * rate)
            self._private_buckets[chat_id] = (tokens, now)
            if tokens < 1:
                return max(1, math.ceil((1 - tokens) / rate))
        else:
            group = self._group_sends.setdefault(chat_id, deque())
            while group and group[0] <= now - 60:
                group.popleft()
            if len(group) >= self.limits.group_per_minute:
                return max(1, math.ceil(group[0] + 60 - now))
        return None

    def _count_send(self, chat_id: int, paid: bool = False) -> None:
        now = self._clock()
        (self._paid_sends if paid else self._global_sends).append(now)
        if chat_id > 0:
            tokens, _ = self._private_buckets[chat_id]
            self._private_buckets[chat_id] = (tokens - 1, now)
        else:
            self._group_sends[chat_id].append(now)

    def _record_server_error(self, error: str) -> None:
        with self._cond:
            self._server_errors.append(error)
        record_handler_error("fake-telegram", error)

    # ------------------------------------------------------------------ Bot API methods
    # Each runs with the lock held, takes (params, files) and returns the "result".

    def _get_me(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        return {
            **self._bot_user(),
            "can_join_groups": True,
            "can_read_all_group_messages": False,
            "supports_inline_queries": False,
            "can_connect_to_business": False,
            "has_main_web_app": False,
        }

    def _delete_webhook(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        if params.get("drop_pending_updates"):
            self._updates.clear()
        self._webhook = {}
        return True

    def _set_webhook(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        url = params.get("url") or ""
        if not url.startswith("https://"):
            raise _bad_request("bad webhook: An HTTPS URL must be provided for webhook")
        self._webhook = {"url": url, "secret_token": params.get("secret_token")}
        return True

    def _get_updates(
        self, params: dict[str, Any], files: dict[str, _Upload]
    ) -> list[dict[str, Any]]:
        offset = int(params.get("offset") or 0)
        limit = min(max(int(params.get("limit") or 100), 1), 100)
        timeout = min(max(float(params.get("timeout") or 0), 0.0), MAX_LONG_POLL_SECONDS)
        if "allowed_updates" in params:
            allowed = params["allowed_updates"] or []
            self._allowed_updates = frozenset(allowed) if allowed else None
        # An offset confirms (forgets) every update below it; a negative one keeps the last few.
        if offset < 0:
            del self._updates[: max(len(self._updates) + offset, 0)]
        elif offset:
            self._updates = [u for u in self._updates if u["update_id"] >= offset]
        self._poll_generation += 1
        generation = self._poll_generation
        deadline = time.monotonic() + timeout
        self._waiting_polls += 1
        try:
            while True:
                if generation != self._poll_generation:
                    raise _ApiError(
                        409,
                        "Conflict: terminated by other getUpdates request; "
                        "make sure that only one bot instance is running",
                    )
                self._updates = [u for u in self._updates if self._is_allowed(u)]
                remaining = deadline - time.monotonic()
                if self._updates or remaining <= 0 or self._stopping.is_set():
                    return self._updates[:limit]
                self._cond.wait(min(remaining, 0.5))
        finally:
            self._waiting_polls -= 1

    def _is_allowed(self, update: dict[str, Any]) -> bool:
        kind = next((key for key in update if key != "update_id"), "")
        if self._allowed_updates is None:
            return kind not in _OPT_IN_UPDATES
        return kind in self._allowed_updates

    def _send_message(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        chat_id = self._require_chat(params)
        text, entities = self._parse_text(params, "text", MAX_MESSAGE_LENGTH)
        markup = self._reply_markup(params)
        self._check_reply(chat_id, params)
        thread_id = self._target_thread(chat_id, params)
        message = SentMessage(
            chat_id=chat_id,
            message_id=self._new_message_id(chat_id),
            text=text,
            sent_text=params["text"],
            parse_mode=params.get("parse_mode"),
            entities=entities,
            reply_markup=markup,
            date=int(time.time()),
            params=dict(params),
            message_thread_id=thread_id,
            reply_to_message_id=self._existing_reply(chat_id, params),
        )
        self._messages.setdefault(chat_id, {})[message.message_id] = message
        if thread_id is not None:
            self._threads.setdefault(chat_id, {})[message.message_id] = thread_id
        return self._message_json(message)

    def _edit_message_text(
        self, params: dict[str, Any], files: dict[str, _Upload]
    ) -> dict[str, Any]:
        message = self._editable(params)
        text, entities = self._parse_text(params, "text", MAX_MESSAGE_LENGTH)
        # Telegram drops the inline keyboard when an edit does not repeat it.
        markup = self._reply_markup(params)
        if (text, entities, markup) == (message.text, message.entities, message.reply_markup):
            raise _bad_request(_NOT_MODIFIED.removeprefix("Bad Request: "))
        edited = replace(
            message,
            text=text,
            sent_text=params["text"],
            parse_mode=params.get("parse_mode"),
            entities=entities,
            reply_markup=markup,
            edit_date=int(time.time()),
            edit_count=message.edit_count + 1,
            params=dict(params),
        )
        self._messages[message.chat_id][message.message_id] = edited
        return self._message_json(edited)

    def _edit_message_reply_markup(
        self, params: dict[str, Any], files: dict[str, _Upload]
    ) -> dict[str, Any]:
        message = self._editable(params)
        markup = self._reply_markup(params)
        if markup == message.reply_markup:
            raise _bad_request(_NOT_MODIFIED.removeprefix("Bad Request: "))
        edited = replace(
            message,
            reply_markup=markup,
            edit_date=int(time.time()),
            edit_count=message.edit_count + 1,
        )
        self._messages[message.chat_id][message.message_id] = edited
        return self._message_json(edited)

    def _delete_message(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        chat_id = self._require_chat(params)
        message_id = params.get("message_id")
        if self._messages.get(chat_id, {}).pop(message_id, None) is None:
            if message_id in self._user_messages.get(chat_id, set()):
                self._user_messages[chat_id].discard(message_id)
                return True
            raise _bad_request("message to delete not found")
        return True

    def _answer_callback_query(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        query_id = str(params.get("callback_query_id") or "")
        if query_id not in self._callback_queries:
            raise _ApiError(400, _QUERY_INVALID)
        text = params.get("text")
        if text is not None and utf16_len(text) > 200:
            raise _bad_request("MESSAGE_TOO_LONG")
        self._callback_queries.discard(query_id)
        self._callback_answers.append(
            CallbackAnswer(
                callback_query_id=query_id,
                text=text,
                show_alert=bool(params.get("show_alert", False)),
                url=params.get("url"),
                cache_time=params.get("cache_time"),
            )
        )
        return True

    def _answer_inline_query(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        query_id = str(params.get("inline_query_id") or "")
        if query_id not in self._inline_queries:
            raise _bad_request("query is too old and response timeout expired or query ID is "
                               "invalid")
        results = params.get("results")
        if not isinstance(results, list) or len(results) > 50:
            raise _bad_request("RESULTS_TOO_MUCH")
        seen: set[str] = set()
        for result in results:
            result_id = str(result.get("id") or "")
            if not result_id or len(result_id.encode()) > 64 or result_id in seen:
                raise _bad_request("RESULT_ID_INVALID" if result_id not in seen
                                   else "RESULT_ID_DUPLICATE")
            seen.add(result_id)
            if result.get("type") != "article" or not result.get("title"):
                raise _bad_request("RESULT_TYPE_INVALID")
            content = result.get("input_message_content") or {}
            self._parse_text({"text": content.get("message_text"),
                              "parse_mode": content.get("parse_mode")}, "text",
                             MAX_MESSAGE_LENGTH)
            self._reply_markup(result)
        self._inline_queries.discard(query_id)
        self._inline_answers[query_id] = InlineAnswer(
            query_id, results, params.get("cache_time"), bool(params.get("is_personal")))
        return True

    def _send_document(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        chat_id = self._require_chat(params)
        upload = files.get("document")
        reference = params.get("document")
        if upload is not None:
            if not upload.content:
                raise _bad_request("file must be non-empty")
            file_id = f"BQACAgIAAx{next(self._ids):08d}"
            filename, content, mime = upload.filename, upload.content, upload.mime_type
        elif isinstance(reference, str) and reference.startswith("attach://"):
            attached = files.get(reference.removeprefix("attach://"))
            if attached is None:
                raise _bad_request("wrong file identifier/HTTP URL specified")
            file_id = f"BQACAgIAAx{next(self._ids):08d}"
            filename, content, mime = attached.filename, attached.content, attached.mime_type
        elif isinstance(reference, str) and reference in self._files:
            known = self._files[reference]
            file_id, filename = reference, known.filename
            content, mime = known.content, known.mime_type
        else:
            raise _bad_request("wrong file identifier/HTTP URL specified")
        self._check_reply(chat_id, params)
        thread_id = self._target_thread(chat_id, params)
        caption: str | None = None
        caption_entities: tuple[dict[str, Any], ...] = ()
        if params.get("caption"):
            caption, caption_entities = self._parse_text(
                params, "caption", MAX_CAPTION_LENGTH, allow_empty=True
            )
        document = SentDocument(
            chat_id=chat_id,
            message_id=self._new_message_id(chat_id),
            filename=filename,
            content=content,
            mime_type=mime,
            caption=caption,
            sent_caption=params.get("caption"),
            parse_mode=params.get("parse_mode"),
            file_id=file_id,
            date=int(time.time()),
            reply_markup=self._reply_markup(params),
            message_thread_id=thread_id,
            reply_to_message_id=self._existing_reply(chat_id, params),
        )
        self._documents.setdefault(chat_id, []).append(document)
        if thread_id is not None:
            self._threads.setdefault(chat_id, {})[document.message_id] = thread_id
        self._files[file_id] = document
        result: dict[str, Any] = {
            "message_id": document.message_id,
            "from": self._bot_user(),
            "chat": self._chat_json(chat_id),
            "date": document.date,
            "document": {
                "file_id": file_id,
                "file_unique_id": file_id[-12:],
                "file_name": filename,
                "file_size": len(content),
                **({"mime_type": mime} if mime else {}),
            },
        }
        if caption:
            result["caption"] = caption
            if caption_entities:
                result["caption_entities"] = list(caption_entities)
        if document.reply_markup and "inline_keyboard" in document.reply_markup:
            result["reply_markup"] = document.reply_markup
        if thread_id is not None:
            result.update(message_thread_id=thread_id, is_topic_message=True)
        return result

    def _get_file(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        found = self._user_files.get(str(params.get("file_id", "")))
        if found is None:
            raise _bad_request("invalid file_id")
        if (found.claimed_size or 0) > MAX_DOWNLOAD_BYTES:
            raise _bad_request("file is too big")
        result = {"file_id": found.file_id, "file_unique_id": found.file_id[-12:],
                  "file_path": found.path}
        if found.claimed_size is not None:
            result["file_size"] = found.claimed_size
        return result

    def _set_my_commands(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        commands = params.get("commands")
        if not isinstance(commands, list) or len(commands) > 100:
            raise _bad_request("commands must be a list of at most 100 BotCommand")
        parsed = []
        for command in commands:
            name = str(command.get("command", "")) if isinstance(command, dict) else ""
            description = str(command.get("description", "")) if isinstance(command, dict) else ""
            if not re.fullmatch(r"[a-z0-9_]{1,32}", name.removeprefix("/")):
                raise _bad_request("BOT_COMMAND_INVALID")
            if not 1 <= len(description.strip()) <= 256:
                raise _bad_request("BOT_COMMAND_DESCRIPTION_INVALID")
            parsed.append((name.removeprefix("/"), description))
        self._commands[self._command_key(params)] = parsed
        return True

    def _get_my_commands(
        self, params: dict[str, Any], files: dict[str, _Upload]
    ) -> list[dict[str, str]]:
        return [
            {"command": c, "description": d}
            for c, d in self._commands.get(self._command_key(params), [])
        ]

    def _delete_my_commands(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        self._commands.pop(self._command_key(params), None)
        return True

    def _command_key(self, params: dict[str, Any]) -> tuple[str, str]:
        language = params.get("language_code") or ""
        if language and not re.fullmatch(r"[a-z]{2}", language):
            raise _bad_request("invalid language code specified")
        scope = params.get("scope") or {"type": "default"}
        ids = [str(scope[k]) for k in ("chat_id", "user_id") if k in scope]
        key = str(scope.get("type", "default")).removeprefix("BotCommandScope")
        return (":".join([key, *ids]), language)

    def _description_setter(
        self, kind: str, limit: int
    ) -> Callable[[dict[str, Any], dict[str, _Upload]], bool]:
        def setter(params: dict[str, Any], files: dict[str, _Upload]) -> bool:
            value = str(params.get(kind) or "")
            if len(value) > limit:
                raise _bad_request(f"{kind} is too long")
            language = params.get("language_code") or ""
            if value:
                self._descriptions[(kind, language)] = value
            else:
                self._descriptions.pop((kind, language), None)
            return True

        return setter

    def _description_getter(
        self, kind: str
    ) -> Callable[[dict[str, Any], dict[str, _Upload]], dict[str, str]]:
        def getter(params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, str]:
            language = params.get("language_code") or ""
            stored = self._descriptions.get((kind, language))
            if stored is None and kind == "name":
                stored = self.bot_name
            return {kind: stored or ""}

        return getter

    def _get_chat(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        chat_id = self._require_chat(params)
        return {
            **self._chat_json(chat_id),
            "accent_color_id": 0,
            "max_reaction_count": 11,
            "accepted_gift_types": {
                "unlimited_gifts": False,
                "limited_gifts": False,
                "unique_gifts": False,
                "premium_subscription": False,
                "gifts_from_channels": False,
            },
        }

    def _get_chat_member(self, params: dict[str, Any], files: dict[str, _Upload]) -> dict[str, Any]:
        chat_id = self._require_chat(params)
        user_id = params.get("user_id")
        if not isinstance(user_id, int):
            raise _bad_request("invalid user_id specified")
        user = (
            self._bot_user()
            if user_id == self.bot_id
            else self._users.get(
                user_id, {"id": user_id, "is_bot": False, "first_name": f"User {user_id}"}
            )
        )
        return _chat_member_json(user, self._status_of(chat_id, user_id))

    def _get_chat_administrators(
        self, params: dict[str, Any], files: dict[str, _Upload]
    ) -> list[dict[str, Any]]:
        chat_id = self._require_chat(params)
        if chat_id > 0:
            raise _bad_request("there are no administrators in the private chat")
        creator = self._creators.get(chat_id)
        ids = ([creator] if creator is not None else []) + sorted(
            self._admins.get(chat_id, set()) - {creator}
        )
        return [
            _chat_member_json(
                self._users.get(uid, {"id": uid, "is_bot": False, "first_name": f"User {uid}"}),
                self._status_of(chat_id, uid),
            )
            for uid in ids
        ]

    def _set_chat_menu_button(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        button = params.get("menu_button") or {"type": "default"}
        if not isinstance(button, dict) or button.get("type") not in (
                "default", "commands", "web_app"):
            raise _bad_request("can't parse menu button")
        if button["type"] == "web_app":
            url = str((button.get("web_app") or {}).get("url", ""))
            if not button.get("text") or not url.startswith("https://"):
                raise _bad_request("BUTTON_URL_INVALID")
        self._menu_buttons[params.get("chat_id")] = button
        return True

    def _get_chat_menu_button(self, params: dict[str, Any], files: dict[str, _Upload]
                              ) -> dict[str, Any]:
        return self._menu_buttons.get(params.get("chat_id")) or self._menu_buttons.get(
            None) or {"type": "default"}

    def _send_chat_action(self, params: dict[str, Any], files: dict[str, _Upload]) -> bool:
        self._require_chat(params)
        if params.get("action") not in _CHAT_ACTIONS:
            raise _bad_request("wrong parameter action in request")
        return True

    # ------------------------------------------------------------------ helpers (lock held)

    def _topic(self, chat_id: int, thread_id: int) -> Topic:
        topic = self._topics.get(chat_id, {}).get(thread_id)
        if topic is None:
            raise AssertionError(f"chat {chat_id} has no topic {thread_id}")
        return topic

    def _place_in_topic(self, chat_id: int, thread_id: int, message: dict[str, Any]) -> None:
        """Mark a user's message as written inside a topic, as Telegram sends it: with the
        thread id, ``is_topic_message``, and the topic's opening message as what it replies to
        when it replies to nothing else."""
        self._threads.setdefault(chat_id, {})[message["message_id"]] = thread_id
        message["message_thread_id"] = thread_id
        message["is_topic_message"] = True
        opener = self._topic_openers.get((chat_id, thread_id))
        if opener is not None and "reply_to_message" not in message:
            message["reply_to_message"] = opener

    def _service_message(self, chat_id: int, message_id: int, user_id: int, thread_id: int,
                         content: dict[str, Any]) -> dict[str, Any]:
        user = self._users.get(user_id) or self._remember_user(user_id, "Ada", None, "en")
        self._user_messages.setdefault(chat_id, set()).add(message_id)
        self._threads.setdefault(chat_id, {})[message_id] = thread_id
        return {"message_id": message_id, "from": user, "chat": self._chat_json(chat_id),
                "date": int(time.time()), "message_thread_id": thread_id,
                "is_topic_message": True, **content}

    def _post_service(self, chat_id: int, thread_id: int, user_id: int,
                      content: dict[str, Any]) -> None:
        message = self._service_message(chat_id, self._new_message_id(chat_id), user_id,
                                        thread_id, content)
        opener = self._topic_openers.get((chat_id, thread_id))
        if opener is not None:
            message["reply_to_message"] = opener
        self.add_update({"message": message})

    def _target_thread(self, chat_id: int, params: dict[str, Any]) -> int | None:
        """The topic a send goes to: ``message_thread_id``, else the topic of the message it
        replies to (as on Telegram); refused like Telegram when deleted or closed."""
        thread_id = params.get("message_thread_id")
        if thread_id is None:
            target = self._reply_target(params)
            thread_id = self._threads.get(chat_id, {}).get(target) if target else None
            if thread_id is None:
                return None
        topic = self._topics.get(chat_id, {}).get(thread_id)
        if topic is None:
            raise _ApiError(400, TOPIC_NOT_FOUND)
        if topic.closed:
            raise _ApiError(400, TOPIC_CLOSED)
        return thread_id

    def _reply_target(self, params: dict[str, Any]) -> int | None:
        reply = params.get("reply_parameters") or {}
        target = reply.get("message_id") if isinstance(reply, dict) else None
        return target if target is not None else params.get("reply_to_message_id")

    def _existing_reply(self, chat_id: int, params: dict[str, Any]) -> int | None:
        target = self._reply_target(params)
        exists = target in self._messages.get(chat_id, {}) or target in self._user_messages.get(
            chat_id, set())
        return target if exists else None

    def _status_of(self, chat_id: int, user_id: int) -> str:
        if (chat_id, user_id) in self._statuses:
            return self._statuses[(chat_id, user_id)]
        if self._creators.get(chat_id) == user_id:
            return "creator"
        if user_id in self._admins.get(chat_id, set()):
            return "administrator"
        if user_id == self.bot_id and chat_id in self._blocked:
            return "kicked" if chat_id > 0 else "left"
        return "member"

    def _require_chat(self, params: dict[str, Any]) -> int:
        chat_id = params.get("chat_id")
        if chat_id is None or chat_id == "":
            raise _bad_request("chat_id is empty")
        if not isinstance(chat_id, int) or chat_id == 0:
            raise _bad_request("chat not found")
        return chat_id

    def _parse_text(
        self, params: dict[str, Any], key: str, limit: int, *, allow_empty: bool = False
    ) -> tuple[str, tuple[dict[str, Any], ...]]:
        raw = params.get(key)
        if not isinstance(raw, str) or not raw.strip():
            if allow_empty:
                return "", ()
            raise _ApiError(400, _EMPTY)
        parse_mode = params.get("parse_mode")
        entities_key = "entities" if key == "text" else "caption_entities"
        entities: list[dict[str, Any]] = list(params.get(entities_key) or [])
        text = raw
        if parse_mode:
            if parse_mode not in _PARSE_MODES:
                raise _bad_request(f"unsupported parse_mode {parse_mode!r}")
            if parse_mode == "HTML":
                try:
                    text, entities = parse_html(raw)
                except EntityParseError as error:
                    raise _bad_request(f"can't parse entities: {error}") from None
        text, stripped = _strip_entities(text, entities)
        if not text:
            if allow_empty:
                return "", ()
            raise _ApiError(400, _EMPTY)
        if utf16_len(text) > limit:
            raise _ApiError(
                400, _TOO_LONG if key == "text" else "Bad Request: message caption is too long"
            )
        return text, stripped

    def _reply_markup(self, params: dict[str, Any]) -> dict[str, Any] | None:
        markup = params.get("reply_markup")
        if markup is None:
            return None
        if not isinstance(markup, dict):
            raise _bad_request("can't parse reply keyboard markup JSON object")
        rows = markup.get("inline_keyboard")
        if rows is None:
            return markup
        if not isinstance(rows, list) or not all(isinstance(row, list) for row in rows):
            raise _bad_request("can't parse inline keyboard button: InlineKeyboardButton expected")
        for row in rows:
            for button in row:
                if not isinstance(button, dict) or not button.get("text"):
                    raise _bad_request(
                        "can't parse inline keyboard button: Text buttons are "
                        "unallowed in the inline keyboard"
                    )
                data = button.get("callback_data")
                size = len(str(data).encode())
                if data is not None and not 1 <= size <= MAX_CALLBACK_DATA_BYTES:
                    raise _bad_request("BUTTON_DATA_INVALID")
                url = button.get("url")
                if url is not None and not re.match(r"(https?|tg)://\S+$", str(url)):
                    raise _bad_request(f"inline keyboard button URL '{url}' is invalid")
        return markup

    def _check_reply(self, chat_id: int, params: dict[str, Any]) -> None:
        reply = params.get("reply_parameters") or {}
        target = self._reply_target(params)
        if target is None:
            return
        exists = target in self._messages.get(chat_id, {}) or target in self._user_messages.get(
            chat_id, set()
        )
        allow = bool(
            params.get("allow_sending_without_reply")
            or (isinstance(reply, dict) and reply.get("allow_sending_without_reply"))
        )
        if not exists and not allow:
            raise _bad_request("message to be replied not found")

    def _editable(self, params: dict[str, Any]) -> SentMessage:
        if params.get("inline_message_id"):
            raise _bad_request("inline messages are not supported by the fake")
        chat_id = self._require_chat(params)
        message_id = params.get("message_id")
        message = self._messages.get(chat_id, {}).get(message_id)
        if message is None:
            if message_id in self._user_messages.get(chat_id, set()):
                raise _bad_request("message can't be edited")
            raise _bad_request("message to edit not found")
        return message

    def _new_message_id(self, chat_id: int) -> int:
        # One sequence per chat, shared by the users' and the bot's messages, as in a group.
        self._message_ids[chat_id] = self._message_ids.get(chat_id, 0) + 1
        return self._message_ids[chat_id]

    def _bot_user(self) -> dict[str, Any]:
        return {
            "id": self.bot_id,
            "is_bot": True,
            "first_name": self.bot_name,
            "username": self.bot_username,
        }

    def _remember_user(
        self, user_id: int, first_name: str, username: str | None, language_code: str | None
    ) -> dict[str, Any]:
        user: dict[str, Any] = {"id": user_id, "is_bot": False, "first_name": first_name}
        if username:
            user["username"] = username
        if language_code:
            user["language_code"] = language_code
        self._users[user_id] = user
        return user

    def _remember_chat(
        self,
        chat_id: int,
        chat_type: str | None,
        first_name: str,
        username: str | None,
        title: str | None,
    ) -> dict[str, Any]:
        chat = self._chat_json(chat_id, chat_type)
        if chat["type"] == "private":
            chat["first_name"] = first_name
            if username:
                chat["username"] = username
        elif title:
            chat["title"] = title
        self._chats[chat_id] = chat
        return dict(chat)

    def _chat_json(self, chat_id: int, chat_type: str | None = None) -> dict[str, Any]:
        known = self._chats.get(chat_id)
        if known is not None and chat_type in (None, known["type"]):
            return dict(known)
        if chat_type is None:
            chat_type = (
                "private"
                if chat_id > 0
                else ("supergroup" if chat_id <= -1_000_000_000_000 else "group")
            )
        if chat_type == "private":
            return {"id": chat_id, "type": "private", "first_name": f"User {chat_id}"}
        return {"id": chat_id, "type": chat_type, "title": f"Test group {chat_id}"}

    def _message_json(self, message: SentMessage) -> dict[str, Any]:
        result: dict[str, Any] = {
            "message_id": message.message_id,
            "from": self._bot_user(),
            "chat": self._chat_json(message.chat_id),
            "date": message.date,
            "text": message.text,
        }
        if message.entities:
            result["entities"] = list(message.entities)
        if message.edit_date is not None:
            result["edit_date"] = message.edit_date
        if message.message_thread_id is not None:
            result.update(message_thread_id=message.message_thread_id, is_topic_message=True)
        replied = self._messages.get(message.chat_id, {}).get(message.reply_to_message_id or 0)
        if replied is not None:
            nested = self._message_json(replied)
            nested.pop("reply_to_message", None)  # Telegram nests one level only
            result["reply_to_message"] = nested
        # Only inline keyboards are echoed back; reply keyboards live on the client.
        if message.reply_markup and "inline_keyboard" in message.reply_markup:
            result["reply_markup"] = message.reply_markup
        return result

    def _dump_locked(self) -> str:
        lines = ["FakeTelegram received:"]
        for chat_id in sorted(self._messages):
            lines.append(f"  chat {chat_id}:")
            for message_id, message in sorted(self._messages[chat_id].items()):
                text = message.text if len(message.text) <= 160 else message.text[:157] + "..."
                buttons = f" buttons={message.button_texts}" if message.buttons else ""
                edited = f" (edited x{message.edit_count})" if message.edit_count else ""
                where = (f" [topic {message.message_thread_id}]"
                         if message.message_thread_id is not None else "")
                if message.reply_to_message_id is not None:
                    where += f" [reply to #{message.reply_to_message_id}]"
                lines.append(f"    #{message_id}{where}{edited}: {text!r}{buttons}")
        for chat_id in sorted(self._documents):
            for document in self._documents[chat_id]:
                lines.append(
                    f"  chat {chat_id} document #{document.message_id}: {document.filename} "
                    f"({len(document.content)} bytes)"
                )
        if len(lines) == 1:
            lines.append("  no messages")
        calls = [c for c in self._calls if c.method != "getUpdates"][-25:]
        lines.append(f"  last {len(calls)} calls (getUpdates left out):")
        for call in calls:
            params = json.dumps(call.params, ensure_ascii=False, default=str)
            lines.append(f"    {call.method} -> {call.status} {params[:200]}")
        lines.append(f"  unconfirmed updates: {len(self._updates)}")
        if self._server_errors:
            lines.append(f"  errors inside the fake: {len(self._server_errors)}")
            lines.append(self._server_errors[-1])
        return "\n".join(lines)


def _chat_member_json(user: dict[str, Any], status: str) -> dict[str, Any]:
    if status == "creator":
        return {"status": status, "user": user, "is_anonymous": False}
    if status == "administrator":
        rights = (
            "can_manage_chat",
            "can_delete_messages",
            "can_manage_video_chats",
            "can_restrict_members",
            "can_promote_members",
            "can_change_info",
            "can_invite_users",
            "can_post_stories",
            "can_edit_stories",
            "can_delete_stories",
            "can_pin_messages",
        )
        return {
            "status": status,
            "user": user,
            "can_be_edited": False,
            "is_anonymous": False,
            **dict.fromkeys(rights, True),
        }
    if status == "kicked":
        return {"status": status, "user": user, "until_date": 0}
    if status in ("member", "left"):
        return {"status": status, "user": user}
    raise ValueError(f"unsupported chat member status {status!r}")


@pytest.fixture
def fake_telegram(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeTelegram]:
    """A running FakeTelegram, stopped after the test; fails it if the fake itself broke."""
    # Without PTB_TIMEDELTA, building a RetryAfter emits a PTBDeprecationWarning, which the
    # warnings-as-errors test config turns into a crash instead of the 429 under test.
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    with FakeTelegram() as tg:
        yield tg
    if tg.server_errors:
        pytest.fail("the fake Telegram server crashed:\n" + "\n".join(tg.server_errors))

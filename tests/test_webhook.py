"""The webhook server in-process: what it answers to each kind of request, and how it logs them.

The memory figures (six 50 MB bodies without the secret) are measured on the real process in
tests/test_process_memory.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator

import httpx
import pytest
from telegram import Bot, Update

from bot.chat.webhook import MAX_UPDATE_BYTES, SECRET_HEADER, RejectionLog, WebhookServer
from tests.test_operations import free_port

SECRET = "hook-secret_0123456789abcdef"
PATH = "/telegram/hook"
UPDATE = {"update_id": 7, "message": {"message_id": 1, "date": 0, "text": "/start",
                                      "chat": {"id": 5, "type": "private"}}}


@pytest.fixture
async def served() -> AsyncIterator[tuple[str, asyncio.Queue[object]]]:
    queue: asyncio.Queue[object] = asyncio.Queue()
    server = WebhookServer(Bot("123:ABC"), queue, path=PATH, secret=SECRET)
    port = free_port()
    server.listen("127.0.0.1", port)
    yield f"http://127.0.0.1:{port}", queue
    await server.stop()


async def post(base: str, path: str = PATH, *, secret: str | None = SECRET,
               content: bytes | None = None, **kwargs: object) -> httpx.Response:
    headers = {"Content-Type": "application/json"}
    if secret is not None:
        headers[SECRET_HEADER] = secret
    async with httpx.AsyncClient(timeout=10) as http:
        return await http.post(f"{base}{path}", headers=headers,
                               content=json.dumps(UPDATE).encode() if content is None
                               else content, **kwargs)  # type: ignore[arg-type]


async def test_an_update_with_the_secret_is_queued(
        served: tuple[str, asyncio.Queue[object]]) -> None:
    base, queue = served
    assert (await post(base)).status_code == 200
    assert (await post(base, PATH + "/")).status_code == 200
    update = queue.get_nowait()
    assert isinstance(update, Update) and update.update_id == 7


@pytest.mark.parametrize(("secret", "path", "status"), [
    (None, PATH, 403), ("not-the-secret", PATH, 403), (SECRET[:-1], PATH, 403),
    (SECRET, "/elsewhere", 404), (None, "/", 404),
])
async def test_anything_else_is_refused_and_not_queued(
        served: tuple[str, asyncio.Queue[object]], secret: str | None, path: str,
        status: int) -> None:
    base, queue = served
    assert (await post(base, path, secret=secret)).status_code == status
    async with httpx.AsyncClient(timeout=10) as http:
        assert (await http.get(f"{base}{PATH}")).status_code == 405
    assert queue.empty()


async def test_a_body_over_the_limit_is_refused_even_with_the_secret(
        served: tuple[str, asyncio.Queue[object]]) -> None:
    base, queue = served
    declared = await post(base, content=b" " * (MAX_UPDATE_BYTES + 1))
    assert declared.status_code == 413

    async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
        for _ in range(3):
            yield b" " * (MAX_UPDATE_BYTES // 2 + 1)

    try:
        status: int | None = (await post(base, content=chunks())).status_code  # type: ignore[arg-type]
    except httpx.TransportError:
        status = None  # closed while the body was still coming
    assert status in (400, None)
    assert queue.empty()


async def test_a_body_that_is_not_an_update_is_a_bad_request(
        served: tuple[str, asyncio.Queue[object]]) -> None:
    base, queue = served
    assert (await post(base, content=b"{not json")).status_code == 400
    assert queue.empty()


def test_refusals_are_logged_once_a_minute_per_source(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    rejections = RejectionLog(clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="bot.chat.webhook"):
        for _ in range(50):
            rejections.note("203.0.113.9", "a request without the right secret")
            rejections.note("198.51.100.7", "a request for another path")
            now[0] += 1.0  # 50 s in all
        now[0] = 61.0
        rejections.note("203.0.113.9", "a request without the right secret")
    lines = [record.getMessage() for record in caplog.records]
    assert lines == [
        "webhook: refused a request without the right secret from 203.0.113.9",
        "webhook: refused a request for another path from 198.51.100.7",
        "webhook: refused a request without the right secret from 203.0.113.9 "
        "(49 more refused from it since its last line)",
    ]

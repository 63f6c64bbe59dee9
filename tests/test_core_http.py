"""The one polite HTTP policy: the User-Agent, Retry-After, and when a request is tried again."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from bot import __version__
from bot.core.http import (
    BodyTooLarge,
    RetryPolicy,
    Transient,
    read_capped,
    refusal,
    retry_after_seconds,
    user_agent,
    with_retries,
)
from tests.conftest import RecordingSleep


def test_user_agent_names_the_bot_and_its_contact_if_any() -> None:
    assert user_agent() == f"arxiv-alert-bot/{__version__}"
    assert user_agent("(+mailto:ops@example.org)") == (
        f"arxiv-alert-bot/{__version__} (+mailto:ops@example.org)")


@pytest.mark.parametrize(("header", "seconds"), [
    (None, None), ("", None), ("7", 7.0), (" 2.5 ", 2.5), ("-3", 0.0), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date gone by: no wait
])
def test_retry_after_is_seconds_or_an_http_date(header: str | None,
                                                seconds: float | None) -> None:
    assert retry_after_seconds(header) == seconds


def test_retry_after_as_a_date_to_come() -> None:
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    wait = retry_after_seconds(soon)
    assert wait is not None and 25 <= wait <= 30


async def test_transient_failures_are_tried_again_then_the_last_one_raised() -> None:
    sleep = RecordingSleep()
    tried: list[int] = []

    async def attempt(number: int) -> str:
        tried.append(number)
        raise Transient(LookupError(f"busy {number}"), retry_after=5 if number == 2 else None)

    with pytest.raises(LookupError, match="busy 3"):
        await with_retries(attempt, RetryPolicy(3, backoff_base=1.0, max_retry_after=4.0),
                           what="test", sleep=sleep, rng=random.Random(1))

    assert tried == [1, 2, 3]
    # backoff 1 s + up to 1 s of jitter; then the server's 5 s, capped at 4 s
    assert 1.0 <= sleep.delays[0] <= 2.0 and sleep.delays[1] == 4.0


async def test_other_errors_and_results_end_the_attempts_at_once() -> None:
    sleep = RecordingSleep()

    async def refused(number: int) -> str:
        raise PermissionError("no")

    async def second_time_lucky(number: int) -> str:
        if number == 1:
            raise Transient(LookupError("busy"))
        return "ok"

    with pytest.raises(PermissionError):
        await with_retries(refused, RetryPolicy(3), what="test", sleep=sleep)
    assert sleep.delays == []
    assert await with_retries(second_time_lucky, RetryPolicy(3), what="test",
                              sleep=sleep) == "ok"
    assert len(sleep.delays) == 1


async def test_give_up_stops_before_a_wait_not_worth_it() -> None:
    sleep = RecordingSleep()

    async def rate_limited(number: int) -> str:
        raise Transient(LookupError("429"), retry_after=600)

    with pytest.raises(LookupError):
        await with_retries(rate_limited, RetryPolicy(4), what="test", sleep=sleep,
                           give_up=lambda t: (t.retry_after or 0) > 60)
    assert sleep.delays == []


@pytest.mark.parametrize(("status", "transient"), [
    (429, True), (503, True), (408, True), (404, False), (403, False), (501, False)])
def test_an_error_status_is_worth_another_try_only_when_it_says_not_now(
        status: int, transient: bool) -> None:
    failure = LookupError(f"HTTP {status}")

    raised = refusal(status, httpx.Headers({"Retry-After": "7"}), failure)

    if transient:
        assert isinstance(raised, Transient) and raised.failure is failure
        assert raised.retry_after == 7.0
    else:
        assert raised is failure


class CountedBody(httpx.AsyncByteStream):
    """`total` bytes in 64 kB chunks, counting how many were handed out."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.handed_out = 0

    async def __aiter__(self):  # type: ignore[override]
        while self.handed_out < self.total:
            chunk = b"x" * min(64 * 1024, self.total - self.handed_out)
            self.handed_out += len(chunk)
            yield chunk


async def capped_body(body: CountedBody, headers: dict[str, str], limit: int) -> bytes:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, headers=headers,
                                                                    stream=body))
    async with httpx.AsyncClient(transport=transport) as http, \
            http.stream("GET", "http://files.test/x") as response:
        return await read_capped(response, limit)


@pytest.mark.parametrize("headers", [{}, {"Content-Length": "1000"}],
                         ids=["no-length", "a-lying-length"])
async def test_a_body_over_the_limit_is_abandoned_as_it_streams(headers: dict[str, str]) -> None:
    body = CountedBody(200 * 1024 * 1024)
    with pytest.raises(BodyTooLarge):
        await capped_body(body, headers, 1024 * 1024)
    assert body.handed_out <= 1024 * 1024 + 64 * 1024, "reading stopped at the limit"


async def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    body = CountedBody(5000)
    with pytest.raises(BodyTooLarge):
        await capped_body(body, {"Content-Length": "5000"}, 4999)
    assert body.handed_out == 0


async def test_a_body_within_the_limit_is_read_whole() -> None:
    assert await capped_body(CountedBody(4999), {}, 4999) == b"x" * 4999

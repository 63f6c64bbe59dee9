"""The one polite HTTP client: who we say we are, which answers are worth another try, how long
to wait before it (Retry-After first, else exponential backoff with jitter).

arXiv, Hugging Face and the LLM endpoint all go through here. Each keeps its own pacing and
error types; this module only decides *whether* and *when* to try again. The loop itself is
tenacity's.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import tenacity

from bot import __version__

log = logging.getLogger(__name__)

# Answers that say "not now" rather than "no": timeouts, rate limits, a server in trouble.
RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})

T = TypeVar("T")
SleepFn = Callable[[float], Awaitable[object]]


def user_agent(contact: str = "") -> str:
    """The User-Agent every request carries: the bot, its version and, if set, a contact."""
    return f"arxiv-alert-bot/{__version__} {contact}".strip()


def polite_client(*, contact: str = "", headers: dict[str, str] | None = None,
                  timeout: float, **options: Any) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` that names the bot in every request; `options` go to httpx."""
    return httpx.AsyncClient(headers={"User-Agent": user_agent(contact), **(headers or {})},
                             timeout=httpx.Timeout(timeout), **options)


class BodyTooLarge(Exception):
    """A response body longer than its reader's limit (what the server claimed aside)."""


async def read_capped(response: httpx.Response, limit: int) -> bytes:
    """A streamed response's body, abandoned as soon as it passes `limit` bytes.

    A Content-Length over the limit refuses it before a byte is read; one under it is not
    believed. The bytes are read raw (ask for `Accept-Encoding: identity`), since one
    compressed chunk could decode to far more than the limit at once.
    """
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(f"the body is {declared} bytes, over {limit}")
    body = bytearray()
    async for chunk in response.aiter_raw():
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge(f"the body passed {limit} bytes")
        body += chunk
    return bytes(body)


def retry_after_seconds(value: str | None) -> float | None:
    """A Retry-After header as seconds from now (it is a number of seconds or an HTTP date);
    None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def refusal(status: int, headers: Mapping[str, str], failure: Exception) -> Exception:
    """What to raise for an answer with error status `status`: if another try may get through,
    a `Transient` carrying `failure` and the server's Retry-After; else `failure` itself."""
    if status in RETRY_STATUSES:
        return Transient(failure, retry_after_seconds(headers.get("retry-after")))
    return failure


class Transient(Exception):
    """One attempt failed in a way another may not: `failure` is what the caller raises when
    no attempt is left, `retry_after` the server's own wait (seconds) if it named one."""

    def __init__(self, failure: Exception, retry_after: float | None = None) -> None:
        super().__init__(str(failure))
        self.failure = failure
        self.retry_after = retry_after


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many attempts, and the wait before each next one: the server's Retry-After (capped
    at `max_retry_after`) when it gave one, else `backoff_base · 2^(n-1)` plus up to
    `backoff_base` of jitter, capped at `max_backoff`."""

    attempts: int
    backoff_base: float = 2.0
    max_backoff: float = 60.0
    max_retry_after: float = 300.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")

    def delay(self, attempt: int, retry_after: float | None, rng: random.Random) -> float:
        """The wait after failed attempt number `attempt` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.max_retry_after)
        exponential = self.backoff_base * 2 ** (attempt - 1)
        return min(exponential + rng.uniform(0, self.backoff_base), self.max_backoff)


def _never(_: Transient) -> bool:
    return False


async def with_retries(attempt: Callable[[int], Awaitable[T]], policy: RetryPolicy, *,
                       what: str, sleep: SleepFn = asyncio.sleep,
                       rng: random.Random | None = None,
                       give_up: Callable[[Transient], bool] = _never) -> T:
    """`await attempt(n)` for n = 1, 2, … until it returns, raises anything but `Transient`, or
    the policy's attempts are spent (or `give_up` says a wait is not worth it): then the last
    `Transient`'s failure is raised. `what` names the server in the log line of each retry."""
    rng = rng or random.Random()

    def last_transient(state: tenacity.RetryCallState) -> Transient:
        assert state.outcome is not None
        error = state.outcome.exception()
        assert isinstance(error, Transient)
        return error

    def wait(state: tenacity.RetryCallState) -> float:
        return policy.delay(state.attempt_number, last_transient(state).retry_after, rng)

    def stop(state: tenacity.RetryCallState) -> bool:
        return state.attempt_number >= policy.attempts or give_up(last_transient(state))

    def before_sleep(state: tenacity.RetryCallState) -> None:
        assert state.next_action is not None
        log.warning("%s request failed: %s; trying again in %.1f s (attempt %d of %d)", what,
                    last_transient(state), state.next_action.sleep, state.attempt_number,
                    policy.attempts)

    retrying = tenacity.AsyncRetrying(
        retry=tenacity.retry_if_exception_type(Transient), stop=stop, wait=wait, sleep=sleep,
        before_sleep=before_sleep, reraise=True)
    try:
        async for try_ in retrying:
            with try_:
                return await attempt(try_.retry_state.attempt_number)
    except Transient as exhausted:
        raise exhausted.failure from None
    raise AssertionError("tenacity stopped without an outcome")  # pragma: no cover

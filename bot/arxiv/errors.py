"""arXiv error types, apart from the parsers and the client's policy.

Callers catch exactly what they can handle: `retryable` says whether a later try may work.
"""

from __future__ import annotations

from typing import Any


class ArxivError(Exception):
    """Anything that went wrong talking to arXiv; `retryable` says whether a later poll may work."""

    retryable: bool = False

    def __init__(self, message: str, *, url: str | None = None, retryable: bool | None = None,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.message = message
        self.url = url
        if retryable is not None:
            self.retryable = retryable
        self.attempts = attempts

    def __str__(self) -> str:
        where = f" ({self.url})" if self.url else ""
        tries = f" after {self.attempts} attempts" if self.attempts > 1 else ""
        return f"{self.message}{where}{tries}"


class HTTPStatusError(ArxivError):
    """arXiv answered with an HTTP status we cannot use (after retries, for 5xx and 429)."""

    def __init__(self, status: int, message: str = "", **kwargs: Any) -> None:
        super().__init__(message or f"arXiv answered HTTP {status}", **kwargs)
        self.status = status


class RateLimitedError(HTTPStatusError):
    """arXiv kept answering 429 Too Many Requests."""

    retryable = True


class NetworkError(ArxivError):
    """The connection failed (refused, reset, DNS) on every attempt."""

    retryable = True


class FetchTimeoutError(NetworkError):
    """arXiv did not answer within the timeout on every attempt."""


class FeedError(ArxivError):
    """The body is not a usable feed: malformed XML, an HTML page, or arXiv's own error feed."""

    retryable = True


class ApiError(ArxivError):
    """The arXiv API answered with an error entry (e.g. "incorrect id format for abc")."""


class ListingError(ArxivError):
    """An announcement listing page that cannot be trusted whole: no date heading, or section
    counts that do not match the entries parsed. A partial day is never ingested."""

    retryable = True

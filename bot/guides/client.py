"""The OpenAI-compatible chat-completions client: one request per guide, ≤ 30 s in all."""

from __future__ import annotations

import asyncio
import json
import logging
import re

import httpx

from bot.core.http import polite_client
from bot.core.models import Paper

log = logging.getLogger(__name__)

TOTAL_TIMEOUT = 30.0  # the whole request, connection to last byte; the user is waiting
MAX_LINES = 5
MAX_LINE_CHARS = 400
MAX_ABSTRACT_CHARS = 6000  # arXiv caps abstracts near 1,920; this only guards odd input
LANGUAGE_NAMES = {"en": "English", "zh": "Simplified Chinese"}

SYSTEM_PROMPT = (
    "You write short reading guides for research papers, from the title and abstract only. "
    "Answer in {language}. Write at most five lines, one per point, in this order: the "
    "problem; the method; the main result with the numbers the abstract gives; why it "
    "matters; its limits. Start each line with its label ({labels}). Plain text: no "
    "markdown, no preamble. Do not invent numbers or claims the abstract does not make."
)
LABELS = {
    "en": "Problem:, Method:, Result:, Why it matters:, Limits:",
    "zh": "问题：、方法：、结果：、意义：、局限：",
}


class GuideError(Exception):
    """The endpoint gave no usable guide; the message is for the log, never the user."""


class EndpointBusy(GuideError):
    """HTTP 429: the endpoint asks us to slow down."""


class EndpointFailed(GuideError):
    """Any other HTTP error status, or the connection failed."""


class EndpointTimeout(GuideError):
    """No complete answer within the total timeout."""


class MalformedAnswer(GuideError):
    """The body is not the JSON a chat-completions endpoint returns."""


class EmptyAnswer(GuideError):
    """The answer parsed but holds no text."""


class GuideClient:
    """Asks one model for guides; owns its `httpx.AsyncClient`."""

    def __init__(self, url: str, model: str, api_key: str = "", *,
                 timeout: float = TOTAL_TIMEOUT) -> None:
        self.url = url if url.rstrip("/").endswith("/chat/completions") \
            else url.rstrip("/") + "/chat/completions"
        self.model = model
        self._timeout = timeout
        # No retries: the reader is waiting, and the whole request is bounded by `timeout`.
        self._http = polite_client(
            headers={"Authorization": f"Bearer {api_key}"} if api_key else None, timeout=timeout)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def write(self, paper: Paper, language: str) -> str:
        """The guide's text (≤ 5 lines) for `paper` in `language`; GuideError on any fault."""
        body = {
            "model": self.model,
            "temperature": 0.2,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT.format(
                    language=LANGUAGE_NAMES.get(language, "English"),
                    labels=LABELS.get(language, LABELS["en"]))},
                {"role": "user", "content": f"Title: {' '.join(paper.title.split())}\n\n"
                                            f"Abstract: {paper.abstract[:MAX_ABSTRACT_CHARS]}"},
            ],
        }
        try:
            async with asyncio.timeout(self._timeout):
                response = await self._http.post(self.url, json=body)
                content = response.content
        except TimeoutError:
            raise EndpointTimeout(f"no answer within {self._timeout:.0f} s") from None
        except httpx.TimeoutException:
            raise EndpointTimeout(f"no answer within {self._timeout:.0f} s") from None
        except httpx.HTTPError as exc:
            raise EndpointFailed(f"request failed: {type(exc).__name__}") from None
        if response.status_code == 429:
            raise EndpointBusy("HTTP 429")
        if response.status_code != 200:
            raise EndpointFailed(f"HTTP {response.status_code}")
        return tidy(answer_text(content))


def answer_text(content: bytes) -> str:
    """`choices[0].message.content` of a chat-completions response."""
    try:
        data = json.loads(content)
        text = data["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise MalformedAnswer("not a chat-completions JSON answer") from None
    if text is not None and not isinstance(text, str):
        raise MalformedAnswer("the message content is not text")
    if not text or not text.strip():
        raise EmptyAnswer("the answer has no text")
    return text


_MARKUP = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+|\*\*|__|^#+\s*")


def tidy(text: str) -> str:
    """At most five non-empty lines, markdown bullets and bold marks removed, each bounded."""
    lines = []
    for raw in text.splitlines():
        line = " ".join(_MARKUP.sub("", raw).split())
        if line:
            lines.append(line[:MAX_LINE_CHARS])
    if not lines:
        raise EmptyAnswer("the answer has no text")
    return "\n".join(lines[:MAX_LINES])

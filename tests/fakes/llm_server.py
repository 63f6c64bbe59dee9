"""A fake OpenAI-compatible chat-completions endpoint on a real loopback HTTP server.

    with FakeLLM() as llm:
        llm.fail_next(429)                     # or 500, or body=b"{oops", or delay=40
        ...  # point LLM_API_URL at llm.api_url
        assert len(llm.requests) == 1 and llm.requests[0].language == "zh"

Answers follow the chat-completions shape (`choices[0].message.content`); the content is a
five-line guide in the language the system prompt asks for, built from the paper's title.
"""

from __future__ import annotations

import json
import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from tests.fakes.loopback import FakeHandler, LoopbackServer

MAX_DELAY = 60.0


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One request as the server saw it."""

    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]

    @property
    def language(self) -> str:
        system = self.body["messages"][0]["content"]
        return "zh" if "Chinese" in system else "en"

    @property
    def user_text(self) -> str:
        return self.body["messages"][-1]["content"]


@dataclass(frozen=True, slots=True)
class _Fault:
    status: int
    body: bytes | None
    delay: float


def guide_for(user_text: str, language: str) -> str:
    """The canned guide: five labelled lines naming the paper's title."""
    title = user_text.split("\n", 1)[0].removeprefix("Title: ")
    if language == "zh":
        return (f"问题：{title} 要解决长上下文注意力的开销。\n方法：学习一个稀疏路由器。\n"
                "结果：以 12% 的计算量达到稠密注意力 98.5% 的质量。\n意义：长文档推理更便宜。\n"
                "局限：只在两个基准上评估。")
    return (f"Problem: {title} tackles the cost of long-context attention.\n"
            "Method: a learned sparse router.\n"
            "Result: 98.5% of dense quality at 12% of the compute.\n"
            "Why it matters: cheaper long-document inference.\n"
            "Limits: evaluated on two benchmarks only.")


def completion(content: str | None, model: str = "fake-model") -> bytes:
    """A chat-completions response body with `content` as the answer."""
    return json.dumps({
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 300, "completion_tokens": 90, "total_tokens": 390},
    }).encode()


class FakeLLM(LoopbackServer):
    """Serves POST `/v1/chat/completions` on 127.0.0.1 at a free port."""

    _thread_name = "fake-llm"

    def __init__(self) -> None:
        self._faults: deque[_Fault] = deque()
        self._requests: list[ChatRequest] = []
        super().__init__(_make_handler)

    @property
    def api_url(self) -> str:
        return f"{self.root}/v1"

    def fail_next(self, status: int = 500, *, body: bytes | None = None, delay: float = 0.0,
                  times: int = 1) -> None:
        """The next `times` requests get `status` with `body` (after `delay` seconds)."""
        with self._lock:
            self._faults.extend([_Fault(status, body, min(delay, MAX_DELAY))] * times)

    def answer_next(self, content: str | None, *, times: int = 1) -> None:
        """The next `times` requests get a well-formed answer with this content."""
        self.fail_next(200, body=completion(content), times=times)

    def delay_next(self, seconds: float) -> None:
        """The next request gets the normal answer, but only after `seconds`."""
        self.fail_next(0, delay=seconds)

    @property
    def requests(self) -> list[ChatRequest]:
        with self._lock:
            return list(self._requests)

    def _respond(self, request: ChatRequest) -> tuple[int, bytes]:
        with self._lock:
            self._requests.append(request)
            fault = self._faults.popleft() if self._faults else None
        if fault is not None and fault.delay and self._stopping.wait(fault.delay):
            return 503, b""
        if fault is not None and fault.status:
            return fault.status, fault.body if fault.body is not None else json.dumps(
                {"error": {"message": f"fake error {fault.status}", "type": "server_error"}}
            ).encode()
        return 200, completion(guide_for(request.user_text, request.language),
                               request.body.get("model", "fake-model"))


def _make_handler(server: FakeLLM) -> type[FakeHandler]:
    class Handler(FakeHandler):

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length", "0"))
            raw = self.rfile.read(length)
            headers = {name.lower(): value for name, value in self.headers.items()}
            if self.path != "/v1/chat/completions":
                self._send(404, b'{"error": {"message": "not found"}}')
                return
            try:
                body = json.loads(raw)
            except ValueError:
                self._send(400, b'{"error": {"message": "invalid JSON"}}')
                return
            status, answer = server._respond(ChatRequest(self.path, headers, body))
            self._send(status, answer)

        def _send(self, status: int, body: bytes) -> None:
            self.respond(status, {"Content-Type": "application/json"}, body)

    return Handler

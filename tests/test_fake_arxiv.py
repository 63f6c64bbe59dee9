"""The fake arXiv's own behaviour that tests rely on: a request held until the test lets it go."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx

from tests.conftest import make_paper
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.feedgen import rss_feed


def wait_until(predicate: object, what: str, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_a_held_request_hangs_while_others_are_answered_then_answers_normally() -> None:
    paper = make_paper(3)
    with FakeArxivServer() as server, ThreadPoolExecutor(1) as pool:
        server.set_feed(None, rss_feed([], names=("cs",)))
        server.set_api_papers([paper])
        release = server.hold_next(path="/api")
        look_up = pool.submit(httpx.get, server.api_url,
                              params={"id_list": paper.arxiv_id}, timeout=10)
        wait_until(lambda: server.held == 1, "the look-up to be held")
        assert httpx.get(server.feed_url("cs"), timeout=5).status_code == 200
        assert not look_up.done()
        assert [r.path for r in server.requests] == ["/rss/cs"]
        release.set()
        answer = look_up.result(timeout=5)
        assert answer.status_code == 200
        assert paper.title in answer.text
        assert server.held == 0
        again = httpx.get(server.api_url, params={"id_list": paper.arxiv_id}, timeout=5)
        assert again.status_code == 200, "only the next request was held"


def test_stopping_the_server_lets_a_held_request_go_at_once() -> None:
    server = FakeArxivServer().start()
    with ThreadPoolExecutor(1) as pool:
        server.hold_next()
        hanging = pool.submit(httpx.get, server.api_url, timeout=10)
        wait_until(lambda: server.held == 1, "the request to be held")
        server.stop()
        wait_until(lambda: server.held == 0 and hanging.done(), "the held request to end")
        assert isinstance(hanging.exception(), httpx.TransportError), "it got no answer"

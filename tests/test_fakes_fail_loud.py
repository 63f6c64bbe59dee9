"""A bug inside a fake fails the test that met it: the fake answers 500, records the
traceback, and the autouse fixture (tests/conftest.py) fails the test on any recorded error."""

from __future__ import annotations

import textwrap

import httpx
import pytest

from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.huggingface_server import FakeHuggingFace
from tests.fakes.llm_server import FakeLLM
from tests.fakes.loopback import take_handler_errors
from tests.fakes.telegram_server import FakeTelegram

pytest_plugins = ["pytester"]


def broken(*args: object, **kwargs: object) -> object:
    raise ZeroDivisionError("a bug inside the fake")


def test_the_fake_arxiv_records_a_handler_error_and_answers_500(
        monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeArxivServer() as server:
        monkeypatch.setattr(server, "_route", broken)
        response = httpx.get(server.feed_url("cs"), timeout=10)
    assert response.status_code == 500
    [error] = take_handler_errors()
    assert "fake-arxiv" in error and "ZeroDivisionError: a bug inside the fake" in error


def test_the_fake_hugging_face_records_a_handler_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeHuggingFace() as server:
        monkeypatch.setattr(server, "_respond", broken)
        response = httpx.get(f"{server.url}?date=2026-11-30", timeout=10)
    assert response.status_code == 500
    [error] = take_handler_errors()
    assert "fake-huggingface" in error and "ZeroDivisionError" in error


def test_the_fake_llm_records_a_handler_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeLLM() as server:
        monkeypatch.setattr(server, "_respond", broken)
        response = httpx.post(f"{server.root}/v1/chat/completions", json={"messages": []},
                              timeout=10)
    assert response.status_code == 500
    [error] = take_handler_errors()
    assert "fake-llm" in error and "ZeroDivisionError" in error


def test_the_fake_telegram_records_a_handler_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with FakeTelegram() as tg:
        monkeypatch.setitem(tg._methods, "getMe", broken)
        response = httpx.post(f"{tg.api_url}/bot{tg.token}/getMe", timeout=10)
    assert response.status_code == 500
    [error] = take_handler_errors()
    assert "fake-telegram" in error and "ZeroDivisionError" in error


def test_a_test_whose_fake_broke_fails(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makeconftest("from tests.conftest import fakes_stay_sound  # noqa: F401\n")
    pytester.makepyfile(textwrap.dedent("""
        import httpx
        from tests.fakes.arxiv_server import FakeArxivServer

        def test_meets_a_broken_fake(monkeypatch):
            def broken(*args):
                raise ZeroDivisionError("a bug inside the fake")
            with FakeArxivServer() as server:
                monkeypatch.setattr(server, "_route", broken)
                # The bot's own retry would pass over a 500: the test does not look at it.
                httpx.get(server.feed_url("cs"), timeout=10)

        def test_meets_a_sound_fake():
            with FakeArxivServer() as server:
                assert httpx.get(server.feed_url("cs"), timeout=10).status_code == 404
    """))
    result = pytester.runpytest_inprocess("-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*a fake server broke while the test ran*",
                                 "*ZeroDivisionError: a bug inside the fake*"])

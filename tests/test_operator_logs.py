"""The operator's view: one structured line per poll, with what came in and what went out."""

from __future__ import annotations

import logging
import re
from types import SimpleNamespace

import pytest

from bot.app import poll_job
from tests.conftest import Harness, make_paper


async def test_each_poll_logs_one_structured_summary(harness: Harness,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    await harness.ask(8001, "/follow cs.LG")
    harness.serve_feed([make_paper(1), make_paper(2), make_paper(3, categories=("math.AG",))])
    with caplog.at_level(logging.INFO, logger="bot"):
        await poll_job(SimpleNamespace(services=harness.services))
    lines = [r.getMessage() for r in caplog.records]
    per_source = [line for line in lines if line.startswith("poll source=")]
    assert len(per_source) == 1 and "items=3 new=3 revised=0 seen=0 alerts=2" in per_source[0]
    summary = [line for line in lines if line.startswith("poll done")]
    assert len(summary) == 1
    fields = dict(re.findall(r"(\w+)=([\d.]+)", summary[0]))
    assert fields["sources"] == "1" and fields["items"] == "3" and fields["new"] == "3"
    assert fields["matches"] == "2" and fields["sent"] == "2" and float(fields["seconds"]) >= 0
    assert harness.settings.telegram_bot_token not in caplog.text

"""/status is for operators: checked by user (ADMIN_USER_IDS), in the chats they may use it."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.core.clock import ManualClock
from tests.conftest import Harness, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram

OPERATOR = 5150
ADMIN_GROUP = -100_777
OTHER_GROUP = -100_888
STRANGER = 6060


@pytest.fixture
async def admin_harness(tmp_path: Path, fake_telegram: FakeTelegram,
                        fake_arxiv: FakeArxivServer) -> AsyncIterator[Harness]:
    clock = ManualClock(time.time())
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv,
                             ADMIN_USER_IDS=str(OPERATOR), ADMIN_CHAT_IDS=str(ADMIN_GROUP))
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)


async def test_the_operator_gets_status_in_private_and_in_the_admin_group(
    admin_harness: Harness,
) -> None:
    private = await admin_harness.ask(OPERATOR, "/status")
    assert "Status" in private.text
    group = await admin_harness.ask(ADMIN_GROUP, "/status", user_id=OPERATOR,
                                    chat_type="supergroup", title="ops")
    assert "Status" in group.text


async def test_other_members_of_the_admin_group_are_refused(admin_harness: Harness) -> None:
    reply = await admin_harness.ask(ADMIN_GROUP, "/status", user_id=STRANGER,
                                    chat_type="supergroup", title="ops")
    assert "operators only" in reply.text
    assert "Outbox" not in reply.text


async def test_the_operator_is_refused_in_a_group_not_listed(admin_harness: Harness) -> None:
    reply = await admin_harness.ask(OTHER_GROUP, "/status", user_id=OPERATOR,
                                    chat_type="supergroup", title="public")
    assert "operators only" in reply.text


async def test_a_stranger_in_private_is_refused(admin_harness: Harness) -> None:
    assert "operators only" in (await admin_harness.ask(STRANGER, "/status")).text

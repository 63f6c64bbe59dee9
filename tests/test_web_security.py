"""The Mini App's security boundary over plain HTTP: only Telegram-signed, recent initData is
believed; a user sees only their own chat, or a group they are a member of; the group's
administrators keep what the chat reserves to them; refusals are one log line without the
data; every response carries the Content-Security-Policy."""

from __future__ import annotations

import html
import json
import logging
from collections.abc import AsyncIterator
from urllib.parse import parse_qsl, urlencode

import pytest

from bot.core.constants import DAY
from bot.services.budget import BudgetPolicy, CommandBudget
from bot.web.auth import sign
from tests.conftest import Harness, make_paper
from tests.fakes.webapp import WebUnderTest, init_data, web_app

ADA, BOB, GRACE = 7001, 7002, 7003  # private chats are their users' ids
GROUP = -100_777


@pytest.fixture
async def web(harness: Harness) -> AsyncIterator[WebUnderTest]:
    harness.tg.send_text(GROUP, "hello", title="Lab", user_id=GRACE, first_name="Grace")
    await harness.settle()  # the bot knows the group only once someone writes in it
    async with web_app(harness) as under_test:
        yield under_test


def tampered(init: str, **changes: str) -> str:
    fields = dict(parse_qsl(init))
    fields.update(changes)
    return urlencode(fields)


async def test_a_signed_user_sees_their_own_chat(web: WebUnderTest) -> None:
    page = await web.get("front", web.sign(ADA))
    assert page.status_code == 200
    assert f'data-chat="{ADA}"' in page.text
    assert "arXiv at a glance" in page.text


@pytest.mark.parametrize("case", ["missing", "forged", "tampered", "expired", "future",
                                  "no user", "doubled", "not tma"])
async def test_unsigned_forged_tampered_or_expired_init_data_is_refused_with_401(
        web: WebUnderTest, case: str, caplog: pytest.LogCaptureFixture) -> None:
    token, now = web.harness.settings.telegram_bot_token, web.harness.clock.now()
    init = {
        "missing": None,
        "forged": init_data("654321:ANOTHER-bot-token_abcdefghijklmnop", ADA, now),
        "tampered": tampered(web.sign(ADA), user=json.dumps({"id": BOB, "first_name": "B"})),
        "expired": init_data(token, ADA, now - DAY - 60),
        "future": init_data(token, ADA, now + 3600),
        "no user": sign({"auth_date": str(int(now))}, token),
        "doubled": web.sign(ADA) + "&auth_date=1",
        "not tma": "",
    }[case]
    caplog.set_level(logging.INFO)
    if case == "not tma":
        response = await web.client.get(f"{web.url}/view/front",
                                        headers={"Authorization": f"Bearer {web.sign(ADA)}"})
    else:
        response = await web.get("front", init)
    assert response.status_code == 401
    assert "arXiv at a glance" not in response.text
    refusals = [r for r in caplog.records if r.getMessage().startswith("web: refused")]
    assert len(refusals) == 1, [r.getMessage() for r in caplog.records]
    for record in caplog.records:
        line = record.getMessage()
        assert "hash=" not in line and "auth_date" not in line and "query_id" not in line
        if init:
            assert init not in line and dict(parse_qsl(init)).get("hash", "@") not in line


async def test_a_user_cannot_open_another_users_chat_or_a_group_by_naming_it(
        web: WebUnderTest) -> None:
    init = web.sign(ADA)
    for other in (str(BOB), str(GROUP)):
        response = await web.get("library", init, chat=other)
        assert response.status_code == 403, other
    assert (await web.get("library", init, chat=str(ADA))).status_code == 200


async def test_initdata_for_one_group_cannot_be_replayed_for_another(web: WebUnderTest) -> None:
    init = web.sign(ADA, group=GROUP)
    assert (await web.get("library", init)).status_code == 200
    assert (await web.get("library", init, chat=str(GROUP - 1))).status_code == 403
    assert (await web.get("library", init, chat=str(ADA))).status_code == 403
    retargeted = tampered(init, start_param=f"g{-(GROUP - 1)}")
    assert (await web.get("library", retargeted)).status_code == 401


async def test_a_group_is_shown_only_to_its_current_members(web: WebUnderTest) -> None:
    tg = web.harness.tg
    tg.set_member_status(GROUP, BOB, "left")
    tg.set_member_status(GROUP, GRACE, "kicked")
    page = await web.get("library", web.sign(ADA, group=GROUP))
    assert page.status_code == 200 and f'data-chat="{GROUP}"' in page.text
    assert (await web.get("library", web.sign(BOB, group=GROUP))).status_code == 403
    assert (await web.get("library", web.sign(GRACE, group=GROUP))).status_code == 403


async def test_a_group_the_bot_has_no_record_of_is_not_shown(web: WebUnderTest) -> None:
    assert (await web.get("library", web.sign(ADA, group=GROUP - 5))).status_code == 404


async def test_membership_is_asked_once_and_believed_briefly(web: WebUnderTest) -> None:
    tg = web.harness.tg
    before = len(tg.calls_of("getChatMember"))
    init = web.sign(ADA, group=GROUP)
    for _ in range(3):
        assert (await web.get("library", init)).status_code == 200
    assert len(tg.calls_of("getChatMember")) == before + 1


async def test_group_subscriptions_and_settings_stay_reserved_to_its_administrators(
        web: WebUnderTest) -> None:
    harness = web.harness
    harness.tg.set_admins(GROUP, {GRACE})
    member, admin = web.sign(ADA, group=GROUP), web.sign(GRACE, group=GROUP)
    refused = await web.post("follow", member, {"query": "cs.LG"})
    assert refused.status_code == 403
    assert (await web.post("setting", member, {"setting": "pause"})).status_code == 403
    assert await harness.services.subscriptions.for_chat(GROUP) == []
    page = await web.get("subscriptions", member)
    assert "Only this group's administrators" in html.unescape(page.text)
    assert "act/follow" not in page.text
    accepted = await web.post("follow", admin, {"query": "cs.LG"})
    assert accepted.status_code == 200 and "Following #1" in accepted.text
    assert [s.display for s in await harness.services.subscriptions.for_chat(GROUP)] == [
        "cs.LG"]


async def test_a_member_may_unsave_only_their_own_save_as_in_the_chat(
        web: WebUnderTest) -> None:
    harness = web.harness
    harness.tg.set_admins(GROUP, {GRACE})
    harness.serve_feed([make_paper(1)])
    await harness.poll()
    ada, bob, grace = (web.sign(u, group=GROUP, first_name=n)
                       for u, n in ((ADA, "Ada"), (BOB, "Bob"), (GRACE, "Grace")))
    assert (await web.post("save", ada, {"id": "2611.10001"})).status_code == 200
    refused = await web.post("unsave", bob, {"id": "2611.10001"})
    assert "Only Ada, who saved this paper" in refused.text
    assert await harness.services.library.is_saved(GROUP, "2611.10001")
    removed = await web.post("unsave", grace, {"id": "2611.10001"})
    assert "Removed from your library" in removed.text
    assert not await harness.services.library.is_saved(GROUP, "2611.10001")


async def test_the_command_budget_applies_per_user(web: WebUnderTest) -> None:
    web.harness.services.budget = CommandBudget(BudgetPolicy())
    init = web.sign(ADA)
    statuses = [(await web.get("library", init)).status_code for _ in range(6)]
    assert statuses[:4] == [200] * 4 and statuses[-1] == 429, statuses
    other = await web.get("library", web.sign(BOB))
    assert other.status_code == 200, "another user's budget is their own"


async def test_every_response_has_the_policy_and_no_third_party_script(
        web: WebUnderTest) -> None:
    shell = await web.client.get(f"{web.url}/")
    script = await web.client.get(f"{web.url}/static/app.js")
    page = await web.get("front", web.sign(ADA))
    refused = await web.get("front", None)
    for response in (shell, script, page, refused):
        policy = response.headers["Content-Security-Policy"]
        assert "script-src 'self' https://telegram.org;" in policy
        assert "unsafe-inline" not in policy and "unsafe-eval" not in policy
    scripts = [line for line in shell.text.splitlines() if "<script" in line]
    assert scripts == ['<script src="https://telegram.org/js/telegram-web-app.js"></script>',
                       '<script src="/app/static/app.js" defer></script>']
    assert "<script" not in page.text and " on" not in page.text.replace(" one", "")
    assert (await web.client.get(f"{web.url}/static/../auth.py")).status_code == 404
    assert (await web.client.get(f"{web.url}/nothing-here")).status_code == 404


async def test_no_log_line_holds_the_init_data_even_at_debug(
        web: WebUnderTest, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    init = web.sign(ADA)
    signature = dict(parse_qsl(init))["hash"]
    assert (await web.get("front", init)).status_code == 200
    assert (await web.post("follow", init, {"query": "cs.LG"})).status_code == 200
    assert (await web.get("library", init, chat=str(BOB))).status_code == 403
    assert (await web.get("library", tampered(init, auth_date="1"))).status_code == 401
    lines = [record.getMessage() for record in caplog.records]
    assert lines, "something was logged"
    assert not [line for line in lines if signature in line or "query_id" in line
                or init in line]

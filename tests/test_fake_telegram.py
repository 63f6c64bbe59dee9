"""The fake Bot API server behaves like Telegram for a real PTB bot and for raw HTTP clients."""

from __future__ import annotations

import asyncio
import datetime as dtm
import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator

import httpx
import pytest
from telegram import (
    Bot,
    BotCommand,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    ReplyParameters,
    Update,
)
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    RetryAfter,
)
from telegram.ext import ApplicationBuilder, CallbackQueryHandler, CommandHandler, ContextTypes

from tests.fakes.telegram_server import (
    DEFAULT_GROUP_USER_ID,
    EntityParseError,
    FakeTelegram,
    RateLimits,
    fake_telegram,  # noqa: F401 - the fixture, imported explicitly
    parse_html,
)

CHAT = 4201
GROUP = -1001234567890


@pytest.fixture
async def bot(fake_telegram: FakeTelegram) -> AsyncIterator[Bot]:  # noqa: F811
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as client:
        yield client


def save_keyboard(data: str = "v1:save:2401.00001") -> InlineKeyboardMarkup:
    return InlineKeyboardMarkup([[InlineKeyboardButton("Save", callback_data=data)]])


# ----------------------------------------------------------------------------- sending


async def test_get_me_describes_the_bot(bot: Bot, fake_telegram: FakeTelegram) -> None:  # noqa: F811
    me = await bot.get_me()

    assert me.is_bot
    assert me.id == fake_telegram.bot_id
    assert me.username == fake_telegram.bot_username
    assert me.can_join_groups


async def test_html_message_with_keyboard_is_stored_and_edited(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sent = await bot.send_message(
        CHAT, "<b>Attention</b> &amp; more", parse_mode="HTML", reply_markup=save_keyboard()
    )

    assert sent.text == "Attention & more"
    assert sent.entities[0].type == "bold" and sent.entities[0].length == len("Attention")
    assert sent.reply_markup == save_keyboard()
    [stored] = fake_telegram.messages(CHAT)
    assert (stored.message_id, stored.sent_text, stored.parse_mode) == (
        sent.message_id,
        "<b>Attention</b> &amp; more",
        "HTML",
    )
    assert stored.callback_data == ["v1:save:2401.00001"]

    edited = await bot.edit_message_text(
        "<i>Saved</i>",
        chat_id=CHAT,
        message_id=sent.message_id,
        parse_mode="HTML",
        reply_markup=save_keyboard("v1:unsave:2401.00001"),
    )

    assert edited.text == "Saved" and edited.edit_date is not None
    [stored] = fake_telegram.messages(CHAT)
    assert stored.text == "Saved" and stored.edit_count == 1
    assert stored.button_texts == ["Save"]
    assert stored.callback_data == ["v1:unsave:2401.00001"]


async def test_identical_edit_is_refused_as_not_modified(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sent = await bot.send_message(CHAT, "same", reply_markup=save_keyboard())

    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_text(
            "same", chat_id=CHAT, message_id=sent.message_id, reply_markup=save_keyboard()
        )
    with pytest.raises(BadRequest, match=r"(?i)message is not modified"):
        await bot.edit_message_reply_markup(
            chat_id=CHAT, message_id=sent.message_id, reply_markup=save_keyboard()
        )


async def test_edit_without_keyboard_drops_it_like_telegram(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sent = await bot.send_message(CHAT, "card", reply_markup=save_keyboard())

    await bot.edit_message_text("card, longer", chat_id=CHAT, message_id=sent.message_id)

    assert fake_telegram.message(CHAT, sent.message_id).buttons == []


async def test_edit_of_unknown_message_is_refused(bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)message to edit not found"):
        await bot.edit_message_text("x", chat_id=CHAT, message_id=999)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("<b>bold", 'Can\'t find end tag corresponding to start tag "b"'),
        ("line<br>break", 'Unsupported start tag "br"'),
        ("a < b", 'Unsupported start tag ""'),
        ("<b><i>x</b></i>", 'Unmatched end tag at byte offset 7, expected "</i>", found "</b>"'),
        ("caf&eacute;", 'Unsupported HTML entity "&eacute;"'),
        ('<span class="x">x</span>', 'Tag "span" must have class "tg-spoiler"'),
        ("x</b>", "Unexpected end tag"),
    ],
)
async def test_bad_html_is_refused_like_telegram(bot: Bot, text: str, reason: str) -> None:
    with pytest.raises(BadRequest, match=r"(?i)can't parse entities") as caught:
        await bot.send_message(CHAT, text, parse_mode="HTML")

    # PTB drops "Bad Request: " and lower-cases the rest of the description.
    assert reason.lower() in caught.value.message.lower()


async def test_length_counts_text_after_parsing(bot: Bot) -> None:
    ok = await bot.send_message(CHAT, f"<b>{'x' * 4096}</b>", parse_mode="HTML")
    assert len(ok.text) == 4096

    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        await bot.send_message(CHAT, "x" * 4097)
    with pytest.raises(BadRequest, match=r"(?i)message is too long"):
        # Emoji take two UTF-16 code units, Telegram's unit.
        await bot.send_message(CHAT, "🙂" * 2049)
    with pytest.raises(BadRequest, match=r"(?i)message text is empty"):
        await bot.send_message(CHAT, "<b> </b>", parse_mode="HTML")


async def test_oversized_callback_data_is_refused(bot: Bot) -> None:
    with pytest.raises(BadRequest, match=r"(?i)BUTTON_DATA_INVALID"):
        await bot.send_message(CHAT, "card", reply_markup=save_keyboard("v1:" + "x" * 62))


def test_html_parser_reports_utf16_entities() -> None:
    text, entities = parse_html(
        '🙂 <a href="https://arxiv.org/abs/2401.00001?x=1&amp;y=2">paper</a> '
        '<pre><code class="language-bibtex">@a{}</code></pre>'
        "<blockquote expandable>long</blockquote>"
    )

    assert text == "🙂 paper @a{}long"
    assert entities == [
        {
            "type": "text_link",
            "offset": 3,
            "length": 5,
            "url": "https://arxiv.org/abs/2401.00001?x=1&y=2",
        },
        {"type": "pre", "offset": 9, "length": 4, "language": "bibtex"},
        {"type": "expandable_blockquote", "offset": 13, "length": 4},
    ]
    with pytest.raises(EntityParseError):
        parse_html("<a href=>")


# ----------------------------------------------------------------------------- failures


async def test_injected_429_raises_retry_after(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next("sendMessage", 429, retry_after=2)

    with pytest.raises(RetryAfter) as caught:
        await bot.send_message(CHAT, "hello")

    assert caught.value.retry_after == dtm.timedelta(seconds=2)
    assert fake_telegram.messages(CHAT) == []
    assert fake_telegram.rate_limited_count == 1
    await bot.send_message(CHAT, "hello")
    assert [m.text for m in fake_telegram.messages(CHAT)] == ["hello"]
    assert [c.status for c in fake_telegram.calls_of("sendMessage")] == [429, 200]


async def test_injected_failure_can_target_one_chat(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.fail_next(
        "sendMessage", 400, description="Bad Request: chat not found", chat_id=CHAT + 1
    )

    await bot.send_message(CHAT, "fine")
    with pytest.raises(BadRequest, match=r"(?i)chat not found"):
        await bot.send_message(CHAT + 1, "gone")


async def test_blocked_chat_is_forbidden_until_unblocked(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.block_chat(CHAT)

    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(CHAT, "hello")
    with pytest.raises(Forbidden, match="bot was blocked by the user"):
        await bot.send_message(CHAT, "hello again")

    fake_telegram.unblock_chat(CHAT)
    await bot.send_message(CHAT, "welcome back")
    assert [m.text for m in fake_telegram.messages(CHAT)] == ["welcome back"]


async def test_migrated_group_raises_chat_migrated(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.migrate_chat(-42, GROUP)

    with pytest.raises(ChatMigrated) as caught:
        await bot.send_message(-42, "hello group")

    assert caught.value.new_chat_id == GROUP
    await bot.send_message(GROUP, "hello supergroup")

    fake_telegram.fail_next("sendMessage", 400, migrate_to_chat_id=-777, chat_id=GROUP)
    with pytest.raises(ChatMigrated) as caught:
        await bot.send_message(GROUP, "once more")
    assert caught.value.new_chat_id == -777


async def test_delay_next_holds_the_answer(bot: Bot, fake_telegram: FakeTelegram) -> None:  # noqa: F811
    fake_telegram.delay_next("sendMessage", 0.3)

    task = asyncio.create_task(bot.send_message(CHAT, "slow"))
    await fake_telegram.wait_for(lambda: task.done(), timeout=5, what="the delayed send")

    assert [m.text for m in fake_telegram.messages(CHAT)] == ["slow"]


# ----------------------------------------------------------------------------- documents & setup


async def test_send_document_records_filename_and_content(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    content = b"@article{vaswani2017,\n  title={Attention Is All You Need}\n}\n"

    sent = await bot.send_document(
        CHAT,
        document=content,
        filename="saved-papers.bib",
        caption="<b>3</b> papers",
        parse_mode="HTML",
    )

    [document] = fake_telegram.documents(CHAT)
    assert (document.filename, document.content, document.caption) == (
        "saved-papers.bib",
        content,
        "3 papers",
    )
    assert sent.document is not None and sent.document.file_name == "saved-papers.bib"
    assert sent.document.file_size == len(content)

    await bot.send_document(GROUP, document=sent.document.file_id)
    assert fake_telegram.documents(GROUP)[0].content == content


async def test_a_users_file_is_fetched_with_get_file_and_the_download_url(
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    content = b"@misc{a,\n  eprint = {2211.00593},\n  archiveprefix = {arXiv}\n}\n"
    fake_telegram.send_document(CHAT, content, "My Library.bib", caption="/import")
    fake_telegram.send_document(CHAT, b"ids", "ids.txt", file_size=None)
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url,
                   base_file_url=f"{fake_telegram.api_url}/file/bot") as bot:
        first, second = await bot.get_updates()
        document = first.message.document
        assert (document.file_name, document.file_size, first.message.caption) == (
            "My Library.bib", len(content), "/import")
        assert second.message.document.file_size is None  # Telegram may leave it out
        assert fake_telegram.downloads == []

        file = await document.get_file()
        assert file.file_size == len(content)
        assert bytes(await file.download_as_bytearray()) == content
        [path] = fake_telegram.downloads
        assert file.file_path.endswith(f"/file/bot{fake_telegram.token}/{path}")

        with pytest.raises(BadRequest, match=r"(?i)invalid file_id"):
            await bot.get_file("no-such-file")
    async with httpx.AsyncClient() as http:
        wrong_token = await http.get(f"{fake_telegram.api_url}/file/bot1:wrong/{path}")
    assert wrong_token.status_code == 404 and fake_telegram.downloads == [path]


@pytest.mark.parametrize("chunked", [False, True])
async def test_a_lying_server_streams_more_than_get_file_claims(
    fake_telegram: FakeTelegram, chunked: bool,  # noqa: F811
) -> None:
    fake_telegram.send_document(CHAT, b"@misc{x,}\n", "big.bib", file_size=1000,
                                served_size=5_000_003, get_file_size=1000, chunked=chunked)
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url,
                   base_file_url=f"{fake_telegram.api_url}/file/bot") as bot:
        [update] = await bot.get_updates()
        file = await update.message.document.get_file()
        assert (update.message.document.file_size, file.file_size) == (1000, 1000)
        async with httpx.AsyncClient() as http, http.stream("GET", file.file_path) as response:
            assert response.headers.get("content-length") == (None if chunked else "5000003")
            received = 0
            async for chunk in response.aiter_raw():
                received += len(chunk)
    assert received == 5_000_003
    [path] = fake_telegram.downloads
    assert fake_telegram.download(fake_telegram.token, path)[:20] == b"@misc{x,}\n" * 2
    assert fake_telegram.server_errors == []


async def test_commands_are_stored_per_language(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    await bot.set_my_commands([BotCommand("follow", "Follow a query")])
    await bot.set_my_commands([BotCommand("follow", "关注")], language_code="zh")

    assert fake_telegram.commands == {
        "": [("follow", "Follow a query")],
        "zh": [("follow", "关注")],
    }
    assert [c.description for c in await bot.get_my_commands(language_code="zh")] == ["关注"]
    with pytest.raises(BadRequest, match=r"(?i)BOT_COMMAND_INVALID"):
        await bot.set_my_commands([BotCommand("Follow-Query", "bad name")])

    await bot.delete_my_commands(language_code="zh")
    assert "zh" not in fake_telegram.commands


async def test_descriptions_and_chat_actions_are_accepted(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    await bot.set_my_description("Alerts for new arXiv papers", language_code="en")
    await bot.set_my_short_description("arXiv alerts")
    await bot.send_chat_action(CHAT, "upload_document")

    assert fake_telegram.description("description", "en") == "Alerts for new arXiv papers"
    assert (await bot.get_my_short_description()).short_description == "arXiv alerts"
    with pytest.raises(BadRequest, match=r"(?i)wrong parameter action"):
        await bot.send_chat_action(CHAT, "dancing")


async def test_chat_member_status_follows_set_admins(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.set_admins(GROUP, {7}, creator=8)

    assert (await bot.get_chat_member(GROUP, 7)).status == "administrator"
    assert (await bot.get_chat_member(GROUP, 8)).status == "creator"
    assert (await bot.get_chat_member(GROUP, 9)).status == "member"
    assert [m.user.id for m in await bot.get_chat_administrators(GROUP)] == [8, 7]
    assert (await bot.get_chat(GROUP)).type == "supergroup"


# ----------------------------------------------------------------------------- updates


async def test_get_updates_returns_commands_and_honours_offset(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.send_command(CHAT, "/follow cs.LG", language_code="zh-hans")
    fake_telegram.send_command(GROUP, f"/list@{fake_telegram.bot_username}", title="Lab")

    first, second = await bot.get_updates()

    assert first.message is not None and first.message.text == "/follow cs.LG"
    assert first.message.parse_entities() == {first.message.entities[0]: "/follow"}
    assert first.message.from_user is not None
    assert first.message.from_user.language_code == "zh-hans"
    assert first.message.chat.type == "private"
    assert second.message is not None and second.message.chat.title == "Lab"
    assert second.message.from_user is not None
    assert second.message.from_user.id == DEFAULT_GROUP_USER_ID
    assert list(second.message.parse_entities().values()) == [f"/list@{fake_telegram.bot_username}"]

    again = await bot.get_updates(offset=second.update_id)
    assert [u.update_id for u in again] == [second.update_id]
    assert await bot.get_updates(offset=second.update_id + 1) == ()
    assert fake_telegram.pending_updates == 0


async def test_long_poll_returns_as_soon_as_an_update_arrives(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    # The longest poll the fake allows: one that waited it out would take 50 s, far past the
    # 40 s this test gives an answer (a hang guard, not a measure: it comes in milliseconds).
    poll = asyncio.create_task(bot.get_updates(timeout=50, read_timeout=60))
    await fake_telegram.wait_for(lambda: fake_telegram.waiting_polls, timeout=30, what="a poll")

    fake_telegram.send_text(CHAT, "hi")

    [update] = await asyncio.wait_for(poll, timeout=40)
    assert update.message is not None and update.message.text == "hi"


async def test_stop_releases_a_pending_long_poll() -> None:
    tg = FakeTelegram().start()
    async with Bot(tg.token, base_url=tg.base_url) as client:
        # Released by the stop, not by its 50 s running out (40 s is a hang guard).
        poll = asyncio.create_task(client.get_updates(timeout=50, read_timeout=60))
        await tg.wait_for(lambda: tg.waiting_polls, timeout=30, what="a poll")

        await asyncio.to_thread(tg.stop)

        assert await asyncio.wait_for(poll, timeout=40) == ()
    assert tg.server_errors == []


async def test_a_second_poller_terminates_the_first(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    first = asyncio.create_task(bot.get_updates(timeout=8, read_timeout=12))
    await fake_telegram.wait_for(lambda: fake_telegram.waiting_polls, timeout=30, what="a poll")

    # A second instance of the bot, as when an old process is still running.
    async with Bot(fake_telegram.token, base_url=fake_telegram.base_url) as other:
        assert await other.get_updates(timeout=0) == ()
    with pytest.raises(Conflict, match="only one bot instance"):  # not an empty answer at 8 s
        await asyncio.wait_for(first, timeout=30)


async def test_bot_removed_from_chat_is_reported_and_blocked(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    fake_telegram.my_chat_member(GROUP, "kicked", title="Lab")

    [update] = await bot.get_updates()
    change = update.my_chat_member
    assert change is not None and change.chat.title == "Lab"
    assert (change.old_chat_member.status, change.new_chat_member.status) == ("member", "kicked")
    assert change.new_chat_member.user.id == fake_telegram.bot_id
    with pytest.raises(Forbidden, match="kicked from the group chat"):
        await bot.send_message(GROUP, "still here?")

    fake_telegram.my_chat_member(GROUP, "member")
    await bot.send_message(GROUP, "back")


async def test_press_button_sends_the_message_as_shown(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    sent = await bot.send_message(
        CHAT, "<b>Card</b>", parse_mode="HTML", reply_markup=save_keyboard()
    )

    query_id = fake_telegram.press_button(CHAT, sent.message_id, "v1:save:2401.00001")

    [update] = await bot.get_updates()
    query = update.callback_query
    assert query is not None and query.id == query_id and query.data == "v1:save:2401.00001"
    assert query.message is not None and query.message.text == "Card"
    assert query.message.reply_markup == save_keyboard()
    await bot.answer_callback_query(query_id, text="Saved")
    assert [a.text for a in fake_telegram.callback_answers] == ["Saved"]
    with pytest.raises(BadRequest, match=r"(?i)query is too old"):
        await bot.answer_callback_query(query_id, text="twice")
    with pytest.raises(AssertionError, match="no callback button"):
        fake_telegram.press_button(CHAT, sent.message_id, "v1:forged")


async def test_wait_for_message_times_out_with_a_dump(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    await bot.send_message(CHAT, "Following cs.LG")

    found = await fake_telegram.wait_for_message(CHAT, contains="Following", timeout=2)
    assert found.text == "Following cs.LG"
    with pytest.raises(AssertionError, match=r"(?s)containing 'Unfollowed'.*Following cs\.LG"):
        await fake_telegram.wait_for_message(CHAT, contains="Unfollowed", timeout=0.1)


# ----------------------------------------------------------------------------- rate limits


async def test_enforced_limits_reject_a_flood_to_one_chat(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # RetryAfter.retry_after as a timedelta; the int form warns (an error under our config).
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    now = [1000.0]
    limits = RateLimits(private_burst=3, private_per_second=1.0, group_per_minute=20)
    with FakeTelegram(enforce_limits=True, limits=limits, clock=lambda: now[0]) as tg:
        async with Bot(tg.token, base_url=tg.base_url) as client:
            for n in range(3):
                await client.send_message(CHAT, f"burst {n}")
            with pytest.raises(RetryAfter) as caught:
                await client.send_message(CHAT, "one too many")
            assert caught.value.retry_after == dtm.timedelta(seconds=1)
            await client.send_message(CHAT + 1, "another chat is fine")

            now[0] += 1.0
            await client.send_message(CHAT, "after waiting")

            for n in range(20):
                await client.send_message(GROUP, f"group {n}")
            with pytest.raises(RetryAfter):
                await client.send_message(GROUP, "21st this minute")

        assert tg.rate_limited_count == 2
        assert len(tg.messages(CHAT)) == 4 and len(tg.messages(GROUP)) == 20


async def test_enforced_limits_cap_overall_rate(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTB_TIMEDELTA", "true")
    now = [50.0]
    with FakeTelegram(enforce_limits=True, clock=lambda: now[0]) as tg:
        async with Bot(tg.token, base_url=tg.base_url) as client:
            for chat in range(1, 31):
                await client.send_message(chat, "news")
            with pytest.raises(RetryAfter):
                await client.send_message(31, "news")
        assert tg.rate_limited_count == 1


# ----------------------------------------------------------------------------- raw HTTP


async def test_raw_http_json_form_and_errors(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    base = f"{fake_telegram.api_url}/bot{fake_telegram.token}"
    async with httpx.AsyncClient() as http:
        as_json = await http.post(
            f"{base}/sendMessage",
            json={
                "chat_id": CHAT,
                "text": "json",
                "reply_markup": {"inline_keyboard": [[{"text": "Save", "callback_data": "s"}]]},
            },
        )
        as_form = await http.post(
            f"{base}/SENDMESSAGE", data={"chat_id": str(CHAT), "text": "form"}
        )
        unknown = await http.post(f"{base}/sendSticker", data={"chat_id": str(CHAT)})
        bad_token = await http.post(f"{fake_telegram.api_url}/bot1:nope/getMe")

    assert as_json.json()["result"]["reply_markup"]["inline_keyboard"][0][0]["text"] == "Save"
    assert as_form.json()["result"]["message_id"] == 2
    assert unknown.status_code == 404
    assert unknown.json() == {"ok": False, "error_code": 404, "description": "Not Found"}
    assert bad_token.status_code == 401
    assert [m.text for m in fake_telegram.messages(CHAT)] == ["json", "form"]
    assert [(c.method, c.status) for c in fake_telegram.calls[-2:]] == [
        ("sendSticker", 404),
        ("getMe", 401),
    ]


async def test_wrong_token_is_invalid_for_ptb(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    with pytest.raises(InvalidToken):
        async with Bot("1:wrong", base_url=fake_telegram.base_url):
            pass


# ----------------------------------------------------------------------------- a real Application


async def test_application_answers_ping_through_long_polling(
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    async def ping(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.effective_message is not None
        await update.effective_message.reply_text(
            "<b>pong</b>", parse_mode="HTML", reply_markup=save_keyboard("v1:again")
        )

    async def again(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        assert update.callback_query is not None
        await update.callback_query.answer("again!")

    app = ApplicationBuilder().token(fake_telegram.token).base_url(fake_telegram.base_url).build()
    app.add_handler(CommandHandler("ping", ping))
    app.add_handler(CallbackQueryHandler(again))
    await app.initialize()
    await app.start()
    assert app.updater is not None
    await app.updater.start_polling(poll_interval=0, timeout=1)
    try:
        fake_telegram.send_command(CHAT, "/ping")
        pong = await fake_telegram.wait_for_message(CHAT, contains="pong", timeout=10)
        fake_telegram.press_button(CHAT, pong.message_id, "v1:again")
        await fake_telegram.wait_for(lambda: fake_telegram.callback_answers, timeout=10)
    finally:
        await app.updater.stop()
        await app.stop()
        await app.shutdown()

    assert pong.text == "pong" and pong.parse_mode == "HTML"
    assert [a.text for a in fake_telegram.callback_answers] == ["again!"]
    assert fake_telegram.pending_updates == 0
    assert {c.method for c in fake_telegram.calls} >= {"getMe", "deleteWebhook", "getUpdates"}


def test_serves_a_bot_running_in_another_process(fake_telegram: FakeTelegram) -> None:  # noqa: F811
    script = textwrap.dedent(
        """
        import os, sys
        from telegram.ext import ApplicationBuilder, CommandHandler

        async def ping(update, context):
            await update.effective_message.reply_text("pong from " + str(os.getpid()))
            context.application.stop_running()

        url = os.environ["TELEGRAM_API_URL"]
        app = ApplicationBuilder().token(sys.argv[1]).base_url(url + "/bot").build()
        app.add_handler(CommandHandler("ping", ping))
        app.run_polling(poll_interval=0, timeout=1, stop_signals=None)
        """
    )
    env = {**os.environ, "TELEGRAM_API_URL": fake_telegram.api_url}
    fake_telegram.send_command(CHAT, "/ping")

    with subprocess.Popen([sys.executable, "-c", script, fake_telegram.token], env=env) as bot:
        try:
            [reply] = fake_telegram.wait_for_sync(lambda: fake_telegram.messages(CHAT), 15)
            assert bot.wait(timeout=15) == 0
        finally:
            bot.kill()

    assert reply.text == f"pong from {bot.pid}"
    assert fake_telegram.pending_updates == 0


# ----------------------------------------------------------------------------- forum topics

FORUM = -1009876543210


async def test_a_topic_carries_the_bots_messages_and_replies(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    papers = fake_telegram.create_topic(FORUM, "Reading group", title="Lab")

    first = await bot.send_message(FORUM, "v1", message_thread_id=papers)
    revision = await bot.send_message(
        FORUM, "v2", message_thread_id=papers,
        reply_parameters=ReplyParameters(first.message_id, allow_sending_without_reply=True))
    general = await bot.send_message(FORUM, "in General")
    await bot.send_document(FORUM, document=b"@misc{x}", filename="x.bib",
                            message_thread_id=papers)

    assert first.is_topic_message and first.message_thread_id == papers
    assert revision.reply_to_message is not None
    assert revision.reply_to_message.message_id == first.message_id
    assert not general.is_topic_message and general.message_thread_id is None
    stored = fake_telegram.message(FORUM, revision.message_id)
    assert stored.message_thread_id == papers
    assert stored.reply_to_message_id == first.message_id
    assert stored.reply_parameters == {"message_id": first.message_id,
                                       "allow_sending_without_reply": True}
    assert [m.text for m in fake_telegram.messages_in(FORUM, papers)] == ["v1", "v2"]
    assert [m.text for m in fake_telegram.messages_in(FORUM, None)] == ["in General"]
    [document] = fake_telegram.documents(FORUM)
    assert document.message_thread_id == papers
    # A reply without a thread id lands in its original's topic, as on Telegram.
    follow_up = await bot.send_message(FORUM, "v3", reply_parameters=ReplyParameters(
        revision.message_id))
    assert fake_telegram.message(FORUM, follow_up.message_id).message_thread_id == papers


async def test_closed_and_deleted_topics_refuse_sends_with_telegrams_errors(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    closing = fake_telegram.create_topic(FORUM, "Old project")
    going = fake_telegram.create_topic(FORUM, "Abandoned")
    kept = await bot.send_message(FORUM, "before", message_thread_id=going)

    fake_telegram.close_topic(FORUM, closing)
    with pytest.raises(BadRequest, match=r"(?i)^topic_closed$"):
        await bot.send_message(FORUM, "x", message_thread_id=closing)
    fake_telegram.reopen_topic(FORUM, closing)
    await bot.send_message(FORUM, "after reopening", message_thread_id=closing)

    fake_telegram.delete_topic(FORUM, going)
    with pytest.raises(BadRequest, match=r"(?i)^message thread not found$"):
        await bot.send_message(FORUM, "x", message_thread_id=going)
    with pytest.raises(BadRequest, match=r"(?i)message thread not found"):
        await bot.send_document(FORUM, document=b"x", filename="x.txt", message_thread_id=going)
    # Its messages went with it; a reply to one, allowed to go without, lands in General.
    assert fake_telegram.messages_in(FORUM, going) == []
    orphan = await bot.send_message(FORUM, "v2", reply_parameters=ReplyParameters(
        kept.message_id, allow_sending_without_reply=True))
    assert orphan.message_thread_id is None and orphan.reply_to_message is None
    assert [t.name for t in fake_telegram.topics(FORUM)] == ["Old project"]
    assert [c.status for c in fake_telegram.calls_of("sendMessage")].count(400) == 2


async def test_members_write_inside_topics_as_telegram_sends_it(
    bot: Bot,
    fake_telegram: FakeTelegram,  # noqa: F811
) -> None:
    thread = fake_telegram.create_topic(FORUM, "Theory", title="Lab")
    fake_telegram.rename_topic(FORUM, thread, "Theory club")
    fake_telegram.send_command(FORUM, "/list", thread_id=thread)
    fake_telegram.send_command(FORUM, "/list")

    created, edited, in_topic, in_general = await bot.get_updates()

    assert created.message.forum_topic_created.name == "Theory"
    assert created.message.message_thread_id == thread and created.message.chat.is_forum
    assert edited.message.forum_topic_edited.name == "Theory club"
    assert in_topic.message.is_topic_message and in_topic.message.message_thread_id == thread
    # Telegram makes a topic message reply to the topic's opening message.
    assert in_topic.message.reply_to_message.message_id == thread
    assert not in_general.message.is_topic_message
    assert in_general.message.message_thread_id is None
    # PTB answers inside the topic the command came from.
    answer = await in_topic.message.reply_text("one subscription here")
    assert fake_telegram.message(FORUM, answer.message_id).message_thread_id == thread
    with pytest.raises(AssertionError, match="no open topic"):
        fake_telegram.send_text(FORUM, "hi", thread_id=thread + 100)

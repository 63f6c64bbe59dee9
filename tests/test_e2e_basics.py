"""A researcher meets the bot: /start, /help, unknown commands, the command menu."""

from __future__ import annotations

from tests.conftest import Harness, make_paper


async def test_start_greets_and_shows_example_follow_commands(harness: Harness) -> None:
    reply = await harness.ask(5001, "/start")
    assert "arXiv" in reply.text
    assert "/follow cs.LG" in reply.text
    assert reply.parse_mode == "HTML"
    chat = await harness.services.storage.chats.get(5001)
    assert chat is not None and chat.type == "private", "every chat that writes is recorded"


async def test_help_documents_the_query_language_and_every_command(harness: Harness) -> None:
    reply = await harness.ask(5001, "/help")
    for construct in ("cat:cs.LG", "au:", "ti:", "abs:", "quantiz*", "OR", "NOT"):
        assert construct in reply.text
    for command in ("/follow", "/unfollow", "/list", "/saved", "/export", "/paper", "/pause",
                    "/resume", "/digest", "/tz", "/lang", "/stats"):
        assert command in reply.text


async def test_an_unknown_command_points_to_help(harness: Harness) -> None:
    reply = await harness.ask(5001, "/frobnicate now")
    assert "/help" in reply.text


async def test_commands_with_the_bot_name_work_in_groups(harness: Harness) -> None:
    reply = await harness.ask(-100777, f"/help@{harness.tg.bot_username}", title="Lab")
    assert "/follow" in reply.text


async def test_the_command_menu_is_registered_in_english_and_chinese(harness: Harness) -> None:
    commands = harness.tg.commands
    english = dict(commands[""])
    assert {"follow", "unfollow", "list", "saved", "export", "paper", "digest", "pause",
            "resume", "tz", "lang", "stats", "help", "start"} <= set(english)
    assert "zh" in commands and {name for name, _ in commands["zh"]} == set(english)


async def test_a_pasted_arxiv_link_in_a_private_chat_shows_the_paper(harness: Harness) -> None:
    from tests.conftest import make_paper

    harness.serve_feed([make_paper(1)])
    await harness.poll()
    card = await harness.ask(5001, "https://arxiv.org/abs/2611.10001")
    assert "part 1" in card.text and "⭐ Save" in card.button_texts


async def test_other_plain_text_in_a_private_chat_gets_a_pointer(harness: Harness) -> None:
    reply = await harness.ask(5001, "hello there")
    assert "/follow" in reply.text and "/help" in reply.text


async def test_plain_text_in_a_group_is_left_alone(harness: Harness) -> None:
    harness.tg.send_text(-100555, "lunch at noon?", title="Lab")
    await harness.settle()
    assert harness.tg.messages(-100555) == []


async def test_replies_and_button_edits_are_html_without_link_previews(harness: Harness) -> None:
    harness.serve_feed([make_paper(1)])
    await harness.ask(5001, "/follow cs.LG")
    reply = await harness.ask(5001, "/help")
    await harness.poll()
    (alert,) = [m for m in harness.tg.messages(5001) if "v1:s:" in str(m.reply_markup)]
    await harness.press(5001, alert.message_id, alert.reply_markup["inline_keyboard"][0][0]
                        ["callback_data"])
    edited = harness.tg.message(5001, alert.message_id)
    for message in (reply, alert, edited):
        assert message.parse_mode == "HTML", message.sent_text[:80]
        assert message.params.get("link_preview_options") == {"is_disabled": True}

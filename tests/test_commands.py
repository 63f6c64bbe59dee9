"""The command table is the one list of commands: the handlers the bot registers, its menu,
/help and the costs are all read from it, so a command added anywhere else fails here."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from telegram.ext import CommandHandler

from bot.chat.application import build_application
from bot.chat.commands import BY_NAME, COMMANDS, Chats, command_cost, help_text, menu
from bot.config import load_settings
from bot.core.i18n import SUPPORTED_LANGUAGES
from bot.services.budget import COSTLY_COST, DEFAULT_COST, IMPORT_MAX_COST, LOOKUP_COST
from bot.services.container import Features
from tests.conftest import Harness

ALL_FEATURES = Features(guides=True, trending=True, zotero=True)
NO_FEATURES = Features(guides=False, trending=False)
# /help is the answer to these: it names neither itself nor the greeting, and the private
# /help has no room left for /foryou, /forget, /thumbs and /zotero (see the length test below;
# the menu and a bare /zotero explain it).
NOT_IN_HELP = {"help", "start", "foryou", "forget", "thumbs", "zotero"}
CHAT_KINDS = (Chats.PRIVATE, Chats.GROUP, Chats.FORUM)


def visible(text: str) -> str:
    """What Telegram shows of an HTML message."""
    return html.unescape(re.sub(r"<[^>]+>", "", text))


def test_the_bot_registers_a_handler_for_each_row_and_no_other_command(tmp_path: Path) -> None:
    settings = load_settings({"TELEGRAM_BOT_TOKEN": "123:abc",
                              "DATABASE_PATH": str(tmp_path / "bot.sqlite3")}, env_file=None)
    application = build_application(settings)
    registered = {name: handler.callback
                  for handlers in application.handlers.values() for handler in handlers
                  if isinstance(handler, CommandHandler) for name in handler.commands}
    assert registered == {command.name: command.answer for command in COMMANDS}


def test_names_are_unique_and_as_telegram_accepts_them() -> None:
    assert len(BY_NAME) == len(COMMANDS)
    for command in COMMANDS:
        assert re.fullmatch(r"[a-z0-9_]{1,32}", command.name), command.name


@pytest.mark.parametrize("features", [NO_FEATURES, Features(guides=True, trending=False),
                                      ALL_FEATURES])
def test_the_menu_lists_every_row_with_menu_text_whose_feature_is_on(features: Features) -> None:
    expected = [command.name for command in COMMANDS if command.menu is not None
                and (command.needs is None or command.needs.on(features))]
    assert not {command.name for command in COMMANDS if command.operators_only} & set(expected)
    for language in SUPPORTED_LANGUAGES:
        entries = menu(language, features)
        assert [entry.command for entry in entries] == expected
        for entry in entries:
            assert 1 <= len(entry.description) <= 256  # what Telegram accepts


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
@pytest.mark.parametrize("where", CHAT_KINDS)
def test_help_names_every_command_offered_in_the_chat_and_no_other(
        language: str, where: Chats) -> None:
    text = help_text(language, where, ALL_FEATURES)
    named = set(re.findall(r"/([a-z]+)\b", visible(text)))
    offered = {command.name for command in COMMANDS if where & command.offered}
    assert offered - NOT_IN_HELP <= named
    assert not ({command.name for command in COMMANDS} - offered) & named
    for command in COMMANDS:
        if command.operators_only:
            assert command.help is not None and "operators only" in command.help.text


def test_help_leaves_out_the_commands_of_features_that_are_off() -> None:
    for where in CHAT_KINDS:
        off = help_text("en", where, NO_FEATURES)
        assert "/guide" not in off and "/trending" not in off
        on = help_text("en", where, ALL_FEATURES)
        assert "/guide" in on and "/trending" in on


@pytest.mark.parametrize("language", SUPPORTED_LANGUAGES)
def test_a_private_help_fits_in_1500_characters(language: str) -> None:
    assert len(visible(help_text(language, Chats.PRIVATE, NO_FEATURES))) <= 1500


def test_every_row_costs_what_the_budget_charged_before_the_table() -> None:
    costly = {"paper", "export", "follow", "guide", "trending"}
    for command in COMMANDS:
        cost = command_cost(command.name.upper(), f"/{command.name}")
        if command.name == "import":
            assert cost == LOOKUP_COST, "a bare /import: a file follows"
        else:
            assert cost == (COSTLY_COST if command.name in costly else DEFAULT_COST), command.name
    assert command_cost("paper", "/paper 2611.10001") == LOOKUP_COST
    ids = " ".join(f"2611.{10000 + n}" for n in range(1000))
    assert command_cost("import", f"/import {ids}") == IMPORT_MAX_COST
    assert command_cost("frobnicate", "/frobnicate") == DEFAULT_COST


@pytest.mark.parametrize(("command", "answer"), [
    ("/guide", "AI reading guides are not set up on this bot."),
    ("/guide 2611.11450", "AI reading guides are not set up on this bot."),
    ("/trending", "Hugging Face community picks are turned off on this bot."),
    ("/trending mine", "Hugging Face community picks are turned off on this bot."),
])
async def test_a_command_of_a_switched_off_feature_says_so_before_reading_its_argument(
        harness: Harness, command: str, answer: str) -> None:
    # The harness's bot runs without an LLM endpoint and with Hugging Face off.
    assert visible((await harness.ask(7, command)).text) == answer


@pytest.mark.parametrize(("command", "usage"), [
    ("/follow", "Tell me what to follow"),
    ("/unfollow", "Which one? Send /unfollow 2"),
    ("/paper", "Which paper? For example /paper 2611.11450"),
    ("/similar   ", "Which paper? For example /similar 2611.11450"),
])
async def test_a_bare_command_that_needs_an_argument_is_answered_with_its_usage(
        harness: Harness, command: str, usage: str) -> None:
    reply = await harness.ask(7, command)
    assert visible(reply.text).startswith(usage)
    assert not await harness.services.subscriptions.for_chat(7)


async def test_an_argument_that_is_no_arxiv_id_is_refused_before_any_look_up(
        harness: Harness) -> None:
    reply = await harness.ask(7, "/paper not-an-id")
    assert visible(reply.text).startswith("That doesn't look like an arXiv ID.")
    assert harness.arxiv.requests == []

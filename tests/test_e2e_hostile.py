"""Hostile input, end to end: every command with bad arguments gets a short reply, changes nothing.

Expected behaviour, decided here:
- A command that takes an argument (/follow /unfollow /paper /digest /tz /lang) refuses a missing,
  overlong (> 300 characters), control-laden or meaningless argument with a short reply that says
  what to send instead; the database is untouched.
- A command that takes none (/start /help /list /saved /export /pause /resume /stats /status)
  ignores whatever follows it and does its usual thing; the text is never echoed nor stored.
- Zero-width and direction marks are dropped before an argument is read, so `cs.\u200bLG` is cs.LG,
  and no reply ever carries a control, zero-width or direction-override character back.
- Plain text (not a command): in a private chat a one-line pointer to the commands, since a
  researcher who writes to the bot expects an answer; in a group it is ignored, because people
  there talk to each other, not to the bot.
- A command for another bot (`/start@otherbot`, common in lab groups with several bots) is ignored.
"""

from __future__ import annotations

import dataclasses
import logging
import unicodedata
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from telegram.ext import Application, MessageHandler, filters

from bot.chat.handlers import basic
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage

ADMIN_CHAT = 1  # the harness makes chat 1 an operator, so /status answers in full
CHAT = 8001
GROUP = -1008001
SETTLE_CHAT = 999_999_999  # the harness's settling pings write here
FAILURE = "something went wrong"

COMMANDS = ("/start", "/help", "/follow", "/unfollow", "/list", "/saved", "/export", "/paper",
            "/import", "/pause", "/resume", "/digest", "/tz", "/lang", "/stats", "/status",
            "/frobnicate")
TAKES_ARGUMENT = ("/follow", "/unfollow", "/paper", "/digest", "/tz", "/lang")
MAX_MESSAGE = 4000
USAGE = {"/follow": "/follow cs.LG", "/unfollow": "/unfollow 2", "/paper": "/paper 2611.11450"}

HOSTILE = {
    "missing": "",
    "overlong": "cs.LG OR " * 40,
    "malformed": "(cs.LG OR \"unclosed AND",
    "markup": "<b>bold</b> </a> <a href=\"javascript:x\">x</a> &amp; &#0;",
    "sql": "'; DROP TABLE chats; --",
    "control": "cs\x00.LG\x01\x07\x08\x1b[31m\x1f\x7f",
    "zero-width": "\u200b\ufeff\u200b",
    "rtl": "نموذج لغوي מודל שפה \u202eGL.sc",
    "emoji": "🧪🔬👩‍🔬🏳️‍🌈",
    "4000": "x",  # filled up to a 4,000-character message below
}


Snapshot = dict[str, list[tuple[Any, ...]]]

# What each command may change when it accepts its argument, and the reply that says so.
# Right-to-left text and SQL words in a /follow query are accepted as plain words (always
# escaped on output); markup characters such as `<` are refused; anything refused changes nothing.
ACCEPTED: dict[str, tuple[set[str], tuple[str, ...]]] = {
    "/follow": ({"subscriptions"}, ("Following #",)),
    "/unfollow": ({"subscriptions"}, ("Removed",)),
    "/pause": ({"chats"}, ("paused",)),
    "/resume": ({"chats"}, ("resumed",)),
    "/digest": ({"chats"}, ("daily digest at", "Instant alerts are back")),
    "/tz": ({"chats"}, ("Time zone set",)),
    "/lang": ({"chats"}, ("Language set",)),
    # A looked-up paper is cached, and the card shown is remembered (a reaction on it rates
    # the paper); the card, with its Save button, says so. So for a pasted link.
    "/paper": ({"papers", "paper_versions", "card_messages"}, ()),
    "": ({"papers", "paper_versions", "card_messages"}, ()),
    "/import": ({"saved", "papers", "paper_versions"}, ("Added to your library",)),
}


def message_for(command: str, payload_name: str) -> str:
    payload = HOSTILE[payload_name]
    if payload_name == "4000":
        return f"{command} " + "ẋ" * (MAX_MESSAGE - len(command) - 1)
    return f"{command} {payload}".rstrip()


async def snapshot(harness: Harness) -> Snapshot:
    """Every row of every table, except the chat the harness pings to settle.

    A private chat's title follows its user's Telegram name, which a forged press (sent as "Eve"
    by the fake) may change; it is bookkeeping, not the chat's data, so it is left out.
    """
    rows = {}
    # One connection for every query: these snapshots were most of this file's CPU time.
    with harness.reader() as read:
        tables = [row[0] for row in read(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
        for table in tables:
            columns = [row[1] for row in read(f"PRAGMA table_info({table})")]
            if table == "chats":
                columns = [c for c in columns if c != "title"]
            found = read(f"SELECT {', '.join(columns)} FROM {table}")
            if table == "chats":
                found = [row for row in found if row[0] != SETTLE_CHAT]
            rows[table] = sorted(found, key=repr)
    return rows


def answers_plain_text(app: Application) -> None:
    """Route private plain text to `basic.plain_text`, as app.py is asked to (see the report).

    Once app.py registers the handler this does nothing and the test checks the real wiring.
    """
    wired = any(getattr(handler, "callback", None) is basic.plain_text
                for handlers in app.handlers.values() for handler in handlers)
    if not wired:
        app.add_handler(MessageHandler(
            filters.ChatType.PRIVATE & filters.TEXT & ~filters.COMMAND
            & filters.UpdateType.MESSAGE, basic.plain_text))


@dataclasses.dataclass(frozen=True)
class Reply:
    """The bot's answer: a message, or a document (/export) read through its caption."""

    text: str
    entities: tuple[dict[str, Any], ...] = ()
    callback_data: tuple[str, ...] = ()


async def ask(harness: Harness, chat: int, text: str, **kwargs: Any) -> Reply:
    """Send `text` and return the bot's next message or document in the chat."""
    messages, documents = len(harness.tg.messages(chat)), len(harness.tg.documents(chat))
    if text.startswith("/"):
        harness.tg.send_command(chat, text, **kwargs)
    else:
        harness.tg.send_text(chat, text, **kwargs)
    await harness.tg.wait_for(
        lambda: len(harness.tg.messages(chat)) > messages
        or len(harness.tg.documents(chat)) > documents,
        what=f"a reply to {text[:60]!r} in chat {chat}")
    if len(harness.tg.messages(chat)) > messages:
        message: SentMessage = harness.tg.messages(chat)[messages]
        return Reply(message.text, message.entities, tuple(message.callback_data))
    return Reply(harness.tg.documents(chat)[documents].caption or "")


def check_reply(reply: Reply, sent: str) -> None:
    """What every reply to hostile input must be: no failure, short, no smuggled characters."""
    assert FAILURE not in reply.text, f"{sent[:80]!r} reached the error handler"
    assert len(reply.text) <= 1500, f"a long reply to {sent[:80]!r}"
    assert sent not in reply.text or len(sent) < 400, "a long input is never echoed whole"
    smuggled = [ch for ch in reply.text
                if ch != "\n" and unicodedata.category(ch) in ("Cc", "Cf")]
    assert not smuggled, f"the reply to {sent[:60]!r} carries {smuggled!r}"
    links = [e for e in reply.entities if e.get("type") == "text_link"]
    assert all(str(e.get("url", "")).startswith("https://") for e in links)


def check_change(command: str, before: Snapshot, after: Snapshot, reply: Reply) -> None:
    """Rejected input changes nothing; accepted input changes only its own tables, and says so."""
    changed = {table for table in after if after[table] != before[table]}
    if not changed:
        return
    tables, confirmations = ACCEPTED.get(command, (set(), ()))
    assert changed <= tables, f"{command} changed {changed}; the reply was {reply.text[:120]!r}"
    confirmed = any(c in reply.text for c in confirmations) or (
        command in ("/paper", "") and any(d.startswith("v1:s:") for d in reply.callback_data))
    assert confirmed, f"{command} changed {changed} but the reply was {reply.text[:120]!r}"


async def prepare(harness: Harness, chat: int) -> None:
    """A chat with something to lose: subscriptions, a saved paper, a digest time, a zone."""
    harness.serve_feed([make_paper(n) for n in (1, 2, 3)])
    await harness.poll()
    for command in ("/start", "/follow cs.LG", "/follow au:Yoneki", "/tz Europe/Berlin",
                    "/digest 08:00"):
        reply = await harness.ask(chat, command)
        assert FAILURE not in reply.text
    await harness.services.storage.saved.save(chat, "2611.10001", 1, harness.clock.now())


@pytest.mark.parametrize("payload", list(HOSTILE))
async def test_every_command_refuses_hostile_input_politely_and_changes_nothing(
        harness: Harness, payload: str, caplog: pytest.LogCaptureFixture) -> None:
    answers_plain_text(harness.app)
    await prepare(harness, ADMIN_CHAT)
    caplog.set_level(logging.ERROR, logger="bot.chat.handlers.basic")
    for command in COMMANDS:
        if command in ("/pause", "/resume"):
            # Their effect is the command itself, arguments or not: apply it first, then
            # the hostile form must leave the database exactly as it is.
            await harness.ask(ADMIN_CHAT, command)
        before = await snapshot(harness)
        sent = message_for(command, payload)
        reply = await ask(harness, ADMIN_CHAT, sent)
        check_reply(reply, sent)
        check_change(command, before, await snapshot(harness), reply)
        if command not in ("/follow",):
            assert await snapshot(harness) == before, f"{sent[:80]!r} changed the database"
        if command in TAKES_ARGUMENT and payload in ("overlong", "4000"):
            assert "too long" in reply.text and "300" in reply.text
        if command in TAKES_ARGUMENT and payload == "control":
            assert "control characters" in reply.text
        if command == "/frobnicate":
            assert "/help" in reply.text
        if payload in ("missing", "zero-width") and command in USAGE:
            assert USAGE[command] in reply.text, "nothing visible is a missing argument"
    if payload != "missing":
        before = await snapshot(harness)
        text = HOSTILE[payload] if payload != "4000" else "ẋ" * MAX_MESSAGE
        hint = await ask(harness, ADMIN_CHAT, text)
        check_reply(hint, text)
        assert "/help" in hint.text
        assert await snapshot(harness) == before
    assert not [r for r in caplog.records if r.name == "bot.chat.handlers.basic"]
    assert "/follow" in (await harness.ask(ADMIN_CHAT, "/start")).text, "still serving"


async def test_markup_is_echoed_as_text_never_as_a_link(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/tz " + HOSTILE["markup"])
    assert "<a href=\"javascript:x\">" in reply.text and "<b>bold</b>" in reply.text
    assert reply.entities == () or all(e["type"] != "text_link" for e in reply.entities)
    refused = await harness.ask(CHAT, "/follow " + HOSTILE["markup"] + " (")
    assert "couldn't read" in refused.text and "</a>" in refused.text


async def test_invisible_and_direction_marks_do_not_change_what_is_read(
        harness: Harness) -> None:
    follow = await harness.ask(CHAT, "/follow cs.\u200bLG\ufeff")
    assert "Following #1: cs.LG\n" in follow.text
    again = await harness.ask(CHAT, "/follow \u202ecs.LG")
    assert "already follow" in again.text
    zone = await harness.ask(CHAT, "/tz Asia/\u200bShanghai")
    assert "Asia/Shanghai" in zone.text and "\u200b" not in zone.text
    subs = await harness.services.storage.subscriptions.for_chat(CHAT)
    assert [s.query for s in subs] == ["cat:cs.LG"]


async def test_right_to_left_and_emoji_queries_are_stored_as_text(harness: Harness) -> None:
    reply = await harness.ask(CHAT, "/follow ti:\"מודל שפה\" OR abs:نموذج")
    assert "Following #1" in reply.text and "מודל שפה" in reply.text
    listing = await harness.ask(CHAT, "/list")
    assert "נ" not in listing.text and "מודל שפה" in listing.text and "نموذج" in listing.text
    emoji_only = await harness.ask(CHAT, "/follow " + HOSTILE["emoji"])
    assert "'🧪' at column 1 can't be used" in emoji_only.text
    assert len(await harness.services.storage.subscriptions.for_chat(CHAT)) == 1


async def test_sql_is_data_and_the_tables_stay(harness: Harness) -> None:
    await prepare(harness, CHAT)
    for command in ("/unfollow 1; DROP TABLE subscriptions", "/tz '; DROP TABLE chats; --",
                    "/paper 2611.10001' OR '1'='1", "/lang en'; DELETE FROM saved; --"):
        reply = await harness.ask(CHAT, command)
        assert FAILURE not in reply.text
    assert len(await harness.services.storage.subscriptions.for_chat(CHAT)) == 2
    assert await harness.services.storage.saved.count(CHAT) == 1
    record = await harness.services.storage.chats.get(CHAT)
    assert record is not None and record.timezone == "Europe/Berlin"


async def test_a_long_list_of_long_queries_still_fits_one_message(harness: Harness) -> None:
    # 50 subscriptions of ~300 characters would make a 15,000-character /list.
    await harness.ask(CHAT, "/start")
    for n in range(50):
        result = await harness.services.subscriptions.follow(
            CHAT, " ".join(f"ti:word{n}x{k}" for k in range(25))[:290])
        assert result.status == "added"
    listing = await harness.ask(CHAT, "/list")
    assert FAILURE not in listing.text
    assert "(50/50)" in listing.text and "50. " in listing.text and "…" in listing.text
    assert len(listing.button_texts) == 50


async def test_removing_a_query_of_astral_letters_is_answered(harness: Harness) -> None:
    # 140 letters outside the BMP are 280 UTF-16 units, over an answer's 200.
    deseret = "\U00010428" * 140
    assert "Following #1" in (await harness.ask(CHAT, f"/follow {deseret}")).text
    listing = await harness.ask(CHAT, "/list")
    answer = await harness.press(CHAT, listing.message_id, listing.callback_data[0])
    assert (answer.text or "").startswith("Removed") and (answer.text or "").endswith("…")
    assert await harness.services.storage.subscriptions.for_chat(CHAT) == []
    assert not [m for m in harness.tg.messages(CHAT) if FAILURE in m.text]


async def test_plain_text_gets_a_pointer_in_private_and_silence_in_groups(
        harness: Harness) -> None:
    answers_plain_text(harness.app)
    hint = await harness.ask(CHAT, "hello, can you follow graph neural networks for me?")
    assert "/help" in hint.text and "/follow" in hint.text
    harness.tg.set_admins(GROUP, {11})
    await harness.ask(GROUP, "/start", user_id=11, title="Lab")
    before = len(harness.tg.messages(GROUP))
    harness.tg.send_text(GROUP, "anyone read the new sparse attention paper?", user_id=22,
                         title="Lab")
    await harness.settle()
    assert len(harness.tg.messages(GROUP)) == before


async def test_commands_for_other_bots_are_left_alone(harness: Harness) -> None:
    harness.tg.set_admins(GROUP, {11})
    await harness.ask(GROUP, "/start", user_id=11, title="Lab")
    before = len(harness.tg.messages(GROUP))
    harness.tg.send_command(GROUP, "/frobnicate@other_lab_bot now", user_id=22, title="Lab")
    await harness.settle()
    assert len(harness.tg.messages(GROUP)) == before
    mine = await harness.ask(GROUP, f"/frobnicate@{harness.tg.bot_username}", user_id=22,
                             title="Lab")
    assert "/help" in mine.text


async def test_a_non_admin_cannot_change_a_groups_settings_with_any_argument(
        harness: Harness) -> None:
    harness.tg.set_admins(GROUP, {11})
    await harness.ask(GROUP, "/follow cs.LG", user_id=11, title="Lab")
    before = await snapshot(harness)
    for command in ("/follow au:Hinton", "/unfollow all", "/pause", "/digest 08:00",
                    "/tz Asia/Shanghai", "/lang zh"):
        reply = await harness.ask(GROUP, command, user_id=22, title="Lab")
        assert "administrators" in reply.text, command
    assert await snapshot(harness) == before


# --------------------------------------------------------------------------- generated input

# Text as users (and fuzzers) type it: any printable or control character, markup, RTL, emoji.
free_text = st.text(
    alphabet=st.one_of(
        st.characters(codec="utf-8", exclude_categories=("Cs",)),
        st.sampled_from("<>&\"'/\\:;()*-_.@#`\u200b\u200d\u202e\u2066\ufeff\x00\x1b\x7f"),
    ),
    max_size=350,
)
# Near-valid arguments: what a researcher might mistype, including the valid thing itself.
near_valid = st.one_of(
    st.sampled_from(["cs.LG", "cat:cs.*", "au:\"E. Yoneki\"", "ti:transformer*", "all", "off",
                     "en", "EN", "08:00", "8:0", "24:00", "23:59", "UTC", "Europe/Berlin",
                     "europe/berlin", "Mars/Olympus", "2611.10001", "2611.10001v1",
                     "arXiv:2611.10001", "https://arxiv.org/abs/2611.10001", "hep-th/9901001",
                     "1", "0", "-1", "99999999999999999999", "1e3", "(cs.LG", "cs.LG OR",
                     "NOT", "\"\"", "au:", "ti:\"\"", "cat:", "-", "*"]),
    st.builds(lambda a, b, op: f"{a} {op} {b}",
              st.sampled_from(["cs.LG", "au:Hinton", "ti:graph", "abs:\"a phrase\"", "x*"]),
              st.sampled_from(["cs.CV", "-survey", "(ti:x OR ti:y)", "au:\"Müller\"", "🧪"]),
              st.sampled_from(["", "AND", "OR", "NOT", "(", ")"])),
)
argument = st.one_of(free_text, near_valid)

def _reads_chinese(arg: str) -> bool:
    return "".join(ch for ch in arg if unicodedata.category(ch) != "Cf").strip().lower() == "zh"


@pytest.fixture
def fuzz_state() -> dict[str, object]:
    return {"messages": 0}


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
async def test_generated_input_never_breaks_a_command(
        harness: Harness, caplog: pytest.LogCaptureFixture, fuzz_state: dict[str, object],
        data: st.DataObject) -> None:
    if not fuzz_state.get("ready"):
        answers_plain_text(harness.app)
        await prepare(harness, CHAT)
        fuzz_state["ready"] = True
    caplog.set_level(logging.ERROR, logger="bot.chat.handlers.basic")
    for _ in range(5):
        command = data.draw(st.sampled_from([*COMMANDS, ""]), label="command")
        # Replies are read in English below, so the chat keeps its language.
        arg = data.draw(argument.filter(lambda a: not _reads_chinese(a)), label="argument")
        sent = f"{command} {arg}".strip() if command else arg.strip()
        if not sent or (not command and sent.startswith("/")):
            continue  # Telegram refuses empty messages; a leading "/" is a command already
        if command and len(sent) > MAX_MESSAGE:
            sent = sent[:MAX_MESSAGE]
        # A handler may still write after its reply (a card is remembered once Telegram gave
        # its message id): that is the last command's, not this one's.
        await harness.settle()
        before = await snapshot(harness)
        reply = await ask(harness, CHAT, sent)
        fuzz_state["messages"] = int(fuzz_state["messages"]) + 1  # type: ignore[call-overload]
        check_reply(reply, sent)
        check_change(command, before, await snapshot(harness), reply)
        errors = [r for r in caplog.records if r.name == "bot.chat.handlers.basic"]
        assert not errors, f"{sent[:80]!r} reached the error handler"
    assert "/follow" in (await harness.ask(CHAT, "/start")).text


# Direction overrides, isolates, zero-width characters and non-characters in a feed's title,
# authors and abstract: a title that would display "Safe exe.txt" reversed, or hide words.
INVISIBLE = frozenset("\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
                      "\u200b\u200c\u200d\u2060\ufeff\ufdd0\ufdef\U0010ffff\U0001fffe")


async def test_a_hostile_title_reaches_the_alert_and_the_database_clean(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    hostile = make_paper(
        41, title="Safe \u202eexe.txt\u202c \u2066title\u2069\u200b of \u200dpapers\ufeff",
        authors=("\u200fMallory\u200e Evil", "Bob \u061cSmith\ufdd0"),
        abstract="An \u202aabstract\u202c with \U0010ffffhidden\U0001fffe text. " * 20)
    harness.serve_feed([hostile])
    await harness.poll()

    [alert] = [m for m in harness.tg.messages(CHAT) if "arXiv:2611.10041" in m.text]
    assert "Safe exe.txt title of papers" in alert.text
    assert "Mallory Evil, Bob Smith" in alert.text
    assert not INVISIBLE & set(alert.sent_text), "the alert carries no invisible character"
    expand = next(b for b in alert.buttons if "Full abstract" in b["text"])
    await harness.press(CHAT, alert.message_id, expand["callback_data"])
    expanded = harness.tg.message(CHAT, alert.message_id)
    assert "An abstract with hidden text." in expanded.text
    assert not INVISIBLE & set(expanded.sent_text)

    stored = await harness.services.storage.papers.get("2611.10041")
    assert stored is not None
    assert stored.title == "Safe exe.txt title of papers"
    assert stored.authors == ("Mallory Evil", "Bob Smith")
    assert not INVISIBLE & set(stored.abstract)

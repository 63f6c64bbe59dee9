"""/forget erases everything the bot keeps about a chat, after a confirming press (in a group,
an administrator's); the upkeep forgets a chat half a year after it blocked or removed the bot.
Afterwards no row of any table names the chat."""

from __future__ import annotations

import contextlib
import sqlite3
from types import SimpleNamespace

from bot.core.constants import DAY
from bot.jobs.routine import prune_job
from tests.conftest import Harness, make_paper
from tests.fakes.telegram_server import SentMessage

CHAT = 7_654_321  # digits no paper id, count or time in the test contains
OTHER = 7_123_456
GROUP = -100_765_432
ADMIN, MEMBER = 7_650_001, 7_650_002


def button(message: SentMessage, label: str) -> str:
    [data] = [b["callback_data"] for b in message.buttons if label in b["text"]]
    return data


def rows_naming(harness: Harness, chat_id: int) -> dict[str, int]:
    """For every table of the database, how many rows have a column holding the chat's id
    (as a number, or inside a text)."""
    found = {}
    tables = [name for (name,) in harness.rows(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        columns = [row[1] for row in harness.rows(f"PRAGMA table_info({table})")]
        match = " OR ".join(f"{c} = :id OR CAST({c} AS TEXT) LIKE :text" for c in columns)
        [(count,)] = harness.rows(f"SELECT COUNT(*) FROM {table} WHERE {match}",
                                  {"id": chat_id, "text": f"%{abs(chat_id)}%"})
        if count:
            found[table] = count
    return found


def write(harness: Harness, sql: str, params: tuple[object, ...]) -> None:
    """Rows the test puts in itself, for what takes long to reach through the bot."""
    with contextlib.closing(sqlite3.connect(harness.settings.database_path, timeout=10)) as db:
        db.execute(sql, params)
        db.commit()


async def a_chat_with_everything(harness: Harness, chat_id: int, first: int) -> None:
    """Subscriptions, alerts (papers `first` to `first + 2`) and their threads, a save, a 👍,
    For you, a model, a topic, a guide call and a queued For-you message."""
    await harness.ask(chat_id, "/follow cs.LG")
    await harness.ask(chat_id, "/follow au:Yoneki")
    harness.serve_feed([make_paper(n) for n in range(first, first + 3)])
    await harness.poll()
    alert = await harness.tg.wait_for_message(chat_id, f"part {first}\n")
    await harness.press(chat_id, alert.message_id, button(alert, "Save"))
    await harness.press(chat_id, alert.message_id, button(alert, "👍"))
    await harness.ask(chat_id, "/foryou on")
    now = harness.clock.now()
    write(harness, "INSERT INTO chat_models (chat_id, vocabulary, labels, weights, trained_at)"
          " VALUES (?, 1, '[]', x'00', ?)", (chat_id, now))
    write(harness, "INSERT INTO topics (chat_id, topic_id, name) VALUES (?, 5, 'Reading')",
          (chat_id,))
    write(harness, "INSERT INTO guide_calls (chat_id, called_at, ok) VALUES (?, ?, 1)",
          (chat_id, now))
    write(harness, "INSERT INTO foryou_outbox (chat_id, topic_id, day, picks, status, "
          "created_at, due_at, attempts) VALUES (?, 0, '2026-12-01', '[]', 'pending', ?, ?, 0)",
          (chat_id, now, now + DAY))


async def test_forget_after_the_confirming_press_leaves_no_row_naming_the_chat(
        harness: Harness) -> None:
    await a_chat_with_everything(harness, CHAT, 1)
    await a_chat_with_everything(harness, OTHER, 11)
    before = rows_naming(harness, CHAT)
    for table in ("chats", "subscriptions", "outbox", "alert_threads", "saved", "feedback",
                  "foryou", "chat_models", "topics", "guide_calls", "foryou_outbox"):
        assert before.get(table), f"the test put nothing in {table}: {before}"
    others = rows_naming(harness, OTHER)

    ask = await harness.ask(CHAT, "/forget")
    assert "erases everything the bot keeps about this chat" in ask.text
    assert ask.button_texts == ["🗑 Erase everything", "Keep it"]
    assert rows_naming(harness, CHAT) == before, "nothing goes before the press"
    answer = await harness.press(CHAT, ask.message_id, button(ask, "Erase everything"))
    assert answer.text == "Erased."
    assert "is erased" in harness.tg.message(CHAT, ask.message_id).text
    assert rows_naming(harness, CHAT) == {}
    assert rows_naming(harness, OTHER) == others, "another chat keeps everything"

    # The matcher forgot its subscriptions too: the next poll queues nothing for it.
    harness.serve_feed([make_paper(n) for n in range(21, 24)])
    await harness.poll()
    assert rows_naming(harness, CHAT) == {}
    assert len(await harness.services.subscriptions.for_chat(OTHER)) == 2
    # Writing again starts afresh.
    listing = await harness.ask(CHAT, "/list")
    assert "You don't follow anything yet" in listing.text


async def test_keep_it_erases_nothing(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    ask = await harness.ask(CHAT, "/forget")
    before = rows_naming(harness, CHAT)
    answer = await harness.press(CHAT, ask.message_id, button(ask, "Keep it"))
    assert answer.text is None
    assert harness.tg.message(CHAT, ask.message_id).text == "Nothing was erased."
    assert rows_naming(harness, CHAT) == before


async def test_in_a_group_only_an_administrator_may_forget(harness: Harness) -> None:
    harness.tg.set_admins(GROUP, {ADMIN})
    admin = {"user_id": ADMIN, "first_name": "Grace"}
    member = {"user_id": MEMBER, "first_name": "Bob"}
    await harness.ask(GROUP, "/follow cs.LG", title="Lab", **admin)
    refused = await harness.ask(GROUP, "/forget", title="Lab", **member)
    assert refused.text == "Only this group's administrators can erase what the bot keeps " \
                           "about it."
    ask = await harness.ask(GROUP, "/forget", title="Lab", **admin)
    pressed = await harness.press(GROUP, ask.message_id, button(ask, "Erase everything"),
                                  **member)
    assert pressed.show_alert and "administrators" in (pressed.text or "")
    assert rows_naming(harness, GROUP).get("subscriptions") == 1, "a member's press erases nothing"
    await harness.press(GROUP, ask.message_id, button(ask, "Erase everything"), **admin)
    assert rows_naming(harness, GROUP) == {}


async def test_the_upkeep_forgets_a_chat_half_a_year_after_it_blocked_the_bot(
        harness: Harness) -> None:
    await a_chat_with_everything(harness, CHAT, 1)
    await a_chat_with_everything(harness, OTHER, 11)
    now = harness.clock.now()
    chats = harness.services.storage.chats
    await chats.mark_inactive(CHAT, "the bot was blocked or removed", now - 181 * DAY)
    await chats.mark_inactive(OTHER, "the bot was blocked or removed", now - 179 * DAY)
    others = rows_naming(harness, OTHER)
    await prune_job(harness.services, SimpleNamespace())  # the daily upkeep job
    assert rows_naming(harness, CHAT) == {}
    assert rows_naming(harness, OTHER) == others, "179 days: kept (it may come back)"
    harness.serve_feed([make_paper(n) for n in range(21, 24)])
    await harness.poll()
    assert rows_naming(harness, CHAT) == {}, "the matcher forgot it too"

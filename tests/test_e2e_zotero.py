"""The live Zotero link, end to end through the fake Telegram, arXiv and Zotero servers: a real
researcher's library (50 items, 15 with an arXiv id) linked and read, a save written to
Zotero, a new version updated there, and the key revoked half-way; the key never in a log
line nor in the database's bytes."""

from __future__ import annotations

import io
import json
import logging
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from bot.config import load_settings
from bot.core.clock import ManualClock
from bot.core.models import ZoteroLibraryKind
from bot.core.redaction import RedactingFilter
from bot.zotero.client import Library, ZoteroClient
from bot.zotero.items import preprint_item
from tests.conftest import (
    ON_BOTH_ENGINES,
    Harness,
    make_paper,
    make_settings,
    start_bot,
    stop_bot,
)
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.zotero_server import FakeZotero
from tests.test_e2e_import import UNKNOWN_TO_ARXIV, ZOTERO_ARXIV, api_paper

CHAT = 7601
USER = 8123456  # the library's owner in tests/fixtures/zotero/library-items.json
LIBRARY = f"/users/{USER}"
KEY = "P9NiFoyLeZu2bZNvvuQPDWsd"  # Zotero keys are 24 letters and digits
SECRET_KEY = "Hj2kqXbVt0sWm9cYp4LrNz8uA6eGd1fQ3iKoE5yT7wU"
ITEMS = json.loads((Path(__file__).parent / "fixtures" / "zotero" / "library-items.json")
                   .read_text(encoding="utf-8"))


@pytest.fixture
def fake_zotero() -> Iterator[FakeZotero]:
    with FakeZotero(page_limit=20) as server:  # 50 items: three pages
        yield server


@pytest.fixture
async def harness(request: pytest.FixtureRequest, tmp_path: Path, fake_telegram: FakeTelegram,
                  fake_arxiv: FakeArxivServer, fake_zotero: FakeZotero
                  ) -> AsyncIterator[Harness]:
    """The bot with SECRET_KEY set and Zotero's API at the fake, on SQLite or PostgreSQL."""
    overrides = {"SECRET_KEY": SECRET_KEY, "ZOTERO_API_URL": fake_zotero.root}
    server = None
    if getattr(request, "param", "sqlite") == "postgresql":
        server = request.getfixturevalue("postgres_server")
        overrides["DATABASE_URL"] = server.new_database()
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv, **overrides)
    clock = ManualClock(time.time())
    app = await start_bot(settings, clock)
    yield Harness(fake_telegram, fake_arxiv, app, clock, settings)
    await stop_bot(app)
    if server is not None:
        server.drop_database(overrides["DATABASE_URL"])


@pytest.fixture
def every_log_line() -> Iterator[io.StringIO]:
    """Every log line at DEBUG, as the bot's own handler writes it (bot/config.py)."""
    written = io.StringIO()
    handler = logging.StreamHandler(written)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    handler.addFilter(RedactingFilter([SECRET_KEY]))
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield written
    root.removeHandler(handler)
    root.setLevel(level)


def database_bytes(harness: Harness) -> bytes:
    """The SQLite database's files as they lie on disk (the WAL too)."""
    folder = harness.settings.database_path.parent
    return b"".join(path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file())


def writes(zotero: FakeZotero) -> list[str]:
    return [f"{r.method} {r.path}" for r in zotero.requests if r.method != "GET"]


async def link_library(harness: Harness, zotero: FakeZotero) -> list[str]:
    """The researcher links the real library; the bot's two replies."""
    zotero.add_key(KEY, USER)
    zotero.add_items(LIBRARY, ITEMS)
    known = [arxiv_id for arxiv_id in ZOTERO_ARXIV if arxiv_id not in UNKNOWN_TO_ARXIV]
    harness.arxiv.set_api_papers(api_paper(n, arxiv_id) for n, arxiv_id in enumerate(known))
    before = len(harness.tg.messages(CHAT))
    sent = harness.tg.send_command(CHAT, f"/zotero {KEY}")
    replies = await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(CHAT)) >= before + 2 and found,
        what="the link's two replies")
    deleted = [call.params.get("message_id") for call in harness.tg.calls_of("deleteMessage")]
    assert sent in deleted, "the message holding the key is deleted"
    return [message.text for message in replies[before:]]


async def saved_by_button(harness: Harness, number: int) -> None:
    """An alert of paper `number` arrives and the researcher taps ⭐ Save."""
    harness.serve_feed([make_paper(number)])
    await harness.poll()
    alert = [m for m in harness.tg.messages(CHAT) if f"2611.{10000 + number}" in m.text][-1]
    save = next(b for b in alert.buttons if b["text"] == "⭐ Save")
    await harness.press(CHAT, alert.message_id, save["callback_data"])


@ON_BOTH_ENGINES
async def test_a_linked_zotero_library_fills_the_library_and_takes_what_is_saved_here(
        harness: Harness, fake_zotero: FakeZotero, caplog: pytest.LogCaptureFixture,
        every_log_line: io.StringIO) -> None:
    caplog.set_level(logging.INFO)
    explained = (await harness.ask(CHAT, "/zotero")).text
    assert "zotero.org/settings/keys/new" in explained and "/zotero off" in explained
    await harness.ask(CHAT, "/follow cs.LG")

    # Linked: the library's 15 arXiv items (13 that arXiv knows) join the library, read in
    # three pages, and teach the ranker.
    linked, imported = await link_library(harness, fake_zotero)
    assert "Linked to your own Zotero library" in linked
    assert "13 added" in imported, imported
    services = harness.services
    assert await services.storage.saved.count(CHAT) == 13
    assert len((await services.ranker.labels(CHAT)).positives) == 13
    pages = [r for r in fake_zotero.requests if r.path == f"{LIBRARY}/items/top"]
    assert [r.query.get("start", "0") for r in pages] == ["0", "20", "40"]

    # The next day, an unchanged library costs one request, answered 304.
    fake_zotero.clear_requests()
    report = await services.zotero.pull()
    assert report.unchanged == 1
    assert [(r.path, r.status) for r in fake_zotero.requests] == [(f"{LIBRARY}/items/top", 304)]
    assert fake_zotero.requests[0].headers["if-modified-since-version"] == str(
        fake_zotero.version(LIBRARY))

    # A paper saved with the Save button goes to the collection "arXiv alerts", once.
    await saved_by_button(harness, 1)
    fake_zotero.clear_requests()
    assert (await services.zotero.push()).written == 1
    [collection] = fake_zotero.collections(LIBRARY).values()
    assert collection["data"]["name"] == "arXiv alerts"
    [item] = [i for i in fake_zotero.items(LIBRARY).values()
              if collection["key"] in i["data"]["collections"]]
    data = item["data"]
    assert data["itemType"] == "preprint" and data["archiveID"] == "arXiv:2611.10001"
    assert data["url"] == "https://arxiv.org/abs/2611.10001v1"
    assert data["title"] == make_paper(1).title and data["abstractNote"] == make_paper(1).abstract
    assert data["creators"][0] == {"creatorType": "author", "firstName": "Eiko",
                                   "lastName": "Yoneki"}
    assert data["DOI"] == "10.48550/arXiv.2611.10001" and data["date"]
    assert all("zotero-write-token" in r.headers for r in fake_zotero.requests
               if r.method == "POST")
    # Nothing is written twice: another push, or an unsave and a save again, writes nothing.
    await services.zotero.push()
    alert = [m for m in harness.tg.messages(CHAT) if "2611.10001" in m.text][-1]
    for _ in range(2):
        saved = next(b for b in harness.tg.message(CHAT, alert.message_id).buttons
                     if "Save" in b["text"])
        await harness.press(CHAT, alert.message_id, saved["callback_data"])
    await services.zotero.push()
    assert writes(fake_zotero) == [f"POST {LIBRARY}/collections", f"POST {LIBRARY}/items"]
    # ... and an unsave deletes nothing in Zotero.
    unsave = next(b for b in harness.tg.message(CHAT, alert.message_id).buttons
                  if "Save" in b["text"])
    await harness.press(CHAT, alert.message_id, unsave["callback_data"])
    await services.zotero.push()
    assert item["key"] in fake_zotero.items(LIBRARY)
    await harness.press(CHAT, alert.message_id, unsave["callback_data"])  # saved again

    # Reading the library again: the bot's own item is not a new paper; an item deleted in
    # Zotero leaves here only if it came from Zotero.
    came_from_zotero = next(i for i in ITEMS if "1809.02922" in i["data"]["url"])
    fake_zotero.delete(LIBRARY, came_from_zotero["key"])
    before = await services.storage.saved.count(CHAT)
    report = await services.zotero.pull()
    assert report.added == 0 and report.removed == 1
    assert not await services.library.is_saved(CHAT, "1809.02922")
    assert await services.storage.saved.count(CHAT) == before - 1
    fake_zotero.trash(LIBRARY, item["key"])  # the bot wrote it: the paper stays here
    await services.zotero.pull()
    assert await services.library.is_saved(CHAT, "2611.10001")

    # A new version of a paper the bot wrote updates its item's version and date.
    await saved_by_button(harness, 2)
    await services.zotero.push()
    [second] = [i for i in fake_zotero.items(LIBRARY).values()
                if i["data"].get("archiveID") == "arXiv:2611.10002"]
    harness.serve_feed([make_paper(2, version=2)])
    await harness.poll()
    assert (await services.zotero.push()).updated == 1
    updated = fake_zotero.items(LIBRARY)[second["key"]]["data"]
    assert updated["url"] == "https://arxiv.org/abs/2611.10002v2"
    assert "2611.10002v2" in updated["extra"]
    assert updated["version"] > second["version"]
    await services.zotero.push()
    assert (await services.zotero.push()).updated == 0  # done once

    [(sealed,)] = harness.rows("SELECT sealed_key FROM zotero_links")
    assert KEY not in sealed

    # The key is revoked in Zotero: the next request meets a 403, the chat is unlinked and
    # told once, and the bot stops asking.
    fake_zotero.revoke(KEY)
    await saved_by_button(harness, 3)
    told = len(harness.tg.messages(CHAT))
    report = await services.zotero.push()
    assert report.revoked == [CHAT]
    notices = harness.tg.messages(CHAT)[told:]
    assert len(notices) == 1 and "no longer accepts the key" in notices[0].text
    fake_zotero.clear_requests()
    await services.zotero.push()
    await services.zotero.pull()
    assert fake_zotero.requests == [] and len(harness.tg.messages(CHAT)) == told + 1
    assert await services.zotero.link_of(CHAT) is None
    assert harness.rows("SELECT COUNT(*) FROM zotero_links") == [(0,)]
    # Nothing is lost here: 13 from Zotero, one removed there, three saved with the button.
    assert await services.storage.saved.count(CHAT) == 13 - 1 + 3

    # The key was never written anywhere: no log line (raw at INFO, or as the bot's handler
    # writes them at DEBUG), no byte of the database.
    assert KEY not in caplog.text
    assert every_log_line.getvalue() and KEY not in every_log_line.getvalue()
    if harness.settings.database_url is None:
        assert KEY.encode() not in database_bytes(harness)


async def test_in_chinese_the_link_is_explained_and_a_revoked_key_is_told(
        harness: Harness, fake_zotero: FakeZotero) -> None:
    await harness.ask(CHAT, "/lang zh")
    explained = (await harness.ask(CHAT, "/zotero")).text
    assert "zotero.org/settings/keys/new" in explained and "密钥" in explained
    linked, imported = await link_library(harness, fake_zotero)
    assert "已关联" in linked and "13" in imported
    fake_zotero.revoke(KEY)
    told = len(harness.tg.messages(CHAT))
    await harness.services.zotero.pull()
    [notice] = harness.tg.messages(CHAT)[told:]
    assert "密钥" in notice.text and "/zotero" in notice.text
    assert "未关联" in (await harness.ask(CHAT, "/zotero off")).text


async def test_a_key_sent_in_a_group_is_deleted_and_nothing_is_linked(
        harness: Harness, fake_zotero: FakeZotero) -> None:
    fake_zotero.add_key(KEY, USER)
    group = -100_7602
    before = len(harness.tg.messages(group))
    sent = harness.tg.send_command(group, f"/zotero {KEY}", chat_type="supergroup", title="Lab")
    [answer] = await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(group)) > before and found[before:],
        what="the group's answer")
    assert "private chat" in answer.text
    assert sent in [c.params.get("message_id") for c in harness.tg.calls_of("deleteMessage")]
    assert fake_zotero.requests == []


async def test_a_wrong_key_or_an_unreachable_group_links_nothing(
        harness: Harness, fake_zotero: FakeZotero) -> None:
    fake_zotero.add_key(KEY, USER, groups={4711: True})
    wrong = (await harness.ask(CHAT, "/zotero AAAAAAAAAAAAAAAAAAAAAAAA")).text
    assert "does not accept that key" in wrong
    other_group = (await harness.ask(CHAT, f"/zotero {KEY} 999")).text
    assert "cannot reach that library" in other_group
    assert await harness.services.zotero.link_of(CHAT) is None
    group = (await harness.ask(CHAT, f"/zotero {KEY} https://www.zotero.org/groups/4711/lab"))
    assert "group library 4711" in group.text
    await harness.settle()  # its second reply, after reading the group's library
    assert "Unlinked" in (await harness.ask(CHAT, "/zotero off")).text


async def test_without_a_secret_key_the_operator_has_not_enabled_zotero(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv)
    app = await start_bot(settings, ManualClock(time.time()))
    try:
        harness = Harness(fake_telegram, fake_arxiv, app, ManualClock(time.time()), settings)
        answer = (await harness.ask(CHAT, f"/zotero {KEY}")).text
        assert "has not enabled the Zotero link" in answer
        assert app.bot_data["services"].zotero is None
    finally:
        await stop_bot(app)


def test_a_short_secret_key_stops_start_up_with_one_line() -> None:
    from bot.config import ConfigError

    with pytest.raises(ConfigError, match="SECRET_KEY must be at least 32 characters"):
        load_settings({"TELEGRAM_BOT_TOKEN": "123:abc", "SECRET_KEY": "short"}, env_file=None)


async def test_a_write_whose_answer_was_lost_is_not_made_again(
        harness: Harness, fake_zotero: FakeZotero) -> None:
    """A crash after Zotero took a write but before the bot stored the item key: the next push
    sends the same Zotero-Write-Token, Zotero refuses it (412), and the bot finds the item it
    wrote in "arXiv alerts" instead of writing a second one."""
    await harness.ask(CHAT, "/follow cs.LG")
    await link_library(harness, fake_zotero)
    await saved_by_button(harness, 1)
    [(token,)] = harness.rows(
        "SELECT write_token FROM zotero_items WHERE chat_id = ? AND arxiv_id = '2611.10001'",
        (CHAT,))
    # The earlier push, as far as Zotero got with it.
    client = ZoteroClient(fake_zotero.root)
    library = Library(ZoteroLibraryKind.USER, USER)
    try:
        collection, _ = await client.create(KEY, library, "collections",
                                            {"name": "arXiv alerts"}, "c" * 32)
        written, _ = await client.create(KEY, library, "items",
                                         preprint_item(make_paper(1), collection), token)
    finally:
        await client.aclose()

    assert (await harness.services.zotero.push()).written == 1
    same = [key for key, item in fake_zotero.items(LIBRARY).items()
            if item["data"].get("archiveID") == "arXiv:2611.10001"]
    assert same == [written]
    assert [r.status for r in fake_zotero.requests if r.method == "POST"][-1] == 412
    assert harness.rows("SELECT item_key FROM zotero_items WHERE arxiv_id = '2611.10001'") == [
        (written,)]

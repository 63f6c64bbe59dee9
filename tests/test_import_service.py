"""The import service against the fake arXiv: fair batched look-ups, arXiv failing mid-import,
and what an import costs in the command budget."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest
from telegram import Update

from bot.arxiv.client import ArxivClient
from bot.arxiv.lookups import LookupQueue
from bot.chat.guard import update_cost
from bot.core.models import ArxivId
from bot.importer.parse import read_id_list
from bot.importer.service import LibraryImporter
from bot.services.budget import IMPORT_MAX_COST, LOOKUP_COST, import_cost, upload_cost
from bot.storage import Storage, open_storage
from tests.conftest import make_paper
from tests.fakes.arxiv_server import FakeArxivServer

NOISY, QUIET, CHAT = 1, 2, 3


@pytest.fixture
async def client(fake_arxiv: FakeArxivServer) -> AsyncIterator[ArxivClient]:
    fake_arxiv.set_api_papers([make_paper(n) for n in range(1, 40)])
    arxiv = ArxivClient(rss_url=fake_arxiv.rss_url, api_url=fake_arxiv.api_url, min_interval=0)
    yield arxiv
    await arxiv.aclose()


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Storage]:
    storage = await open_storage(database_url)
    await storage.chats.record(CHAT, "private", "Ada", "en", 0.0)
    yield storage
    await storage.close()


def pid(number: int) -> ArxivId:
    return ArxivId(f"2611.{10000 + number}")


def asked(server: FakeArxivServer) -> list[list[str]]:
    return [r.query["id_list"][0].split(",") for r in server.requests if r.path == "/api/query"]


async def test_an_imports_look_ups_do_not_hold_up_another_chats_paper(
        client: ArxivClient, fake_arxiv: FakeArxivServer) -> None:
    queue = LookupQueue(client, batch_size=5)
    imported = queue.submit_many(NOISY, [pid(n) for n in range(1, 16)])  # no per-chat limit
    quiet = queue.submit(QUIET, pid(30))

    await asyncio.gather(*imported, quiet)

    requests = asked(fake_arxiv)
    assert "2611.10030" in requests[0], "the other chat's paper rides in the first request"
    assert sum(len(ids) for ids in requests) == 16 and all(len(ids) <= 5 for ids in requests)
    await queue.aclose()


async def test_look_ups_nobody_waits_for_are_not_asked(
        client: ArxivClient, fake_arxiv: FakeArxivServer) -> None:
    queue = LookupQueue(client)
    for future in queue.submit_many(NOISY, [pid(n) for n in range(1, 6)]):
        future.cancel()
    assert await queue.lookup(QUIET, pid(7)) is not None
    assert asked(fake_arxiv) == [["2611.10007"]]
    await queue.aclose()


async def test_an_import_saves_stored_and_looked_up_papers_and_reports_the_rest(
        client: ArxivClient, fake_arxiv: FakeArxivServer, store: Storage) -> None:
    stored = dataclasses.replace(make_paper(1, version=3), title="Stored already")
    await store.papers.upsert_many([stored], 0.0)
    await store.papers.cache_lookups([make_paper(2)], 0.0)
    await store.saved.save(CHAT, "2611.10002", 1, 0.0)
    queue = LookupQueue(client)
    progress: list[tuple[int, int]] = []

    async def looked_up(done: int, total: int) -> None:
        progress.append((done, total))

    source = read_id_list("2611.10001 2611.10002 2611.10003v2 2611.10004\n2611.19999")
    report = await LibraryImporter(store, queue).run(CHAT, source, 10.0, looked_up)

    assert (report.recognised, report.added, report.already_saved, report.not_found,
            report.unavailable) == (5, 3, 1, 1, 0)
    assert asked(fake_arxiv) == [["2611.10003", "2611.10004", "2611.19999"]], \
        "only papers not stored are asked for, without the version they were named with"
    assert progress[-1] == (3, 3)
    papers = {paper.arxiv_id: paper for paper in await store.saved.all(CHAT)}
    assert papers["2611.10001"].title == "Stored already"
    assert set(papers) == {"2611.10001", "2611.10002", "2611.10003", "2611.10004"}
    await queue.aclose()


async def test_arxiv_failing_ends_the_import_with_what_it_had(
        client: ArxivClient, fake_arxiv: FakeArxivServer, store: Storage) -> None:
    await store.papers.upsert_many([make_paper(1)], 0.0)
    queue = LookupQueue(client, batch_size=2)
    fake_arxiv.fail_next(503, times=10)

    source = read_id_list(" ".join(str(pid(n)) for n in range(1, 8)))
    report = await LibraryImporter(store, queue).run(CHAT, source, 10.0)

    assert (report.added, report.unavailable, report.not_found) == (1, 6, 0)
    # The first failure stops the look-ups; the queue may have sent the next batch meanwhile.
    assert len(asked(fake_arxiv)) <= 2
    assert await store.saved.count(CHAT) == 1
    await queue.aclose()


# ----------------------------------------------------------------------------- the budget


def update(message: dict[str, Any]) -> Update:
    base = {"message_id": 1, "date": 0, "from": {"id": 9, "is_bot": False, "first_name": "A"}}
    return Update.de_json({"update_id": 1, "message": {**base, **message}}, None)


PRIVATE = {"id": 9, "type": "private"}
GROUP = {"id": -5, "type": "group", "title": "Lab"}


def test_an_import_costs_by_its_size_and_a_file_is_charged_before_its_download() -> None:
    document = {"file_id": "f", "file_unique_id": "u", "file_size": 200_000}
    assert update_cost(update({"chat": PRIVATE, "document": document}), "bot") \
        == upload_cost(200_000) == IMPORT_MAX_COST
    small = {**document, "file_size": 900}
    assert update_cost(update({"chat": PRIVATE, "document": small}), "bot") == LOOKUP_COST
    assert update_cost(update({"chat": GROUP, "document": document}), "bot") is None, \
        "a file shared in a group without /import is not for the bot"
    assert update_cost(update({"chat": GROUP, "document": small, "caption": "/import"}),
                       "bot") == LOOKUP_COST

    ids = " ".join(f"2401.{n:05d}" for n in range(1, 46))
    command = {"chat": PRIVATE, "text": f"/import {ids}",
               "entities": [{"type": "bot_command", "offset": 0, "length": 7}]}
    assert update_cost(update(command), "bot") == import_cost(45) == 3 * LOOKUP_COST
    assert update_cost(update({"chat": PRIVATE, "text": ids}), "bot") == import_cost(45)
    assert import_cost(10_000) == IMPORT_MAX_COST and upload_cost(None) == IMPORT_MAX_COST

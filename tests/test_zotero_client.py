"""The Zotero client against the fake Web API: Zotero's rate limits obeyed (Backoff holds every
request, Retry-After is waited out), a 403 is the key's end, a write token is used once; and
the arXiv id of Zotero items read as the importer reads BibTeX."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from bot.core.models import ArxivId, ZoteroLibraryKind
from bot.core.sealing import Sealer, Unsealable
from bot.zotero.client import KeyRejected, Library, PreconditionFailed, ZoteroClient
from bot.zotero.items import arxiv_id_of_item, preprint_item
from tests.conftest import make_paper
from tests.fakes.zotero_server import FakeZotero

KEY = "Xq7RtLmP2sVbN9cWz4KdHf6J"
USER = 4242
LIBRARY = Library(ZoteroLibraryKind.USER, USER)


class Clock:
    """A monotonic clock that moves only when the client sleeps."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture
def zotero() -> AsyncIterator[FakeZotero]:
    with FakeZotero() as server:
        server.add_key(KEY, USER)
        yield server


@pytest.fixture
async def client_and_clock(zotero: FakeZotero) -> AsyncIterator[tuple[ZoteroClient, Clock]]:
    clock = Clock()
    client = ZoteroClient(zotero.root, sleep=clock.sleep, monotonic=clock)
    yield client, clock
    await client.aclose()


async def test_a_backoff_holds_the_next_request_that_long(
        zotero: FakeZotero, client_and_clock: tuple[ZoteroClient, Clock]) -> None:
    client, clock = client_and_clock
    zotero.backoff_next(30)
    await client.key_access(KEY)
    assert clock.slept == []
    await client.changes(KEY, LIBRARY, 0)  # waits out the Backoff first
    assert clock.slept == [30.0]
    await client.changes(KEY, LIBRARY, 0)
    assert clock.slept == [30.0], "a Backoff holds only until it ends"


async def test_a_429_is_tried_again_after_its_retry_after(
        zotero: FakeZotero, client_and_clock: tuple[ZoteroClient, Clock]) -> None:
    client, clock = client_and_clock
    zotero.fail_next(429, retry_after=7)
    zotero.fail_next(503, backoff=11)  # no Retry-After: the Backoff says how long
    access = await client.key_access(KEY)
    assert access.user_id == USER and access.user_write
    assert clock.slept[:2] == [7.0, 11.0]
    assert [r.status for r in zotero.requests] == [429, 503, 200]


async def test_a_revoked_key_is_rejected_at_once(
        zotero: FakeZotero, client_and_clock: tuple[ZoteroClient, Clock]) -> None:
    client, clock = client_and_clock
    zotero.revoke(KEY)
    with pytest.raises(KeyRejected) as raised:
        await client.changes(KEY, LIBRARY, 0)
    assert KEY not in str(raised.value)
    assert len(zotero.requests) == 1 and clock.slept == []
    assert "zotero-api-key" in zotero.requests[0].headers
    assert KEY not in zotero.requests[0].path + str(zotero.requests[0].query)


async def test_a_write_token_writes_once(
        zotero: FakeZotero, client_and_clock: tuple[ZoteroClient, Clock]) -> None:
    client, _ = client_and_clock
    item = preprint_item(make_paper(1), None)
    key, version = await client.create(KEY, LIBRARY, "items", item, "a" * 32)
    assert version == zotero.version(f"/users/{USER}")
    with pytest.raises(PreconditionFailed):
        await client.create(KEY, LIBRARY, "items", item, "a" * 32)
    assert list(zotero.items(f"/users/{USER}")) == [key]


async def test_an_unchanged_library_is_one_304(
        zotero: FakeZotero, client_and_clock: tuple[ZoteroClient, Clock]) -> None:
    client, _ = client_and_clock
    await client.create(KEY, LIBRARY, "items", preprint_item(make_paper(1), None), "b" * 32)
    first = await client.changes(KEY, LIBRARY, 0)
    assert first is not None
    zotero.clear_requests()
    assert await client.changes(KEY, LIBRARY, first.version) is None
    assert [r.status for r in zotero.requests] == [304]


@pytest.mark.parametrize(("data", "found"), [
    ({"itemType": "preprint", "archiveID": "arXiv:2211.00593", "repository": "arXiv"},
     "2211.00593"),
    ({"itemType": "journalArticle", "DOI": "10.48550/arXiv.1706.03762v5"}, "1706.03762"),
    ({"itemType": "journalArticle", "publicationTitle": "arXiv preprint arXiv:1810.04805"},
     "1810.04805"),
    ({"itemType": "report", "reportNumber": "arXiv:1809.02922", "institution": "arXiv"},
     "1809.02922"),
    ({"itemType": "conferencePaper", "url": "https://arxiv.org/abs/hep-th/9901001v2"},
     "hep-th/9901001"),
    ({"itemType": "journalArticle", "extra": "arXiv: 2306.06918 [cs]"}, "2306.06918"),
    ({"itemType": "journalArticle", "publicationTitle": "CoRR", "volume": "abs/1903.11508"},
     "1903.11508"),
    ({"itemType": "journalArticle", "DOI": "10.18653/v1/2021.naacl-main.52"}, None),
    ({"itemType": "book", "title": "Deep Learning"}, None),
])
def test_an_items_arxiv_id_is_found_wherever_the_importer_finds_one(
        data: dict[str, str], found: str | None) -> None:
    arxiv_id = arxiv_id_of_item(data)
    assert (arxiv_id.base if arxiv_id else None) == found


def test_what_the_bot_writes_it_reads_back_as_the_same_paper() -> None:
    paper = make_paper(7, version=3)
    assert arxiv_id_of_item(preprint_item(paper, "ABCD2345")) == ArxivId(paper.arxiv_id)


def test_a_sealed_key_opens_only_with_the_same_secret_key() -> None:
    sealed = Sealer("s" * 40).seal(KEY)
    assert KEY not in sealed
    assert Sealer("s" * 40).open(sealed) == KEY
    with pytest.raises(Unsealable):
        Sealer("t" * 40).open(sealed)

"""Seeding the library through the fake servers: a real Zotero export uploaded, refused files
that change nothing, and a message of IDs and links."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from telegram import File

from bot.chat.handlers.imports import download
from bot.core.http import BodyTooLarge
from bot.core.models import Paper
from bot.importer.parse import MAX_IMPORT_BYTES
from tests.conftest import ON_BOTH_ENGINES, Harness, make_paper
from tests.fakes.telegram_server import SentMessage

CHAT = 7401
FIXTURES = Path(__file__).parent / "fixtures" / "imports"
ZOTERO = FIXTURES / "zotero-exported-items-domenicrosati-2022.bib"
# The 15 arXiv papers of the Zotero export (tests/fixtures/README.md), in file order.
ZOTERO_ARXIV = ("1809.02922", "2203.12990", "1901.08079", "2111.08543", "2110.07803",
                "2203.11147", "2112.09332", "2206.05802", "1909.12434", "2112.08542",
                "2203.05227", "1907.11692", "2111.09543", "2006.03654", "1910.03771")
UNKNOWN_TO_ARXIV = ("2111.09543", "2006.03654")  # the fake API leaves these two out


def api_paper(number: int, arxiv_id: str, version: int = 2) -> Paper:
    return dataclasses.replace(make_paper(number, version=version), arxiv_id=arxiv_id,
                               title=f"Imported paper {arxiv_id} on natural language inference")


async def upload(harness: Harness, content: bytes, filename: str, **kwargs: object
                 ) -> SentMessage:
    """Send a file and return the bot's next message in the chat."""
    before = len(harness.tg.messages(CHAT))
    harness.tg.send_document(CHAT, content, filename, **kwargs)
    messages = await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(CHAT)) > before and found,
        what=f"a reply to the upload of {filename}")
    return messages[before]


async def saved_state(harness: Harness) -> tuple[int, int]:
    store = harness.services.storage
    return await store.saved.count(CHAT), await store.papers.count()


@ON_BOTH_ENGINES
async def test_a_zotero_export_fills_the_library_and_the_rankers_positives(
        harness: Harness) -> None:
    known = [arxiv_id for arxiv_id in ZOTERO_ARXIV if arxiv_id not in UNKNOWN_TO_ARXIV]
    harness.arxiv.set_api_papers(api_paper(n, arxiv_id) for n, arxiv_id in enumerate(known))

    reply = await upload(harness, ZOTERO.read_bytes(), "Exported Items.bib")

    assert reply.text.splitlines() == [
        "📥 Import done: 15 arXiv papers recognised.",
        "✅ Added to your library: 13",
        "❔ Not found on arXiv: 2",
        "⏭ Skipped: 35",
        "  • entries not on arXiv: 6",
        "  • entries with only a DOI: 29 (DOIs are not looked up for now)",
        "Saved papers teach your ranking: /stats shows it, /saved lists them.",
    ]
    asked = [r.query["id_list"][0] for r in harness.arxiv.requests if r.path == "/api/query"]
    assert sorted(",".join(asked).split(",")) == sorted(ZOTERO_ARXIV), "each asked once"
    assert len(asked) == 1, "15 IDs fit one batch"
    saved = await harness.ask(CHAT, "/saved")
    assert "Your library — 13 saved" in saved.text, saved.text
    assert "Imported paper" in saved.text
    stats = await harness.ask(CHAT, "/stats")
    assert "Ranking: 13 labels" in stats.text, stats.text
    # The latest version is the one saved: no revision alert for what the chat already has.
    rows = harness.rows("SELECT DISTINCT saved_version FROM saved WHERE chat_id = ?", (CHAT,))
    assert [row[0] for row in rows] == [2]

    again = await upload(harness, ZOTERO.read_bytes(), "Exported Items.bib")
    assert "☑️ Already saved: 13" in again.text and "Added" not in again.text
    assert "❔ Not found on arXiv: 2" in again.text
    asked_again = [r for r in harness.arxiv.requests if r.path == "/api/query"]
    assert len(asked_again) == 1, "saved papers and arXiv's recent misses are not asked again"


@ON_BOTH_ENGINES
async def test_bad_files_are_refused_and_change_nothing(harness: Harness) -> None:
    before = await saved_state(harness)

    pdf = await upload(harness, b"%PDF-1.5\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\x00\x00stream",
                       "paper.pdf")
    assert "not text" in pdf.text and "Nothing was changed." in pdf.text
    prose = await upload(harness, b"Dear colleague,\nhere are my notes.\n", "notes.txt")
    assert "neither BibTeX entries nor arXiv IDs" in prose.text
    broken = await upload(harness, b"@article{broken,\n  title = {No closing brace\n", "a.bib")
    assert "neither BibTeX entries nor arXiv IDs" in broken.text
    huge = await upload(harness, b"%", "library.bib", file_size=MAX_IMPORT_BYTES + 1)
    assert "too large" in huge.text and "1 MB" in huge.text
    assert len(harness.tg.downloads) == 3, "the oversized file is refused by its size alone"
    many = "\n".join(f"2401.{n:05d}" for n in range(1, 502)).encode()
    too_many = await upload(harness, many, "ids.txt")
    assert "more than 500 entries" in too_many.text

    assert await saved_state(harness) == before
    assert not [r for r in harness.arxiv.requests if r.path == "/api/query"]


@ON_BOTH_ENGINES
async def test_a_message_of_ids_and_links_is_imported(harness: Harness) -> None:
    harness.arxiv.set_api_papers([api_paper(1, "1706.03762", version=7),
                                  api_paper(2, "2211.00593"),
                                  api_paper(3, "cond-mat/0412498", version=1)])
    text = ("My reading list:\n"
            "https://arxiv.org/abs/1706.03762v5\n"
            "arXiv:2211.00593, https://doi.org/10.48550/arXiv.2211.00593\n"
            "cond-mat/0412498v1 and 2401.99999")

    reply = await harness.ask(CHAT, text)

    assert reply.text.splitlines() == [
        "📥 Import done: 4 arXiv papers recognised.",
        "✅ Added to your library: 3",
        "❔ Not found on arXiv: 1",
        "🔁 Named more than once: 1",
        "⏭ Skipped: 1",
        "  • lines without an arXiv ID: 1",
        "Saved papers teach your ranking: /stats shows it, /saved lists them.",
    ]
    saved = await harness.services.storage.saved.saved_among(
        CHAT, ["1706.03762", "2211.00593", "cond-mat/0412498", "2401.99999"])
    assert saved == {"1706.03762", "2211.00593", "cond-mat/0412498"}

    one = await harness.ask(CHAT, "https://arxiv.org/abs/1706.03762")
    assert "Imported paper 1706.03762" in one.text and "Import done" not in one.text, \
        "one link alone still shows that paper's card"
    command = await harness.ask(CHAT, "/import")
    assert "Import papers into your library" in command.text and "1 MB" in command.text


@ON_BOTH_ENGINES
async def test_a_chinese_chat_gets_the_report_in_chinese(harness: Harness) -> None:
    harness.arxiv.set_api_papers([api_paper(1, "1706.03762")])
    await harness.ask(CHAT, "/lang zh")

    reply = await harness.ask(CHAT, "/import 1706.03762 10.1000/not-arxiv 2211.00593")

    assert "导入" in reply.text and "收藏夹" in reply.text, reply.text
    assert "跳过" not in reply.text  # the command names no non-arXiv line


@ON_BOTH_ENGINES
async def test_in_a_group_only_a_file_captioned_import_is_read_and_the_importer_is_named(
        harness: Harness) -> None:
    group, member = -1007401, 22
    harness.arxiv.set_api_papers([api_paper(1, "1706.03762"), api_paper(2, "2211.00593")])
    listing = b"1706.03762\nhttps://arxiv.org/abs/2211.00593\n"

    harness.tg.send_document(group, listing, "shared.txt", user_id=member, title="Lab")
    await harness.settle()
    assert harness.tg.messages(group) == [] and harness.tg.downloads == [], \
        "a file shared among members is not the bot's"

    before = len(harness.tg.messages(group))
    harness.tg.send_document(group, listing, "ids.txt", caption="/import", user_id=member,
                             first_name="Grace", title="Lab")
    replies = await harness.tg.wait_for(
        lambda: len(found := harness.tg.messages(group)) > before and found,
        what="the group's import report")
    assert "✅ Added to your library: 2" in replies[before].text
    rows = harness.rows("SELECT saved_by, saved_by_name FROM saved WHERE chat_id = ?", (group,))
    assert rows == [(member, "Grace")] * 2


async def test_a_local_bot_api_servers_file_is_read_no_further_than_the_limit(
        tmp_path: Path) -> None:
    """A local Bot API server (2 GB files) may hand a path on this machine instead of a URL."""
    big, small = tmp_path / "big.bib", tmp_path / "small.bib"
    big.write_bytes(b"%" * (MAX_IMPORT_BYTES + 1))
    small.write_bytes(b"@misc{a}\n")
    with pytest.raises(BodyTooLarge):
        await download(File("id", "unique", file_path=str(big)), MAX_IMPORT_BYTES)
    assert await download(File("id", "unique", file_path=str(small)),
                          MAX_IMPORT_BYTES) == b"@misc{a}\n"

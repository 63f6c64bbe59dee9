"""The library and the overview: save, page, remove, export, look up, pause, digest, stats."""

from __future__ import annotations

import asyncio
import inspect
import re
from datetime import datetime

import bibtexparser
import pytest

import bot.delivery.sender
from tests.conftest import SHANGHAI, Harness, digest_at_eight_in_shanghai, make_paper

CHAT = 7001


async def ingest(harness: Harness, count: int, **kwargs: object) -> None:
    harness.serve_feed([make_paper(n, **kwargs) for n in range(1, count + 1)])
    await harness.poll()


async def digests_at_eight_in_shanghai_with_three_papers(harness: Harness,
                                                       chats: range) -> None:
    """The chats follow cs.LG with a digest at 08:00 in Shanghai; three papers then arrive."""
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    for chat_id in chats:
        await harness.ask(chat_id, "/follow cs.LG")
        await harness.ask(chat_id, "/tz Asia/Shanghai")
        await harness.ask(chat_id, "/digest 08:00")
    await ingest(harness, 3)


async def save_all(harness: Harness, numbers: range) -> None:
    store = harness.services.storage
    for n in numbers:
        harness.clock.advance(1)  # saved one after another: newest first in /saved
        await store.saved.save(CHAT, f"2611.{10000 + n}", 1, harness.clock.now())


async def test_empty_library_states_are_friendly(harness: Harness) -> None:
    saved = await harness.ask(CHAT, "/saved")
    assert "library is empty" in saved.text
    export = await harness.ask(CHAT, "/export")
    assert "nothing to export" in export.text
    assert harness.tg.documents(CHAT) == []


async def test_saved_pages_newest_first_with_working_arrows_and_removal(harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    await ingest(harness, 12)
    await save_all(harness, range(1, 13))
    page1 = await harness.ask(CHAT, "/saved")
    assert "12 saved, page 1/3" in page1.text
    assert page1.text.index("part 12") < page1.text.index("part 8"), "newest first"
    assert "part 7" not in page1.text
    assert "◀" not in page1.button_texts and "▶" in page1.button_texts

    await harness.press(CHAT, page1.message_id, "v1:p:2")
    page2 = harness.tg.message(CHAT, page1.message_id)
    assert "page 2/3" in page2.text and "part 7" in page2.text and "◀" in page2.button_texts

    await harness.press(CHAT, page1.message_id, "v1:p:3")
    page3 = harness.tg.message(CHAT, page1.message_id)
    assert "page 3/3" in page3.text and "▶" not in page3.button_texts
    assert "part 1," in page3.text or "part 1\n" in page3.text or "part 1<" in page3.sent_text

    remove = next(d for d in page3.callback_data if d.startswith("v1:r:"))
    answer = await harness.press(CHAT, page1.message_id, remove)
    assert "Removed" in (answer.text or "")
    assert await harness.services.storage.saved.count(CHAT) == 11
    assert "11 saved" in harness.tg.message(CHAT, page1.message_id).text


async def test_a_forged_page_number_shows_the_nearest_page(harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    await ingest(harness, 3)
    await save_all(harness, range(1, 4))
    page = await harness.ask(CHAT, "/saved")
    answer = await harness.forge(CHAT, page.message_id, "v1:p:9999")
    assert answer is not None
    assert "page 1/1" in harness.tg.message(CHAT, page.message_id).text
    garbage = await harness.forge(CHAT, page.message_id, "v1:p:-1")
    assert "expired" in (garbage.text or "")


async def test_another_chat_cannot_remove_from_my_library(harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    await ingest(harness, 1)
    await save_all(harness, range(1, 2))
    other = await harness.ask(7002, "/saved")
    await harness.forge(7002, other.message_id, "v1:r:2611.10001:1")
    assert await harness.services.storage.saved.count(CHAT) == 1


async def test_export_is_bibtex_that_a_parser_reads_back(harness: Harness) -> None:
    await harness.ask(CHAT, "/start")
    harness.serve_feed([
        make_paper(1, title="How much $1.93\\times$ faster? BERT & friends at 100% load",
                   authors=("Jane Yu", "Jürgen Müller", "Jan van der Berg"),
                   categories=("cs.CL", "cs.LG"), doi="10.1000/xyz_1",
                   journal_ref="J. Fun & Games 3 (2026)"),
        make_paper(2, title="How much data do we need?", authors=("Jane Yu",)),
    ])
    await harness.poll()
    await save_all(harness, range(1, 3))
    reply_count = len(harness.tg.documents(CHAT))
    harness.tg.send_command(CHAT, "/export")
    documents = await harness.tg.wait_for(
        lambda: len(d := harness.tg.documents(CHAT)) > reply_count and d)
    document = documents[-1]
    assert document.filename.endswith(".bib")
    library = bibtexparser.parse_string(document.content.decode("utf-8"))
    assert library.failed_blocks == []
    entries = {e.key: e.fields_dict for e in library.entries}
    assert len(entries) == 2 and len(set(entries)) == 2, "keys are unique"
    first = next(f for k, f in entries.items() if "1.93" in f["title"].value)
    assert first["author"].value.startswith("Yu, Jane and M")
    assert "van der Berg, Jan" in first["author"].value
    assert first["eprint"].value == "2611.10001"
    assert first["archivePrefix"].value == "arXiv"
    assert first["primaryClass"].value == "cs.CL"
    assert first["year"].value == "2026"
    assert first["url"].value == "https://arxiv.org/abs/2611.10001"
    assert first["doi"].value == "10.1000/xyz_1"
    assert "Fun {\\&} Games" in first["journal"].value
    assert "{BERT}" in first["title"].value and "\\%" in first["title"].value
    assert all(re.fullmatch(r"yu2026[a-z]+", key) for key in entries)


async def test_paper_accepts_ids_and_urls_from_the_store_and_the_api(harness: Harness) -> None:
    await ingest(harness, 1)
    for spelling in ("2611.10001", "2611.10001v1", "arXiv:2611.10001",
                     "https://arxiv.org/abs/2611.10001", "https://arxiv.org/pdf/2611.10001v1"):
        card = await harness.ask(CHAT, f"/paper {spelling}")
        assert "part 1" in card.text, spelling
        assert "⭐ Save" in card.button_texts
    assert not [r for r in harness.arxiv.requests if "/api/" in r.path]

    old = make_paper(99, title="Old-style identifiers still work")
    old = type(old)(**{**{f: getattr(old, f) for f in old.__slots__}, "arxiv_id": "hep-th/9901001",
                       "categories": ("hep-th",)})
    harness.arxiv.set_api_papers([old])
    card = await harness.ask(CHAT, "/paper hep-th/9901001")
    assert "Old-style identifiers" in card.text
    answer = await harness.press(CHAT, card.message_id, card.callback_data[0])
    assert "Saved" in (answer.text or "")
    assert await harness.services.storage.saved.count(CHAT) == 1

    unknown = await harness.ask(CHAT, "/paper 2611.99999")
    assert "no paper" in unknown.text
    nonsense = await harness.ask(CHAT, "/paper not-an-id")
    assert "doesn't look like an arXiv ID" in nonsense.text


async def test_pause_keeps_matches_and_resume_delivers_them_as_a_digest(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    paused = await harness.ask(CHAT, "/pause")
    assert "paused" in paused.text.lower()
    before = len(harness.tg.messages(CHAT))
    await ingest(harness, 14)
    await harness.drain()
    assert len(harness.tg.messages(CHAT)) == before, "nothing arrives while paused"
    resumed = await harness.ask(CHAT, "/resume")
    assert "14" in resumed.text
    await harness.drain()
    digest = await harness.tg.wait_for_messages(CHAT, contains="part 14")
    assert len(digest) == 1 and "part 1" in digest[0].text, "14 matches arrive as one digest"
    await harness.drain()
    assert len(harness.tg.messages(CHAT)) <= before + 3


async def test_daily_digest_arrives_at_0800_in_shanghai(harness: Harness) -> None:
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    await harness.ask(CHAT, "/follow cs.LG")
    tz = await harness.ask(CHAT, "/tz asia/shanghai")
    assert "Asia/Shanghai" in tz.text
    reply = await harness.ask(CHAT, "/digest 08:00")
    assert "08:00" in reply.text and "2026-12-02 08:00" in reply.text
    before = len(harness.tg.messages(CHAT))
    await ingest(harness, 3)
    assert len(harness.tg.messages(CHAT)) == before, "digest mode holds instant alerts"

    harness.clock.set(datetime(2026, 12, 2, 7, 59, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == 0
    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == 1
    digest = await harness.tg.wait_for_message(CHAT, contains="part 3")
    assert "part 1" in digest.text and "part 2" in digest.text
    assert await harness.send_due_digests() == 0, "once a day"

    off = await harness.ask(CHAT, "/digest off")
    assert "Instant" in off.text


async def test_settings_refuse_bad_values_politely(harness: Harness) -> None:
    assert "IANA" in (await harness.ask(CHAT, "/tz Mars/Olympus")).text
    assert "HH:MM" in (await harness.ask(CHAT, "/digest 25:00")).text
    assert "/lang en" in (await harness.ask(CHAT, "/lang fr")).text
    chat = await harness.services.storage.chats.get(CHAT)
    assert chat.timezone == "UTC" and chat.delivery_mode == "instant" and chat.language == "en"


async def test_stats_reads_like_a_trackers_front_page(harness: Harness) -> None:
    await harness.ask(CHAT, "/follow cs.LG")
    harness.serve_feed([make_paper(1), make_paper(2, categories=("math.AG",)),
                        make_paper(3, version=2)])
    await harness.poll()
    stats = await harness.ask(CHAT, "/stats")
    assert "+2 new papers" in stats.text and "+1 revision (" in stats.text  # not "1 revisions"
    assert "2 AI-related" in stats.text
    assert "last scan" in stats.text
    assert "2 matches in 24 h" in stats.text


async def test_status_is_for_operators_only(harness: Harness) -> None:
    refused = await harness.ask(CHAT, "/status")
    assert "operators only" in refused.text
    await ingest(harness, 2)
    status = await harness.ask(1, "/status")
    for part in ("Outbox", "Chats", "Subscriptions", "Database", "version"):
        assert part in status.text
    assert "✅" in status.text


async def test_a_digest_hour_with_nothing_waiting_sends_nothing(harness: Harness) -> None:
    await digest_at_eight_in_shanghai(harness, CHAT)
    before = len(harness.tg.messages(CHAT))
    harness.clock.set(datetime(2026, 12, 2, 8, 1, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == 0
    await harness.settle()
    assert len(harness.tg.messages(CHAT)) == before
    chat = await harness.services.storage.chats.get(CHAT)
    assert chat.last_digest_at == harness.clock.now(), "the hour came; the next counts from it"


async def test_a_daily_digest_of_one_paper_says_so_in_the_singular(harness: Harness) -> None:
    await digest_at_eight_in_shanghai(harness, CHAT)
    await ingest(harness, 1)
    harness.clock.set(datetime(2026, 12, 2, 8, 0, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == 1
    digest = await harness.tg.wait_for_message(CHAT, contains="part 1")
    assert "1 new match" in digest.text and "1 new matches" not in digest.text


async def test_digests_due_during_a_long_drain_go_out_in_it_not_after_it(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """An evening's drain to the instant chats lasts half an hour; the digest-mode chats whose
    hour comes meanwhile waited for its end (34-39 minutes after the rebuild at 10,000 chats).
    The drain's workers take a due digest before their next chat."""
    monkeypatch.setattr(bot.delivery.sender, "WORKERS", 2)
    harness.services.sender.window = 1  # two workers for six chats: the drain takes turns
    digest_chat, instant = 7120, list(range(7121, 7127))
    harness.clock.set(datetime(2026, 12, 1, 20, 0, tzinfo=SHANGHAI).timestamp())
    await harness.ask(digest_chat, "/follow cs.LG")
    await harness.ask(digest_chat, "/tz Asia/Shanghai")
    await harness.ask(digest_chat, "/digest 08:00")
    for chat_id in instant:
        await harness.ask(chat_id, "/follow cs.LG")
    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    harness.serve_feed([make_paper(n) for n in range(1, 4)])
    await harness.services.pipeline.poll()  # stored; the drain below sends them
    harness.tg.set_round_trip("sendMessage", 0.3)
    before = {c: len(harness.tg.messages(c)) for c in [digest_chat, *instant]}

    def alerts_to(chat_id: int) -> int:
        return len(harness.tg.messages(chat_id)) - before[chat_id]

    drain = asyncio.create_task(harness.services.sender.drain())
    await harness.tg.wait_for(lambda: any(alerts_to(c) for c in instant),
                              what="the drain's first alert")
    digests = asyncio.create_task(harness.send_due_digests())
    digest = await harness.tg.wait_for_message(digest_chat, contains="part 3")
    waiting = [c for c in instant if alerts_to(c) < 3]
    assert waiting, "the digest went in the drain, before its last chats"
    assert "part 1" in digest.text
    await drain
    assert await digests == 1
    assert all(alerts_to(c) == 3 for c in instant)
    assert alerts_to(digest_chat) == 1, "one digest, once"


async def test_the_digest_check_reads_and_marks_many_chats_in_a_few_round_trips_not_per_chat(
        harness: Harness, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 100,000 chats a quarter take their digest at one hour, while the evening's drain keeps
    the database busy: each round trip waits its turn behind the drain's, and reading each
    chat's alerts and marking its digest one chat at a time (three round trips a chat) kept
    the digests 36 minutes late. Around the sending itself (which composes per chat, many at
    once), the check makes a handful of round trips, however many chats are due."""
    chats = range(7201, 7225)
    await digests_at_eight_in_shanghai_with_three_papers(harness, chats)

    store, sender = harness.services.storage, harness.services.sender
    calls: list[str] = []
    sending = False
    for repository in (store.outbox, store.chats):
        for name in dir(type(repository)):
            method = getattr(repository, name)
            if name.startswith("_") or not inspect.iscoroutinefunction(method):
                continue

            async def counted(*args: object, _method=method, _name=name, **kwargs: object):
                if not sending:
                    calls.append(_name)
                return await _method(*args, **kwargs)
            monkeypatch.setattr(repository, name, counted)
    send = sender.send_daily_digests

    async def sent_apart(chat_ids):  # the sender's own reads are the drain's, not the check's
        nonlocal sending
        sending = True
        try:
            return await send(chat_ids)
        finally:
            sending = False
    monkeypatch.setattr(sender, "send_daily_digests", sent_apart)

    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == len(chats)
    for chat_id in chats:
        digest = await harness.tg.wait_for_message(chat_id, contains="part 3")
        assert "part 1" in digest.text
    assert len(calls) <= 6, calls
    assert await harness.send_due_digests() == 0, "marked: once a day"


async def test_many_chats_digests_at_the_same_hour_go_out_together_not_one_after_another(
        harness: Harness) -> None:
    """A public bot's evening: thousands of chats take their digest at 08:00. Sent one chat
    after another, each waiting for Telegram's answer, they would take an hour at 100 ms;
    they go as a drain goes, many requests on their way at once."""
    chats = range(7101, 7111)
    await digests_at_eight_in_shanghai_with_three_papers(harness, chats)
    harness.tg.set_round_trip("sendMessage", 0.2)

    harness.clock.set(datetime(2026, 12, 2, 8, 0, 30, tzinfo=SHANGHAI).timestamp())
    assert await harness.send_due_digests() == len(chats)

    for chat_id in chats:
        digest = await harness.tg.wait_for_message(chat_id, contains="part 3")
        assert "part 1" in digest.text
    assert harness.tg.peak_in_flight("sendMessage") > 1
    assert await harness.send_due_digests() == 0, "once a day"

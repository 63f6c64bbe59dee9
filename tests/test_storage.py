"""Storage: migrations, the paper upsert, the outbox's once-only key."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.models import Alert, AlertKind, AnnounceType, Feedback, Paper, PlainAlerts
from bot.storage import Storage, open_storage
from bot.storage.sqlite.db import Database
from bot.storage.sqlite.migrations import LATEST_VERSION
from bot.storage.sqlite.outbox import _staged_rows, _unstaged, unpack_staged

NOW = 1_790_000_000.0


def paper(arxiv_id: str = "2611.11450", version: int = 1, **changes) -> Paper:
    base = Paper(
        arxiv_id=arxiv_id, version=version, title="Quantized attention for long contexts",
        authors=("Eiko Yoneki", "Dirk Wübben"), abstract="We study attention.",
        categories=("cs.LG", "stat.ML"),
        announce_type=AnnounceType.NEW if version == 1 else AnnounceType.REPLACE,
    )
    return dataclasses.replace(base, **changes)


@pytest.fixture
async def store(database_url: str):
    """A new database on each engine in turn."""
    storage = await open_storage(database_url)
    yield storage
    await storage.close()


async def test_a_fresh_database_is_migrated_in_wal_mode(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "nested" / "bot.sqlite3")
    try:
        assert await db.schema_version() == LATEST_VERSION
        assert await db.fetchval("PRAGMA journal_mode") == "wal"
        assert await db.fetchval("PRAGMA foreign_keys") == 1
        tables = {r[0] for r in await db.fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"chats", "subscriptions", "papers", "paper_versions", "outbox", "saved",
                "sources", "schema_version"} <= tables
    finally:
        await db.close()


async def test_running_migrations_again_is_a_no_op(tmp_path: Path) -> None:
    path = tmp_path / "bot.sqlite3"
    db = await Database.open(path)
    await db.execute("INSERT INTO sources (url) VALUES ('http://x')")
    await db.close()
    db = await Database.open(path)
    try:
        assert await db.migrate() == []
        assert await db.fetchval("SELECT COUNT(*) FROM schema_version") == LATEST_VERSION
        assert await db.fetchval("SELECT COUNT(*) FROM sources") == 1
    finally:
        await db.close()


async def test_upsert_tells_new_revised_and_seen_apart(store: Storage) -> None:
    first = await store.papers.upsert_many([paper(), paper("2611.00001")], NOW)
    assert [c.status for c in first] == ["new", "new"]

    again = await store.papers.upsert_many([paper(), paper("2611.00001")], NOW + 1)
    assert [c.status for c in again] == ["seen", "seen"]

    v2 = paper(version=2, title="Quantised attention for very long contexts",
               authors=("Eiko Yoneki", "Dirk Wübben", "Ada Lovelace"))
    revised = await store.papers.upsert_many([v2], NOW + 2)
    assert revised[0].status == "revised"
    assert revised[0].previous is not None
    assert revised[0].previous.title == "Quantized attention for long contexts"
    assert revised[0].previous.version == 1

    stored = await store.papers.get("2611.11450")
    assert stored is not None and stored.version == 2 and len(stored.authors) == 3
    old = await store.papers.get("2611.11450", version=1)
    assert old is not None and old.title == "Quantized attention for long contexts"
    assert (await store.papers.previous_version("2611.11450", 2)) == old

    stale = await store.papers.upsert_many([paper(version=1)], NOW + 3)
    assert stale[0].status == "seen"
    assert (await store.papers.get("2611.11450")).version == 2


async def test_the_same_paper_twice_in_a_batch_counts_once(store: Storage) -> None:
    changes = await store.papers.upsert_many([paper(), paper(version=2)], NOW)
    assert len(changes) == 1 and changes[0].paper.version == 2


async def test_old_style_ids_and_unicode_round_trip(store: Storage) -> None:
    p = paper("hep-th/9901001", authors=("Jürgen Müller", "Przemysław Ło"), comment="12 pages")
    await store.papers.upsert_many([p], NOW)
    got = await store.papers.get("hep-th/9901001")
    assert got is not None
    assert got.authors == ("Jürgen Müller", "Przemysław Ło")
    assert got.comment == "12 pages"


async def test_outbox_takes_each_version_once_per_chat(store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper()], NOW)
    alert = Alert(42, "2611.11450", 1, "new", (1,), ("cs.LG",))
    assert await store.outbox.enqueue([alert], NOW) == 1
    assert await store.outbox.enqueue([alert], NOW + 5) == 0
    pending = await store.outbox.pending_for_chat(42)
    assert len(pending) == 1 and pending[0].alert == alert
    await store.outbox.mark_sent([pending[0].id], message_id=7, now=NOW + 6)
    assert await store.outbox.pending_for_chat(42) == []
    assert (await store.outbox.by_message(42, 7)).alert == alert


async def test_each_forum_topic_takes_a_version_once_and_a_gone_topic_never_doubles_general(
        store: Storage) -> None:
    forum, topic = -1001500000001, 17
    await store.chats.record(forum, "supergroup", "Lab", "en", NOW)
    await store.papers.upsert_many([paper(), paper("2611.11451")], NOW)
    await store.subscriptions.add(forum, "cat:cs.LG", "cs.LG", NOW, topic_id=topic)
    await store.topics.remember(forum, topic, "Methods")
    both = [Alert(forum, "2611.11450", 1, "new"), Alert(forum, "2611.11450", 1, "new",
                                                        topic_id=topic)]
    assert await store.outbox.enqueue(both, NOW) == 2
    assert await store.outbox.enqueue(both, NOW + 1) == 0
    assert await store.outbox.enqueue([Alert(forum, "2611.11451", 1, "new", topic_id=topic)],
                                      NOW + 2) == 1

    fallback = await store.topics.fall_back(forum, topic)

    assert (fallback.name, fallback.queries, fallback.moved) == ("Methods", ("cs.LG",), 1)
    pending = await store.outbox.pending_for_chat(forum)
    assert sorted((r.alert.topic_id, r.alert.arxiv_id) for r in pending) == [
        (0, "2611.11450"), (0, "2611.11451")], "General had the first already: not doubled"
    [sub] = await store.subscriptions.for_chat(forum)
    assert sub.topic_id == 0
    again = await store.topics.fall_back(forum, topic)
    assert (again.queries, again.moved) == ((), 0), "a second refusal finds nothing bound"


async def test_a_blocked_chat_has_its_alerts_held_until_it_writes_again(store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.chats.mark_inactive(42, "blocked", NOW)
    await store.outbox.enqueue([Alert(42, "2611.11450", 1, "new")], NOW)
    assert (await store.outbox.counts())["held"] == 1
    assert await store.outbox.due_chats(NOW + 10) == []
    _, reactivated = await store.chats.record(42, "private", "Ada", "en", NOW + 20)
    assert reactivated
    assert await store.outbox.due_chats(NOW + 20) == [42]


async def test_subscriptions_are_numbered_and_limited(store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    first = await store.subscriptions.add(42, "cat:cs.LG", "cs.LG", NOW)
    assert first.status == "added" and first.subscription.number == 1
    dup = await store.subscriptions.add(42, "cat:cs.LG", "cat:cs.lg", NOW)
    assert dup.status == "duplicate" and dup.subscription.number == 1
    for i in range(49):
        assert (await store.subscriptions.add(42, f"w{i}", f"w{i}", NOW)).status == "added"
    assert (await store.subscriptions.add(42, "one-more", "one-more", NOW)).status == "limit"
    assert not await store.subscriptions.remove(99, first.subscription.id), "other chats can't"
    assert await store.subscriptions.remove(42, first.subscription.id)


async def test_the_follow_preview_reads_at_most_its_limit_newest_first(store: Storage) -> None:
    await store.papers.upsert_many([paper(f"2611.1000{n}") for n in range(1, 4)], now=1000.0)
    await store.papers.upsert_many([paper(f"2611.1000{n}") for n in range(4, 6)], now=2000.0)
    newest = await store.papers.seen_since(0.0, limit=2)
    assert {p.arxiv_id for p in newest} == {"2611.10004", "2611.10005"}
    assert len(await store.papers.seen_since(1500.0, limit=100)) == 2


async def test_a_read_never_sees_another_coroutines_uncommitted_rows(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "bot.sqlite3")
    try:
        inside = asyncio.Event()
        release = asyncio.Event()

        async def writer_that_rolls_back() -> None:
            with contextlib.suppress(RuntimeError):
                async with db.transaction() as conn:
                    await conn.execute(
                        "INSERT INTO chats (id, type, created_at, last_seen_at)"
                        " VALUES (7, 'private', 0, 0)")
                    inside.set()
                    await release.wait()
                    raise RuntimeError("the transaction fails after its insert")

        task = asyncio.create_task(writer_that_rolls_back())
        await inside.wait()
        seen_mid_transaction = await db.fetchval("SELECT COUNT(*) FROM chats WHERE id = 7")
        release.set()
        await task
        assert seen_mid_transaction == 0, "a read saw a row that was then rolled back"
        assert await db.fetchval("SELECT COUNT(*) FROM chats WHERE id = 7") == 0
    finally:
        await db.close()


async def test_the_chats_that_blocked_the_bot_are_read_without_a_scan_of_every_chat(
        tmp_path: Path) -> None:
    # Every transaction of a big poll's store reads them: a scan of every chat each time was
    # 1.4 s of a 10,000-chat poll's store, and grows with the chats.
    storage = await open_storage(f"sqlite:///{tmp_path / 'bot.sqlite3'}")
    try:
        for chat_id in range(1, 201):
            await storage.chats.record(chat_id, "private", "Ada", "en", NOW)
        await storage.chats.mark_inactive(7, "blocked", NOW)
        async with storage.transaction() as tx:
            assert await tx.chats.inactive_ids() == {7}
        plan = await storage.db.fetchall(  # type: ignore[attr-defined]
            "EXPLAIN QUERY PLAN SELECT id FROM chats WHERE inactive_since IS NOT NULL")
        # The partial index holds only those chats: its whole "scan" is theirs.
        assert [row["detail"] for row in plan] == ["SCAN chats USING INDEX chats_inactive"]
    finally:
        await storage.close()


# --- a poll's alerts, staged one row per chat ---------------------------------------------------


async def stage(store: Storage, alerts: list[Alert], now: float = NOW) -> None:
    """Alerts stored as a poll stores them: inside its transaction, beside its papers."""
    async with store.transaction() as tx:
        await tx.outbox.enqueue(alerts, now)


async def rows_stored(store: Storage) -> int:
    """Rows in the outbox and in the poll's staging table together."""
    return (int(await store.db.fetchval("SELECT COUNT(*) FROM outbox"))  # type: ignore[attr-defined]
            + int(await store.db.fetchval(  # type: ignore[attr-defined]
                "SELECT COUNT(*) FROM outbox_staged")))


async def test_a_polls_alerts_are_one_row_per_chat_yet_each_arrives_once_and_in_order(
        store: Storage) -> None:
    """A big poll stored a row per alert (516,668): most of its 47 s. A chat's alerts of one
    transaction are now one row; the sender still sees each alert as its own pending row."""
    chats = [42, 43, 44]
    papers = [paper(f"2611.{11000 + n}") for n in range(40)]
    for chat_id in chats:
        await store.chats.record(chat_id, "private", "Ada", "en", NOW)
    await store.papers.upsert_many(papers, NOW)
    await stage(store, [Alert(chat_id, p.arxiv_id, 1, "new", (chat_id,), ("cs.LG",))
                        for p in papers for chat_id in chats])

    assert await rows_stored(store) == 3, "one row per chat, not 120"
    assert (await store.outbox.counts())["pending"] == 120
    assert await store.outbox.chat_matches_since(43, NOW - 1) == 40
    assert await store.outbox.due_chats(NOW) == chats
    pending = await store.outbox.pending_for_chat(43)
    assert [r.alert.arxiv_id for r in pending] == [p.arxiv_id for p in papers]
    assert pending[0].alert == Alert(43, papers[0].arxiv_id, 1, "new", (43,), ("cs.LG",))
    assert await store.outbox.pending_for_chat(43) == pending, "unpacked once"
    assert (await store.outbox.counts())["pending"] == 120


async def test_many_chats_pending_rows_read_at_once_are_what_each_chat_reads_alone(
        store: Storage) -> None:
    """The digest check reads the pending alerts of thousands of chats at once (a chat at a
    time kept digests 36 minutes late behind an evening's drain): each chat's are the rows it
    reads alone, staged ones unpacked once, a retry not yet due left out when asked by a time."""
    chats = list(range(101, 221))  # more chats than one transaction unpacks
    papers = [paper(f"2611.{11000 + n}") for n in range(3)]
    for chat_id in chats:
        await store.chats.record(chat_id, "private", "Ada", "en", NOW)
    await store.papers.upsert_many(papers, NOW)
    await stage(store, [Alert(chat_id, p.arxiv_id, 1, "new") for p in papers
                        for chat_id in chats if chat_id % 3])
    retried = (await store.outbox.pending_for_chat(101))[0].id
    assert await store.outbox.claim([retried], NOW)
    await store.outbox.retry_later([retried], NOW + 100, "timed out", 5)

    due = await store.outbox.pending_ids(chats, NOW + 1)
    assert int(await store.db.fetchval(  # type: ignore[attr-defined]
        "SELECT COUNT(*) FROM outbox_staged")) == 0, "all unpacked"
    for chat_id in chats:
        alone = {row.id for row in await store.outbox.pending_for_chat(chat_id, NOW + 1)}
        assert due.get(chat_id, set()) == alone
    assert sorted(due) == [c for c in chats if c % 3], "chats with none left out"
    assert len(due[101]) == 2 and retried not in due[101]
    assert retried in (await store.outbox.pending_ids([101]))[101]
    assert (await store.outbox.counts())["pending"] == 3 * len(due), "each alert once"

    assert sorted(await store.chats.get_many([101, 102, 999])) == [101, 102]
    await store.chats.mark_digests_sent(chats[:2], NOW + 5)
    assert [(await store.chats.get(c)).last_digest_at for c in chats[:3]] == [  # type: ignore[union-attr]
        NOW + 5, NOW + 5, None]


_STAGED_ALERTS = st.lists(st.builds(
    Alert, chat_id=st.sampled_from([41, 42]),
    arxiv_id=st.sampled_from(["2611.11450", "hep-th/9901001", "2611.11451"]),
    version=st.integers(1, 12), kind=st.just(AlertKind.NEW),
    subscription_ids=st.lists(st.integers(1, 10**9), min_size=1, max_size=3).map(tuple),
    # What researchers type: quotes, backslashes, accents, emoji, control characters.
    matched_queries=st.lists(st.text(max_size=12), max_size=3).map(tuple),
    topic_id=st.sampled_from([0, 7])), max_size=12)


@given(_STAGED_ALERTS)
def test_a_staged_rows_text_is_jsons_own_and_reads_back_as_the_chats_alerts(
        alerts: list[Alert]) -> None:
    plain = PlainAlerts.from_alerts(alerts)
    rows = _staged_rows(plain, NOW)
    assert [row[0] for row in rows] == sorted({a.chat_id for a in alerts})
    for chat_id, created, count, text, _ in rows:
        chat_alerts = [a for a in alerts if a.chat_id == chat_id]
        assert (created, count) == (NOW, len(chat_alerts))
        assert _unstaged(chat_id, text) == chat_alerts
        assert text == json.dumps(json.loads(text)), "the same text json.dumps gives"


async def test_alerts_with_any_query_text_are_staged_and_arrive_as_they_were(
        store: Storage) -> None:
    queries = ('ti:"say \\"hi\\""', "au:Wübben 🦆", "a\tb\\c", "\u2028")
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper(), paper("2611.11451")], NOW)
    alerts = [Alert(42, "2611.11450", 1, "new", (5, 9), queries),
              Alert(42, "2611.11451", 1, "new", (5,), queries[:1])]
    prepared = await store.outbox.prepare_staged(PlainAlerts.from_alerts(alerts), NOW)
    async with store.transaction() as tx:
        assert await tx.outbox.enqueue([], NOW, staged=prepared) == 2

    assert [r.alert for r in await store.outbox.pending_for_chat(42)] == alerts


async def test_a_version_already_sent_and_matched_again_by_a_later_poll_is_not_sent_twice(
        store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper()], NOW)
    alert = Alert(42, "2611.11450", 1, "new", (1,), ("cs.LG",))
    await stage(store, [alert])
    [row] = await store.outbox.pending_for_chat(42)
    assert await store.outbox.claim([row.id], NOW + 1)
    await store.outbox.mark_sent([row.id], message_id=7, now=NOW + 2)

    await stage(store, [alert], NOW + 900)

    assert await store.outbox.pending_for_chat(42) == []
    assert (await store.outbox.counts())["pending"] == 0


async def test_a_claim_of_rows_one_of_which_is_no_longer_pending_claims_none_of_them(
        store: Storage) -> None:
    """A message's rows go together: if one was claimed meanwhile, the message is not sent and
    the others stay pending, to be sent with it later."""
    await store.chats.record(42, "private", "Ada", "en", NOW)
    papers = [paper(f"2611.1145{n}") for n in range(3)]
    await store.papers.upsert_many(papers, NOW)
    await stage(store, [Alert(42, p.arxiv_id, 1, "new", (1,), ("cs.LG",)) for p in papers])
    first, second, third = await store.outbox.pending_for_chat(42)
    assert await store.outbox.claim([second.id], NOW + 1)

    assert not await store.outbox.claim([first.id, second.id, third.id], NOW + 2)

    assert [r.id for r in await store.outbox.pending_for_chat(42)] == [first.id, third.id]
    assert await store.outbox.claim([first.id, third.id], NOW + 3)
    assert await store.outbox.pending_for_chat(42) == []


async def test_a_digests_rows_behind_its_more_button_are_recorded_with_the_ones_it_shows(
        store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    papers = [paper(f"2611.1145{n}") for n in range(4)]
    await store.papers.upsert_many(papers, NOW)
    await stage(store, [Alert(42, p.arxiv_id, 1, "new", (1,), ("cs.LG",)) for p in papers])
    rows = await store.outbox.pending_for_chat(42)
    ids = [r.id for r in rows]
    assert await store.outbox.claim(ids, NOW + 1)

    await store.outbox.mark_sent(ids[:2], 7, NOW + 2, hidden=ids[2:], hidden_message_id=-7)

    assert [r.id for r in await store.outbox.rows_of_message(42, 7)] == ids[:2]
    assert [r.id for r in await store.outbox.rows_of_message(42, -7)] == ids[2:]
    counts = await store.outbox.counts()
    assert (counts["sent"], counts["sending"], counts["pending"]) == (4, 0, 0)


async def test_a_chats_unpacked_alerts_are_read_even_while_the_shared_reader_holds_an_old_snapshot(
        tmp_path: Path) -> None:
    """The drain's workers share SQLite's one reader connection, which reads from the snapshot
    of its oldest open statement. A chat's rows read there just after their unpacking had
    committed were missed: a paid drain passed over 2 of its 40 chats, their alerts left
    pending until the next drain."""
    store = await open_storage(tmp_path / "bot.sqlite3")
    try:
        for chat_id in (41, 42, 43):
            await store.chats.record(chat_id, "private", "Ada", "en", NOW)
        await store.papers.upsert_many([paper()], NOW)
        await stage(store, [Alert(42, "2611.11450", 1, "new")])
        reader = store.db._reader  # type: ignore[attr-defined]
        async with reader.execute("SELECT id FROM chats") as another_workers_read:
            await another_workers_read.fetchone()  # rows left: its snapshot is held
            pending = await store.outbox.pending_for_chat(42)
        assert [r.alert.arxiv_id for r in pending] == ["2611.11450"]
    finally:
        await store.close()


async def test_staged_alerts_survive_a_crash_before_and_during_their_unpacking(
        database_url: str) -> None:
    """Staged is stored: durable with the poll's papers. An unpacking cut short (its
    transaction never commits) leaves them staged, and they still arrive once each."""
    store = await open_storage(database_url)
    try:
        await store.chats.record(42, "private", "Ada", "en", NOW)
        await store.papers.upsert_many([paper(), paper("2611.11451")], NOW)
        await stage(store, [Alert(42, "2611.11450", 1, "new"), Alert(42, "2611.11451", 1, "new")])
    finally:
        await store.close()  # the process dies: nothing but what committed is left
    store = await open_storage(database_url)
    try:
        with contextlib.suppress(RuntimeError):
            async with store.db.transaction() as conn:  # type: ignore[attr-defined]
                await unpack_staged(conn, [42])
                raise RuntimeError("killed in the middle of the unpacking")
        assert await store.outbox.due_chats(NOW) == [42]
        pending = await store.outbox.pending_for_chat(42)
        assert sorted(r.alert.arxiv_id for r in pending) == ["2611.11450", "2611.11451"]
        assert await rows_stored(store) == 2
    finally:
        await store.close()


async def test_staged_alerts_of_paused_and_blocked_chats_wait_as_outbox_rows_do(
        store: Storage) -> None:
    for chat_id in (41, 42, 43):
        await store.chats.record(chat_id, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper()], NOW)
    await store.chats.set_paused(41, True)
    await stage(store, [Alert(chat_id, "2611.11450", 1, "new") for chat_id in (41, 42, 43)])

    await store.chats.mark_inactive(42, "blocked", NOW + 1)

    assert await store.outbox.due_chats(NOW + 2) == [43], "paused and blocked chats wait"
    assert (await store.outbox.counts())["held"] == 1
    assert len(await store.outbox.pending_for_chat(41)) == 1, "/resume finds it pending"
    await store.chats.record(42, "private", "Ada", "en", NOW + 3)
    assert await store.outbox.due_chats(NOW + 3) == [42, 43]
    assert len(await store.outbox.pending_for_chat(42)) == 1


async def test_a_blocked_chats_staged_alerts_expire_with_its_held_ones(store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper()], NOW)
    await stage(store, [Alert(42, "2611.11450", 1, "new")])
    await store.db.execute(  # type: ignore[attr-defined]
        "UPDATE chats SET inactive_since = ? WHERE id = 42", (NOW + 1,))

    assert await store.outbox.expire_held(NOW + 15 * 86400) == 1
    assert (await store.outbox.counts())["expired"] == 1


async def test_staged_alerts_move_with_a_group_that_became_a_supergroup_and_go_with_forget(
        store: Storage) -> None:
    group, supergroup = -42, -1001000000042
    for chat_id in (group, supergroup):
        await store.chats.record(chat_id, "group", "Lab", "en", NOW)
    await store.papers.upsert_many([paper(), paper("2611.11451")], NOW)
    await stage(store, [Alert(group, "2611.11450", 1, "new"), Alert(group, "2611.11451", 1, "new"),
                        Alert(supergroup, "2611.11450", 1, "new")])

    await store.chats.migrate_id(group, supergroup)

    pending = await store.outbox.pending_for_chat(supergroup)
    assert sorted(r.alert.arxiv_id for r in pending) == ["2611.11450", "2611.11451"]
    await stage(store, [Alert(supergroup, "2611.11451", 2, "new")], NOW + 900)
    await store.chats.forget(supergroup)
    assert await rows_stored(store) == 0


async def test_for_yous_candidates_read_for_many_chats_at_once_are_each_chats_own(
        store: Storage) -> None:
    """For you's candidates, read for thousands of chats at once (a statement a chat waited
    behind an evening's drain): each chat's are the day's papers it got no alert for (queued,
    sent or staged), nor saved nor labelled, newest first, at most the limit."""
    day = [paper(f"2611.{11000 + n}") for n in range(8)]
    await store.papers.upsert_many([paper("2611.10999")], NOW - 1000)  # before the day
    await store.papers.upsert_many(day, NOW)
    for chat_id in range(41, 47):
        await store.chats.record(chat_id, "private", "Ada", "en", NOW)
    await store.outbox.enqueue([Alert(c, day[n].arxiv_id, 1, "new") for c in (41, 46)
                                for n in (0, 1)], NOW)
    await stage(store, [Alert(c, day[n].arxiv_id, 1, "new") for c in (42, 46) for n in (2, 3)])
    for chat_id in (43, 46):
        await store.saved.save(chat_id, day[4].arxiv_id, 1, NOW)
    for chat_id in (44, 46):
        await store.feedback.set(chat_id, day[5].arxiv_id, Feedback.MORE, NOW)

    newest_first = sorted(p.arxiv_id for p in day)
    excluded = {41: {0, 1}, 42: {2, 3}, 43: {4}, 44: {5}, 45: set(), 46: {0, 1, 2, 3, 4, 5}}
    expected = [(c, [i for i in newest_first if i not in {day[n].arxiv_id for n in gone}][:5])
                for c, gone in excluded.items()]
    chats = list(excluded)
    assert [x async for x in store.rankings.unmatched_by_chat(chats, NOW - 1, 5)] == expected
    for chat_id, ids in expected:
        alone = [x async for x in store.rankings.unmatched_by_chat([chat_id], NOW - 1, 5)]
        assert alone == [(chat_id, ids)]
    assert [x async for x in store.rankings.unmatched_by_chat([45, 41], NOW + 1, 5)] == [
        (45, []), (41, [])], "no paper of the day yet"


async def test_a_paper_with_staged_alerts_is_kept_and_for_you_does_not_offer_it(
        store: Storage) -> None:
    await store.chats.record(42, "private", "Ada", "en", NOW)
    await store.papers.upsert_many([paper(), paper("2611.11451")], NOW)
    await stage(store, [Alert(42, "2611.11450", 1, "new")])

    assert [x async for x in store.rankings.unmatched_by_chat([42], NOW - 1, 10)] == [
        (42, ["2611.11451"])]
    await store.papers.prune(NOW + 1)
    assert await store.papers.get("2611.11450") is not None
    assert await store.papers.get("2611.11451") is None

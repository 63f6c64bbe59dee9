"""Forgetting a chat in storage, on each engine: its rows go, another chat's stay; and which
chats left the bot before a day."""

from __future__ import annotations

from bot.core.models import Feedback
from bot.storage import open_storage
from tests.conftest import make_paper

GONE, KEPT = 501, 502


async def test_forget_erases_one_chats_rows_and_departed_names_who_left(
        database_url: str) -> None:
    store = await open_storage(database_url)
    try:
        await store.papers.upsert_many([make_paper(1)], 1000.0)
        for chat in (GONE, KEPT):
            await store.chats.record(chat, "private", "Ada", "en", 1000.0)
            await store.subscriptions.add(chat, "cat:cs.LG", "cs.LG", 1000.0)
            await store.saved.save(chat, "2611.10001", 1, 1000.0)
            await store.feedback.set(chat, "2611.10001", Feedback.MORE, 1000.0)
        await store.chats.mark_inactive(GONE, "the bot was blocked", 2000.0)
        await store.chats.mark_inactive(KEPT, "the bot was blocked", 3000.0)
        assert await store.chats.departed_before(2500.0) == [GONE]

        await store.chats.forget(GONE)
        assert await store.chats.get(GONE) is None
        assert await store.subscriptions.for_chat(GONE) == []
        assert not await store.saved.is_saved(GONE, "2611.10001")
        assert await store.feedback.of_chat(GONE) == {}
        assert await store.chats.departed_before(2500.0) == []

        assert await store.chats.get(KEPT) is not None
        assert len(await store.subscriptions.for_chat(KEPT)) == 1
        assert await store.saved.is_saved(KEPT, "2611.10001")
        assert await store.feedback.of_chat(KEPT) == {"2611.10001": Feedback.MORE}
        assert await store.chats.departed_before(3500.0) == [KEPT]
    finally:
        await store.close()

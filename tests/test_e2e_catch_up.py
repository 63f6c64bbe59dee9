"""Coming back: a chat that blocked the bot, or paused for long, gets a bounded catch-up.

A returning chat's digest is one message, like any digest, ending with "+N more"; its "Show
more" button brings the rest a page at a time, so nothing is lost. Alerts held for a chat that
blocked the bot expire after HELD_ALERT_DAYS at the daily upkeep, and are not sent when it
returns.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.delivery.compose import DIGEST_MAX_ENTRIES
from bot.services.upkeep import prune
from bot.storage.sqlite.outbox import HELD_ALERT_DAYS
from tests.conftest import Harness, digest_entry_ids, make_paper

LAB = 7001
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


async def test_a_long_pause_ends_in_one_digest_message_whose_button_brings_the_rest(
    harness: Harness,
) -> None:
    total = DIGEST_MAX_ENTRIES + 30
    await harness.ask(LAB, "/follow cs.LG")
    await harness.ask(LAB, "/pause")
    harness.serve_feed([make_paper(n) for n in range(1, total + 1)], announce_date=DAY1)
    await harness.poll()
    before = len(harness.tg.messages(LAB))

    await harness.ask(LAB, "/resume")
    await harness.drain()

    [digest] = [m for m in harness.tg.messages(LAB)[before:] if m.text.startswith("📬")]
    shown = digest_entry_ids([digest])
    assert digest.text.startswith(f"📬 {total} new matches")
    assert digest.text.rstrip().endswith(f"+{total - len(shown)} more")
    counts = await harness.services.storage.outbox.counts()
    assert counts["sent"] == total and counts["pending"] == 0, "the rest are kept, not queued"

    pages, last = [], digest
    while more := next((b for b in last.buttons if b["text"].startswith("Show more")), None):
        before = len(harness.tg.messages(LAB))
        await harness.press(LAB, last.message_id, more["callback_data"])
        [last] = harness.tg.messages(LAB)[before:]
        pages.append(last)

    every = shown + digest_entry_ids(pages)
    assert every == [f"2611.{10000 + n}v1" for n in range(1, total + 1)], "each once, in order"
    assert len(pages) > DIGEST_MAX_ENTRIES // len(shown), "a page at a time, one message each"


async def test_alerts_held_for_a_chat_that_blocked_the_bot_expire_and_are_not_sent_later(
    harness: Harness,
) -> None:
    store = harness.services.storage
    await harness.ask(LAB, "/follow cs.LG")
    await harness.ask(LAB, "/pause")
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    harness.clock.advance((HELD_ALERT_DAYS + 1) * 86400)
    harness.serve_feed([make_paper(2)], announce_date=DAY1 + timedelta(days=HELD_ALERT_DAYS + 1))
    await harness.poll()
    await harness.ask(LAB, "/resume")
    harness.tg.block_chat(LAB)  # before the two waiting alerts could go
    await harness.drain()
    assert (await store.outbox.counts())["held"] == 2

    await prune(store, harness.clock.now())
    counts = await store.outbox.counts()
    assert counts["expired"] == 1 and counts["held"] == 1, "only the old one expired"

    harness.tg.unblock_chat(LAB)
    await harness.ask(LAB, "/start")
    await harness.drain()

    texts = [m.text for m in harness.tg.messages(LAB) if "arXiv:" in m.text]
    assert len(texts) == 1 and "2611.10002v1" in texts[0], "the fresh one, not the expired"
    status = await harness.ask(1, "/status")
    assert "1 expired" in status.text


async def test_a_chat_back_after_the_expiry_time_gets_none_of_its_old_held_alerts(
    harness: Harness,
) -> None:
    store = harness.services.storage
    await harness.ask(LAB, "/follow cs.LG")
    harness.tg.block_chat(LAB)
    harness.serve_feed([make_paper(1)], announce_date=DAY1)
    await harness.poll()
    assert (await store.outbox.counts())["held"] == 1

    harness.clock.advance((HELD_ALERT_DAYS + 1) * 86400)  # before the daily upkeep ran
    harness.tg.unblock_chat(LAB)
    await harness.ask(LAB, "/start")
    await harness.drain()

    assert not [m for m in harness.tg.messages(LAB) if "arXiv:" in m.text]
    assert (await store.outbox.counts())["expired"] == 1

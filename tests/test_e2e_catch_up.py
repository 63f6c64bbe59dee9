"""Coming back: a chat that blocked the bot, or paused for long, gets a bounded catch-up.

A returning chat's digest shows at most DIGEST_MAX_ENTRIES entries and ends with "+N more";
its "Show more" button brings the rest, so nothing is lost. Alerts held for a chat that blocked
the bot expire after HELD_ALERT_DAYS at the daily upkeep, and are not sent when it returns.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.delivery.compose import DIGEST_MAX_ENTRIES
from bot.services.upkeep import prune
from bot.storage.sqlite.outbox import HELD_ALERT_DAYS
from tests.conftest import Harness, make_paper

LAB = 7001
DAY1 = datetime(2026, 11, 30, 5, 0, tzinfo=UTC)


def shown_ids(messages) -> list[str]:
    """The versioned ids a digest's messages show, from their save-by-number buttons."""
    return [data.split(":")[2] for m in messages for data in m.callback_data
            if data.startswith("v1:s:")]


async def test_a_long_pause_ends_in_a_capped_digest_whose_button_brings_the_rest(
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

    digest = [m for m in harness.tg.messages(LAB)[before:] if m.text.startswith("📬")]
    assert len(shown_ids(digest)) == DIGEST_MAX_ENTRIES
    last = digest[-1]
    assert last.text.rstrip().endswith("+30 more")
    counts = await harness.services.storage.outbox.counts()
    assert counts["sent"] == total and counts["pending"] == 0, "the rest are kept, not queued"

    more = next(b for b in last.buttons if b["text"].startswith("Show more"))
    before = len(harness.tg.messages(LAB))
    await harness.press(LAB, last.message_id, more["callback_data"])

    follow_up = [m for m in harness.tg.messages(LAB)[before:] if m.text.startswith("📬")]
    assert "30 new matches" in follow_up[0].text
    every = shown_ids(digest) + shown_ids(follow_up)
    assert sorted(every) == sorted(f"2611.{10000 + n}v1" for n in range(1, total + 1))
    assert not any(b["text"].startswith("Show more") for m in follow_up for b in m.buttons)


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

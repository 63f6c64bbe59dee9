"""One researcher, one chat, a whole week: the story issue 6 promises, end to end."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import bibtexparser

from tests.conftest import Harness, make_paper

CHAT = 4711
SHANGHAI = ZoneInfo("Asia/Shanghai")


def at(day: int, hour: int, minute: int = 0) -> float:
    return datetime(2026, 12, day, hour, minute, tzinfo=SHANGHAI).timestamp()


async def test_follow_receive_save_page_remove_export_lookup_pause_digest_stats(
        harness: Harness) -> None:
    tg = harness.tg
    harness.clock.set(at(1, 9))
    # Follow, and receive the day's matches.
    assert "Following #1" in (await harness.ask(CHAT, "/follow cs.LG")).text
    harness.serve_feed([make_paper(n) for n in range(1, 7)])
    await harness.poll()
    alerts = await tg.wait_for_messages(CHAT, contains="arXiv:", count=6)
    assert len(alerts) == 6

    # Save every alert with its button; the button says so.
    for alert in alerts:
        save = next(d for d in alert.callback_data if d.startswith("v1:s:"))
        await harness.press(CHAT, alert.message_id, save)
        assert "⭐ Saved" in tg.message(CHAT, alert.message_id).button_texts

    # Page through the library and remove one paper.
    library = await harness.ask(CHAT, "/saved")
    assert "6 saved, page 1/2" in library.text
    await harness.press(CHAT, library.message_id, "v1:p:2")
    page2 = tg.message(CHAT, library.message_id)
    assert "page 2/2" in page2.text
    remove = next(d for d in page2.callback_data if d.startswith("v1:r:"))
    await harness.press(CHAT, library.message_id, remove)
    assert await harness.services.storage.saved.count(CHAT) == 5

    # Export what is left.
    tg.send_command(CHAT, "/export")
    document = (await tg.wait_for(lambda: tg.documents(CHAT)))[-1]
    assert len(bibtexparser.parse_string(document.content.decode()).entries) == 5

    # Look up a paper by its link.
    card = await harness.ask(CHAT, "/paper https://arxiv.org/abs/2611.10003")
    assert "part 3" in card.text

    # Pause, miss nothing, resume.
    await harness.ask(CHAT, "/pause")
    harness.clock.set(at(2, 9))
    harness.serve_feed([make_paper(n) for n in range(7, 10)])
    await harness.poll()
    assert not [m for m in tg.messages(CHAT) if "part 7" in m.text]
    await harness.ask(CHAT, "/resume")
    await harness.drain()
    assert [m for m in tg.messages(CHAT) if "part 7" in m.text]

    # Switch to a daily digest at 08:00 Shanghai time.
    assert "Asia/Shanghai" in (await harness.ask(CHAT, "/tz Asia/Shanghai")).text
    assert "08:00" in (await harness.ask(CHAT, "/digest 08:00")).text
    harness.serve_feed([make_paper(n) for n in range(10, 13)])
    await harness.poll()
    assert not [m for m in tg.messages(CHAT) if "part 10" in m.text], "held for the digest"
    harness.clock.set(at(3, 8, 0))
    assert await harness.send_due_digests() == 1
    digest = await tg.wait_for_message(CHAT, contains="part 12")
    assert "part 10" in digest.text and "part 11" in digest.text

    # Read the overview.
    stats = await harness.ask(CHAT, "/stats")
    assert "5 saved" in stats.text and "1 subscription" in stats.text
    assert "1 subscriptions" not in stats.text

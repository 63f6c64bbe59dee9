"""`bench/abuse.py` at a small size: one noisy chat cannot silence the others or buy replies.

The full size (250 commands in 10 s, arXiv's 3-second gap) runs in the benchmark; its figures
are in the README. Here: a third of the traffic in 3 s, a 1-second gap, the real budget.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from bot.core.clock import SystemClock
from bot.services.budget import BudgetPolicy
from tests.conftest import Harness, make_settings, start_bot, stop_bot
from tests.fakes.arxiv_server import FakeArxivServer
from tests.fakes.telegram_server import FakeTelegram
from tests.fakes.traffic import Plan, answered, drive, figures, quiet_papers

GAP = 1.0


async def test_a_noisy_chat_gets_six_replies_while_every_other_chat_is_answered(
        tmp_path: Path, fake_telegram: FakeTelegram, fake_arxiv: FakeArxivServer) -> None:
    plan = Plan().scaled(0.3)
    fake_arxiv.set_api_papers(quiet_papers(plan))
    settings = make_settings(tmp_path, fake_telegram, fake_arxiv,
                             ARXIV_MIN_INTERVAL_SECONDS=str(GAP))
    clock = SystemClock()
    app = await start_bot(settings, clock, budget=BudgetPolicy())
    try:
        sent = await asyncio.to_thread(drive, fake_telegram, plan)
        await fake_telegram.wait_for(lambda: answered(fake_telegram, sent, plan), timeout=30,
                                     what="every quiet chat's answers")
        # Counted once nothing more can come: every update handled, no look-up left.
        await Harness(fake_telegram, fake_arxiv, app, clock, settings).settle()
        await fake_telegram.wait_for(lambda: app.bot_data["services"].lookups.waiting() == 0,
                                     what="every look-up answered")
        result = figures(fake_telegram, fake_arxiv, sent, plan)
    finally:
        await stop_bot(app)

    assert result.noisy_sent == plan.noisy_papers + plan.noisy_others
    assert result.noisy_replies <= 6, "four answers, the slow-down reply, one reminder"
    assert (len(result.help_latencies) + len(result.behind_own_paper)
            == plan.quiet_chats * plan.helps_per_chat)
    assert len(result.paper_latencies) == plan.quiet_chats
    assert result.arxiv_min_spacing is None or result.arxiv_min_spacing >= GAP
    assert result.arxiv_ids_asked <= plan.quiet_chats + 2, "the flood never reached arXiv"

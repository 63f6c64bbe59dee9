"""The command budget's rules, on its own clock: people pass, scripts get one word then quiet."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bot.chat.commands import COMMANDS
from bot.services.budget import LOOKUP_COST, BudgetPolicy, CommandBudget

CHAT = 42
COSTS = st.sampled_from(sorted({command.cost for command in COMMANDS
                               if isinstance(command.cost, int)}))


@given(costs=st.lists(COSTS, min_size=1, max_size=10),
       gaps=st.lists(st.floats(min_value=0.3, max_value=5.0), min_size=10, max_size=10))
def test_ten_commands_of_any_kind_a_third_of_a_second_apart_all_pass(
        costs: list[int], gaps: list[float]) -> None:
    budget = CommandBudget()
    now = 1000.0
    for cost, gap in zip(costs, gaps, strict=False):
        assert budget.charge(CHAT, None, cost, now).allowed
        now += gap


@given(count=st.integers(min_value=5, max_value=500), cost=COSTS,
       spacing=st.floats(min_value=0.0, max_value=0.05))
def test_a_script_gets_four_answers_and_one_slow_down_in_its_first_ten_seconds(
        count: int, cost: int, spacing: float) -> None:
    budget = CommandBudget()
    decisions = [budget.charge(CHAT, None, cost, 1000.0 + i * spacing) for i in range(count)
                 if i * spacing < 10]
    assert sum(d.allowed for d in decisions) == 4
    assert sum(d.notify for d in decisions) == 1
    refusal = next(d for d in decisions if d.notify)
    assert refusal.retry_after >= BudgetPolicy().silence


def test_a_steady_trickle_of_lookups_runs_dry_on_the_sustained_bucket() -> None:
    """One /paper a second never trips the burst bucket, but 30 cost units a minute is all."""
    budget = CommandBudget()
    allowed = 0
    for second in range(60):
        decision = budget.charge(CHAT, None, LOOKUP_COST, 1000.0 + second)
        if not decision.allowed:
            break
        allowed += 1
    assert 10 <= allowed < 20


def test_chats_and_group_members_have_buckets_of_their_own() -> None:
    budget = CommandBudget()
    for _ in range(4):
        assert budget.charge(CHAT, None, 1, 0.0).allowed
    assert not budget.charge(CHAT, None, 1, 0.0).allowed
    assert budget.charge(CHAT + 1, None, 1, 0.0).allowed
    group = -100
    for _ in range(4):
        assert budget.charge(group, 1, 1, 0.0).allowed
    assert not budget.charge(group, 1, 1, 0.0).allowed, "one member's own bucket ran dry"
    assert budget.charge(group, 2, 1, 0.0).allowed, "another member is still heard"


def test_a_clock_stepping_back_neither_refills_nor_breaks_the_buckets() -> None:
    budget = CommandBudget()
    for _ in range(4):
        assert budget.charge(CHAT, None, 1, 5000.0).allowed
    assert not budget.charge(CHAT, None, 1, 4000.0).allowed


def test_quiet_chats_are_forgotten_so_memory_stays_bounded() -> None:
    budget = CommandBudget()
    for chat in range(1000):
        budget.charge(chat, None, 1, 0.0)
    assert len(budget) == 1000
    budget.charge(1, None, 1, 3 * budget.SWEEP_INTERVAL)
    assert len(budget) == 1


def test_a_silenced_chat_is_remembered_until_its_strikes_expire() -> None:
    budget = CommandBudget()
    for _ in range(5):
        budget.charge(CHAT, None, 1, 0.0)
    budget.charge(CHAT + 1, None, 1, budget.SWEEP_INTERVAL)  # a sweep, 600 s on
    assert len(budget) == 2, "the spammer's strikes still count"
    decisions = [budget.charge(CHAT, None, 1, budget.SWEEP_INTERVAL + 1) for _ in range(5)]
    [refusal] = [d for d in decisions if d.notify]
    assert refusal.retry_after == 40, "the second window is twice the first"


def test_within_a_window_the_chat_is_reminded_once_how_long_is_left() -> None:
    budget = CommandBudget()
    decisions = [budget.charge(CHAT, None, 1, 1000.0) for _ in range(5)]
    assert [d.notify for d in decisions] == [False] * 4 + [True]
    reminder = budget.charge(CHAT, None, 1, 1012.0)
    assert not reminder.allowed and reminder.remind and not reminder.notify
    assert reminder.retry_after == 8
    later = [budget.charge(CHAT, None, 1, 1013.0 + i) for i in range(5)]
    assert not any(d.allowed or d.notify or d.remind for d in later), "once a window"
    # The next window has a reminder of its own.
    again = [budget.charge(CHAT, None, 1, 1021.0) for _ in range(6)]
    assert [(d.allowed, d.notify, d.remind) for d in again] == [(True, False, False)] * 4 + [
        (False, True, False), (False, False, True)]

"""How fast a chat may send commands: token buckets per chat, and per person in groups.

Every command, button press and private message costs tokens from two buckets: a small fast
one that only a script outruns (a person types or taps a few commands a second at most), and a
larger slow one that costly commands drain faster. Over budget, the chat is told once to slow
down, then, within the window, once more briefly how long is left (a person who writes again
would otherwise take silence for a dead bot), and then nothing, so spam cannot buy outgoing
messages.

Hand-written rather than a library: the buckets run on the bot's clock (tests move it), charge
two buckets at once, and end in a silence window, which rate-limit packages do not offer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from bot.arxiv.lookups import BATCH_SIZE

# What a request costs from the sustained bucket. Costly ones reach arXiv or an LLM, build
# large files or run the matcher over a week of papers. Which command costs what is written
# in the chat's command table (`bot/chat/commands.py`), in these units.
DEFAULT_COST = 1
COSTLY_COST = 3
LOOKUP_COST = COSTLY_COST  # `/paper`, or an arXiv id or link pasted in a private chat


# An import costs what its look-ups would cost as `/paper`s: one per arXiv request of
# BATCH_SIZE IDs, at most two thirds of a person's sustained bucket, so a large import
# slows the chat down for a while without locking it out.
IMPORT_MAX_COST = 20
IMPORT_BYTES_PER_ENTRY = 500  # a BibTeX entry with an abstract; a file's cost before reading it


def import_cost(entries: int) -> int:
    """The cost of importing `entries` papers."""
    return min(IMPORT_MAX_COST, LOOKUP_COST * max(1, math.ceil(entries / BATCH_SIZE)))


def upload_cost(size: int | None) -> int:
    """The cost of importing an uploaded file of `size` bytes (unknown: the largest)."""
    if size is None:
        return IMPORT_MAX_COST
    return import_cost(math.ceil(size / IMPORT_BYTES_PER_ENTRY))


@dataclass(frozen=True, slots=True)
class BucketRule:
    """A bucket holding at most `capacity` tokens, refilled at `per_second`."""

    capacity: float
    per_second: float

    def scaled(self, factor: float) -> BucketRule:
        return BucketRule(self.capacity * factor, self.per_second * factor)


@dataclass(frozen=True, slots=True)
class BudgetPolicy:
    """The documented rates (README, "Limits")."""

    # Commands in quick succession: 4 at once, then 3 a second. Ten varied commands typed or
    # tapped within three seconds pass; a script's fifth command in the same instant does not.
    burst: BucketRule = BucketRule(capacity=4, per_second=3.0)
    # Cost units: 30 at once, then 30 a minute (a `/paper` costs 3, most commands 1).
    sustained: BucketRule = BucketRule(capacity=30, per_second=0.5)
    # A group's shared buckets hold this many times a person's: several people use one group.
    group_factor: float = 3.0
    # The silence after "slow down": at least this long, doubling for a chat that keeps
    # getting limited, up to `max_silence`.
    silence: float = 20.0
    max_silence: float = 600.0


UNLIMITED = BudgetPolicy(burst=BucketRule(1e12, 1e12), sustained=BucketRule(1e12, 1e12))


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of one charge: go ahead, or not (and whether to say so, once)."""

    allowed: bool
    notify: bool = False  # the first refusal of a window: tell the chat when to try again
    remind: bool = False  # the first refusal after that in the window: say briefly how long
    retry_after: float = 0.0  # seconds until the chat is heard again


ALLOWED = Decision(allowed=True)


@dataclass(slots=True)
class _Bucket:
    burst_rule: BucketRule
    sustained_rule: BucketRule
    burst: float
    sustained: float
    updated: float
    silent_until: float = float("-inf")
    strikes: int = 0
    reminded: bool = False  # the window's one reminder has been given

    def refill(self, now: float) -> None:
        # max(0, …): the wall clock may step back; a bucket never refills backwards.
        elapsed = max(0.0, now - self.updated)
        self.updated = max(self.updated, now)
        self.burst = min(self.burst_rule.capacity,
                         self.burst + elapsed * self.burst_rule.per_second)
        self.sustained = min(self.sustained_rule.capacity,
                             self.sustained + elapsed * self.sustained_rule.per_second)

    def affords(self, cost: float) -> bool:
        return self.burst >= 1 and self.sustained >= cost

    def time_to_afford(self, cost: float) -> float:
        burst = max(0.0, 1 - self.burst) / self.burst_rule.per_second
        needed = min(cost, self.sustained_rule.capacity)
        sustained = max(0.0, needed - self.sustained) / self.sustained_rule.per_second
        return max(burst, sustained)

    def idle(self, now: float) -> bool:
        return self.time_to_refill(now) <= 0

    def time_to_refill(self, now: float) -> float:
        self.refill(now)
        return max((self.burst_rule.capacity - self.burst) / self.burst_rule.per_second,
                   (self.sustained_rule.capacity - self.sustained)
                   / self.sustained_rule.per_second)


@dataclass
class CommandBudget:
    """The buckets of every chat (and every person in a group) that wrote lately."""

    policy: BudgetPolicy = field(default_factory=BudgetPolicy)
    _buckets: dict[tuple[int, int | None], _Bucket] = field(default_factory=dict)
    _next_sweep: float = float("-inf")

    SWEEP_INTERVAL = 600.0  # forget full, quiet buckets this often, so memory stays bounded

    def charge(self, chat_id: int, user_id: int | None, cost: float, now: float) -> Decision:
        """Charge `cost` to the chat (and, in a group, to `user_id` too).

        Allowed only if every bucket involved affords it; then all are charged. A refused
        charge starts a silence window on the buckets that ran dry; within a window nothing is
        charged, and the chat is reminded once how long is left.
        """
        self._sweep(now)
        buckets = [self._bucket((chat_id, None), now, group=user_id is not None)]
        if user_id is not None:
            buckets.append(self._bucket((chat_id, user_id), now, group=False))
        silent = max(buckets, key=lambda bucket: bucket.silent_until)
        if now < silent.silent_until:
            remind, silent.reminded = not silent.reminded, True
            return Decision(allowed=False, remind=remind, retry_after=silent.silent_until - now)
        for bucket in buckets:
            bucket.refill(now)
        dry = [bucket for bucket in buckets if not bucket.affords(cost)]
        if not dry:
            for bucket in buckets:
                bucket.burst -= 1
                bucket.sustained -= cost
            return ALLOWED
        window = 0.0
        for bucket in dry:
            if bucket.silent_until < now - self.policy.max_silence:
                bucket.strikes = 0  # calm for a long while: start over gently
            escalated = self.policy.silence * 2 ** min(bucket.strikes, 16)
            length = min(max(escalated, bucket.time_to_afford(cost)), self.policy.max_silence)
            bucket.silent_until = now + length
            bucket.reminded = False
            bucket.strikes += 1
            window = max(window, length)
        return Decision(allowed=False, notify=True, retry_after=window)

    def _bucket(self, key: tuple[int, int | None], now: float, *, group: bool) -> _Bucket:
        bucket = self._buckets.get(key)
        if bucket is None:
            factor = self.policy.group_factor if group else 1.0
            burst = self.policy.burst.scaled(factor)
            sustained = self.policy.sustained.scaled(factor)
            bucket = _Bucket(burst, sustained, burst.capacity, sustained.capacity, now)
            self._buckets[key] = bucket
        return bucket

    def _sweep(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + self.SWEEP_INTERVAL
        # Full again and long past any silence: a fresh bucket would be the same.
        quiet = [key for key, bucket in self._buckets.items()
                 if bucket.silent_until < now - self.policy.max_silence and bucket.idle(now)]
        for key in quiet:
            del self._buckets[key]

    def __len__(self) -> int:
        return len(self._buckets)

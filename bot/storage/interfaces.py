"""What storage offers the rest of the bot, whatever the engine: repositories and transactions.

Services hold a `Storage` and call its repositories; a write that must commit together with
others (the ingest's papers and their alerts) goes through `async with storage.transaction()
as tx`, on the repositories `tx` carries. Engines (today `bot.storage.sqlite`) implement these
protocols; nothing above `bot/storage/` sees a connection, a cursor or an engine's exception
(they raise `bot.storage.errors`' instead).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from bot.core.models import (
    GENERAL,
    Alert,
    Beat,
    Chat,
    CommunityPick,
    Feedback,
    FeedState,
    FollowStatus,
    ForYouRound,
    ForYouRow,
    GroupMember,
    Guide,
    IntegrityCheck,
    Leadership,
    LibraryEntry,
    LibraryFacets,
    LibraryMatches,
    LibraryQuery,
    OutboxRow,
    Paper,
    PaperChange,
    PlainAlerts,
    Source,
    Subscription,
    ZoteroItem,
    ZoteroLink,
)

Row = TypeVar("Row")  # what a delivery queue's rows are


@dataclass(frozen=True, slots=True)
class Compaction:
    """What the upkeep's compaction did to the database's size, in bytes."""

    before: int
    after: int


# What the repositories return, besides the domain values of `bot.core.models`.

@dataclass(frozen=True, slots=True)
class AddResult:
    """What happened to a `/follow`: added (with the subscription), duplicate, or over the limit."""

    status: FollowStatus  # added, duplicate or limit (storage never sees an invalid one)
    subscription: Subscription | None = None


@dataclass(frozen=True, slots=True)
class StoredVocabulary:
    fingerprint: str
    terms: bytes
    papers: int
    fitted_at: float


@dataclass(frozen=True, slots=True)
class StoredModel:
    chat_id: int
    vocabulary: str
    labels: str
    weights: bytes
    trained_at: float


@dataclass(frozen=True, slots=True)
class ForYouSetting:
    chat_id: int
    count: int
    enabled_at: float
    last_sent_at: float | None


@dataclass(frozen=True, slots=True)
class LabelIds:
    """A chat's labels as base ids: saved papers, 👍 and 👎."""

    saved: tuple[str, ...]
    more: tuple[str, ...]
    less: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SaveRecord:
    """A paper's place in a chat's library: who saved it first (None in a private chat, and
    for saves made before the bot kept savers)."""

    saver: GroupMember | None


@dataclass(frozen=True, slots=True)
class TopicFallback:
    """A topic that Telegram no longer takes messages in, sent back to General."""

    name: str | None  # as the service messages told it; None if never learnt
    queries: tuple[str, ...]  # the subscriptions that were bound to it, as typed
    moved: int  # undelivered alerts now bound for General


@dataclass(frozen=True, slots=True)
class StagedAlerts:
    """A poll's plain alerts encoded for staging, one row a chat
    (`OutboxRepository.prepare_staged`), before the transaction that stores them opens, so that
    the transaction, which other writers wait for, spends none of its time encoding them."""

    now: float
    rows: tuple[tuple, ...]  # the engine's staged rows, one a chat (opaque to callers)
    chats: tuple[int, ...]  # each row's chat
    counts: tuple[int, ...]  # each row's number of alerts

    @property
    def alert_count(self) -> int:
        return sum(self.counts)

    def without(self, chat_ids: set[int]) -> StagedAlerts:
        """The rows of the other chats (those that blocked the bot get nothing)."""
        if chat_ids.isdisjoint(self.chats):
            return self
        kept = [i for i, chat_id in enumerate(self.chats) if chat_id not in chat_ids]
        return StagedAlerts(self.now, tuple(self.rows[i] for i in kept),
                            tuple(self.chats[i] for i in kept),
                            tuple(self.counts[i] for i in kept))


class PapersInTransaction(Protocol):
    """The paper writes of one transaction."""

    async def upsert(self, papers: Sequence[Paper], now: float) -> list[PaperChange]:
        """Store a batch; say per paper: new, revised or seen.

        Re-ingesting the same papers changes nothing. Within a batch, the same id twice
        (a feed listing a paper under two categories) counts once.
        """


class OutboxInTransaction(Protocol):
    """The outbox as one transaction writes and reads it."""

    async def enqueue(self, alerts: Sequence[Alert], now: float, *,
                      revisions_due_at: float | None = None,
                      staged: StagedAlerts | None = None) -> int:
        """Queue alerts, durably with the rest of the transaction; a chat gets a version once
        per topic. `staged`: plain alerts already grouped and encoded by
        `OutboxRepository.prepare_staged` (with the same `now`), stored as they are, besides
        `alerts`.

        Plain alerts (new papers, due now) are staged: one row per chat holding all of that
        chat's alerts of this transaction, which `OutboxRepository` unpacks into one row per
        alert before anything reads or changes the chat's alerts. A staged alert for a version
        the chat already has is dropped then. Revisions go to the outbox at once, a version
        already queued for the chat and topic skipped.

        Returns how many were stored (staged ones all count). Alerts for chats the bot has
        never seen are dropped, so the caller passes only known chats. Revisions are due at
        `revisions_due_at` when given: they wait for their details
        (`OutboxRepository.release_revisions`).
        """

    async def first_topics(self, chats_by_paper: Mapping[str, Sequence[int]]
                           ) -> dict[tuple[int, str], int]:
        """The topic where each (chat, paper) pair's first own alert went, for the revision
        of a saved paper that no subscription matched: it joins the paper's thread."""


class ChatsInTransaction(Protocol):
    """The chats as one transaction finds them."""

    async def inactive_ids(self) -> set[int]:
        """Chats that blocked the bot or are gone."""


class SavedInTransaction(Protocol):
    """The saved papers as one transaction finds them."""

    async def chats_saving(self, arxiv_ids: Iterable[str]) -> dict[str, list[int]]:
        """For each id, the chats that saved it."""


class Transaction(Protocol):
    """One write transaction's repositories: what they write commits together, or nothing."""

    @property
    def papers(self) -> PapersInTransaction: ...

    @property
    def outbox(self) -> OutboxInTransaction: ...

    @property
    def chats(self) -> ChatsInTransaction: ...

    @property
    def saved(self) -> SavedInTransaction: ...


class Storage(Protocol):
    """The bot's database: one repository per family of records, transactions, upkeep."""

    @property
    def chats(self) -> ChatRepository: ...

    @property
    def subscriptions(self) -> SubscriptionRepository: ...

    @property
    def papers(self) -> PaperRepository: ...

    @property
    def outbox(self) -> OutboxRepository: ...

    @property
    def for_you_outbox(self) -> ForYouOutboxRepository: ...

    @property
    def saved(self) -> SavedRepository: ...

    @property
    def feedback(self) -> FeedbackRepository: ...

    @property
    def rankings(self) -> RankingRepository: ...

    @property
    def sources(self) -> SourceRepository: ...

    @property
    def heartbeats(self) -> HeartbeatRepository: ...

    @property
    def guides(self) -> GuideRepository: ...

    @property
    def community(self) -> CommunityRepository: ...

    @property
    def topics(self) -> TopicRepository: ...

    @property
    def paid_broadcasts(self) -> PaidBroadcastRepository: ...

    @property
    def zotero(self) -> ZoteroRepository: ...

    @property
    def cards(self) -> CardRepository: ...

    def transaction(self) -> AbstractAsyncContextManager[Transaction]:
        """A write transaction: committed when the block ends, rolled back if it raises.

        Inside it, write only through the transaction's repositories: writers take turns, so
        a write through `storage.x` there would wait for the transaction it is in. Reads
        through `storage.x` see the last commit, not the transaction's own writes.
        """

    async def check_writable(self) -> None:
        """Raise `DatabaseError` unless the bot can take the write lock (a read-only file or
        disk, another program holding the lock past the busy timeout): the start-up check."""

    async def check_pages(self) -> None:
        """Read the whole database for damage; raise `DatabaseDamaged` with the first problems
        found, on one line."""

    async def upkeep(self) -> Compaction | None:
        """The engine's own care after pruning (planner statistics; compaction when much of
        the file is free); returns the sizes before and after, when it compacted."""

    async def backup(self, target: Path) -> None:
        """Write a consistent copy of the live database to `target` (safe while the bot runs)."""

    async def size_bytes(self) -> int:
        """How large the database is."""

    async def free_bytes(self) -> int:
        """How much of it holds nothing (what compaction would give back)."""

    def leading(self) -> bool:
        """Whether this process may send now: on SQLite always (its file lock lasts as long as
        the process), on PostgreSQL while its leader lease is current (and without one)."""

    async def leadership(self, instance: str) -> Leadership | None:
        """The leader lease as stored, seen from `instance` (its role); None on SQLite, and
        before any bot has led the database."""

    async def close(self) -> None: ...


class ChatRepository(Protocol):
    """The chats the bot knows: their settings, and whether they can receive messages."""

    async def record(
        self, chat_id: int, chat_type: str, title: str | None, language: str, now: float
    ) -> tuple[Chat, bool]:
        """Insert or refresh a chat that wrote to the bot; re-activates it if it was inactive."""

    async def get(self, chat_id: int) -> Chat | None:
        ...

    async def set_language(self, chat_id: int, language: str) -> None:
        ...

    async def set_rating_buttons(self, chat_id: int, shown: bool) -> None:
        """Show the 👍 / 👎 buttons under the chat's alerts, or leave them out."""

    async def set_timezone(self, chat_id: int, timezone: str) -> None:
        ...

    async def set_digest(self, chat_id: int, digest_time: str | None, now: float) -> None:
        """Daily digest at `digest_time` ('HH:MM' local), or instant alerts when None."""

    async def mark_digests_sent(self, chat_ids: Iterable[int], now: float) -> None:
        """These chats' digests of `now` are done, in one transaction."""

    async def get_many(self, chat_ids: Iterable[int]) -> dict[int, Chat]:
        """These chats, by id (those the bot does not know left out)."""

    async def set_paused(self, chat_id: int, paused: bool) -> None:
        ...

    async def mark_inactive(self, chat_id: int, reason: str, now: float) -> None:
        """The chat blocked the bot (or is gone): skip it, and hold its pending alerts (kept,
        not dropped), until it writes again."""

    async def migrate_id(self, old_id: int, new_id: int) -> None:
        """A group became a supergroup: move the chat and everything it owns to the new id."""

    async def forget(self, chat_id: int) -> None:
        """Erase every row that names the chat (its record, settings, subscriptions, topics,
        library, labels, model, For you, guide calls, outbox and thread rows), in one
        transaction."""

    async def departed_before(self, cutoff: float) -> list[int]:
        """Chats that blocked or removed the bot before `cutoff` and have not written since."""

    async def counts(self) -> dict[str, int]:
        ...

    async def in_digest_mode(self) -> list[Chat]:
        ...


class CommunityRepository(Protocol):
    """The community's picks (Hugging Face Daily Papers), one list a day."""

    async def upsert(self, picks: Sequence[CommunityPick], now: float) -> int:
        """Store the picks (a paper listed again keeps its first-seen time); returns how
        many were not known before."""

    async def get(self, arxiv_id: str) -> CommunityPick | None:
        ...

    async def get_many(self, arxiv_ids: Sequence[str]) -> dict[str, CommunityPick]:
        ...

    async def latest_day(self) -> list[CommunityPick]:
        """The most recent day's list, most upvoted first."""

    async def count_since(self, since: float) -> int:
        """Papers that reached the list since `since` (first seen there)."""

    async def prune(self, before: float) -> int:
        ...


class FeedbackRepository(Protocol):
    """Each chat's 👍 and 👎 on papers."""

    async def set(self, chat_id: int, arxiv_id: str, label: Feedback | None, now: float) -> None:
        """Give the paper `label` (replacing any other), or clear its label (`None`)."""

    async def get(self, chat_id: int, arxiv_id: str) -> Feedback | None:
        ...

    async def labelled_at(self, chat_id: int, arxiv_id: str) -> float | None:
        ...

    async def of_chat(self, chat_id: int) -> dict[str, Feedback]:
        ...

    async def count(self, chat_id: int) -> int:
        ...


class GuideRepository(Protocol):
    """Written guides, and the requests to the LLM endpoint that the budgets count."""

    async def get(self, arxiv_id: str, version: int, language: str) -> Guide | None:
        ...

    async def put(self, guide: Guide) -> None:
        ...

    async def record_call(self, chat_id: int, now: float) -> int:
        """Count one request to the endpoint against the budgets; returns its id."""

    async def mark_call_ok(self, call_id: int) -> None:
        ...

    async def calls_since(self, since: float, chat_id: int | None = None) -> int:
        """Requests made since `since`, by one chat or by all."""

    async def written_since(self, since: float) -> int:
        """Guides written (successful requests) since `since`, for /stats."""

    async def prune(self, before: float) -> int:
        """Forget budget records and cached guides older than `before`."""


class HeartbeatRepository(Protocol):
    """When the bot last succeeded at each outside service (one time per beat, the latest),
    and the last integrity check. A database not migrated yet reads as nothing recorded."""

    async def beat(self, beat: Beat, now: float) -> None:
        ...

    async def all(self) -> dict[Beat, float]:
        ...

    async def record_check(self, check: IntegrityCheck) -> None:
        ...

    async def last_check(self) -> IntegrityCheck | None:
        ...


class PaidBroadcastRepository(Protocol):
    """The messages reserved of each UTC day's paid-broadcast budget, by every process."""

    async def reserve(self, day: str, wanted: int, budget: int) -> int:
        """Reserve up to `wanted` messages of `day`'s `budget`; how many were granted."""

    async def give_back(self, day: str, unused: int) -> None:
        """Return reserved messages that were not sent paid."""

    async def reserved(self, day: str) -> int:
        ...

    async def prune(self, before_day: str) -> int:
        ...


class DeliveryQueue(Protocol[Row]):
    """Messages queued for chats (alerts, For-you messages): pending, claimed (`sending`) just
    before the request, then sent, pending again for a later retry, or failed; held while the
    chat blocks the bot."""

    async def pending_for_chat(self, chat_id: int, now: float | None = None) -> list[Row]:
        """A chat's pending rows (due by `now` when given), oldest first."""

    async def pending_ids(self, chat_ids: Iterable[int], now: float | None = None
                          ) -> dict[int, set[int]]:
        """Many chats' pending rows (due by `now` when given), as their ids by chat (chats
        with none left out), in a few statements."""

    async def due_chats(self, now: float) -> list[int]:
        """Chats with pending rows due now that can receive them (active, not paused)."""

    async def claim(self, row_ids: Sequence[int], now: float) -> bool:
        """Mark pending rows `sending` just before their request; False (and nothing claimed)
        if any of them is no longer pending (held meanwhile, or claimed by someone else)."""

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False, hidden: Sequence[int] = (),
                        hidden_message_id: int | None = None) -> None:
        """Telegram accepted the message (`alone` matters only to alerts' threads). The rows
        `hidden` behind its More button are recorded under `hidden_message_id`, in the same
        transaction."""

    async def unclaim(self, row_ids: Sequence[int]) -> None:
        """Telegram refused the request before taking it (a 429): the rows wait again."""

    async def requeue_claimed(self) -> int:
        """At start-up: rows claimed by a process that died are uncertain (Telegram may or may
        not have taken them; it has no idempotency key to ask). Send them again."""

    async def retry_later(self, row_ids: Sequence[int], due_at: float, error: str,
                          max_attempts: int) -> None:
        """Try again at `due_at`; once `max_attempts` have failed, the rows fail for good."""

    async def mark_failed(self, row_ids: Sequence[int], error: str) -> None:
        ...

    async def expire_held(self, now: float) -> int:
        """Rows held longer than HELD_ALERT_DAYS expire (at the daily upkeep)."""

    async def prune(self, before: float) -> int:
        """Forget sent, failed and expired rows older than `before` (pending, sending and
        held are kept)."""


class OutboxRepository(DeliveryQueue[OutboxRow], Protocol):
    """Alerts to send, being sent and sent, threaded per chat and topic.

    A poll's staged alerts (`OutboxInTransaction.enqueue`) are part of the outbox for every
    method here: `pending_for_chat` unpacks the chat's into rows of their own first (in a
    transaction of its own, so a crash leaves them staged or unpacked, never lost or
    doubled), `due_chats` names the chats that have some, and `counts` and
    `chat_matches_since` count them (as pending, or held for a chat that blocks the bot)
    without unpacking. Holding, releasing, moving and forgetting a chat's alerts (the chat
    and topic repositories) unpack its staged alerts first, in the same transaction.
    """

    async def release_revisions(self, arxiv_ids: Iterable[str], now: float) -> int:
        """Make the waiting revision alerts of these papers due now (their details are in)."""

    async def prepare_staged(self, alerts: PlainAlerts, now: float) -> StagedAlerts:
        """Encode plain alerts for staging, off the event loop and outside any transaction;
        pass the result to `OutboxInTransaction.enqueue`."""

    async def enqueue(self, alerts: Sequence[Alert], now: float) -> int:
        """Store alerts in their own transaction, each as its own outbox row (none staged):
        how many were new; a version already queued for the chat and topic is skipped."""

    async def mark_sent(self, row_ids: Sequence[int], message_id: int, now: float, *,
                        alone: bool = False, hidden: Sequence[int] = (),
                        hidden_message_id: int | None = None) -> None:
        """Telegram accepted the message. One alert sent `alone` (not in a digest) starts its
        paper's thread in the chat's topic, unless an earlier message did. The rows `hidden`
        behind its More button are recorded under `hidden_message_id`, in the same
        transaction."""

    async def thread_starts(self, chat_id: int, topic_id: int,
                            arxiv_ids: Iterable[str]) -> dict[str, int]:
        """The message that first showed each of these papers on its own in the chat's topic,
        by id: what a revision replies to. Papers never shown alone there are left out."""

    async def prune_threads(self, before: float) -> int:
        """Forget where papers first went that were first sent before `before`."""

    async def by_message(self, chat_id: int, message_id: int) -> OutboxRow | None:
        """The alert behind a message the bot sent (for re-rendering on a button press)."""

    async def rows_of_message(self, chat_id: int, message_id: int) -> list[OutboxRow]:
        """Every alert a message delivered (a digest's, with any it did not show), in order."""

    async def counts(self) -> dict[str, int]:
        ...

    async def last_failure(self) -> str | None:
        """The error of the alert that failed last, for /status."""

    async def chat_matches_since(self, chat_id: int, since: float) -> int:
        ...


class ForYouOutboxRepository(DeliveryQueue[ForYouRow], Protocol):
    """For you's messages, one a chat and day, delivered as alerts are."""

    async def enqueue(self, rounds: Sequence[ForYouRound], now: float) -> int:
        """Queue each round's message and mark its chat's day sent, together: a crash leaves
        either both or neither. Returns how many messages were queued."""

    async def of_chat(self, chat_id: int) -> list[ForYouRow]:
        """Every For-you message of a chat still stored, oldest first."""


class PaperRepository(Protocol):
    """Papers, and every version of each that the bot has stored."""

    async def upsert_many(self, papers: Sequence[Paper], now: float) -> list[PaperChange]:
        """Store a batch in its own transaction; see `PapersInTransaction.upsert`."""

    async def announced(self, arxiv_ids: Iterable[str]) -> dict[str, Paper]:
        """The latest versions the feeds announced, as last committed (read without waiting
        for a writer)."""

    async def cache_lookups(self, papers: Sequence[Paper], now: float) -> None:
        """Keep papers fetched by id from the API (for /paper and saving) without marking them
        as announced: the feed that lists them later still counts them as new."""

    async def get(self, arxiv_id: str, version: int | None = None) -> Paper | None:
        """The stored paper (latest version), or one specific stored version."""

    async def get_many(self, arxiv_ids: Sequence[str]) -> dict[str, Paper]:
        ...

    async def get_versions(
        self, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], Paper]:
        """Specific stored versions, by (id, version); the latest row stands in for a version
        known only from the papers table (an API look-up)."""

    async def previous_version(self, arxiv_id: str, version: int) -> Paper | None:
        """The newest stored version older than `version` (what a revision diff compares with)."""

    async def seen_since(self, since: float, limit: int) -> list[Paper]:
        """Latest versions of papers stored or changed since `since`, at most `limit` of them,
        newest first (for /follow previews)."""

    async def search(self, words: Sequence[str], since: float, limit: int) -> list[Paper]:
        """Papers first stored since `since` whose title, authors or abstract hold every one
        of `words` (the last one as a prefix: it may still be being typed), best first; from
        the engine's full-text index."""

    async def ingest_counts(self, since: float, ai_categories: Sequence[str]) -> dict[str, int]:
        """Versions stored since `since`: new papers, revisions, and the AI-related among them."""

    async def count(self) -> int:
        ...

    async def record_details(self, papers: Sequence[Paper]) -> None:
        """Store what the API says of known versions: comment, journal ref and DOI."""

    async def prune(self, before: float) -> int:
        """Forget papers unchanged since `before` that no chat saved or still waits for."""


class RankingRepository(Protocol):
    """What the ranker keeps: the fitted vocabulary, each chat's model, the For-you settings;
    and the labels it learns from."""

    async def vocabulary(self) -> StoredVocabulary | None:
        ...

    async def put_vocabulary(self, stored: StoredVocabulary) -> None:
        ...

    async def models_of(self, chat_ids: Iterable[int]) -> dict[int, StoredModel]:
        """These chats' stored models, by chat (chats without one left out)."""

    async def models(self) -> list[StoredModel]:
        ...

    async def put_models(self, models: Sequence[StoredModel]) -> None:
        """Store these models (replacing the chats' old ones), in one transaction."""

    async def drop_model(self, chat_id: int) -> None:
        ...

    async def labels_of(self, chat_ids: Sequence[int]) -> dict[int, LabelIds]:
        """These chats' labels, by chat (every chat given, with none or some)."""

    async def labelled_chats(self) -> list[int]:
        ...

    async def for_you(self, chat_id: int) -> ForYouSetting | None:
        ...

    async def for_you_chats(self) -> list[ForYouSetting]:
        ...

    async def set_for_you(self, chat_id: int, count: int | None, now: float,
                          topic_id: int = GENERAL) -> None:
        """Turn For you on with `count` papers a day in forum topic `topic_id` (keeping when it
        was last sent), or off."""

    def unmatched_by_chat(self, chat_ids: Sequence[int], since: float, limit: int
                          ) -> AsyncIterator[tuple[int, list[str]]]:
        """For each chat, in the order given: the ids of papers announced since `since` that it
        never got an alert for, nor saved nor labelled (what its subscriptions missed), newest
        first, at most `limit`; read for many chats at once."""

    async def corpus(self, limit: int) -> list[Paper]:
        """The papers to fit the vocabulary on and sample negatives from: the newest `limit`
        first-seen papers, plus every paper any chat saved or labelled."""

    async def stored_papers(self, limit: int) -> int:
        """How many papers are stored, counted up to `limit` (a cheap "has it grown?")."""


class SavedRepository(Protocol):
    """Each chat's library of saved papers, and in a group who saved each."""

    async def save(self, chat_id: int, arxiv_id: str, version: int, now: float,
                   saver: GroupMember | None = None) -> bool:
        """Save the paper (in a group, with who saved it); False if it was saved already, and
        then its first saver stays."""

    async def save_many(self, chat_id: int, papers: Iterable[tuple[str, int]], now: float,
                        saver: GroupMember | None = None) -> int:
        """Save (arxiv_id, version) pairs in one transaction (in a group, with who saved
        them); returns how many were new."""

    async def saved_among(self, chat_id: int, arxiv_ids: Iterable[str]) -> set[str]:
        """Which of `arxiv_ids` the chat has saved."""

    async def remove(self, chat_id: int, arxiv_id: str) -> bool:
        ...

    async def is_saved(self, chat_id: int, arxiv_id: str) -> bool:
        ...

    async def record(self, chat_id: int, arxiv_id: str) -> SaveRecord | None:
        """The paper's save in this chat, or None if the chat has not saved it."""

    async def refresh_saver_name(self, chat_id: int, member: GroupMember) -> None:
        """Show the member's current first name beside what they saved in this chat."""

    async def entries(self, chat_id: int, offset: int, limit: int) -> list[LibraryEntry]:
        """One page of the chat's library with who saved each paper, newest saved first."""

    async def select(self, chat_id: int, query: LibraryQuery) -> LibraryMatches:
        """The library's papers that `query` asks for (its words found by the engine's
        full-text index), in its order, one page of them, and how many match in all."""

    async def facets(self, chat_id: int) -> LibraryFacets:
        """What the library's filters offer: its size, its primary categories and savers."""

    async def page(self, chat_id: int, offset: int, limit: int) -> list[Paper]:
        """One page of the chat's library, newest saved first."""

    async def all(self, chat_id: int) -> list[Paper]:
        ...

    async def count(self, chat_id: int) -> int:
        ...


class SourceRepository(Protocol):
    """Each feed's fetch record (validators, failures) and the calendar's view of it."""

    async def get(self, url: str) -> Source | None:
        ...

    async def all(self) -> list[Source]:
        ...

    async def record_success(
        self, url: str, now: float, status: int, items: int | None,
        etag: str | None, last_modified: str | None, *, clear_validators: bool = False,
    ) -> None:
        """A fetch that parsed: store validators, reset failures. `items` None keeps the last."""

    async def record_failure(self, url: str, now: float, error: str,
                             status: int | None = None) -> None:
        """A fetch or parse that failed: validators are kept, so nothing is marked as seen."""

    async def record_state(self, url: str, state: FeedState) -> None:
        """Store the calendar's view of a feed (after its fetch was recorded)."""

    async def forget_others(self, urls: Collection[str], under: str = "") -> int:
        """Delete the records of feed URLs the plan no longer has (follows changed the URLs),
        which /stats and /status would otherwise show as scans that stopped days ago.
        With `under`, only URLs starting with it are considered: other sources keep theirs."""


class SubscriptionRepository(Protocol):
    """Each chat's queries, in canonical form and as typed."""

    async def add(self, chat_id: int, query: str, typed: str, now: float,
                  topic_id: int = GENERAL) -> AddResult:
        """Add a canonical query for a chat (its alerts going to forum topic `topic_id`)
        unless it is a duplicate or the chat is full."""

    async def for_chat(self, chat_id: int) -> list[Subscription]:
        """The chat's subscriptions, numbered 1.. in the order they were added."""

    async def move(self, chat_id: int, sub_id: int, topic_id: int) -> bool:
        """Send a subscription's alerts to another forum topic of its chat from now on."""

    async def remove(self, chat_id: int, sub_id: int) -> bool:
        """Remove one subscription, only if it belongs to `chat_id`."""

    async def remove_all(self, chat_id: int) -> int:
        ...

    async def all(self) -> list[Subscription]:
        """Every subscription of every chat (to build the matcher)."""

    async def get(self, sub_id: int) -> Subscription | None:
        ...

    async def count(self) -> int:
        ...


class TopicRepository(Protocol):
    """Forum topics' names, and what happens when one is deleted or closed."""

    async def remember(self, chat_id: int, topic_id: int, name: str) -> None:
        """A topic's name, from its forum_topic_created or forum_topic_edited message."""

    async def knows(self, chat_id: int, topic_id: int) -> bool:
        ...

    async def names(self, chat_id: int) -> dict[int, str]:
        """The chat's topic names by topic id."""

    async def fall_back(self, chat_id: int, topic_id: int) -> TopicFallback:
        """Telegram refused a send into the topic (deleted or closed): its subscriptions are
        bound to General again and its undelivered alerts go there, in one transaction."""


class ZoteroRepository(Protocol):
    """Each chat's link to a Zotero library, and which of its papers are which Zotero items."""

    async def link(self, link: ZoteroLink) -> None:
        """Link the chat to this library (a link it had before, and its items, are replaced)."""

    async def get(self, chat_id: int) -> ZoteroLink | None:
        ...

    async def links(self) -> list[ZoteroLink]:
        """Every linked chat's link."""

    async def unlink(self, chat_id: int) -> bool:
        """Forget the chat's link, its sealed key and its items; False if it had none."""

    async def set_collection(self, chat_id: int, collection_key: str) -> None:
        ...

    async def pulled(self, chat_id: int, library_version: int, now: float) -> None:
        """The library was read up to `library_version`."""

    async def items(self, chat_id: int) -> list[ZoteroItem]:
        """Every paper of the chat known to be (or to be written) in its Zotero library."""

    async def record(self, items: Sequence[ZoteroItem]) -> None:
        """Remember these items (a paper already recorded for its chat keeps its record)."""

    async def queue_write(self, chat_id: int, arxiv_id: str, write_token: str) -> bool:
        """A paper to write to the chat's Zotero library; False if it is recorded already
        (written, queued, or come from Zotero): nothing is written twice."""

    async def to_write(self, chat_id: int) -> list[ZoteroItem]:
        """The chat's papers queued and not yet written, oldest first."""

    async def written(self, chat_id: int, arxiv_id: str, item_key: str, item_version: int,
                      paper_version: int) -> None:
        """The paper's item now exists (or was updated) in Zotero, at these versions."""

    async def outdated(self, chat_id: int) -> list[tuple[ZoteroItem, int]]:
        """Items the bot wrote whose paper has a newer stored version, with that version."""

    async def drop(self, chat_id: int, arxiv_ids: Iterable[str]) -> None:
        """Forget these papers' items (they are gone from Zotero)."""


class CardRepository(Protocol):
    """The bot's messages that show one paper's card (/paper, a pasted link), by message."""

    async def shown(self, chat_id: int, message_id: int, arxiv_id: str, version: int,
                    now: float) -> None:
        """Message `message_id` of the chat shows this version of the paper."""

    async def paper_of(self, chat_id: int, message_id: int) -> tuple[str, int] | None:
        """The paper (id, version) a card message shows, or None for any other message."""

    async def prune(self, before: float) -> int:
        """Forget cards sent before `before`."""

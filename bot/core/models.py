"""Domain values shared by every stage of the pipeline: small, frozen and free of I/O."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime
from enum import StrEnum
from typing import NamedTuple


class AnnounceType(StrEnum):
    """How an announcement feed lists a paper (arXiv's `arxiv:announce_type`)."""

    NEW = "new"
    CROSS = "cross"
    REPLACE = "replace"
    REPLACE_CROSS = "replace-cross"

    @property
    def is_revision(self) -> bool:
        return self in (AnnounceType.REPLACE, AnnounceType.REPLACE_CROSS)


class SourceOutcome(StrEnum):
    """What fetching one feed URL gave in one poll."""

    OK = "ok"  # a feed with items
    NOT_MODIFIED = "not-modified"  # arXiv answered 304
    EMPTY = "empty"  # a feed without items on a day that may have none
    ERROR = "error"  # nothing usable: a fault, or an empty feed where news was due


class Freshness(StrEnum):
    """How a source stands against arXiv's calendar."""

    QUIET = "quiet"  # no announcement is due (weekend, holiday) and the last one was seen
    FRESH = "fresh"  # the feed carries the announcement that is due
    WAITING = "waiting"  # the due announcement's rebuild has passed; polling tightly for it
    STALE = "stale"  # the feed has not moved past the last announcement long after the rebuild
    FILLED = "filled"  # it was stale, and the due announcement was read from the listing page


@dataclass(frozen=True, slots=True)
class FeedState:
    """What the calendar knows of one feed: the announcement it last carried, and its health."""

    announced_on: date | None = None  # the announcement date last seen (or filled)
    feed_digest: str | None = None  # the (id, version) pairs of the content when it last moved
    newest_id: str | None = None
    changed_at: float | None = None  # when the feed was last found changed
    freshness: Freshness | None = None
    stale_since: float | None = None
    expected_on: date | None = None  # the announcement date due while stale
    filled_on: date | None = None  # the announcement date read from the listing page
    listing_checked_at: float | None = None
    listing_error: str | None = None


UNHEALTHY_AFTER_FAILURES = 1


@dataclass(frozen=True, slots=True)
class Source:
    """A feed URL's validators and health."""

    url: str
    etag: str | None
    last_modified: str | None
    last_attempt_at: float | None
    last_success_at: float | None
    consecutive_failures: int
    last_error: str | None
    last_status: int | None
    last_items: int | None
    state: FeedState = field(default_factory=FeedState)

    @property
    def healthy(self) -> bool:
        return self.consecutive_failures < UNHEALTHY_AFTER_FAILURES


# New-style ids (0704.0001 to 2611.11450) and old-style ids (hep-th/9901001, math.AG/0601001).
_NEW_ID = r"\d{4}\.\d{4,5}"
_OLD_ID = r"[a-z][a-z\-]*(?:\.[A-Z]{2})?/\d{7}"
ARXIV_ID_RE = re.compile(rf"(?P<id>{_NEW_ID}|{_OLD_ID})(?:v(?P<version>\d+))?")


@dataclass(frozen=True, slots=True)
class ArxivId:
    """An arXiv identifier split into its base id and optional version."""

    base: str
    version: int | None = None

    @classmethod
    def parse(cls, text: str) -> ArxivId | None:
        """Parse `2611.11450v2`, `hep-th/9901001`, `arXiv:…` or an abs/pdf/html URL; else None.

        A URL may carry a query or a fragment (`…/abs/2401.01234v2?context=cs`, `…#S2`), as
        links copied from arXiv's listings and search pages do.
        """
        text = text.strip()
        text = re.sub(r"^(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf|html)/", "", text,
                      flags=re.IGNORECASE)
        text = re.sub(r"^arxiv:", "", text, flags=re.IGNORECASE)
        text = re.sub(r"[?#].*$", "", text, flags=re.DOTALL)
        text = re.sub(r"(?:\.pdf)?/?$", "", text)
        match = ARXIV_ID_RE.fullmatch(text)
        if match is None:
            return None
        version = match.group("version")
        return cls(match.group("id"), int(version) if version else None)

    def __str__(self) -> str:
        return f"{self.base}v{self.version}" if self.version else self.base


@dataclass(frozen=True, slots=True)
class Paper:
    """One version of one arXiv paper, as announced or as returned by the API."""

    arxiv_id: str  # base id without version: "2611.11450" or "hep-th/9901001"
    version: int
    title: str
    authors: tuple[str, ...]
    abstract: str
    categories: tuple[str, ...]  # primary category first
    comment: str | None = None
    journal_ref: str | None = None
    doi: str | None = None
    published: datetime | None = None  # first version's date
    updated: datetime | None = None  # this version's date (or the announcement date)
    announce_type: AnnounceType | None = None
    license: str | None = None

    @property
    def primary_category(self) -> str | None:
        return self.categories[0] if self.categories else None

    @property
    def versioned_id(self) -> str:
        return f"{self.arxiv_id}v{self.version}"

    @property
    def abs_url(self) -> str:
        return f"https://arxiv.org/abs/{self.arxiv_id}"

    @property
    def pdf_url(self) -> str:
        return f"https://arxiv.org/pdf/{self.versioned_id}"


class ChangeStatus(StrEnum):
    """What an ingest learned of one paper version."""

    NEW = "new"  # a paper the store did not know
    REVISED = "revised"  # a newer version of a known paper (or a replacement announced)
    SEEN = "seen"  # nothing new: the store already has this version


@dataclass(frozen=True, slots=True)
class PaperChange:
    """What an ingest learned of one paper: new, revised (with the version before) or seen."""

    paper: Paper
    status: ChangeStatus
    previous: Paper | None = None  # the version stored before, for revision diffs


def latest_versions(papers: Iterable[Paper]) -> list[Paper]:
    """Each id once, at the highest version listed, in the order first listed (a feed lists a
    cross-listed paper under each of its categories)."""
    unique: dict[str, Paper] = {}
    for paper in papers:
        kept = unique.get(paper.arxiv_id)
        if kept is None or paper.version > kept.version:
            unique[paper.arxiv_id] = paper
    return list(unique.values())


def classify(papers: Iterable[Paper], announced: Mapping[str, Paper]) -> list[PaperChange]:
    """Per paper, given the latest announced versions stored: new, revised or seen."""
    changes: list[PaperChange] = []
    for paper in papers:
        previous = announced.get(paper.arxiv_id)
        if previous is None:
            revision = paper.version > 1 and paper.announce_type is not None \
                and paper.announce_type.is_revision
            status = ChangeStatus.REVISED if revision else ChangeStatus.NEW
            changes.append(PaperChange(paper, status, None))
        elif paper.version > previous.version:
            changes.append(PaperChange(paper, ChangeStatus.REVISED, previous))
        else:
            changes.append(PaperChange(paper, ChangeStatus.SEEN, None))
    return changes


# A forum topic is named by its message_thread_id; General (and a chat without topics) by 0.
GENERAL = 0


@dataclass(frozen=True, slots=True)
class Subscription:
    """One `/follow` query of one chat."""

    id: int
    chat_id: int
    query: str  # canonical text form: what duplicates are found by
    number: int = 0  # position shown to the chat in /list (1-based)
    typed: str = ""  # as the user typed it (trimmed, whitespace collapsed): what the chat sees
    topic_id: int = GENERAL  # the forum topic its alerts go to

    @property
    def display(self) -> str:
        """The text shown to the chat: as typed, or the canonical form if none was kept."""
        return self.typed or self.query


MAX_SUBSCRIPTIONS_PER_CHAT = 50


class FollowStatus(StrEnum):
    """What became of a `/follow`."""

    ADDED = "added"
    DUPLICATE = "duplicate"  # the chat already follows the same canonical query
    LIMIT = "limit"  # the chat follows as many queries as it may
    INVALID = "invalid"  # the query does not parse


class Match(NamedTuple):
    """One paper matched for one chat, with the subscriptions that matched it.

    A named tuple rather than a dataclass: a poll builds one per (paper, chat) alert, hundreds of
    thousands at scale, and a tuple is built several times faster.
    """

    chat_id: int
    paper: Paper
    subscription_ids: tuple[int, ...] = ()


class AlertKind(StrEnum):
    """Why a chat hears of a paper version: a new paper, or a new version of one."""

    NEW = "new"
    REVISION = "revision"


class Feedback(StrEnum):
    """A chat's 👍 ("more like this") or 👎 ("less like this") on a paper."""

    MORE = "more"
    LESS = "less"


class DeliveryMode(StrEnum):
    """How a chat receives its alerts."""

    INSTANT = "instant"  # each alert as it comes (a flood becomes a digest)
    DIGEST = "digest"  # one digest a day at the chat's local time


@dataclass(frozen=True, slots=True)
class Chat:
    """A chat's row: settings and reachability."""

    id: int
    type: str
    title: str | None
    language: str
    language_chosen: bool
    timezone: str
    delivery_mode: DeliveryMode
    digest_time: str | None
    last_digest_at: float | None
    paused: bool
    inactive_since: float | None
    rating_buttons: bool = True  # 👍 / 👎 under its alerts; off for a chat that rates by reaction

    @property
    def is_group(self) -> bool:
        return self.type in ("group", "supergroup")

    @property
    def active(self) -> bool:
        return self.inactive_since is None


class OutboxStatus(StrEnum):
    """Where an outbox row is on its way to the chat."""

    PENDING = "pending"  # waiting to be sent (possibly not before its due time)
    SENDING = "sending"  # claimed: its request is about to go or went; no answer recorded yet
    SENT = "sent"  # Telegram accepted it
    FAILED = "failed"  # given up on, with the error
    HELD = "held"  # the chat blocked the bot: kept until it writes again, or until it expires
    EXPIRED = "expired"  # held for longer than the bot keeps alerts for a chat that left


@dataclass(frozen=True, slots=True)
class Alert:
    """One paper version due for one chat: what the outbox stores."""

    chat_id: int
    arxiv_id: str
    version: int
    kind: AlertKind
    subscription_ids: tuple[int, ...] = ()
    matched_queries: tuple[str, ...] = ()
    saved_revision: bool = False
    topic_id: int = GENERAL  # the forum topic it goes to: one alert per topic that matched


@dataclass(frozen=True, slots=True)
class PlainAlerts:
    """Plain alerts (new papers, due at once) as columns grouped by chat: what a poll stages.

    Half a million alerts after a big poll: an `Alert` object each cost more than matching
    them (docs/performance.md, "The store"), and staging only needs each chat's columns.
    Chat `chats[i]` (ascending) has the alerts `bounds[i]:bounds[i + 1]` of the per-alert
    columns, in the order they are queued, and the (subscription ids, matched queries) pairs
    `pair_bounds[i]:pair_bounds[i + 1]` of `pairs`, each once, in the order its alerts first
    name them; an alert's `picks` entry is its pair's index among its chat's pairs.
    """

    chats: list[int]
    bounds: list[int]
    arxiv_ids: list[str]
    versions: list[int]
    topics: list[int]
    picks: list[int]
    pair_bounds: list[int]
    pairs: list[tuple[tuple[int, ...], tuple[str, ...]]]

    @classmethod
    def from_alerts(cls, alerts: Iterable[Alert]) -> PlainAlerts:
        """Plain alerts given one object each, grouped by chat (each chat's in their order)."""
        by_chat: dict[int, list[Alert]] = {}
        for alert in alerts:
            found = by_chat.get(alert.chat_id)
            if found is None:
                by_chat[alert.chat_id] = [alert]
            else:
                found.append(alert)
        plain = cls([], [0], [], [], [], [], [0], [])
        for chat_id in sorted(by_chat):
            # A chat's few subscriptions match many papers: each pair is kept once.
            chat_pairs: dict[tuple[tuple[int, ...], tuple[str, ...]], int] = {}
            for a in by_chat[chat_id]:
                pair = (a.subscription_ids, a.matched_queries)
                pick = chat_pairs.get(pair)
                if pick is None:
                    pick = chat_pairs[pair] = len(chat_pairs)
                    plain.pairs.append(pair)
                plain.arxiv_ids.append(a.arxiv_id)
                plain.versions.append(a.version)
                plain.topics.append(a.topic_id)
                plain.picks.append(pick)
            plain.chats.append(chat_id)
            plain.bounds.append(len(plain.arxiv_ids))
            plain.pair_bounds.append(len(plain.pairs))
        return plain

    def __len__(self) -> int:
        return len(self.arxiv_ids)

    def alerts(self) -> list[Alert]:
        """One `Alert` each, chat by chat."""
        found = []
        bounds, pair_bounds, pairs = self.bounds, self.pair_bounds, self.pairs
        for i, chat_id in enumerate(self.chats):
            first_pair = pair_bounds[i]
            for j in range(bounds[i], bounds[i + 1]):
                subs, queries = pairs[first_pair + self.picks[j]]
                found.append(Alert(chat_id, self.arxiv_ids[j], self.versions[j], AlertKind.NEW,
                                   subs, queries, topic_id=self.topics[j]))
        return found


@dataclass(frozen=True, slots=True)
class OutboxRow:
    """A stored alert with its delivery state."""

    id: int
    alert: Alert
    status: OutboxStatus
    attempts: int
    created_at: float
    message_id: int | None


@dataclass(frozen=True, slots=True)
class ForYouPick:
    """One paper of a day's For-you message, as the ranker picked it, and why: the title of a
    saved paper it is like, or else the terms it scored on."""

    arxiv_id: str  # base id
    version: int
    like_title: str | None = None
    terms: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ForYouRound:
    """A chat whose For-you time came: its local day and what the ranker picked (none: no
    paper cleared the threshold, and the day passes without a message)."""

    chat_id: int
    day: str  # 'YYYY-MM-DD' in the chat's time zone
    picks: tuple[ForYouPick, ...]


@dataclass(frozen=True, slots=True)
class ForYouRow:
    """A queued For-you message: the picks of its day's round, rendered when it is sent."""

    id: int
    chat_id: int
    day: str
    picks: tuple[ForYouPick, ...]
    status: OutboxStatus
    attempts: int
    created_at: float
    topic_id: int = GENERAL
    message_id: int | None = None


@dataclass(frozen=True, slots=True)
class CommunityPick:
    """A paper on Hugging Face's daily papers list, with what the community made of it."""

    arxiv_id: str  # base id
    listed_on: str  # the list's day, 'YYYY-MM-DD'
    title: str = ""
    upvotes: int = 0
    comments: int = 0
    github_repo: str | None = None  # a full https://github.com/owner/name URL
    github_stars: int | None = None
    project_page: str | None = None


@dataclass(frozen=True, slots=True)
class Guide:
    """An AI reading guide of one paper version in one language."""

    arxiv_id: str
    version: int
    language: str
    text: str
    model: str
    created_at: float


FIRST_NAME_CHARS = 64  # Telegram's own limit on a first name; anything longer is cut


@dataclass(frozen=True, slots=True)
class GroupMember:
    """A person acting in a group: their Telegram user id and first name, nothing more.

    What a group's library keeps of the member who saved a paper (the first name is shown
    beside it). A private chat's library records nobody: its user saved everything in it.
    """

    user_id: int
    first_name: str

    @classmethod
    def of(cls, user_id: int, first_name: str | None) -> GroupMember:
        return cls(user_id, (first_name or "").strip()[:FIRST_NAME_CHARS])


@dataclass(frozen=True, slots=True)
class LibraryEntry:
    """A paper in a chat's library and who saved it first (None in a private chat, and for
    papers saved before the bot kept savers)."""

    paper: Paper
    saver: GroupMember | None = None


class LibrarySort(StrEnum):
    SAVED = "saved"  # newest saves first: the order the library keeps
    UPDATED = "updated"  # newest version first
    PUBLISHED = "published"  # newest first version first


class LibraryLabel(StrEnum):
    MORE = "more"  # rated 👍
    LESS = "less"  # rated 👎
    NONE = "none"  # not rated


@dataclass(frozen=True, slots=True)
class LibraryQuery:
    """Which of a chat's saved papers to list, in which order: the storage engine searches,
    filters, sorts and pages them (its full-text index finds the words)."""

    words: tuple[str, ...] = ()  # folded words, each the start of a word of title or authors
    id_prefixes: tuple[str, ...] = ()  # each the start of the paper's arXiv id
    category: str = ""  # a category ("cs.LG") or an archive ("cs", taking its categories)
    label: LibraryLabel | None = None
    saver: int | None = None  # in a group: saved by this user
    sort: LibrarySort = LibrarySort.SAVED
    offset: int = 0
    limit: int | None = None  # None: every match


@dataclass(frozen=True, slots=True)
class LibraryMatches:
    """One page of a library query, and how many papers match it in all."""

    entries: list[LibraryEntry]
    matching: int


@dataclass(frozen=True, slots=True)
class LibraryFacets:
    """What a library's filters offer: its size, its primary categories (most common first)
    and who saved its papers (user id, first name)."""

    total: int
    categories: list[str]
    savers: list[tuple[int, str]]


class Beat(StrEnum):
    """What a heartbeat records."""

    ARXIV_POLL = "arxiv_poll"  # a poll in which every feed was fetched and stored
    TELEGRAM = "telegram"  # Telegram answered a Bot API call


@dataclass(frozen=True, slots=True)
class IntegrityCheck:
    """The database's last quick_check: when, and the problem it found (None: sound)."""

    at: float
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.problem is None


class Role(StrEnum):
    """What a bot process on a shared (PostgreSQL) database is doing."""

    LEADER = "leader"  # polls arXiv, takes Telegram's updates, sends
    STANDBY = "standby"  # waits for the leader's lock, opens nothing towards Telegram or arXiv


@dataclass(frozen=True, slots=True)
class Leadership:
    """The leader lease as the database holds it, seen from one instance (`INSTANCE_NAME`):
    the current term and its holder, how long ago the lease was renewed, and this instance's
    role (None: no process of this instance is running)."""

    term: int
    leader: str  # the holder's own description: "pid 123 on host-a"
    lease_age: float  # seconds since the leader last renewed its lease (by the server's clock)
    lease_seconds: float  # how long a lease lasts without renewal
    role: Role | None

    @property
    def leader_alive(self) -> bool:
        return self.lease_age <= self.lease_seconds


class ZoteroLibraryKind(StrEnum):
    """Whose Zotero library a chat is linked to: the key owner's own, or a group's."""

    USER = "user"
    GROUP = "group"


@dataclass(frozen=True, slots=True)
class ZoteroLink:
    """A chat's link to one Zotero library. `sealed_key` is the API key sealed with the
    operator's SECRET_KEY (bot/core/sealing.py), never the key itself."""

    chat_id: int
    kind: ZoteroLibraryKind
    library_id: int
    sealed_key: str
    can_write: bool
    linked_at: float
    collection_key: str | None = None  # "arXiv alerts", once created or found
    library_version: int = 0  # the library's version as last read (0: never read)
    pulled_at: float | None = None


class ZoteroOrigin(StrEnum):
    """Where a paper that is both in a chat's library and in its Zotero library began."""

    ZOTERO = "zotero"  # came from Zotero: removed here when it is removed there
    BOT = "bot"  # saved here, then written to Zotero (unsaving here leaves it there)
    BOTH = "both"  # in both before they were linked: removed in neither by the other


@dataclass(frozen=True, slots=True)
class ZoteroItem:
    """A paper of a chat's library and the Zotero item that holds it. `item_key` None: still
    to be written, with `write_token` so that a retried write is not made twice."""

    chat_id: int
    arxiv_id: str
    origin: ZoteroOrigin
    item_key: str | None = None
    item_version: int | None = None
    paper_version: int | None = None  # the arXiv version the item describes
    write_token: str | None = None

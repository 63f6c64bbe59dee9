"""Outbox rows → messages: load the paper, diff a revision against the version before, render.

The one place that turns stored alerts into what a chat sees, for the sender (a new alert or a
digest) and for the buttons (the same alert redrawn, expanded or collapsed). No network I/O.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace

from bot.config import Settings
from bot.core.models import GENERAL, AlertKind, Chat, ForYouRow, OutboxRow, Paper
from bot.delivery.callbacks import DigestMore, DigestRest
from bot.delivery.diff import describe_changes
from bot.delivery.render import (
    DigestEntry,
    DigestEntryParts,
    ForYouEntry,
    RenderedMessage,
    render_alert,
    render_digest,
    render_for_you,
    with_more,
)
from bot.storage import Storage

DIGEST_THRESHOLD = 10  # more pending alerts than this for one chat arrive as a digest

# A chat's relevance score for each paper, or None when it has no ranking model (the ranker
# implements it; delivery only orders by it and never imports the ranker).
Relevance = Callable[[int, Sequence[Paper]], Awaitable[Sequence[float] | None]]
# A digest's first delivery shows at most this many entries, in at most DIGEST_MESSAGES
# messages (`Settings.digest_messages`): they end with "+N more" and a button that shows the
# rest a page at a time, so a chat is not flooded (nor a chat back from a long pause), nor
# loses any.
DIGEST_MAX_ENTRIES = 100
DIGEST_MESSAGES = Settings.digest_messages  # the operator's default (DIGEST_MESSAGES)


# A day's 2,000 papers and their revisions: about 10 MB of papers kept for a drain.
PAPERS_KEPT = 4096


class DigestMemo:
    """What composing one drain's digests reads and renders once for all its chats: paper
    versions (a day's digests list the same few thousand papers for thousands of chats) and
    their entries' rendered parts. Bounded, and one a drain: a paper kept is at most as old as
    the drain, and a digest shows only what a version keeps (title, authors, id)."""

    def __init__(self, store: Storage, capacity: int = PAPERS_KEPT) -> None:
        self._store = store
        self._capacity = capacity
        self._papers: dict[tuple[str, int], Paper] = {}
        # Versions being read for one chat, which the others wait for instead of reading them
        # again: a drain's workers compose hundreds of chats at once.
        self._reading: dict[tuple[str, int], asyncio.Future[dict[tuple[str, int], Paper]]] = {}
        self.rendered = DigestEntryParts(capacity)

    async def versions(self, wanted: Sequence[tuple[str, int]]) -> dict[tuple[str, int], Paper]:
        """Those paper versions that are stored, read from the store only the first time."""
        found: dict[tuple[str, int], Paper] = {}
        missing, waiting = [], []
        for key in wanted:
            if (paper := self._papers.get(key)) is not None:
                found[key] = paper
            elif (reading := self._reading.get(key)) is not None:
                waiting.append((key, reading))
            else:
                missing.append(key)
        if missing:
            found.update(await self._read(missing))
        for key, reading in waiting:
            # A failed read gives nothing to its waiters, who then read for themselves; a
            # waiter stopped (the drain is) must not cancel the read for the others.
            if (paper := (await asyncio.shield(reading)).get(key)) is not None:
                found[key] = paper
        if again := [key for key, _ in waiting if key not in found]:
            found.update(await self._store.papers.get_versions(again))
        return found

    async def _read(self, keys: list[tuple[str, int]]) -> dict[tuple[str, int], Paper]:
        reading = asyncio.get_running_loop().create_future()
        self._reading.update(dict.fromkeys(keys, reading))
        read: dict[tuple[str, int], Paper] = {}
        try:
            read = await self._store.papers.get_versions(keys)
        finally:
            reading.set_result(read)
            for key in keys:
                del self._reading[key]
        for key, paper in read.items():
            if len(self._papers) >= self._capacity:
                del self._papers[next(iter(self._papers))]  # the first read
            self._papers[key] = paper
        return read


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One message to send and the queued rows it delivers (one alert, a digest's part, or a
    day's For-you message)."""

    rows: tuple[OutboxRow, ...] | tuple[ForYouRow, ...]
    message: RenderedMessage
    topic_id: int = GENERAL  # the forum topic it goes to (its rows all share it)
    # One alert on its own, not in a digest: the first such message of a paper starts its
    # thread, and a later version's alert replies to it (`reply_to`), so it reads v1 → v2 → v3.
    alone: bool = False
    reply_to: int | None = None
    for_you: bool = False  # its row is For you's (`foryou_outbox`), not an alert's
    # A digest's rows behind its More button: the last `hidden` of `rows`, sent with it but
    # not shown in it (recorded under `behind_more` of its message id).
    hidden: int = 0

    @property
    def shown_rows(self) -> tuple[OutboxRow, ...] | tuple[ForYouRow, ...]:
        return self.rows[:len(self.rows) - self.hidden]

    @property
    def hidden_rows(self) -> tuple[OutboxRow, ...] | tuple[ForYouRow, ...]:
        return self.rows[len(self.rows) - self.hidden:]


def behind_more(message_id: int) -> int:
    """The message id under which the rows behind message `message_id`'s More button are
    recorded as sent: apart from the rows the message shows, so that More lists exactly the
    ones it did not, whatever order the digest put them in (the outbox finds a message's rows
    by id order, not the digest's). Telegram's message ids are positive: this never is."""
    return -message_id


@dataclass(frozen=True, slots=True)
class Composition:
    """What a chat's pending rows become: messages in sending order, and rows that cannot be
    shown because their paper is no longer stored."""

    messages: list[Outgoing]
    missing: list[OutboxRow]
    digest: bool


async def load_paper(store: Storage, arxiv_id: str, version: int | None) -> Paper | None:
    """That version of the paper, or its latest stored version if that one is gone."""
    return await store.papers.get(arxiv_id, version) or await store.papers.get(arxiv_id)


async def saved_state(store: Storage, chat_id: int, arxiv_id: str) -> tuple[bool, str | None]:
    """Whether the chat saved the paper, and the first name of who saved it (known in groups
    only, for saves made since the bot keeps savers)."""
    record = await store.saved.record(chat_id, arxiv_id)
    if record is None:
        return False, None
    return True, record.saver.first_name if record.saver is not None else None


async def alert_message(store: Storage, chat_id: int, lang: str, paper: Paper,
                        row: OutboxRow | None, *, expanded: bool = False,
                        guide: bool = False, rating_buttons: bool = True) -> RenderedMessage:
    """The message of one alert row for `paper` (a revision with what changed), or a plain
    card when the message was no alert (`row` None); a Hugging Face pick gets its badge line,
    and `guide` adds the 🧠 Guide button. In a group, a saved paper names who saved it."""
    kind, matched, diff = "card", (), None
    if row is not None:
        kind, matched = row.alert.kind, row.alert.matched_queries
        if kind == AlertKind.REVISION:
            previous = await store.papers.previous_version(paper.arxiv_id, paper.version)
            if previous is not None:
                diff = describe_changes(previous, paper)
    saved, saved_by = await saved_state(store, chat_id, paper.arxiv_id)
    return render_alert(
        paper, kind=kind, matched=matched, saved=saved, saved_by=saved_by,
        expanded=expanded, diff=diff, lang=lang,
        pick=await store.community.get(paper.arxiv_id), guide=guide,
        feedback=await store.feedback.get(chat_id, paper.arxiv_id), rating_buttons=rating_buttons,
    )


async def compose_for_chat(store: Storage, chat: Chat, rows: Sequence[OutboxRow], *,
                           digest_run: bool = False, guide: bool = False,
                           relevance: Relevance | None = None,
                           digest_messages: int = DIGEST_MESSAGES,
                           memo: DigestMemo | None = None) -> Composition:
    """The messages for a chat's pending rows, topic by topic (a forum's topics each get their
    own): one alert each, or a digest when a topic has more than DIGEST_THRESHOLD of them or
    the chat's daily digest is due (`digest_run`). A digest lists the most relevant first when
    `relevance` scores them for the chat, in at most `digest_messages` messages; the rest is
    behind its More button. `memo` keeps what other chats' digests read and rendered."""
    by_topic: dict[int, list[OutboxRow]] = {}
    for row in rows:
        by_topic.setdefault(row.alert.topic_id, []).append(row)
    messages, missing, digest = [], [], False
    for topic_id, topic_rows in by_topic.items():
        if digest_run or len(topic_rows) > DIGEST_THRESHOLD:
            part = await _digest(store, chat, topic_rows, relevance, digest_messages,
                                 memo or DigestMemo(store))
        else:
            part = await _alerts(store, chat, topic_rows, guide)
        messages += [replace(m, topic_id=topic_id) for m in part.messages]
        missing += part.missing
        digest = digest or (part.digest and bool(part.messages))
    return Composition(messages, missing, digest)


async def compose_for_you(store: Storage, chat: Chat, rows: Sequence[ForYouRow]
                          ) -> Composition:
    """A chat's waiting For-you messages, rendered now from their stored picks: in the chat's
    language of today, with today's saved state. A pick whose paper is no longer stored is
    left out; a message with none left cannot be shown (`missing`)."""
    messages, missing = [], []
    for row in rows:
        papers = await store.papers.get_versions([(p.arxiv_id, p.version) for p in row.picks])
        shown = [(pick, papers[pick.arxiv_id, pick.version]) for pick in row.picks
                 if (pick.arxiv_id, pick.version) in papers]
        if not shown:
            missing.append(row)
            continue
        saved = await store.saved.saved_among(chat.id, [pick.arxiv_id for pick, _ in shown])
        entries = [ForYouEntry(paper, pick.like_title, pick.terms, saved=pick.arxiv_id in saved)
                   for pick, paper in shown]
        messages.append(Outgoing((row,), render_for_you(entries, lang=chat.language),
                                 topic_id=row.topic_id, for_you=True))
    return Composition(messages, missing, digest=False)


async def _alerts(store: Storage, chat: Chat, rows: Sequence[OutboxRow],
                  guide: bool) -> Composition:
    """One message per row (all of one topic); a revision replies to its paper's thread."""
    topic_id = rows[0].alert.topic_id if rows else GENERAL
    threads = await store.outbox.thread_starts(
        chat.id, topic_id,
        (r.alert.arxiv_id for r in rows if r.alert.kind == AlertKind.REVISION))
    messages, missing = [], []
    for row in rows:
        paper = await load_paper(store, row.alert.arxiv_id, row.alert.version)
        if paper is None:
            missing.append(row)
            continue
        message = await alert_message(store, chat.id, chat.language, paper, row, guide=guide,
                                      rating_buttons=chat.rating_buttons)
        messages.append(Outgoing((row,), message, alone=True,
                                 reply_to=threads.get(row.alert.arxiv_id)))
    return Composition(messages, missing, digest=False)


async def _digest(store: Storage, chat: Chat, rows: Sequence[OutboxRow],
                  relevance: Relevance | None, digest_messages: int,
                  memo: DigestMemo) -> Composition:
    # Each entry shows its own row's version: a chat can have two versions of one paper
    # waiting (a revision during a pause), and each must be shown once, as itself.
    entries, kept, missing = await _entries(memo, rows)
    if not kept:
        return Composition([], missing, digest=True)
    scores = None if relevance is None else await relevance(chat.id, [e.paper for e in entries])
    if scores is not None:
        # Most relevant first; equal scores keep the order they arrived in.
        order = sorted(range(len(entries)), key=lambda i: -scores[i])
        entries, kept = [entries[i] for i in order], [kept[i] for i in order]
    rendered = render_digest(entries[:DIGEST_MAX_ENTRIES], lang=chat.language,
                             max_messages=digest_messages, counted=[e.kind for e in entries],
                             rendered=memo.rendered)
    # Each message of a digest carries some entries; rows are marked sent per message.
    messages, start = [], 0
    for message in rendered:
        messages.append(Outgoing(tuple(kept[start:start + message.entry_count]), message))
        start += message.entry_count
    hidden = kept[start:]
    if hidden:
        # The rows not shown go with the last message (sent with it, kept behind its button).
        last = messages[-1]
        more = with_more(last.message, len(hidden), DigestRest(start, 0), chat.language)
        messages[-1] = Outgoing(last.rows + tuple(hidden), more, hidden=len(hidden))
    return Composition(messages, missing, digest=True)


async def digest_rest(store: Storage, chat_id: int, lang: str, message_id: int,
                      action: DigestRest, *, digest_messages: int = DIGEST_MESSAGES
                      ) -> list[RenderedMessage]:
    """The next page of the rows behind digest message `message_id`'s More button (in the
    order they were stored): at most `digest_messages` messages, numbered on, the last with
    its own button while any are left."""
    rows = await store.outbox.rows_of_message(chat_id, behind_more(message_id))
    page = rows[action.offset:action.offset + DIGEST_MAX_ENTRIES]
    entries, kept, _ = await _entries(DigestMemo(store), page)
    messages = render_digest(entries, lang=lang, max_messages=digest_messages,
                             first_number=action.numbered + 1,
                             counted=[row.alert.kind for row in rows])
    if not messages:
        return []
    listed = sum(message.entry_count for message in messages)
    # Rows whose paper is no longer stored are passed over with the entries around them.
    listed_rows = len(page) if listed == len(kept) else page.index(kept[listed])
    remaining = len(rows) - action.offset - listed_rows
    if remaining > 0:
        next_page = DigestRest(action.numbered + listed, action.offset + listed_rows, message_id)
        messages[-1] = with_more(messages[-1], remaining, next_page, lang)
    return messages


async def digest_continued(store: Storage, chat_id: int, lang: str, message_id: int,
                           offset: int) -> list[RenderedMessage]:
    """The next entries of a digest capped by the older button (`DigestMore`): those sent
    with message `message_id` of this chat after the first `offset`, at most
    DIGEST_MAX_ENTRIES, with a button for any beyond."""
    rows = await store.outbox.rows_of_message(chat_id, message_id)
    page = rows[offset:offset + DIGEST_MAX_ENTRIES]
    entries, _, _ = await _entries(DigestMemo(store), page)
    if not entries:
        return []
    messages = render_digest(entries, lang=lang)
    remaining = len(rows) - offset - len(page)
    if remaining > 0:
        messages[-1] = with_more(messages[-1], remaining,
                                 DigestMore(offset + len(page), message_id), lang)
    return messages


async def _entries(memo: DigestMemo, rows: Sequence[OutboxRow]
                   ) -> tuple[list[DigestEntry], list[OutboxRow], list[OutboxRow]]:
    """Digest entries of the rows whose paper version is stored: (entries, their rows, the
    rows whose paper is gone)."""
    papers = await memo.versions([(r.alert.arxiv_id, r.alert.version) for r in rows])
    entries, kept, missing = [], [], []
    for row in rows:
        paper = papers.get((row.alert.arxiv_id, row.alert.version))
        if paper is None:
            missing.append(row)
            continue
        entries.append(DigestEntry(paper=paper, kind=row.alert.kind,
                                   matched=row.alert.matched_queries))
        kept.append(row)
    return entries, kept, missing

"""Papers as a chat asks for them: from the store, else from arXiv through the fair look-up
queue (and then kept); their cards and alerts drawn again; 👍 / 👎; the nearest papers."""

from __future__ import annotations

import asyncio

from bot.arxiv.lookups import LookupQueue
from bot.core.clock import Clock
from bot.core.models import AlertKind, ArxivId, Feedback, Paper
from bot.delivery.callbacks import DigestRest
from bot.delivery.compose import (
    DIGEST_MESSAGES,
    alert_message,
    digest_continued,
    digest_rest,
    load_paper,
    saved_state,
)
from bot.delivery.diff import describe_changes
from bot.delivery.render import RenderedMessage, render_alert
from bot.ranking.reactions import rating_of
from bot.ranking.service import Ranker
from bot.storage import Storage


class Papers:
    """Finds, keeps and draws papers for the chats."""

    def __init__(self, storage: Storage, lookups: LookupQueue, ranker: Ranker, clock: Clock,
                 *, guide: bool, digest_messages: int = DIGEST_MESSAGES) -> None:
        self._storage = storage
        self._lookups = lookups
        self._ranker = ranker
        self._clock = clock
        self._guide = guide  # the 🧠 Guide button goes under cards (guides are on)
        self._digest_messages = digest_messages  # a More page takes as many as a digest

    async def stored(self, arxiv_id: str, version: int | None = None) -> Paper | None:
        """The stored paper (its latest version, or version `version`); no arXiv request."""
        return await self._storage.papers.get(arxiv_id, version)

    async def shown(self, arxiv_id: str, version: int | None) -> Paper | None:
        """That version of the paper, or its latest stored version if that one is gone."""
        return await load_paper(self._storage, arxiv_id, version)

    def look_up(self, chat_id: int, arxiv_id: ArxivId) -> asyncio.Future[Paper | None]:
        """Queue an arXiv look-up in the chat's line (see `LookupQueue.submit`: it raises
        TooManyLookups at once when the line is full); `kept` awaits it."""
        return self._lookups.submit(chat_id, arxiv_id)

    async def kept(self, pending: asyncio.Future[Paper | None]) -> Paper | None:
        """The looked-up paper, stored for the next time; None if arXiv has no such paper.
        Raises ArxivError when arXiv could not be asked."""
        found = await pending
        if found is not None:
            await self._storage.papers.cache_lookups([found], self._clock.now())
        return found

    async def find(self, chat_id: int, arxiv_id: ArxivId) -> Paper | None:
        """The paper from the store, else looked up and kept (`look_up`, `kept`)."""
        found = await self.stored(arxiv_id.base, arxiv_id.version)
        if found is not None:
            return found
        return await self.kept(self.look_up(chat_id, arxiv_id))

    async def card(self, chat_id: int, lang: str, paper: Paper) -> RenderedMessage:
        """The paper's card as this chat sees it (saved, by whom, its 👍 / 👎)."""
        return await alert_message(self._storage, chat_id, lang, paper, None,
                                   guide=self._guide,
                                   rating_buttons=await self._rating_buttons(chat_id))

    async def _rating_buttons(self, chat_id: int) -> bool:
        chat = await self._storage.chats.get(chat_id)
        return chat is None or chat.rating_buttons

    async def full_card(self, chat_id: int, lang: str, paper: Paper) -> RenderedMessage:
        """The paper as the Mini App shows it: the whole abstract, and for a later version
        what changed since the one before (as a revision alert says it)."""
        store = self._storage
        previous = (await store.papers.previous_version(paper.arxiv_id, paper.version)
                    if paper.version > 1 else None)
        saved, saved_by = await saved_state(store, chat_id, paper.arxiv_id)
        return render_alert(
            paper, kind=AlertKind.REVISION if previous is not None else "card", saved=saved,
            saved_by=saved_by, expanded=True, lang=lang,
            diff=describe_changes(previous, paper) if previous is not None else None,
            pick=await store.community.get(paper.arxiv_id),
            feedback=await store.feedback.get(chat_id, paper.arxiv_id))

    async def redrawn(self, chat_id: int, message_id: int, lang: str, paper: Paper, *,
                      expanded: bool) -> RenderedMessage:
        """Message `message_id` drawn again for `paper`: the same alert if it was one (a
        revision with what changed), else the paper's card (a card, or a digest's message)."""
        row = await self._storage.outbox.by_message(chat_id, message_id)
        if row is not None and row.alert.arxiv_id != paper.arxiv_id:
            row = None
        return await alert_message(self._storage, chat_id, lang, paper, row, expanded=expanded,
                                   guide=self._guide,
                                   rating_buttons=await self._rating_buttons(chat_id))

    async def digest_more(self, chat_id: int, lang: str, message_id: int,
                          offset: int) -> list[RenderedMessage]:
        """The next entries of a digest capped by the older button (see
        `compose.digest_continued`)."""
        return await digest_continued(self._storage, chat_id, lang, message_id, offset)

    async def digest_page(self, chat_id: int, lang: str, message_id: int,
                          action: DigestRest) -> list[RenderedMessage]:
        """The next page of the rows behind a digest's More button (`compose.digest_rest`)."""
        return await digest_rest(self._storage, chat_id, lang, message_id, action,
                                 digest_messages=self._digest_messages)

    async def rate(self, chat_id: int, arxiv_id: str, label: Feedback | None) -> bool:
        """Give the chat's 👍 / 👎 label (None clears it); False if the paper is not stored."""
        if await self._storage.papers.get(arxiv_id) is None:
            return False
        await self._storage.feedback.set(chat_id, arxiv_id, label, self._clock.now())
        return True

    async def react(self, chat_id: int, message_id: int, old: tuple[str, ...],
                    new: tuple[str, ...]) -> str | None:
        """A chat changed its reactions on message `message_id` from `old` to `new` (emoji):
        give or clear the label of the paper of that alert, as 👍 / 👎 would. Returns the paper
        rated, or None: no rating in the change, or not a message of one paper (a digest, a
        list, a message the bot does not keep)."""
        rating = rating_of(old, new)
        if rating is None:
            return None
        shown = await self._one_paper_of(chat_id, message_id)
        if shown is None:
            return None
        arxiv_id = shown[0]
        return arxiv_id if await self.rate(chat_id, arxiv_id, rating.label) else None

    async def _one_paper_of(self, chat_id: int, message_id: int) -> tuple[str, int] | None:
        """The paper (id, version) of the bot's message if it shows one paper: an alert's
        (from the outbox) or a card's; None for a digest, a list or a message not kept."""
        rows = await self._storage.outbox.rows_of_message(chat_id, message_id)
        if rows:
            shown = {(row.alert.arxiv_id, row.alert.version) for row in rows}
            return shown.pop() if len(shown) == 1 else None
        return await self._storage.cards.paper_of(chat_id, message_id)

    async def card_shown(self, chat_id: int, message_id: int, paper: Paper) -> None:
        """Message `message_id` is the paper's card: a reaction on it rates the paper."""
        await self._storage.cards.shown(chat_id, message_id, paper.arxiv_id, paper.version,
                                        self._clock.now())

    async def drawn_after_rating(self, chat_id: int, message_id: int, lang: str,
                                 arxiv_id: str) -> tuple[RenderedMessage, RenderedMessage] | None:
        """The bot's message `message_id` (one paper's alert or card) drawn again as a 👍 / 👎
        tap would leave it, its label shown: with the abstract collapsed, and expanded (a
        reaction's update carries neither the message's keyboard nor its text, so the edge
        tells which it is). None when the chat leaves the rating buttons out, or the message
        is not one the bot keeps."""
        if not await self._rating_buttons(chat_id):
            return None
        shown = await self._one_paper_of(chat_id, message_id)
        if shown is None or shown[0] != arxiv_id:
            return None
        paper = await self.shown(*shown)
        if paper is None:
            return None
        return (await self.redrawn(chat_id, message_id, lang, paper, expanded=False),
                await self.redrawn(chat_id, message_id, lang, paper, expanded=True))

    async def similar(self, arxiv_id: str, count: int) -> tuple[Paper | None, list[Paper]]:
        """The stored paper and up to `count` stored papers nearest to it, best first; (None,
        []) when it is not stored."""
        paper = await self._storage.papers.get(arxiv_id)
        if paper is None:
            return None, []
        return paper, await self._ranker.similar(arxiv_id, count)

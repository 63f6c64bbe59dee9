"""A chat's live link to a Zotero library: linking with an API key, the daily pull of its
arXiv items into the chat's library, and writing what the chat saves to Zotero.

- **Link.** The key is checked with Zotero (`/keys/current`), sealed with the operator's
  `SECRET_KEY` and stored; the clear key lives only in memory, for one request at a time, and
  is hidden from every log line (`bot.core.redaction.hide`). Unlinking forgets it.
- **From Zotero** (`pull`): once a day, what changed since the library's last version
  (`If-Modified-Since-Version`: an unchanged library costs one 304). Items with an arXiv id
  (as the importer recognises one) are saved here, through the importer and its fair look-up
  queue, and so become the ranker's positives. An item deleted or trashed in Zotero is removed
  here only if it came from Zotero.
- **To Zotero** (`push`): a paper newly saved here is queued (`saved`), then written into the
  collection "arXiv alerts" (made once) as a preprint item; the item key is stored, so it is
  never written twice. A stored newer version of a paper the bot wrote updates its item's
  version and date. Unsaving here deletes nothing in Zotero.
- A 403 (the key was revoked) unlinks the chat, with one message to it.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum

from bot.core.clock import Clock
from bot.core.constants import DAY
from bot.core.i18n import t
from bot.core.models import (
    ArxivId,
    ZoteroItem,
    ZoteroLibraryKind,
    ZoteroLink,
    ZoteroOrigin,
)
from bot.core.redaction import hide
from bot.core.sealing import Sealer, Unsealable
from bot.importer.parse import ImportSource, SourceKind
from bot.importer.service import LibraryImporter
from bot.storage import Storage
from bot.zotero.client import (
    KeyRejected,
    Library,
    NotFound,
    PreconditionFailed,
    ZoteroClient,
    ZoteroError,
)
from bot.zotero.items import (
    COLLECTION_NAME,
    arxiv_id_of_item,
    is_trashed,
    preprint_item,
    version_update,
)

log = logging.getLogger(__name__)

Tell = Callable[[int, str], Awaitable[object]]  # a notice to a chat (HTML)
PULL_EVERY = DAY - 600  # a library is read once a day (the hourly job may run a little early)


class LinkOutcome(StrEnum):
    LINKED = "linked"
    OFF = "off"  # the operator set no SECRET_KEY
    KEY_REJECTED = "key-rejected"  # Zotero does not know the key
    NO_LIBRARY = "no-library"  # the key does not reach that library
    UNAVAILABLE = "unavailable"  # Zotero did not answer


@dataclass(frozen=True, slots=True)
class LinkResult:
    outcome: LinkOutcome
    link: ZoteroLink | None = None


@dataclass
class SyncReport:
    """What a round of pulls or pushes did, for the log and the tests."""

    added: int = 0  # papers saved here from Zotero
    removed: int = 0  # papers removed here, removed in Zotero
    written: int = 0  # items created in Zotero
    updated: int = 0  # items given a new version
    unchanged: int = 0  # libraries that answered 304
    revoked: list[int] = field(default_factory=list)  # chats unlinked by a 403
    failed: list[int] = field(default_factory=list)  # chats whose round Zotero cut short


def _library(link: ZoteroLink) -> Library:
    return Library(link.kind, link.library_id)


class ZoteroSync:
    """Links chats to Zotero libraries and keeps both sides in step."""

    def __init__(self, storage: Storage, client: ZoteroClient, sealer: Sealer | None,
                 importer: LibraryImporter, clock: Clock, tell: Tell) -> None:
        self._storage = storage
        self._client = client
        self._sealer = sealer
        self._importer = importer
        self._clock = clock
        self._tell = tell

    @property
    def enabled(self) -> bool:
        """Whether the operator set SECRET_KEY (without it no key can be kept)."""
        return self._sealer is not None

    async def aclose(self) -> None:
        await self._client.aclose()

    # ------------------------------------------------------------------ linking

    async def link(self, chat_id: int, key: str, group_id: int | None = None) -> LinkResult:
        """Link the chat to the key's own library, or to group `group_id`'s."""
        if self._sealer is None:
            return LinkResult(LinkOutcome.OFF)
        hide(key)
        try:
            access = await self._client.key_access(key)
            library = (Library(ZoteroLibraryKind.GROUP, group_id) if group_id is not None
                       else Library(ZoteroLibraryKind.USER, access.user_id))
            if not access.reaches(library) or (
                    group_id is not None and not await self._client.library_reachable(
                        key, library)):
                return LinkResult(LinkOutcome.NO_LIBRARY)
        except KeyRejected:
            return LinkResult(LinkOutcome.KEY_REJECTED)
        except ZoteroError as exc:
            log.warning("could not check a Zotero key for chat %s: %s", chat_id, exc)
            return LinkResult(LinkOutcome.UNAVAILABLE)
        link = ZoteroLink(chat_id=chat_id, kind=library.kind, library_id=library.id,
                          sealed_key=self._sealer.seal(key), can_write=access.writes(library),
                          linked_at=self._clock.now())
        await self._storage.zotero.link(link)
        log.info("chat %s linked to Zotero library %s", chat_id, library.prefix)
        return LinkResult(LinkOutcome.LINKED, link)

    async def unlink(self, chat_id: int) -> bool:
        """Forget the chat's link and its key; False if it had none."""
        return await self._storage.zotero.unlink(chat_id)

    async def link_of(self, chat_id: int) -> ZoteroLink | None:
        return await self._storage.zotero.get(chat_id)

    async def saved(self, chat_id: int, arxiv_id: str) -> None:
        """The chat saved a paper: queue it for its Zotero library, if it has one it may
        write to (the next push writes it)."""
        await self._storage.zotero.queue_write(chat_id, arxiv_id, secrets.token_hex(16))

    def _key(self, link: ZoteroLink) -> str:
        assert self._sealer is not None
        key = self._sealer.open(link.sealed_key)
        hide(key)
        return key

    async def _revoked(self, link: ZoteroLink, report: SyncReport, reason: str) -> None:
        """The key no longer works: unlink, and tell the chat once."""
        if not await self._storage.zotero.unlink(link.chat_id):
            return  # unlinked meanwhile: told already, or asked for it
        report.revoked.append(link.chat_id)
        log.info("chat %s unlinked from Zotero: %s", link.chat_id, reason)
        chat = await self._storage.chats.get(link.chat_id)
        lang = chat.language if chat is not None else "en"
        await self._tell(link.chat_id, t(
            lang, "Zotero no longer accepts the key you linked (it was revoked or lost its "
            "access), so I unlinked your Zotero library and forgot the key. Your saved papers "
            "stay here. Send /zotero to link again."))

    async def _each(self, work: Callable[[ZoteroLink, str, SyncReport], Awaitable[None]],
                    links: list[ZoteroLink], report: SyncReport) -> SyncReport:
        if self._sealer is None:
            return report
        for link in links:
            try:
                key = self._key(link)
            except Unsealable:
                await self._revoked(link, report, "its key does not open with SECRET_KEY")
                continue
            try:
                await work(link, key, report)
            except KeyRejected as exc:
                await self._revoked(link, report, str(exc))
            except ZoteroError as exc:
                report.failed.append(link.chat_id)
                log.warning("Zotero sync of chat %s stopped: %s", link.chat_id, exc)
        return report

    # ------------------------------------------------------------------ from Zotero

    async def pull(self, chat_id: int | None = None, *, due_only: bool = False) -> SyncReport:
        """Read what changed in every linked library (or in one chat's); `due_only`: only
        those not read for a day (the job asks hourly, so a restart never reads twice)."""
        links = await self._links(chat_id)
        if due_only:
            now = self._clock.now()
            links = [link for link in links
                     if link.pulled_at is None or now - link.pulled_at >= PULL_EVERY]
        return await self._each(self._pull, links, SyncReport())

    async def _links(self, chat_id: int | None) -> list[ZoteroLink]:
        if chat_id is None:
            return await self._storage.zotero.links()
        link = await self._storage.zotero.get(chat_id)
        return [] if link is None else [link]

    async def _pull(self, link: ZoteroLink, key: str, report: SyncReport) -> None:
        chat_id, now = link.chat_id, self._clock.now()
        changes = await self._client.changes(key, _library(link), link.library_version)
        if changes is None:
            report.unchanged += 1
            await self._storage.zotero.pulled(chat_id, link.library_version, now)
            return
        items = await self._storage.zotero.items(chat_id)
        by_key = {item.item_key: item for item in items if item.item_key}
        recorded = {item.arxiv_id for item in items}
        gone = set(changes.deleted) | {data["key"] for data in changes.items if is_trashed(data)}
        dropped = [by_key[item_key] for item_key in gone if item_key in by_key]
        for item in dropped:
            if item.origin is ZoteroOrigin.ZOTERO and await self._storage.saved.remove(
                    chat_id, item.arxiv_id):
                report.removed += 1
        await self._storage.zotero.drop(chat_id, [item.arxiv_id for item in dropped])

        found: dict[str, tuple[str, int]] = {}
        for data in changes.items:
            if is_trashed(data) or data.get("key") in by_key:
                continue
            arxiv_id = arxiv_id_of_item(data)
            if arxiv_id is not None and arxiv_id.base not in recorded:
                found.setdefault(arxiv_id.base, (str(data["key"]), int(data.get("version", 0))))
        complete = True
        if found:
            complete = await self._save_found(chat_id, found, now, report)
        # Papers arXiv could not be asked for are read again tomorrow, from the same version.
        await self._storage.zotero.pulled(
            chat_id, changes.version if complete else link.library_version, now)

    async def _save_found(self, chat_id: int, found: dict[str, tuple[str, int]], now: float,
                          report: SyncReport) -> bool:
        """Save the papers Zotero's new items name; record where each began. False if arXiv
        could not be asked for some."""
        bases = list(found)
        before = await self._storage.saved.saved_among(chat_id, bases)
        imported = await self._importer.run(
            chat_id, ImportSource(SourceKind.ZOTERO, tuple(ArxivId(b) for b in bases)), now)
        after = await self._storage.saved.saved_among(chat_id, bases)
        report.added += imported.added
        await self._storage.zotero.record([
            ZoteroItem(chat_id, base, ZoteroOrigin.BOTH if base in before else ZoteroOrigin.ZOTERO,
                       item_key=found[base][0], item_version=found[base][1])
            for base in bases if base in after])
        return imported.unavailable == 0

    # ------------------------------------------------------------------ to Zotero

    async def push(self, chat_id: int | None = None) -> SyncReport:
        """Write queued saves and new versions to every linked library (or one chat's)."""
        links = [link for link in await self._links(chat_id) if link.can_write]
        return await self._each(self._push, links, SyncReport())

    async def _push(self, link: ZoteroLink, key: str, report: SyncReport) -> None:
        chat_id = link.chat_id
        queued = await self._storage.zotero.to_write(chat_id)
        outdated = await self._storage.zotero.outdated(chat_id)
        if not queued and not outdated:
            return
        library = _library(link)
        collection = link.collection_key
        if queued and collection is None:
            collection = await self._collection(link, key, library)
        for item in queued:
            paper = await self._storage.papers.get(item.arxiv_id)
            if paper is None:
                await self._storage.zotero.drop(chat_id, [item.arxiv_id])
                continue
            assert item.write_token is not None
            try:
                item_key, version = await self._client.create(
                    key, library, "items", preprint_item(paper, collection), item.write_token)
            except PreconditionFailed:
                # The token was used: an earlier try was written, its answer lost.
                earlier = await self._written_before(key, library, collection, item.arxiv_id)
                if earlier is None:  # not there after all: a new token, tried next round
                    await self._storage.zotero.drop(chat_id, [item.arxiv_id])
                    await self.saved(chat_id, item.arxiv_id)
                    continue
                item_key, version = earlier
            await self._storage.zotero.written(chat_id, item.arxiv_id, item_key, version,
                                               paper.version)
            report.written += 1
        for item, _latest in outdated:
            paper = await self._storage.papers.get(item.arxiv_id)
            if paper is None or item.item_key is None:
                continue
            try:
                version = await self._update(key, library, item, version_update(paper))
            except NotFound:  # deleted in Zotero since: nothing to update
                await self._storage.zotero.drop(chat_id, [item.arxiv_id])
                continue
            await self._storage.zotero.written(chat_id, item.arxiv_id, item.item_key, version,
                                               paper.version)
            report.updated += 1

    async def _update(self, key: str, library: Library, item: ZoteroItem,
                      changes: dict[str, str]) -> int:
        assert item.item_key is not None
        try:
            return await self._client.update_item(key, library, item.item_key,
                                                  item.item_version or 0, changes)
        except PreconditionFailed:  # edited in Zotero since: update the item as it is now
            current = await self._client.item(key, library, item.item_key)
            return await self._client.update_item(key, library, item.item_key,
                                                  int(current["version"]), changes)

    async def _collection(self, link: ZoteroLink, key: str, library: Library) -> str:
        """The "arXiv alerts" collection's key: found by name (a link made again), else
        created, once."""
        collection = await self._client.find_collection(key, library, COLLECTION_NAME)
        if collection is None:
            collection, _ = await self._client.create(
                key, library, "collections", {"name": COLLECTION_NAME, "parentCollection": False},
                secrets.token_hex(16))
        await self._storage.zotero.set_collection(link.chat_id, collection)
        return collection

    async def _written_before(self, key: str, library: Library, collection: str | None,
                              arxiv_id: str) -> tuple[str, int] | None:
        if collection is None:
            return None
        for data in await self._client.collection_items(key, library, collection):
            found = arxiv_id_of_item(data)
            if found is not None and found.base == arxiv_id:
                return str(data["key"]), int(data.get("version", 0))
        return None

"""Zotero links and items: `zotero_links` (one a chat, its key sealed) and `zotero_items`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from bot.core.models import ZoteroItem, ZoteroLibraryKind, ZoteroLink, ZoteroOrigin
from bot.storage.sqlite.db import Database


def _link(row: sqlite3.Row) -> ZoteroLink:
    return ZoteroLink(
        chat_id=row["chat_id"], kind=ZoteroLibraryKind(row["library_type"]),
        library_id=row["library_id"], sealed_key=row["sealed_key"],
        can_write=bool(row["can_write"]), linked_at=row["linked_at"],
        collection_key=row["collection_key"], library_version=row["library_version"],
        pulled_at=row["pulled_at"])


def _item(row: sqlite3.Row) -> ZoteroItem:
    return ZoteroItem(
        chat_id=row["chat_id"], arxiv_id=row["arxiv_id"], origin=ZoteroOrigin(row["origin"]),
        item_key=row["item_key"], item_version=row["item_version"],
        paper_version=row["paper_version"], write_token=row["write_token"])


class ZoteroRepository:
    """Reads and writes `zotero_links` and `zotero_items`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def link(self, link: ZoteroLink) -> None:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM zotero_items WHERE chat_id = ?", (link.chat_id,))
            await conn.execute("DELETE FROM zotero_links WHERE chat_id = ?", (link.chat_id,))
            await conn.execute(
                "INSERT INTO zotero_links (chat_id, library_type, library_id, sealed_key, "
                "can_write, collection_key, library_version, linked_at, pulled_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (link.chat_id, link.kind.value, link.library_id, link.sealed_key,
                 int(link.can_write), link.collection_key, link.library_version,
                 link.linked_at, link.pulled_at))

    async def get(self, chat_id: int) -> ZoteroLink | None:
        row = await self._db.fetchone("SELECT * FROM zotero_links WHERE chat_id = ?", (chat_id,))
        return None if row is None else _link(row)

    async def links(self) -> list[ZoteroLink]:
        return [_link(row) for row in await self._db.fetchall(
            "SELECT * FROM zotero_links ORDER BY chat_id")]

    async def unlink(self, chat_id: int) -> bool:
        async with self._db.transaction() as conn:
            await conn.execute("DELETE FROM zotero_items WHERE chat_id = ?", (chat_id,))
            cursor = await conn.execute("DELETE FROM zotero_links WHERE chat_id = ?",
                                        (chat_id,))
            return cursor.rowcount > 0

    async def set_collection(self, chat_id: int, collection_key: str) -> None:
        await self._db.execute("UPDATE zotero_links SET collection_key = ? WHERE chat_id = ?",
                               (collection_key, chat_id))

    async def pulled(self, chat_id: int, library_version: int, now: float) -> None:
        await self._db.execute(
            "UPDATE zotero_links SET library_version = ?, pulled_at = ? WHERE chat_id = ?",
            (library_version, now, chat_id))

    async def items(self, chat_id: int) -> list[ZoteroItem]:
        return [_item(row) for row in await self._db.fetchall(
            "SELECT * FROM zotero_items WHERE chat_id = ? ORDER BY arxiv_id", (chat_id,))]

    async def record(self, items: Sequence[ZoteroItem]) -> None:
        await self._db.executemany(
            "INSERT INTO zotero_items (chat_id, arxiv_id, origin, item_key, item_version, "
            "paper_version, write_token) VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (chat_id, arxiv_id) DO NOTHING",
            [(i.chat_id, i.arxiv_id, i.origin.value, i.item_key, i.item_version,
              i.paper_version, i.write_token) for i in items])

    async def queue_write(self, chat_id: int, arxiv_id: str, write_token: str) -> bool:
        return await self._db.execute(
            "INSERT INTO zotero_items (chat_id, arxiv_id, origin, write_token) "
            "SELECT ?, ?, 'bot', ? WHERE EXISTS "
            "(SELECT 1 FROM zotero_links WHERE chat_id = ? AND can_write = 1) "
            "ON CONFLICT (chat_id, arxiv_id) DO NOTHING",
            (chat_id, arxiv_id, write_token, chat_id)) > 0

    async def to_write(self, chat_id: int) -> list[ZoteroItem]:
        return [_item(row) for row in await self._db.fetchall(
            "SELECT * FROM zotero_items WHERE chat_id = ? AND item_key IS NULL "
            "ORDER BY arxiv_id", (chat_id,))]

    async def written(self, chat_id: int, arxiv_id: str, item_key: str, item_version: int,
                      paper_version: int) -> None:
        await self._db.execute(
            "UPDATE zotero_items SET item_key = ?, item_version = ?, paper_version = ?, "
            "write_token = NULL WHERE chat_id = ? AND arxiv_id = ?",
            (item_key, item_version, paper_version, chat_id, arxiv_id))

    async def outdated(self, chat_id: int) -> list[tuple[ZoteroItem, int]]:
        rows = await self._db.fetchall(
            "SELECT z.*, p.latest_version AS latest FROM zotero_items z "
            "JOIN papers p ON p.arxiv_id = z.arxiv_id "
            "WHERE z.chat_id = ? AND z.origin = 'bot' AND z.item_key IS NOT NULL "
            "AND p.latest_version > z.paper_version ORDER BY z.arxiv_id", (chat_id,))
        return [(_item(row), row["latest"]) for row in rows]

    async def drop(self, chat_id: int, arxiv_ids: Iterable[str]) -> None:
        ids = list(arxiv_ids)
        if not ids:
            return
        async with self._db.transaction() as conn:
            await conn.executemany(
                "DELETE FROM zotero_items WHERE chat_id = ? AND arxiv_id = ?",
                [(chat_id, arxiv_id) for arxiv_id in ids])

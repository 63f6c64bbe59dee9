"""Hugging Face community picks: the daily list's papers with upvotes and code links."""

from __future__ import annotations

from collections.abc import Sequence

from bot.core.models import CommunityPick
from bot.storage.sqlite.db import Database, in_chunks

_COLUMNS = ("arxiv_id, listed_on, title, upvotes, comments, github_repo, github_stars, "
            "project_page")


class CommunityRepository:
    """Reads and writes `community_picks`."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def upsert(self, picks: Sequence[CommunityPick], now: float) -> int:
        """Store the picks (a paper listed again keeps its first-seen time); returns how
        many were not known before."""
        if not picks:
            return 0
        known = await self.get_many([p.arxiv_id for p in picks])
        async with self._db.transaction() as conn:
            await conn.executemany(
                f"""
                INSERT INTO community_picks ({_COLUMNS}, first_seen_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (arxiv_id) DO UPDATE SET
                    listed_on = CASE WHEN excluded.listed_on > community_picks.listed_on
                                 THEN excluded.listed_on ELSE community_picks.listed_on END,
                    title = excluded.title, upvotes = excluded.upvotes,
                    comments = excluded.comments, github_repo = excluded.github_repo,
                    github_stars = excluded.github_stars, project_page = excluded.project_page,
                    updated_at = excluded.updated_at
                """,
                [(p.arxiv_id, p.listed_on, p.title, p.upvotes, p.comments, p.github_repo,
                  p.github_stars, p.project_page, now, now) for p in picks],
            )
        return sum(1 for p in picks if p.arxiv_id not in known)

    async def get(self, arxiv_id: str) -> CommunityPick | None:
        row = await self._db.fetchone(
            f"SELECT {_COLUMNS} FROM community_picks WHERE arxiv_id = ?", (arxiv_id,))
        return None if row is None else CommunityPick(**dict(row))

    async def get_many(self, arxiv_ids: Sequence[str]) -> dict[str, CommunityPick]:
        found: dict[str, CommunityPick] = {}
        for chunk, marks in in_chunks(arxiv_ids):
            rows = await self._db.fetchall(
                f"SELECT {_COLUMNS} FROM community_picks WHERE arxiv_id IN ({marks})", chunk)
            found.update({row["arxiv_id"]: CommunityPick(**dict(row)) for row in rows})
        return found

    async def latest_day(self) -> list[CommunityPick]:
        """The most recent day's list, most upvoted first."""
        rows = await self._db.fetchall(
            f"""
            SELECT {_COLUMNS} FROM community_picks
            WHERE listed_on = (SELECT MAX(listed_on) FROM community_picks)
            ORDER BY upvotes DESC, arxiv_id
            """)
        return [CommunityPick(**dict(row)) for row in rows]

    async def count_since(self, since: float) -> int:
        """Papers that reached the list since `since` (first seen there)."""
        return int(await self._db.fetchval(
            "SELECT COUNT(*) FROM community_picks WHERE first_seen_at >= ?", (since,)))

    async def prune(self, before: float) -> int:
        return await self._db.execute(
            "DELETE FROM community_picks WHERE updated_at < ?", (before,))

"""The Mini App's pages: what each shows, read from the services, and each change, written
through the same services the chat commands call (so `/list`, `/saved` and the settings
commands see it at once, and both edges keep the same rules).

Each method returns the template to render and its values; the server adds the language.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.core.i18n import SUPPORTED_LANGUAGES, t, tn
from bot.core.models import (
    GENERAL,
    MAX_SUBSCRIPTIONS_PER_CHAT,
    Chat,
    DeliveryMode,
    FollowStatus,
)
from bot.core.text import escape
from bot.delivery.latex import latex_to_unicode
from bot.delivery.render import saver_name, shorten_authors
from bot.delivery.schedule import canonical_zone, local_time, parse_hhmm
from bot.library.groups import Removal
from bot.query.text import normalise_input
from bot.services.chats import FOR_YOU_MAX_COUNT
from bot.services.container import Services
from bot.web import chart, shelf
from bot.web.access import Viewer

LIBRARY_PAGE = 50  # rows listed at first; "Show more" adds as many again
MAX_QUERY_INPUT = 300  # as a chat command's argument
CHART_DAYS = 14

Values = dict[str, Any]


class NotAllowed(Exception):
    """A change the chat's rules reserve to the group's administrators (403)."""


class BadRequest(Exception):
    """A request the pages cannot read (400)."""


@dataclass(frozen=True, slots=True)
class Rendered:
    template: str
    values: Values = field(default_factory=dict)


def clean_input(text: str) -> str | None:
    """Typed text as the chat commands read it: invisible marks dropped, full-width forms as
    ASCII (NFKC), whitespace collapsed; None when control characters remain or it is too
    long."""
    stripped = "".join(ch for ch in text if unicodedata.category(ch) != "Cf")
    if len(stripped) > MAX_QUERY_INPUT or any(
            unicodedata.category(ch) == "Cc" and ch not in "\t\n\r" for ch in stripped):
        return None
    return " ".join(normalise_input(stripped).split())


def plain(text: str | None) -> str:
    """A title or name as alerts show it: LaTeX as Unicode."""
    return latex_to_unicode(text or "")


class Pages:
    def __init__(self, services: Services) -> None:
        self._services = services

    async def chat(self, viewer: Viewer) -> Chat | None:
        """The chat's record; a private chat the bot has no record of yet is recorded (its
        user opened the bot's Mini App, which is a sign of life like a first message)."""
        chats = self._services.chats
        record = await chats.get(viewer.chat_id)
        if record is None and not viewer.group:
            record, _ = await chats.seen(viewer.chat_id, "private", viewer.first_name,
                                         viewer.telegram_language, None)
        return record

    def _require_admin(self, viewer: Viewer) -> None:
        # The chat's rule (chat/handlers/common.may_change_settings): in groups only the
        # administrators change subscriptions and settings.
        if viewer.group and not viewer.admin:
            raise NotAllowed

    # -- front page -------------------------------------------------------------------------

    async def front(self, viewer: Viewer, record: Chat | None) -> Rendered:
        services = self._services
        zone = record.timezone if record else "UTC"
        stats = await services.overview.stats(viewer.chat_id)
        days = await services.overview.days(viewer.chat_id, CHART_DAYS)
        feeds = []
        for feed in stats.feeds:
            source = feed.source
            feeds.append({
                "name": source.url.rstrip("/").rsplit("/", 1)[-1],
                "scanned": local_time(source.last_success_at, zone, "%m-%d %H:%M")
                if source.last_success_at else None,
                "state": source.state.freshness.value
                if feed.on_arxiv_calendar and source.state.freshness else None,
                "stale_since": local_time(source.state.stale_since, zone, "%m-%d %H:%M")
                if source.state.stale_since else None,
                "expected": source.state.expected_on.isoformat()
                if source.state.expected_on else None,
                "healthy": source.healthy,
            })
        return Rendered("front.html", {
            "stats": stats, "feeds": feeds, "chart": chart.draw(days, zone), "zone": zone,
            "last_scan": max((f.source.last_success_at for f in stats.feeds
                              if f.source.last_success_at), default=None),
            "local_time": lambda when: local_time(when, zone, "%Y-%m-%d %H:%M"),
            "guides": services.features.guides, "trending": services.features.trending,
        })

    # -- library ----------------------------------------------------------------------------

    async def library(self, viewer: Viewer, record: Chat | None,
                      get: Mapping[str, str]) -> Rendered:
        """The first rows of the selection (LIBRARY_PAGE, or `shown` after "Show more"): the
        storage engine searches, filters, sorts and counts; only the rows shown are read."""
        library = self._services.library
        selection = shelf.Selection.from_arguments(get)
        shown = get.get("shown", "")
        limit = min(int(shown), 5000) if shown.isdecimal() and len(shown) < 6 else LIBRARY_PAGE
        found = await library.select(viewer.chat_id, selection.library_query(limit))
        facets = await library.facets(viewer.chat_id)
        labels = await library.labels(viewer.chat_id)
        lang = record.language if record else viewer.telegram_language
        rows = [{
            "id": e.paper.arxiv_id, "version": e.paper.version, "title": plain(e.paper.title),
            "authors": shorten_authors([plain(a) for a in e.paper.authors], lang=lang),
            "category": e.paper.categories[0] if e.paper.categories else "",
            "updated": e.paper.updated.strftime("%Y-%m-%d") if e.paper.updated else "",
            "published": e.paper.published.strftime("%Y-%m-%d") if e.paper.published else "",
            "label": labels.get(e.paper.arxiv_id),
            "saver": e.saver.first_name if e.saver is not None else None,
        } for e in found.entries]
        part = "_library_results.html" if get.get("part") == "results" else "library.html"
        return Rendered(part, {
            "selection": selection, "arguments": selection.arguments(), "rows": rows,
            "total": facets.total, "matching": found.matching,
            "more": found.matching > len(rows), "next_shown": limit + LIBRARY_PAGE,
            "categories": facets.categories, "savers": facets.savers,
        })

    async def bibtex(self, viewer: Viewer, get: Mapping[str, str]) -> Rendered:
        selection = shelf.Selection.from_arguments(get)
        found = await self._services.library.select(viewer.chat_id, selection.library_query())

        async def written(done: int) -> None:
            return None

        text = await self._services.library.bibtex([e.paper for e in found.entries], written)
        return Rendered("bibtex.html", {"text": text, "count": len(found.entries)})

    async def paper(self, viewer: Viewer, record: Chat | None, arxiv_id: str,
                    notice: str | None = None) -> Rendered:
        services = self._services
        lang = record.language if record else viewer.telegram_language
        found = await services.papers.stored(arxiv_id)
        if found is None:
            raise BadRequest
        card = await services.papers.full_card(viewer.chat_id, lang, found)
        saved = await services.library.is_saved(viewer.chat_id, found.arxiv_id)
        return Rendered("paper.html", {
            "paper": found, "card": card.text, "saved": saved, "notice": notice,
            "abs_url": f"https://arxiv.org/abs/{found.arxiv_id}v{found.version}",
            "pdf_url": f"https://arxiv.org/pdf/{found.arxiv_id}v{found.version}",
        })

    async def save(self, viewer: Viewer, record: Chat | None, arxiv_id: str) -> Rendered:
        lang = record.language if record else viewer.telegram_language
        found = await self._services.papers.stored(arxiv_id)
        if found is None:
            raise BadRequest
        await self._services.library.save(viewer.chat_id, found.arxiv_id, found.version,
                                          viewer.member)
        return await self.paper(viewer, record, found.arxiv_id,
                                t(lang, "Saved to your library ✓"))

    async def unsave(self, viewer: Viewer, record: Chat | None, arxiv_id: str) -> Rendered:
        lang = record.language if record else viewer.telegram_language

        async def is_admin() -> bool:
            return viewer.admin

        removal = await self._services.library.remove(viewer.chat_id, arxiv_id,
                                                      viewer.member, is_admin)
        if removal.outcome is Removal.REFUSED:
            notice = (t(lang, "Only {name}, who saved this paper, and the group's "
                              "administrators can remove it.",
                        name=escape(saver_name(removal.saver.first_name)))
                      if removal.saver is not None else
                      t(lang, "Only the group's administrators can remove this paper."))
        else:
            notice = t(lang, "Removed from your library")
        return await self.paper(viewer, record, arxiv_id, notice)

    # -- subscriptions ----------------------------------------------------------------------

    async def subscriptions(self, viewer: Viewer, record: Chat | None,
                            notice: str | None = None, error: Values | None = None,
                            typed: str = "", editing: int | None = None) -> Rendered:
        services = self._services
        zone = record.timezone if record else "UTC"
        subs = await services.subscriptions.for_chat(viewer.chat_id)
        week = await services.previews.by_day(subs, zone)
        topics = await services.topics.names(viewer.chat_id) if viewer.group else {}
        edited = next((sub for sub in subs if sub.id == editing), None)
        if edited is not None and not typed:
            typed = edited.display
        return Rendered("subscriptions.html", {
            "subs": [{"sub": sub, "days": week.counts.get(sub.id, ()),
                      "week": sum(week.counts.get(sub.id, ())),
                      "topic": topics.get(sub.topic_id) if sub.topic_id != GENERAL else None}
                     for sub in subs],
            "days": [d.strftime("%a") for d in week.days], "limit": MAX_SUBSCRIPTIONS_PER_CHAT,
            "notice": notice, "error": error, "typed": typed,
            "editing": edited.id if edited else None,
            "editing_number": edited.number if edited else None,
            "topics": sorted(topics.items()), "may_change": not viewer.group or viewer.admin,
            "forum": bool(topics) or any(s.topic_id != GENERAL for s in subs),
        })

    async def preview(self, viewer: Viewer, record: Chat | None, typed: str) -> Rendered:
        lang = record.language if record else viewer.telegram_language
        query = clean_input(typed)
        if query is None:
            return Rendered("preview.html", {"problem": t(
                lang, "That is too long or contains control characters.")})
        if not query:
            return Rendered("preview.html", {})
        found = await self._services.previews.query(query)
        error = _parse_error(lang, query, found.error) if found.error else None
        return Rendered("preview.html", {
            "error": error, "matches": found.matches, "cjk": found.cjk_terms,
            "first": [{"id": p.arxiv_id, "title": plain(p.title)} for p in found.first],
        })

    async def follow(self, viewer: Viewer, record: Chat | None, typed: str,
                     replacing: int | None) -> Rendered:
        """Add a query; with `replacing`, the subscription it replaces is removed once the
        new one is added (an edit: the new query goes to the end of the list)."""
        self._require_admin(viewer)
        lang = record.language if record else viewer.telegram_language
        service = self._services.subscriptions
        query = clean_input(typed)
        if not query:
            return await self.subscriptions(viewer, record, typed=typed, editing=replacing,
                                            error={"reason": t(lang, "Type a query first.")})
        result = await service.follow(viewer.chat_id, query, GENERAL)
        # At the limit an edit makes room first: the query parsed, so only the one it
        # replaces goes.
        if (result.status is FollowStatus.LIMIT and replacing is not None
                and await service.unfollow_id(viewer.chat_id, replacing) is not None):
            result = await service.follow(viewer.chat_id, query, GENERAL)
        if result.status is FollowStatus.INVALID and result.error is not None:
            return await self.subscriptions(viewer, record, typed=query, editing=replacing,
                                            error=_parse_error(lang, query, result.error))
        if result.status is FollowStatus.LIMIT:
            return await self.subscriptions(viewer, record, typed=query, error={"reason": t(
                lang, "This chat already has {limit} subscriptions, the most it can have. "
                "Remove one with /unfollow first.", limit=MAX_SUBSCRIPTIONS_PER_CHAT)})
        sub = result.subscription
        assert sub is not None
        if result.status is FollowStatus.DUPLICATE:
            notice = t(lang, "You already follow that, as #{number}: <code>{query}</code>",
                       number=sub.number, query=escape(sub.display))
        else:
            if replacing is not None and replacing != sub.id:
                await service.unfollow_id(viewer.chat_id, replacing)
            notice = t(lang, "✅ Following #{number}: <code>{query}</code>\n{preview}",
                       number=sub.number, query=escape(sub.display), preview=tn(
                           lang, "In the last 7 days it would have matched {count} paper.",
                           "In the last 7 days it would have matched {count} papers.",
                           result.preview_matches))
        return await self.subscriptions(viewer, record, notice=notice)

    async def unfollow(self, viewer: Viewer, record: Chat | None, sub_id: int) -> Rendered:
        self._require_admin(viewer)
        lang = record.language if record else viewer.telegram_language
        removed = await self._services.subscriptions.unfollow_id(viewer.chat_id, sub_id)
        notice = (t(lang, "That subscription is already gone.") if removed is None
                  else t(lang, "Removed: {query}", query=escape(removed.display)))
        return await self.subscriptions(viewer, record, notice=notice)

    async def move(self, viewer: Viewer, record: Chat | None, sub_id: int,
                   topic_id: int) -> Rendered:
        self._require_admin(viewer)
        lang = record.language if record else viewer.telegram_language
        services = self._services
        subs = await services.subscriptions.for_chat(viewer.chat_id)
        names = await services.topics.names(viewer.chat_id)
        sub = next((s for s in subs if s.id == sub_id), None)
        if sub is None or (topic_id != GENERAL and topic_id not in names):
            raise BadRequest
        await services.subscriptions.move(viewer.chat_id, sub.number, topic_id)
        where = names.get(topic_id) if topic_id != GENERAL else t(lang, "General")
        return await self.subscriptions(viewer, record, notice=t(
            lang, "Moved #{number} <code>{query}</code> to {topic}.", number=sub.number,
            query=escape(sub.display), topic=escape(where or "")))

    # -- settings ---------------------------------------------------------------------------

    async def settings(self, viewer: Viewer, record: Chat | None,
                       notice: str | None = None, problem: str | None = None) -> Rendered:
        services = self._services
        zone = record.timezone if record else "UTC"
        digest = (record.digest_time if record and record.delivery_mode == DeliveryMode.DIGEST
                  else None)
        return Rendered("settings.html", {
            "digest": digest, "zone": zone, "language": record.language if record else
            viewer.telegram_language, "languages": SUPPORTED_LANGUAGES,
            "paused": bool(record and record.paused),
            "rating_buttons": record is None or record.rating_buttons,
            "for_you": await services.chats.for_you(viewer.chat_id),
            "for_you_max": FOR_YOU_MAX_COUNT, "notice": notice, "problem": problem,
            "now": local_time(services.clock.now(), zone, "%H:%M"),
            "may_change": not viewer.group or viewer.admin,
        })

    async def change_setting(self, viewer: Viewer, record: Chat | None,
                             form: Mapping[str, str]) -> tuple[Rendered, Chat | None]:
        """One setting from the settings page's forms; the page again, and the chat's record
        as it now is (a new language shows at once)."""
        self._require_admin(viewer)
        chats, chat_id = self._services.chats, viewer.chat_id
        lang = record.language if record else viewer.telegram_language
        name, value = form.get("setting", ""), form.get("value", "").strip()
        notice = problem = None
        if name == "digest":
            if value.lower() in ("", "off"):
                await chats.set_digest(chat_id, None)
                notice = t(lang, "Instant alerts are back on.")
            elif (when := parse_hhmm(value)) is not None:
                await chats.set_digest(chat_id, when)
                notice = t(lang, "🗞 One daily digest at {time} ({zone}).", time=when,
                           zone=record.timezone if record else "UTC")
            else:
                problem = t(lang, "Please give a time as HH:MM, for example 08:00.")
        elif name == "tz":
            zone = canonical_zone(value[:60])
            if zone is None:
                problem = t(lang, "I don't know the time zone “{zone}”. Use an IANA name such "
                                  "as Asia/Shanghai, America/New_York or UTC.",
                            zone=escape(value[:60]))
            else:
                await chats.set_timezone(chat_id, zone)
                notice = t(lang, "🕗 Time zone set to {zone} (now {time} there).", zone=zone,
                           time=local_time(self._services.clock.now(), zone, "%H:%M"))
        elif name == "lang" and value in SUPPORTED_LANGUAGES:
            record = await chats.set_language(chat_id, value)
            notice = t(value, "Language set to English.")
        elif name == "foryou" and value in ("on", "off"):
            if value == "off":
                await chats.for_you_off(chat_id)
                notice = t(lang, "For you is off.")
            else:
                count = form.get("count", "")
                number = (int(count) if count.isdecimal() and 1 <= int(count) <= FOR_YOU_MAX_COUNT
                          else None)
                on = await chats.for_you_on(chat_id, number)
                notice = tn(lang, "✨ For you is on: up to {count} paper a day.",
                            "✨ For you is on: up to {count} papers a day.", on.count)
        elif name == "thumbs" and value in ("on", "off"):
            await chats.set_rating_buttons(chat_id, value == "on")
            notice = (t(lang, "👍 / 👎 buttons are back under new alerts.") if value == "on" else
                      t(lang, "New alerts come without 👍 / 👎 buttons; rate them by reaction."))
        elif name == "pause":
            await chats.pause(chat_id)
            notice = t(lang, "⏸ Alerts paused. I keep collecting matches; /resume delivers them.")
        elif name == "resume":
            waiting = await chats.resume(chat_id)
            notice = tn(lang, "▶️ Alerts resumed. {count} match from the pause is on its way.",
                        "▶️ Alerts resumed. {count} matches from the pause are on their way.",
                        waiting) if waiting else t(lang, "▶️ Alerts resumed.")
        else:
            raise BadRequest
        record = await chats.get(chat_id)
        return await self.settings(viewer, record, notice, problem), record


def _parse_error(lang: str, query: str, error: Any) -> Values:
    """The parser's own message, with where it is in the query."""
    return {"reason": t(lang, error.template, **error.values), "query": query,
            "pointer": " " * max(error.position - 1, 0) + "^"}


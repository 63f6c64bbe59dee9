"""/stats, an arXiv tracker's front page for the chat, and /status for operators."""

from __future__ import annotations

from telegram import Update

from bot import __version__
from bot.chat.context import BotContext
from bot.chat.handlers.common import reply, with_webapp_button
from bot.core.i18n import t, tn
from bot.core.models import Freshness, Source
from bot.core.text import duration, escape
from bot.delivery.schedule import local_time
from bot.ranking.model import MIN_POSITIVES
from bot.ranking.service import RankerStatus
from bot.services.overview import Announced, Stats, Status


def age(lang: str, seconds: float) -> str:
    """How long ago: 'just now', '3 min ago', '2 h ago'."""
    if seconds < 60:
        return t(lang, "just now")
    return t(lang, "{duration} ago", duration=duration(lang, seconds))


def source_name(url: str) -> str:
    """The feed's archives/categories, which is what an operator recognises."""
    return url.rstrip("/").rsplit("/", 1)[-1]


def freshness(lang: str, source: Source, zone: str) -> str:
    """The source against arXiv's calendar: quiet, fresh, waiting, stale or filled."""
    state = source.state
    expected = state.expected_on.isoformat() if state.expected_on else "—"
    since = local_time(state.stale_since, zone, "%Y-%m-%d %H:%M") if state.stale_since else "—"
    match state.freshness:
        case Freshness.QUIET:
            return t(lang, "quiet (no announcement due)")
        case Freshness.FRESH:
            return t(lang, "fresh")
        case Freshness.WAITING:
            return t(lang, "waiting for the {date} announcement", date=expected)
        case Freshness.STALE:
            return t(lang, "stale since {time}, expected {date}", time=since, date=expected)
        case Freshness.FILLED:
            return t(lang, "stale since {time}, expected {date}; filled from the listing",
                     time=since, date=expected)
    return t(lang, "not checked yet")


def freshness_line(lang: str, source: Source, zone: str) -> str:
    """State, last announcement seen, when the feed last changed, when it was last checked."""
    state = source.state
    when = "%m-%d %H:%M"
    return t(
        lang, "    {state} · announcement {date} · feed changed {changed} · checked {checked}",
        state=freshness(lang, source, zone),
        date=state.announced_on.isoformat() if state.announced_on else "—",
        changed=local_time(state.changed_at, zone, when) if state.changed_at else "—",
        checked=local_time(source.last_attempt_at, zone, when)
        if source.last_attempt_at else "—",
    )


def source_mark(source: Source, failed: str) -> str:
    if source.state.freshness is Freshness.STALE:
        return "⚠️"
    return "✅" if source.healthy else failed


def _announced(lang: str, counts: Announced) -> str:
    """"+12 new papers, +3 revisions (5 AI-related)", each count with its own plural."""
    return t(lang, "{new}, {revised} ({ai:,} AI-related)",
             new=tn(lang, "<b>+{count:,}</b> new paper", "<b>+{count:,}</b> new papers",
                    counts.new),
             revised=tn(lang, "<b>+{count:,}</b> revision", "<b>+{count:,}</b> revisions",
                        counts.revised),
             ai=counts.ai)


async def stats(update: Update, context: BotContext) -> None:
    """Papers and revisions of the last 24 h and 7 d, last scans, and this chat's numbers."""
    figures = await context.services.overview.stats(update.effective_chat.id)
    record = context.chat_record
    await reply(update, context, render_stats(figures, context.lang,
                                              record.timezone if record else "UTC"),
                reply_markup=with_webapp_button(update, context, "front", None))


def render_stats(figures: Stats, lang: str, zone: str) -> str:
    now = figures.now
    lines = [
        t(lang, "📊 <b>arXiv at a glance</b>"),
        t(lang, "Last 24 h: {counts}", counts=_announced(lang, figures.day)),
        t(lang, "Last 7 days: {counts}", counts=_announced(lang, figures.week)),
        t(lang, "AI reading guides: <b>+{count:,}</b> in 24 h", count=figures.guides_day),
        t(lang, "HF community picks: <b>+{day:,}</b> in 24 h, <b>+{week:,}</b> in 7 days",
          day=figures.picks_day, week=figures.picks_week),
        "",
    ]
    if not figures.feeds:
        lines.append(t(lang, "No scan has run yet."))
    for feed in figures.feeds:
        source = feed.source
        if source.last_success_at is None:
            lines.append(t(lang, "{mark} {name}: no successful scan yet", mark="⚠️",
                           name=escape(source_name(source.url))))
            continue
        lines.append(t(
            lang, "{mark} {name}: last scan {time} ({age})",
            mark=source_mark(source, "⚠️"), name=escape(source_name(source.url)),
            time=local_time(source.last_success_at, zone, "%H:%M"),
            age=age(lang, now - source.last_success_at),
        ))
        if feed.on_arxiv_calendar:
            lines.append(freshness_line(lang, source, zone))
    chat = figures.chat
    lines += [
        "",
        t(lang, "<b>This chat</b>: {matches}, {week} in 7 days · {saved} saved · "
                "{subscriptions}",
          matches=tn(lang, "{count} match in 24 h", "{count} matches in 24 h",
                     chat.matches_day),
          week=chat.matches_week, saved=chat.saved,
          subscriptions=tn(lang, "{count} subscription", "{count} subscriptions",
                           chat.subscriptions)),
        _ranking_line(lang, chat.ranking),
    ]
    return "\n".join(lines)


def _ranking_line(lang: str, ranking: RankerStatus) -> str:
    """How many labels the chat gave and whether its ranker is on."""
    labels = tn(lang, "{count} label", "{count} labels", ranking.labels)
    if ranking.active:
        return t(lang, "🎯 Ranking: {labels} · your model is active", labels=labels)
    return t(lang, "🎯 Ranking: {labels} · the model starts at {minimum} saved or 👍 papers "
                   "({missing} to go)", labels=labels, minimum=MIN_POSITIVES,
             missing=MIN_POSITIVES - ranking.positives)


async def status(update: Update, context: BotContext) -> None:
    """Operators only: sources' health, the queue, chats, subscriptions, size, uptime."""
    user = update.effective_user
    if not context.settings.is_operator(user.id if user else None, update.effective_chat.id):
        await reply(update, context, t(context.lang,
                                       "Sorry, /status is for the bot's operators only."))
        return
    figures = await context.services.overview.status()
    await reply(update, context, render_status(figures, context.lang))


def render_status(figures: Status, lang: str) -> str:
    now = figures.now
    lines = [t(lang, "🛠 <b>Status</b> — version {version}, up {uptime}",
               version=__version__, uptime=duration(lang, figures.uptime)),
             ""]
    if not figures.feeds:
        lines.append(t(lang, "No source polled yet."))
    for feed in figures.feeds:
        source = feed.source
        mark = source_mark(source, "❌")
        last = (local_time(source.last_success_at, "UTC", "%Y-%m-%d %H:%M UTC") + " · "
                + age(lang, now - source.last_success_at)) if source.last_success_at else "—"
        lines.append(f"{mark} <code>{escape(source_name(source.url))}</code>")
        lines.append(t(lang, "    last success: {last}; failures in a row: {failures}; "
                             "items last fetch: {items}",
                       last=last, failures=source.consecutive_failures,
                       items=source.last_items if source.last_items is not None else "—"))
        if feed.on_arxiv_calendar:
            lines.append(freshness_line(lang, source, "UTC"))
        if source.last_error:
            lines.append(t(lang, "    last error: {error}", error=escape(source.last_error[:300])))
        if source.state.listing_error:
            lines.append(t(lang, "    listing: {error}",
                           error=escape(source.state.listing_error[:300])))
    health = figures.health
    for beat_age, label in ((health.arxiv, t(lang, "Last successful arXiv poll")),
                             (health.telegram, t(lang, "Last successful Telegram call"))):
        seen = beat_age.age(now)
        lines.append(t(
            lang, "{mark} {label}: {age} (limit {limit})",
            mark="❌" if beat_age.stale(now) else "✅", label=label,
            age=t(lang, "never") if seen is None else age(lang, seen),
            limit=duration(lang, beat_age.limit),
        ))
    lines += [
        "",
        t(lang, "Outbox: {pending} pending, {sending} being sent, {held} held, {expired} "
                "expired, {failed} failed, {sent} sent", **figures.outbox),
    ]
    if figures.last_failure is not None:
        lines.append(t(lang, "    last failed alert: {error}",
                       error=escape(figures.last_failure[:300])))
    if (paid := figures.paid) is not None:
        lines.append(t(lang, "Paid broadcasts today (UTC): {stars:,.1f} of {budget:,} Stars",
                       stars=paid.stars, budget=paid.budget_stars))
        if paid.refused:
            lines.append(t(lang, "    Telegram refused one for the Stars balance: free pace "
                                 "until midnight UTC"))
    lines += [
        t(lang, "Chats: {active} active, {inactive} inactive, {paused} paused", **figures.chats),
        t(lang, "Subscriptions: {count}", count=figures.subscriptions),
        t(lang, "Papers stored: {count:,}", count=figures.papers),
        t(lang, "Database: {size:.1f} MB", size=figures.size_bytes / 1_000_000),
    ]
    return "\n".join(lines)

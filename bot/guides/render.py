"""Pure rendering of AI reading guides and of the replies when none can be written."""

from __future__ import annotations

from bot.core.i18n import t
from bot.core.models import Guide, Paper
from bot.core.text import escape
from bot.delivery.latex import latex_to_unicode
from bot.delivery.render import truncate_at_word
from bot.guides.service import Failure, Refusal


def render_writing(paper: Paper, lang: str) -> str:
    """The placeholder shown while the guide is being written (then edited into it)."""
    return "🧠 " + escape(t(lang, "Writing the guide for arXiv:{id}…", id=paper.versioned_id))


def render_guide(paper: Paper, guide: Guide, lang: str) -> str:
    """The guide: heading, title, at most five lines, and where it comes from."""
    title = truncate_at_word(latex_to_unicode(paper.title), 200)
    lines = [
        "🧠 <b>" + escape(t(lang, "Reading guide"))
        + f"</b> · <code>arXiv:{escape(paper.versioned_id)}</code>",
        f"<b>{escape(title)}</b>",
        "",
        *(escape(line) for line in guide.text.splitlines()),
        "",
        "<i>" + escape(t(lang, "Written by AI ({model}) from the abstract only; check the paper "
                           "before relying on it.", model=truncate_at_word(guide.model, 60)))
        + "</i>",
    ]
    return "\n".join(lines)


def render_failure(failure: Failure, lang: str) -> str:
    """What the user reads when the endpoint gave no guide (nothing was cached)."""
    match failure:
        case Failure.BUSY:
            text = t(lang, "The guide writer is busy right now. Please try again in a minute.")
        case Failure.TIMEOUT:
            text = t(lang, "The guide writer did not answer within 30 seconds. Please try "
                           "again later.")
        case Failure.MALFORMED:
            text = t(lang, "The guide writer sent an answer I could not read. Please try "
                           "again later.")
        case Failure.EMPTY:
            text = t(lang, "The guide writer sent an empty answer. Please try again later.")
        case _:
            text = t(lang, "The guide writer failed. Please try again later.")
    return "⚠️ " + escape(text)


def render_refusal(refusal: Refusal, limit: int, lang: str) -> str:
    """Past a daily budget: what is used up, and that cached guides still work."""
    if refusal == Refusal.CHAT_BUDGET:
        text = t(lang, "This chat has used its {limit} new guides for the last 24 hours. "
                       "Guides already written still open; please try again later.", limit=limit)
    else:
        text = t(lang, "The bot has written all the guides it may in the last 24 hours. "
                       "Guides already written still open; please try again later.")
    return "⏳ " + escape(text)

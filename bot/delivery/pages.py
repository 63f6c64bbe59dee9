"""Pure rendering of the paged saved library."""

from __future__ import annotations

from collections.abc import Sequence

from telegram import InlineKeyboardButton, InlineKeyboardMarkup

from bot.core.i18n import t
from bot.core.models import ArxivId, LibraryEntry
from bot.core.text import escape, escape_attribute
from bot.delivery import callbacks
from bot.delivery.latex import latex_to_unicode
from bot.delivery.render import (
    RenderedMessage,
    saved_by_line,
    shorten_authors,
    truncate_at_word,
)

PAGE_SIZE = 5


def page_count(total: int) -> int:
    return max(1, -(-total // PAGE_SIZE))


def render_saved_page(entries: Sequence[LibraryEntry], *, page: int, total: int,
                      lang: str = "en") -> RenderedMessage:
    """One page of the library: numbered papers (in a group, who saved each), a remove button
    each, ◀ page/pages ▶."""
    pages = page_count(total)
    if total == 0:
        text = t(lang, "Your library is empty. Tap <b>Save</b> under any paper to keep it here.")
        return RenderedMessage(text, InlineKeyboardMarkup([]))
    lines = [t(lang, "<b>Your library</b> — {total} saved, page {page}/{pages}",
               total=total, page=page, pages=pages), ""]
    remove_row, similar_row = [], []
    first_number = (page - 1) * PAGE_SIZE + 1
    for number, entry in enumerate(entries, start=first_number):
        paper = entry.paper
        title = escape(truncate_at_word(latex_to_unicode(paper.title), 200))
        authors = escape(shorten_authors(paper.authors, 2, lang=lang)[:150])
        saver = f" · {saved_by_line(entry.saver.first_name, lang)}" if entry.saver else ""
        lines.append(f"{number}. <b>{title}</b>\n    {authors} · "
                     f"<a href=\"{escape_attribute(paper.abs_url)}\">arXiv:{escape(paper.arxiv_id)}"
                     f"</a>{saver}")
        remove_row.append(InlineKeyboardButton(
            t(lang, "✖ {number}", number=number),
            callback_data=callbacks.encode(
                callbacks.RemoveSaved(ArxivId(paper.arxiv_id), page)),
        ))
        similar_row.append(InlineKeyboardButton(
            t(lang, "🔎 {number}", number=number),
            callback_data=callbacks.encode(callbacks.ShowSimilar(ArxivId(paper.arxiv_id))),
        ))
    nav = []
    if page > 1:
        nav.append(InlineKeyboardButton("◀", callback_data=callbacks.encode(
            callbacks.SavedPage(page - 1))))
    nav.append(InlineKeyboardButton(f"{page}/{pages}",
                                    callback_data=callbacks.encode(callbacks.Noop())))
    if page < pages:
        nav.append(InlineKeyboardButton("▶", callback_data=callbacks.encode(
            callbacks.SavedPage(page + 1))))
    return RenderedMessage("\n".join(lines),
                           InlineKeyboardMarkup([remove_row, similar_row, nav]))

"""Inline mode: `@bot <id, link or words>` in any chat offers paper cards to send there."""

from __future__ import annotations

from telegram import InlineQueryResultArticle, InputTextMessageContent, LinkPreviewOptions, Update
from telegram.constants import ParseMode

from bot.chat.context import BotContext
from bot.core.i18n import language_from_telegram
from bot.delivery.latex import latex_to_unicode
from bot.delivery.render import render_shared_card, shorten_authors

# Telegram keeps an answer this long for the same user and text (the answer is personal: it
# starts with the user's library), so a retyped query costs nothing.
CACHE_SECONDS = 30


async def on_inline_query(update: Update, context: BotContext) -> None:
    """Offer the papers `InlineSearch` finds, each as a card with links only."""
    query = update.inline_query
    if query is None:
        return
    user = query.from_user
    record = await context.services.chats.get(user.id)
    lang = record.language if record is not None else language_from_telegram(
        user.language_code)
    found = await context.services.inline.answer(user.id, query.query)
    results = []
    for paper in found.papers:
        card = render_shared_card(paper, bot_username=context.bot.username, lang=lang)
        results.append(InlineQueryResultArticle(
            id=paper.arxiv_id[:64], title=latex_to_unicode(paper.title)[:200],
            description=f"{shorten_authors(paper.authors, 2, lang=lang)} · "
                        f"{paper.primary_category or ''} · arXiv:{paper.arxiv_id}"[:200],
            url=paper.abs_url, reply_markup=card.reply_markup,
            input_message_content=InputTextMessageContent(
                card.text, parse_mode=ParseMode.HTML,
                link_preview_options=LinkPreviewOptions(is_disabled=True)),
        ))
    await query.answer(results, cache_time=CACHE_SECONDS, is_personal=True)

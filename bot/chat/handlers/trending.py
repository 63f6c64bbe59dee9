"""`/trending` and `/trending mine`: today's Hugging Face community picks, most upvoted first."""

from __future__ import annotations

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers.common import read_argument, reply
from bot.core.i18n import t
from bot.delivery.compose import saved_state
from bot.delivery.render import render_paper_card

TRENDING_CARDS = 5  # cards per /trending: the top of the list, each with the usual buttons


async def trending(update: Update, context: BotContext) -> None:
    """Today's picks as cards (or only those matching this chat's subscriptions)."""
    lang = context.lang
    community = context.services.community
    if community is None:
        await reply(update, context, t(lang, "Hugging Face community picks are turned off on "
                                             "this bot."))
        return
    argument = await read_argument(update, context)
    if argument is None:
        return
    mine = argument.lower() == "mine"
    if argument and not mine:
        await reply(update, context, t(lang, "Use <code>/trending</code> for today's community "
                                             "picks, or <code>/trending mine</code> for those "
                                             "matching your subscriptions."))
        return
    chat_id = update.effective_chat.id
    picks = await community.today()
    total = len(picks)
    if mine:
        matches = context.subscriptions.matcher.match([paper for _, paper in picks])
        wanted = {match.paper.arxiv_id for match in matches.get(chat_id, ())}
        picks = [(pick, paper) for pick, paper in picks if paper.arxiv_id in wanted]
    if not picks:
        text = (t(lang, "None of today's {total} community picks matches your subscriptions.",
                  total=total) if mine and total
                else t(lang, "No Hugging Face community picks yet today. Try again later."))
        await reply(update, context, text)
        return
    day = picks[0][0].listed_on
    shown = picks[:TRENDING_CARDS]
    heading = (t(lang, "🤗 <b>Community picks matching your subscriptions</b> · {day}: "
                       "{shown} of {count}, most upvoted first", day=day, shown=len(shown),
                 count=len(picks)) if mine
               else t(lang, "🤗 <b>Hugging Face community picks</b> · {day}: {shown} of {count}, "
                            "most upvoted first", day=day, shown=len(shown), count=len(picks)))
    await reply(update, context, heading)
    store = context.store
    for pick, paper in shown:
        saved, saved_by = await saved_state(store, chat_id, paper.arxiv_id)
        card = render_paper_card(paper, saved=saved, saved_by=saved_by, lang=lang, pick=pick,
                                 guide=context.services.features.guides)
        await reply(update, context, card.text, reply_markup=card.reply_markup)

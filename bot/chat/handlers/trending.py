"""`/trending` and `/trending mine`: today's Hugging Face community picks, most upvoted first."""

from __future__ import annotations

from telegram import Update

from bot.chat.context import BotContext
from bot.chat.handlers.common import reply
from bot.core.i18n import t
from bot.delivery.render import render_paper_card

TRENDING_CARDS = 5  # cards per /trending: the top of the list, each with the usual buttons


async def trending(update: Update, context: BotContext, argument: str) -> None:
    """Today's picks as cards (or only those matching this chat's subscriptions)."""
    lang = context.lang
    service = context.services.trending
    if service is None:  # off: the command table has told the chat so, before this handler
        return
    mine = argument.lower() == "mine"
    if argument and not mine:
        await reply(update, context, t(lang, "Use <code>/trending</code> for today's community "
                                             "picks, or <code>/trending mine</code> for those "
                                             "matching your subscriptions."))
        return
    today = await service.today(update.effective_chat.id, mine=mine, count=TRENDING_CARDS)
    if not today.shown:
        text = (t(lang, "None of today's {total} community picks matches your subscriptions.",
                  total=today.total) if mine and today.total
                else t(lang, "No Hugging Face community picks yet today. Try again later."))
        await reply(update, context, text)
        return
    day, shown, count = today.shown[0].pick.listed_on, len(today.shown), today.matching
    heading = (t(lang, "🤗 <b>Community picks matching your subscriptions</b> · {day}: "
                       "{shown} of {count}, most upvoted first", day=day, shown=shown,
                 count=count) if mine
               else t(lang, "🤗 <b>Hugging Face community picks</b> · {day}: {shown} of {count}, "
                            "most upvoted first", day=day, shown=shown, count=count))
    await reply(update, context, heading)
    for shown_pick in today.shown:
        card = render_paper_card(shown_pick.paper, saved=shown_pick.saved,
                                 saved_by=shown_pick.saved_by, lang=lang, pick=shown_pick.pick,
                                 guide=context.services.features.guides)
        await reply(update, context, card.text, reply_markup=card.reply_markup)

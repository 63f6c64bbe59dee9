"""The bot's commands, one row each: the menu, the handlers, /help and the costs all come from
`COMMANDS`. Adding a command is a row here and its handler function.

What a request costs is a budget unit from `bot/services/budget.py`; which command costs which
is the chat's business, so the rows say it and the budget never learns a command's name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import Flag, StrEnum, auto
from typing import Any

from telegram import BotCommand, Chat, Update
from telegram.constants import ChatType

from bot.chat.context import BotContext
from bot.chat.handlers import (
    basic,
    guides,
    imports,
    library,
    overview,
    privacy,
    subscriptions,
    trending,
    zotero,
)
from bot.chat.handlers import settings as chat_settings
from bot.chat.handlers.common import read_argument, read_arxiv_id, reply
from bot.core.i18n import _, t
from bot.services.budget import COSTLY_COST, DEFAULT_COST, LOOKUP_COST, import_cost
from bot.services.container import Features

# A command's handler: given the update and context, and, for a row with an `Argument`, what
# the argument was read as (a str, or an ArxivId).
Handler = Callable[..., Awaitable[None]]


class Chats(Flag):
    """Where a command is offered: the kinds of chat whose /help lists it.

    The menu is one list for every chat (Telegram scopes menus by chat type, but has no scope
    for forums), so a command offered in forums only is in it too, saying where it works.
    """

    PRIVATE = auto()
    GROUP = auto()
    FORUM = auto()  # a supergroup with topics
    ANY = PRIVATE | GROUP | FORUM

    @classmethod
    def of(cls, chat: Chat | None) -> Chats:
        if chat is None or chat.type == ChatType.PRIVATE:
            return cls.PRIVATE
        return cls.FORUM if chat.is_forum else cls.GROUP


class Feature(StrEnum):
    """A part of the bot the operator may leave off: its commands leave the menu and /help,
    and still answer, saying that it is off."""

    GUIDES = "guides"  # an LLM endpoint is configured
    HUGGING_FACE = "huggingface"  # HF_PAPERS_URL is not off
    ZOTERO = "zotero"  # SECRET_KEY is set, so Zotero keys can be kept encrypted

    def on(self, features: Features) -> bool:
        return {Feature.GUIDES: features.guides, Feature.HUGGING_FACE: features.trending,
                Feature.ZOTERO: features.zotero}[self]

    @property
    def off(self) -> str:
        """The answer to its command while it is off (a msgid)."""
        return _FEATURE_OFF[self]


_FEATURE_OFF = {
    Feature.GUIDES: _("AI reading guides are not set up on this bot."),
    Feature.HUGGING_FACE: _("Hugging Face community picks are turned off on this bot."),
    Feature.ZOTERO: _("The operator of this bot has not enabled the Zotero link (it needs a "
                      "SECRET_KEY to keep keys encrypted)."),
}


class Reads(StrEnum):
    """What a command's argument is read as."""

    TEXT = "text"  # cleaned text (overlong or control-laden text is refused)
    ARXIV_ID = "arxiv-id"  # an arXiv ID or an arxiv.org link


@dataclass(frozen=True, slots=True)
class Argument:
    """What a command reads after its name; the handler gets it as a third parameter.

    With `usage` (a msgid), a bare command is answered with it and the handler is not called;
    without, a bare command reaches the handler as the empty text.
    """

    usage: str | None = None
    reads: Reads = Reads.TEXT

    async def read(self, update: Update, context: BotContext) -> Any:
        """The argument, or None once the chat was told what is wrong with it."""
        usage = None if self.usage is None else t(context.lang, self.usage)
        if self.reads is Reads.ARXIV_ID:
            assert usage is not None, "an arXiv ID has no empty value"
            return await read_arxiv_id(update, context, usage)
        return await read_argument(update, context, usage)


@dataclass(frozen=True, slots=True)
class HelpSection:
    """A part of /help: a heading over its commands' lines, or a fixed text (the query
    language). Parts follow each other in `HELP_SECTIONS` order, a blank line between."""

    text: str  # msgid


FOLLOWING = HelpSection(_("<b>Following papers</b>"))
QUERY_LANGUAGE = HelpSection(_(
    "<b>The query language</b>\n"
    "<code>cat:cs.LG</code> or <code>cs.LG</code> — a category (primary or cross-list)\n"
    "<code>cat:cs</code> or <code>cat:cs.*</code> — any category of an archive\n"
    "<code>au:Yoneki</code>, <code>au:\"E. Yoneki\"</code> — an author (a surname alone "
    "matches any given name; an initial matches a full name)\n"
    "<code>ti:word</code>, <code>ti:\"a phrase\"</code> — in the title\n"
    "<code>abs:word</code>, <code>abs:\"a phrase\"</code> — in the abstract\n"
    "<code>word</code>, <code>\"a phrase\"</code> — in the title or abstract\n"
    "<code>quantiz*</code> — any word starting with quantiz\n"
    "Terms side by side must all match; combine with <code>OR</code>, <code>AND</code>, "
    "<code>NOT</code> (or a leading <code>-</code>) and parentheses. Matching ignores case, "
    "accents and punctuation.\n"
    "Examples:\n"
    "<code>/follow cs.CL (\"retrieval augmented\" OR RAG) -survey</code>\n"
    "<code>/follow au:Hinton OR au:\"Y. LeCun\"</code>\n"
    "<code>/follow cat:quant-ph ti:error-correct*</code>"
))
LIBRARY = HelpSection(_("<b>Your library</b>"))
DELIVERY = HelpSection(_("<b>Delivery</b>"))
OVERVIEW = HelpSection(_("<b>Overview</b>"))
HELP_SECTIONS = (FOLLOWING, QUERY_LANGUAGE, LIBRARY, DELIVERY, OVERVIEW)


@dataclass(frozen=True, slots=True)
class HelpLine:
    """A command's line in /help: in `section`, at `place` among that section's lines (the
    table is in menu order; /help orders a section's lines its own way)."""

    section: HelpSection
    place: int
    text: str  # msgid
    in_groups: str | None = None  # msgid of the line in groups and forums, where it differs

    def shown_in(self, where: Chats) -> str:
        """The line's msgid in a chat of kind `where`."""
        return self.text if where is Chats.PRIVATE or self.in_groups is None else self.in_groups


@dataclass(frozen=True, slots=True)
class Command:
    """One command: how it is answered, what it costs, and how the menu and /help show it."""

    name: str
    handler: Handler
    menu: str | None  # msgid of its menu entry; None: left out of the menu
    help: HelpLine | None  # None: no line of its own (each such row says why)
    # Units of the chat's sustained budget: a number, or one read from the message's text.
    cost: int | Callable[[str], int] = DEFAULT_COST
    offered: Chats = Chats.ANY
    operators_only: bool = False  # the handler refuses everyone else; /help says so
    needs: Feature | None = None
    argument: Argument | None = None  # None: the handler reads nothing after the name

    async def answer(self, update: Update, context: BotContext) -> None:
        """What the application registers: a switched-off feature says so, an argument is read
        (and a bad one answered), then the handler runs."""
        if self.needs is not None and not self.needs.on(context.services.features):
            await reply(update, context, t(context.lang, self.needs.off))
            return
        if self.argument is None:
            await self.handler(update, context)
            return
        value = await self.argument.read(update, context)
        if value is not None:
            await self.handler(update, context, value)

    def cost_of(self, text: str) -> int:
        """What this command costs, sent as `text`."""
        return self.cost if isinstance(self.cost, int) else self.cost(text)

    def shown(self, features: Features) -> bool:
        """Whether the menu and /help show it, with these features."""
        return self.needs is None or self.needs.on(features)


def command_cost(name: str, text: str) -> int:
    """What `/name` (any case) costs, sent as `text`; a command the bot does not know costs
    what its pointer to /help costs."""
    command = BY_NAME.get(name.lower())
    return command.cost_of(text) if command is not None else DEFAULT_COST


def menu(lang: str, features: Features) -> list[BotCommand]:
    """The command menu in `lang`, with these features."""
    return [BotCommand(command.name, t(lang, command.menu)) for command in COMMANDS
            if command.menu is not None and command.shown(features)]


def help_text(lang: str, where: Chats, features: Features) -> str:
    """/help in a chat of kind `where`, with these features."""
    parts = []
    for section in HELP_SECTIONS:
        lines = sorted((command.help for command in COMMANDS
                        if command.help is not None and command.help.section == section
                        and where & command.offered and command.shown(features)),
                       key=lambda line: line.place)
        parts.append("\n".join(t(lang, text) for text in (
            section.text, *(line.shown_in(where) for line in lines))))
    return "\n\n".join(parts)


async def help_command(update: Update, context: BotContext) -> None:
    """Explain the query language and every command offered in this chat."""
    await reply(update, context, help_text(context.lang, Chats.of(update.effective_chat),
                                           context.services.features))


def _import_cost(text: str) -> int:
    """`/import <ids>` costs the look-ups it asks for; a bare `/import` (a file follows), one."""
    return import_cost(imports.ids_named(text))


# In menu order. Costly commands reach arXiv or an LLM, build large files or run the matcher
# over a week of papers. /help has always listed /guide, /trending and /move last, after
# /status, where the feature or the chat allows them.
COMMANDS: tuple[Command, ...] = (
    Command("follow", subscriptions.follow,
            _("Follow a category, author, keyword or query"),
            HelpLine(FOLLOWING, 1, _("/follow &lt;query&gt; — add a subscription")),
            cost=COSTLY_COST,
            argument=Argument(_(
                "Tell me what to follow, for example:\n<code>/follow cs.LG</code>\n"
                "<code>/follow au:\"E. Yoneki\" OR ti:\"graph neural\"</code>\n/help explains "
                "queries."))),
    Command("list", subscriptions.list_subscriptions, _("Your subscriptions"),
            HelpLine(FOLLOWING, 3, _("/list — your subscriptions, each with a remove button"))),
    Command("unfollow", subscriptions.unfollow, _("Remove a subscription"),
            HelpLine(FOLLOWING, 2, _("/unfollow &lt;number&gt; or /unfollow all — remove "
                                     "subscriptions")),
            argument=Argument(_("Which one? Send <code>/unfollow 2</code> with a number from "
                                "/list, or <code>/unfollow all</code>."))),
    # Only a forum group can bind subscriptions to topics, so only there does /help say it.
    Command("move", subscriptions.move, _("In a forum topic: send a subscription's alerts here"),
            HelpLine(OVERVIEW, 5, _("/move &lt;number&gt; inside a topic — that subscription's "
                                    "alerts go to this topic; /follow inside a topic does the "
                                    "same for a new one")),
            offered=Chats.FORUM,
            argument=Argument(_(
                "Which one? Send <code>/move 2</code> inside a topic, with a number from /list: "
                "that subscription's alerts then come to the topic."))),
    Command("saved", library.saved, _("Your saved papers"),
            HelpLine(LIBRARY, 1, _("/saved — saved papers, newest first"))),
    Command("export", library.export, _("Export saved papers as BibTeX"),
            HelpLine(LIBRARY, 2, _("/export — the library as a BibTeX file")),
            cost=COSTLY_COST),
    Command("paper", library.paper, _("Look up a paper by arXiv ID or link"),
            HelpLine(LIBRARY, 3, _("/paper &lt;arXiv ID or link&gt; — one paper's card")),
            cost=LOOKUP_COST,
            argument=Argument(_(
                "Which paper? For example <code>/paper 2611.11450</code> or "
                "<code>/paper https://arxiv.org/abs/2611.11450</code>."), Reads.ARXIV_ID)),
    Command("guide", guides.guide, _("AI reading guide of a paper"),
            HelpLine(OVERVIEW, 3, _("/guide &lt;id&gt; — an AI reading guide written from the "
                                    "abstract (also the 🧠 Guide button)")),
            cost=COSTLY_COST, needs=Feature.GUIDES,
            argument=Argument(_("Which paper? For example <code>/guide 2611.11450</code>."),
                              Reads.ARXIV_ID)),
    Command("trending", trending.trending, _("Today's Hugging Face community picks"),
            HelpLine(OVERVIEW, 4, _("/trending — today's Hugging Face community picks; "
                                    "/trending mine — those matching your subscriptions")),
            cost=COSTLY_COST, needs=Feature.HUGGING_FACE, argument=Argument()),
    Command("import", imports.import_command, _("Import papers: a .bib file or arXiv IDs"),
            HelpLine(LIBRARY, 4, _("/import — .bib or arXiv IDs")),
            cost=_import_cost),
    Command("digest", chat_settings.digest, _("Daily digest at a time, or off"),
            HelpLine(DELIVERY, 2, _("/digest HH:MM — one daily digest at that time; "
                                    "/digest off — instant alerts")),
            argument=Argument()),
    Command("pause", chat_settings.pause, _("Pause alerts"),
            HelpLine(DELIVERY, 1, _("/pause and /resume — stop and restart alerts (nothing is "
                                    "lost)"))),
    Command("resume", chat_settings.resume, _("Resume alerts"), None),  # on /pause's line
    Command("tz", chat_settings.timezone, _("Set your time zone"),
            HelpLine(DELIVERY, 3, _("/tz &lt;zone&gt; — your time zone, e.g. "
                                    "<code>/tz Asia/Shanghai</code>")),
            argument=Argument()),
    Command("lang", chat_settings.language, _("Language: en or zh"),
            HelpLine(DELIVERY, 4, _("/lang en or /lang zh — language")), argument=Argument()),
    Command("similar", library.similar, _("Stored papers nearest to a paper"),
            HelpLine(LIBRARY, 5, _("/similar &lt;arXiv ID&gt; — stored papers nearest to one "
                                   "paper; 👍 / 👎, as buttons or reactions, and saved papers "
                                   "teach the ranker (see /stats)"),
                     in_groups=_("/similar &lt;arXiv ID&gt; — stored papers nearest to one "
                                 "paper; 👍 / 👎 buttons and saved papers teach the ranker (see "
                                 "/stats); so do reactions 👍 ❤ 🔥 👏 👎 on alerts, if the bot "
                                 "is an admin here (Telegram tells only admins of reactions)")),
            argument=Argument(_("Which paper? For example <code>/similar 2611.11450</code>."),
                              Reads.ARXIV_ID)),
    # Not in /help: the private /help is at its 1,500 characters.
    Command("foryou", chat_settings.for_you,
            _("Daily papers your subscriptions missed: on, off or N"), None,
            argument=Argument()),
    # Not in /help (at its 1,500 characters): the menu and a bare /zotero explain it.
    Command("zotero", zotero.zotero, _("Link your Zotero library (both ways)"), None,
            offered=Chats.PRIVATE, needs=Feature.ZOTERO, argument=Argument()),
    # Not in /help either; /help's /similar line says that reactions rate.
    Command("thumbs", chat_settings.thumbs, _("👍 / 👎 buttons under alerts: on or off"), None,
            argument=Argument()),
    Command("stats", overview.stats, _("What arXiv announced lately"),
            HelpLine(OVERVIEW, 1, _("/stats — what arXiv announced lately and what reached "
                                    "you"))),
    # Not in /help (at its 1,500 characters): the menu and the README's privacy section say it.
    Command("forget", privacy.forget, _("Erase everything the bot keeps about this chat"),
            None),
    Command("help", help_command, _("How to write queries; all commands"), None),  # it is /help
    # /help is what /start leads to; its argument is a deep link's start parameter.
    Command("start", basic.start, _("Introduction"), None, argument=Argument()),
    Command("status", overview.status, None,
            HelpLine(OVERVIEW, 2, _("/status — the bot's health (operators only)")),
            operators_only=True),
)
BY_NAME = {command.name: command for command in COMMANDS}

"""Pure rendering of alerts, digests and paper cards: Paper in, Telegram HTML and keyboard out.

Every message stays under Telegram's 4096-character limit, measured conservatively: the raw HTML
string itself (which is never shorter than the text Telegram shows) in UTF-16 code units (the
unit Telegram counts). Every piece of outside text is escaped exactly once, at the point where it
is put into HTML.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from telegram import InlineKeyboardButton, InlineKeyboardMarkup
from telegram.constants import MessageLimit

from bot.core.i18n import t, tn
from bot.core.models import GENERAL, AlertKind, ArxivId, CommunityPick, Feedback, Paper
from bot.core.text import escape, escape_attribute, utf16_len
from bot.delivery.callbacks import (
    Action,
    DigestMore,
    DigestRest,
    Rate,
    ShowGuide,
    ToggleAbstract,
    ToggleSave,
    decode,
    encode,
    paper_start,
)
from bot.delivery.diff import PaperDiff
from bot.delivery.latex import clean_text, has_latex, latex_to_unicode

log = logging.getLogger(__name__)

# Telegram allows 4096; the margin absorbs any counting surprise.
MAX_MESSAGE_UNITS = MessageLimit.MAX_TEXT_LENGTH - 96
PREVIEW_CHARS = 250  # about this much abstract in a collapsed alert: a phone screen's worth
PREVIEW_MAX_CHARS = PREVIEW_CHARS * 5 // 4  # a sentence may run this far to end the preview
MATCHED_LINE_CHARS = 32  # the matched queries get one line on a phone, then "+N"
PREVIEW_SOURCE_CHARS = 3 * PREVIEW_CHARS  # raw text converted for a preview: plenty to spare
DIGEST_BUTTONS_PER_ROW = 5
# Telegram allows 100 buttons and 100 entities per message; each entry uses two entities.
DIGEST_MAX_ENTRIES_PER_MESSAGE = 40


@dataclass(frozen=True, slots=True)
class RenderedMessage:
    """One message ready to send: Telegram HTML text and its inline keyboard."""

    text: str
    reply_markup: InlineKeyboardMarkup
    entry_count: int = 0  # digest entries this message carries (0 for a single alert)


@dataclass(frozen=True, slots=True)
class DigestEntry:
    """One paper in a digest."""

    paper: Paper
    kind: AlertKind = AlertKind.NEW
    matched: tuple[str, ...] = ()
    saved: bool = False


# ---------------------------------------------------------------------------------------------
# Small helpers


def truncate_at_word(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word boundary when one is near, with "…"."""
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:max(limit, 0)]
    cut = text[: limit - 1]
    space = cut.rfind(" ")
    if not text[limit - 1].isspace() and space >= (limit - 1) * 2 // 3:
        cut = cut[:space]
    return cut.rstrip(" ,;:") + "…"


def shorten_authors(authors: Sequence[str], limit: int = 3, *, lang: str = "en") -> str:
    """`A, B, C et al. (8 authors)` for long lists; every name listed for short ones."""
    names = [clean_text(name) for name in authors if clean_text(name)]
    if not names:
        return t(lang, "Unknown authors")
    if len(names) <= limit + 1:
        return ", ".join(names)
    return t(lang, "{names} et al. ({count} authors)", names=", ".join(names[:limit]),
             count=len(names))


# Where a sentence ends: after . ! ? that follow a lower-case word (not an initial, "E. Yoneki"),
# before a capital, a digit or an opening quote or bracket; or after Chinese/Japanese . ! ?
_SENTENCE_END = re.compile(
    r"(?<=[^\sA-Z.][.!?])[\"”’)\]]?(?=\s+[\"“‘(\[]?[A-Z0-9])|(?<=[。！？])")


def sentence_preview(text: str, target: int = PREVIEW_CHARS) -> tuple[str, bool]:
    """About `target` characters of `text`, ending at a sentence end; and whether it was cut.

    The sentence end nearest `target` (up to a quarter beyond it) wins; a text without one in
    reach is cut at a word, with "…".
    """
    limit = target + target // 4
    if len(text) <= limit:
        return text, False
    best = None
    for match in _SENTENCE_END.finditer(text):
        end = match.end()
        if end > limit:
            break
        if end >= target // 2 and (best is None or abs(end - target) < abs(best - target)):
            best = end
    if best is None:
        return truncate_at_word(text, target), True
    return text[:best], True


def format_categories(categories: Sequence[str], limit: int = 6) -> str:
    """Categories, primary first, joined with ` · `; long lists end with `+N`."""
    shown = [c for c in categories if c.strip()][:limit]
    rest = len([c for c in categories if c.strip()]) - len(shown)
    return " · ".join(shown) + (f" +{rest}" if rest > 0 else "")


def _authors_text(authors: Sequence[str], limit: int, name_chars: int, lang: str) -> str:
    """`shorten_authors` converting (LaTeX → Unicode) only the names it will show."""
    names = [name for name in authors if clean_text(name)]
    shown = names if len(names) <= limit + 1 else names[:limit]
    converted = [truncate_at_word(_plain(name), name_chars) or "?" for name in shown]
    if len(shown) < len(names):
        return t(lang, "{names} et al. ({count} authors)", names=", ".join(converted),
                 count=len(names))
    return shorten_authors(converted, limit, lang=lang)


def preview_source(raw: str, budget: int = PREVIEW_SOURCE_CHARS) -> tuple[str, bool]:
    """The start of a raw abstract, enough for the preview, and whether it was cut.

    Converting LaTeX is most of an alert's rendering cost and a collapsed alert shows only
    ~400 characters, so only a prefix is converted. The cut falls on a space outside math
    and braces, so the converter never sees half a formula.
    """
    if len(raw) <= budget:
        return raw, False
    in_math, depth, safe, escaped = False, 0, -1, False
    for index, char in enumerate(raw[:budget]):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "$":
            in_math = not in_math
        elif char == "{":
            depth += 1
        elif char == "}":
            depth = max(depth - 1, 0)
        elif char.isspace() and not in_math and depth == 0:
            safe = index
    if safe <= 0:
        return raw, False  # no safe place to cut: convert it all
    return raw[:safe], True


def _plain(text: str | None) -> str:
    """Outside text as shown: LaTeX as Unicode, no control characters, whitespace collapsed."""
    return latex_to_unicode(text) if text else ""


def _clip(text: str, limit: int) -> str:
    return escape(truncate_at_word(text, limit))


def _version_id(paper: Paper) -> ArxivId | None:
    """The paper's versioned id if buttons can carry it (valid, and short enough for 64 bytes)."""
    try:
        parsed = ArxivId(paper.arxiv_id, paper.version)
        encode(ToggleSave(parsed, 999))  # the longest data any button carries for it
    except (ValueError, TypeError):
        return None
    return parsed


# ---------------------------------------------------------------------------------------------
# Alerts and cards


@dataclass(frozen=True, slots=True)
class _Limits:
    """Character caps per part; shrunk until the message fits."""

    title: int = 400
    author: int = 80
    comment: int = 300
    matched: int = MATCHED_LINE_CHARS
    diff: int = 200
    abstract: int | None = None  # None: the whole abstract

    def halved(self) -> _Limits:
        return _Limits(
            title=max(40, self.title // 2), author=max(20, self.author // 2),
            comment=max(20, self.comment // 2), matched=max(20, self.matched // 2),
            diff=max(20, self.diff // 2),
            abstract=0,
        )


@dataclass(frozen=True, slots=True)
class _AlertTexts:
    """The converted (LaTeX → Unicode) plain texts of one paper, computed once per render."""

    title: str
    abstract: str
    comment: str


def render_alert(
    paper: Paper,
    *,
    kind: AlertKind | str,
    matched: Sequence[str] = (),
    saved: bool = False,
    expanded: bool = False,
    diff: PaperDiff | None = None,
    lang: str = "en",
    pick: CommunityPick | None = None,
    guide: bool = False,
    feedback: Feedback | None = None,
    saved_by: str | None = None,
    rating_buttons: bool = True,
) -> RenderedMessage:
    """An alert (an `AlertKind`) or a card (`kind` "card", no badge) for one paper.

    `pick` adds the Hugging Face badge line; `guide` the 🧠 Guide button (guides configured);
    `saved_by` the line naming who saved it into a group's library; `rating_buttons` False
    leaves 👍 / 👎 out (the chat rates by reaction).
    """
    if expanded:
        abstract, cut = _plain(paper.abstract), False
    else:
        source, source_cut = preview_source(paper.abstract or "")
        abstract, preview_cut = sentence_preview(_plain(source))
        cut = source_cut or preview_cut
    texts = _AlertTexts(_plain(paper.title), abstract, _plain(paper.comment))
    markup = alert_keyboard(paper, saved=saved, expanded=expanded, lang=lang, expandable=cut,
                            guide=guide, feedback=feedback, rating_buttons=rating_buttons)
    limits = _Limits()
    for _ in range(16):
        text = _alert_html(paper, texts, kind, matched, diff, limits, lang, pick, saved_by)
        over = utf16_len(text) - MAX_MESSAGE_UNITS
        if over <= 0:
            return RenderedMessage(text, markup)
        shown = len(texts.abstract) if limits.abstract is None else limits.abstract
        shown = min(shown, len(texts.abstract))
        if shown > 100:
            # Each dropped character frees at least one unit, so this nearly always fits.
            limits = replace(limits, abstract=max(100, shown - over - 1))
        else:
            limits = limits.halved()
    log.warning("alert for %s did not fit even when shrunk; sending a minimal one",
                paper.versioned_id)
    minimal = (f"<b>{_clip(texts.title, 200)}</b>\n"
               f"<code>arXiv:{_clip(paper.versioned_id, 60)}</code>")
    return RenderedMessage(minimal, markup)


def render_paper_card(
    paper: Paper, *, saved: bool = False, expanded: bool = False, lang: str = "en",
    pick: CommunityPick | None = None, guide: bool = False,
    feedback: Feedback | None = None, saved_by: str | None = None,
) -> RenderedMessage:
    """The `/paper` card: an alert without badge or matched subscriptions, same buttons."""
    return render_alert(paper, kind="card", saved=saved, expanded=expanded, lang=lang,
                        pick=pick, guide=guide, feedback=feedback, saved_by=saved_by)


def render_shared_card(paper: Paper, *, bot_username: str, lang: str = "en"
                       ) -> RenderedMessage:
    """The card a user sends into another chat from inline mode: the paper as a card shows it,
    with links only (the chat it lands in has no library here to save into: ⭐ opens the paper
    in the bot, whose card has Save)."""
    card = render_alert(paper, kind="card", lang=lang)
    save = InlineKeyboardButton(
        t(lang, "⭐ Save"),
        url=f"https://t.me/{bot_username}?start={paper_start(ArxivId(paper.arxiv_id))}")
    return RenderedMessage(card.text, InlineKeyboardMarkup([[save, *_links(paper, lang)]]))


def _alert_html(
    paper: Paper,
    texts: _AlertTexts,
    kind: AlertKind | str,
    matched: Sequence[str],
    diff: PaperDiff | None,
    limits: _Limits,
    lang: str,
    pick: CommunityPick | None = None,
    saved_by: str | None = None,
) -> str:
    # The badge shares the title's line: a phone's notification preview starts with the title.
    title = f"<b>{_clip(texts.title, limits.title)}</b>"
    if kind == AlertKind.NEW:
        title = "🆕 " + title
    elif kind == AlertKind.REVISION:
        title = "🔄 " + escape(t(lang, "v{version}", version=paper.version)) + " · " + title
    lines: list[str] = [title]
    lines.append(escape(_authors_text(paper.authors, 3, limits.author, lang)))
    # The primary category and how many more: the full list is one tap away on arXiv.
    meta = [escape(format_categories([clean_text(c)[:40] for c in paper.categories], limit=1))]
    meta.append(f"<code>arXiv:{_clip(paper.versioned_id, 60)}</code>")
    when = paper.updated or paper.published
    if when is not None and kind != AlertKind.NEW:
        # A new paper is from today; a revision's or a looked-up paper's date tells something.
        meta.append(when.strftime("%Y-%m-%d"))
    lines.append(" · ".join(part for part in meta if part))
    if pick is not None:
        lines.append(community_badge(pick, lang))
    comment_changed = diff is not None and diff.comment is not None
    if texts.comment and not comment_changed:
        lines.append("💬 " + _clip(texts.comment, limits.comment))
    if matched:
        lines.append(_matched_line(matched, limits, lang))
    if saved_by is not None:
        lines.append(saved_by_line(saved_by, lang))
    if kind == AlertKind.REVISION and diff is not None:
        lines.extend(_diff_lines(diff, limits.diff, lang, paper.abstract))
    abstract = texts.abstract
    if limits.abstract is not None:
        abstract = truncate_at_word(abstract, limits.abstract)
    if abstract:
        lines.append("")
        lines.append(escape(abstract))
    return "\n".join(lines)


SAVER_NAME_CHARS = 32  # a first name beside a paper: long ones are cut


def saver_name(first_name: str) -> str:
    """A saver's first name as shown (plain text): cleaned and kept short."""
    return truncate_at_word(clean_text(first_name), SAVER_NAME_CHARS) or "?"


def saved_by_line(first_name: str, lang: str) -> str:
    """`📌 Saved by Ada`: who saved the paper into a group's library (HTML)."""
    return "📌 " + escape(t(lang, "Saved by {name}", name=saver_name(first_name)))


def community_badge(pick: CommunityPick, lang: str) -> str:
    """`🤗 42 upvotes · code: github.com/owner/name (★ 1,234)`: the Hugging Face line."""
    parts = [escape(tn(lang, "{count} upvote", "{count} upvotes", pick.upvotes))]
    if pick.comments:
        parts.append(escape(tn(lang, "{count} comment", "{count} comments", pick.comments)))
    if pick.github_repo:
        repo = truncate_at_word(pick.github_repo.split("://", 1)[-1].removeprefix("www."), 80)
        stars = f" (★ {pick.github_stars:,})" if pick.github_stars else ""
        parts.append(escape(t(lang, "code:")) + " " + _link(pick.github_repo, repo) + stars)
    if pick.project_page:
        parts.append(_link(pick.project_page, t(lang, "project page")))
    return "🤗 " + " · ".join(parts)


def _link(url: str, text: str) -> str:
    """An HTML link for an outside http(s) URL; only the text for anything else."""
    if not url.startswith(("https://", "http://")) or len(url) > 500:
        return escape(text)
    return f'<a href="{escape_attribute(url)}">{escape(text)}</a>'


def _matched_line(matched: Sequence[str], limits: _Limits, lang: str) -> str:
    """One line: as many whole queries as fit `limits.matched` characters, then `+N`."""
    queries = [q for q in map(clean_text, matched) if q]
    shown: list[str] = []
    used = 0
    for query in queries:
        if shown and used + 2 + len(query) > limits.matched:
            break
        shown.append(truncate_at_word(query, limits.matched))
        used += 2 + len(shown[-1])
    rest = len(queries) - len(shown)
    text = ", ".join(shown) + (f" +{rest}" if rest else "")
    return "🔎 " + escape(t(lang, "Matched: {queries}", queries=text))


def _diff_lines(diff: PaperDiff, limit: int, lang: str, abstract: str = "") -> list[str]:
    """What changed in a revision, one short line per changed field."""
    lines = []
    if diff.new_version - diff.old_version > 1:
        lines.append(escape(t(lang, "Changes since v{version}:", version=diff.old_version)))
    if diff.title is not None:
        # The placeholder sits inside the message, so each language sets its own spacing; the
        # template is our own text (no markup), the value is escaped here.
        lines.append("✏️ " + t(lang, "Title was: {title}",
                               title="<i>" + _clip(_plain(diff.title[0]), limit) + "</i>"))
    if diff.authors_added or diff.authors_removed:
        changes = [f"+{a}" for a in diff.authors_added] + [f"−{a}" for a in diff.authors_removed]
        lines.append("👥 " + t(lang, "Authors: {changes}",
                               changes=_clip(", ".join(_plain(c) for c in changes), limit)))
    if diff.comment is not None:
        old, new = (_plain(c) for c in diff.comment)
        if old and new:
            change = t(lang, "Comment: {old} → {new}", old=truncate_at_word(old, limit // 2),
                       new=truncate_at_word(new, limit))
        elif new:
            change = t(lang, "Comment added: {new}", new=truncate_at_word(new, limit))
        else:
            change = t(lang, "Comment removed: {old}", old=truncate_at_word(old, limit // 2))
        lines.append("💬 " + escape(change))
    if diff.journal_ref is not None and diff.journal_ref[1]:
        lines.append("📰 " + escape(t(lang, "Journal ref: {ref}",
                                     ref=truncate_at_word(_plain(diff.journal_ref[1]), limit))))
    if diff.abstract_changed:
        summary = t(lang, "Abstract: {added}, {removed}",
                    added=tn(lang, "+{count} word", "+{count} words", diff.abstract_words_added),
                    removed=tn(lang, "−{count} word", "−{count} words",
                               diff.abstract_words_removed))
        line = "📝 " + escape(summary)
        # The excerpt reads as the abstract does: `--` is a dash wherever the abstract's is.
        excerpt = latex_to_unicode(diff.abstract_excerpt or "", as_latex=has_latex(abstract))
        if excerpt:
            line += " — <i>“" + _clip(excerpt, limit // 2) + "”</i>"
        lines.append(line)
    if diff.is_empty:
        lines.append("📎 " + escape(t(lang, "Title, authors, abstract and comments unchanged")))
    return lines


def alert_keyboard(
    paper: Paper, *, saved: bool, expanded: bool, lang: str = "en", expandable: bool = True,
    guide: bool = False,
    feedback: Feedback | None = None,
    rating_buttons: bool = True,
) -> InlineKeyboardMarkup:
    """Save, 👍 / 👎 and Full abstract toggles; 🧠 Guide (when guides are on) beside the links
    to the abstract page and the PDF."""
    first_row = []
    paper_id = _version_id(paper)
    if paper_id is not None:
        first_row.append(_save_button(ToggleSave(paper_id), saved, lang))
        if rating_buttons:
            first_row.extend(_feedback_buttons(ArxivId(paper_id.base), feedback))
        if expandable or expanded:
            label = t(lang, "🔼 Collapse") if expanded else t(lang, "📄 Full abstract")
            data = encode(ToggleAbstract(paper_id, expand=not expanded))
            first_row.append(InlineKeyboardButton(label, callback_data=data))
    links = _links(paper, lang)
    if guide and paper_id is not None:
        # Beside the links: the first row's two toggles already fill a phone's width.
        links.insert(0, InlineKeyboardButton(t(lang, "🧠 Guide"),
                                             callback_data=encode(ShowGuide(paper_id))))
    return InlineKeyboardMarkup([row for row in (first_row, links) if row])


def _links(paper: Paper, lang: str) -> list[InlineKeyboardButton]:
    """The paper's abstract page and PDF on arXiv."""
    return [InlineKeyboardButton(t(lang, "🌐 arXiv"), url=paper.abs_url),
            InlineKeyboardButton(t(lang, "📥 PDF"), url=paper.pdf_url)]


def _save_button(action: ToggleSave, saved: bool, lang: str) -> InlineKeyboardButton:
    if action.number is not None:
        label = f"✅ {action.number}" if saved else f"💾 {action.number}"
    else:
        label = t(lang, "⭐ Saved") if saved else t(lang, "⭐ Save")
    return InlineKeyboardButton(label, callback_data=encode(action))


FEEDBACK_MARKS = {Feedback.MORE: "👍", Feedback.LESS: "👎"}
FEEDBACK_LIT = "✓"  # after the mark of the label the chat gave


def _feedback_buttons(paper: ArxivId, given: Feedback | None) -> list[InlineKeyboardButton]:
    """👍 and 👎, the given one lit; pressing a lit one clears it, an unlit one gives it."""
    buttons = []
    for label, mark in FEEDBACK_MARKS.items():
        lit = label == given
        buttons.append(InlineKeyboardButton(
            mark + FEEDBACK_LIT if lit else mark,
            callback_data=encode(Rate(paper, label, give=not lit))))
    return buttons


@dataclass(frozen=True, slots=True)
class ForYouEntry:
    """One suggested paper and its reason: a saved paper it is like, or terms it scored on."""

    paper: Paper
    like_title: str | None = None
    terms: tuple[str, ...] = ()
    saved: bool = False


def render_for_you(entries: Sequence[ForYouEntry], *, lang: str = "en") -> RenderedMessage:
    """The daily "For you" message: numbered papers with a one-line reason and Save buttons."""
    lines = ["✨ <b>" + escape(t(lang, "For you")) + "</b> · " + escape(tn(
        lang, "{count} paper your subscriptions did not match",
        "{count} papers your subscriptions did not match", len(entries)))]
    buttons = []
    for number, entry in enumerate(entries, 1):
        paper = entry.paper
        href = escape_attribute(paper.abs_url)
        if entry.like_title is not None:
            reason = t(lang, "like your saved “{title}”",
                       title=truncate_at_word(_plain(entry.like_title), 80))
        else:
            reason = t(lang, "you liked: {terms}", terms=", ".join(entry.terms[:3]) or "—")
        lines.append("")
        lines.append(f"<b>{number}.</b> {_clip(_plain(paper.title), 220)}\n"
                     f"{escape(_authors_text(paper.authors, 2, 40, lang))} · "
                     f'<a href="{href}">{_clip(paper.arxiv_id, 60)}</a>\n'
                     f"↳ <i>{escape(reason)}</i>")
        buttons.append(_digest_button(number, paper, entry.saved, _version_id(paper), lang))
    rows = [buttons[k : k + DIGEST_BUTTONS_PER_ROW]
            for k in range(0, len(buttons), DIGEST_BUTTONS_PER_ROW)]
    return RenderedMessage("\n".join(lines), InlineKeyboardMarkup(rows), entry_count=len(entries))


def render_similar(paper: Paper, nearest: Sequence[Paper], *, lang: str = "en") -> str:
    """The papers nearest to `paper`, one numbered line each with a link."""
    lines = [escape(t(lang, "🔎 Stored papers nearest to {id}:", id=paper.arxiv_id)),
             "<i>" + _clip(_plain(paper.title), 200) + "</i>", ""]
    for number, other in enumerate(nearest, 1):
        href = escape_attribute(other.abs_url)
        lines.append(f"<b>{number}.</b> {_clip(_plain(other.title), 200)}\n"
                     f'{escape(_authors_text(other.authors, 2, 40, lang))} · '
                     f'<a href="{href}">{_clip(other.arxiv_id, 60)}</a>')
    return "\n".join(lines)


def _with_buttons_changed(
    markup: InlineKeyboardMarkup, change: Callable[[Action | None, InlineKeyboardButton],
                                                   InlineKeyboardButton | None],
) -> InlineKeyboardMarkup:
    """The same keyboard, each button replaced where `change` returns a new one."""
    return InlineKeyboardMarkup([
        [change(decode(button.callback_data), button) or button for button in row]
        for row in markup.inline_keyboard
    ])


def with_feedback_state(
    markup: InlineKeyboardMarkup, arxiv_id: str, given: Feedback | None
) -> InlineKeyboardMarkup:
    """The same keyboard with the 👍 / 👎 pair of `arxiv_id` showing `given`."""

    def change(action: Action | None, _button: InlineKeyboardButton
               ) -> InlineKeyboardButton | None:
        if not (isinstance(action, Rate) and action.paper.base == arxiv_id):
            return None
        lit = action.label == given
        return InlineKeyboardButton(FEEDBACK_MARKS[action.label] + (FEEDBACK_LIT if lit else ""),
                                    callback_data=encode(Rate(action.paper, action.label,
                                                              give=not lit)))

    return _with_buttons_changed(markup, change)


def with_saved_state(
    markup: InlineKeyboardMarkup, arxiv_id: str, *, saved: bool, lang: str = "en"
) -> InlineKeyboardMarkup:
    """The same keyboard with every Save button for `arxiv_id` (base id) showing `saved`.

    For the Save handler: it edits only the keyboard, so the message text (and whether the
    abstract is expanded) stays as it is.
    """

    def change(action: Action | None, _button: InlineKeyboardButton
               ) -> InlineKeyboardButton | None:
        if isinstance(action, ToggleSave) and action.paper.base == arxiv_id:
            return _save_button(action, saved, lang)
        return None

    return _with_buttons_changed(markup, change)


# ---------------------------------------------------------------------------------------------
# Digests


def render_digest(
    entries: Sequence[DigestEntry], *, lang: str = "en", title: str | None = None,
    max_messages: int | None = None, first_number: int = 1,
    counted: Sequence[AlertKind] | None = None, rendered: DigestEntryParts | None = None,
) -> list[RenderedMessage]:
    """Numbered entries split into as few messages as fit, each with Save-by-number buttons.

    With `max_messages`, at most that many messages: the entries that fit in them, in order
    (each message's `entry_count` says how many it took; the rest are the caller's). Numbers
    start at `first_number` (a later page of a digest continues its numbering). The header
    counts the matches once, revisions among them in brackets: `counted`, the kinds of every
    entry of the digest these belong to, or else these entries; a `title` goes before it.
    `rendered` holds entries' parts rendered for earlier digests (other chats'), to reuse.
    """
    if not entries:
        return []
    rendered = rendered or DigestEntryParts()
    heading = truncate_at_word(clean_text(title or ""), 100)
    counts = digest_counts([e.kind for e in entries] if counted is None else counted, lang)
    # Reserve room for the longest header this digest could get ("… 99/99 …").
    reserve = utf16_len(_digest_header(heading, counts, 99, 99)) + 2
    # Entries are rendered only as far as the messages take them: a capped digest of a
    # catch-up renders its first page, not every entry behind its More button.
    pages: list[list[str]] = [[]]
    parts: list[_EntryParts] = []
    used = reserve
    for index, entry in enumerate(entries):
        parts.append(rendered.of(entry.paper, entry.kind, lang))
        block = _digest_entry(first_number + index, entry, parts[-1])
        size = utf16_len(block) + 2
        page = pages[-1]
        if page and (used + size > MAX_MESSAGE_UNITS
                     or len(page) >= DIGEST_MAX_ENTRIES_PER_MESSAGE):
            if len(pages) == max_messages:
                break
            pages.append([])
            used = reserve
        pages[-1].append(block)
        used += size
    messages, start = [], 0
    for page_number, blocks in enumerate(pages, 1):
        header = _digest_header(heading, counts, page_number, len(pages))
        text = "\n\n".join([header, *blocks])
        buttons = [_digest_button(first_number + i, entries[i].paper, entries[i].saved,
                                  parts[i].save_id, lang)
                   for i in range(start, start + len(blocks))]
        rows = [buttons[k : k + DIGEST_BUTTONS_PER_ROW]
                for k in range(0, len(buttons), DIGEST_BUTTONS_PER_ROW)]
        messages.append(RenderedMessage(text, InlineKeyboardMarkup(rows),
                                        entry_count=len(blocks)))
        start += len(blocks)
    return messages


def with_more(message: RenderedMessage, count: int, action: DigestMore | DigestRest,
              lang: str = "en") -> RenderedMessage:
    """A capped digest's last message, ending with "+N more" and a button that shows them.

    The line and the button fit in the room MAX_MESSAGE_UNITS leaves below Telegram's 4096.
    """
    more = t(lang, "+{count} more", count=count)
    text = f"{message.text}\n\n<i>{escape(more)}</i>"
    button = InlineKeyboardButton(t(lang, "Show more ▶"), callback_data=encode(action))
    rows = [*message.reply_markup.inline_keyboard, [button]]
    return RenderedMessage(text, InlineKeyboardMarkup(rows), message.entry_count)


def digest_counts(kinds: Sequence[AlertKind], lang: str) -> str:
    """"12 new matches (6 revised)": every entry once (by its kind), the revisions among them
    in brackets."""
    revised = sum(kind == AlertKind.REVISION for kind in kinds)
    if revised:
        return tn(lang, "{count} new match ({revised} revised)",
                  "{count} new matches ({revised} revised)", len(kinds), revised=revised)
    return tn(lang, "{count} new match", "{count} new matches", len(kinds))


def _digest_header(heading: str, counts: str, page: int, pages: int) -> str:
    counter = f" {page}/{pages}" if pages > 1 else ""
    if heading:
        return f"📬 <b>{escape(heading)}{counter}</b> · {escape(counts)}"
    return f"📬 <b>{escape(counts)}{counter}</b>"


@dataclass(frozen=True, slots=True)
class _EntryParts:
    """A digest entry's paper, rendered: all the entry shows but its number and the chat's
    matched queries."""

    title: str  # HTML: the title, a revision's badge
    byline: str  # HTML: the authors, the link
    save_id: ArxivId | None  # what its Save button carries (None: a link button instead)


# A day's 2,000 papers and their revisions, in one language: about 1 MB of rendered parts.
ENTRY_PARTS_KEPT = 4096


class DigestEntryParts:
    """Digest entries' paper parts rendered once for many chats: a day's digests list the same
    papers for thousands of chats. A bounded memo of a pure function, keyed by all it reads
    of the paper (and the kind and language), so a hit is what rendering again would give."""

    def __init__(self, capacity: int = ENTRY_PARTS_KEPT) -> None:
        self._capacity = capacity
        self._parts: dict[tuple[object, ...], _EntryParts] = {}

    def of(self, paper: Paper, kind: AlertKind | str, lang: str) -> _EntryParts:
        key = (paper.arxiv_id, paper.version, paper.title, paper.authors, kind, lang)
        parts = self._parts.get(key)
        if parts is None:
            if len(self._parts) >= self._capacity:
                del self._parts[next(iter(self._parts))]  # the first rendered
            parts = self._parts[key] = _entry_parts(paper, kind, lang)
        return parts


def _entry_parts(paper: Paper, kind: AlertKind | str, lang: str) -> _EntryParts:
    title = _clip(_plain(paper.title), 220)
    if kind == AlertKind.REVISION:
        title += " 🔄 " + escape(t(lang, "v{version}", version=paper.version))
    link = f'<a href="{escape_attribute(paper.abs_url)}">{_clip(paper.versioned_id, 60)}</a>'
    return _EntryParts(title, escape(_authors_text(paper.authors, 2, 40, lang)) + " · " + link,
                       _version_id(paper))


def _digest_entry(number: int, entry: DigestEntry, parts: _EntryParts) -> str:
    """One numbered entry, bounded in size whatever the paper holds."""
    queries = [q for q in map(clean_text, entry.matched) if q]
    matched = "" if not queries else " · 🔎 " + _clip(queries[0], 40) + (
        f" +{len(queries) - 1}" if len(queries) > 1 else "")
    return f"<b>{number}.</b> {parts.title}\n{parts.byline}{matched}"


def _digest_button(number: int, paper: Paper, saved: bool, save_id: ArxivId | None,
                   lang: str) -> InlineKeyboardButton:
    if save_id is None or number > 999:
        # A label-only button keeps the numbering intact for a paper we cannot address.
        return InlineKeyboardButton(str(number), url=paper.abs_url)
    return _save_button(ToggleSave(save_id, number), saved, lang)


def topic_label(name: str | None, topic_id: int, lang: str) -> str:
    """A forum topic as the chat knows it (HTML): its name, "General", or "topic #id" when its
    name was never learnt."""
    if topic_id == GENERAL:
        return escape(t(lang, "General"))
    return escape(name) if name else escape(t(lang, "topic #{id}", id=topic_id))


def render_topic_fallback(topic: str, queries: Sequence[str], lang: str,
                          shown: int = 10) -> str:
    """The one notice after a topic was deleted or closed: its subscriptions post in General
    now. `topic` is HTML (from `topic_label`)."""
    listed = ", ".join(f"<code>{_clip(q, 60)}</code>" for q in queries[:shown])
    if len(queries) > shown:
        listed += f" +{len(queries) - shown}"
    return "⚠️ " + t(
        lang, "Telegram no longer takes messages in the topic {topic} (deleted or closed), so "
        "its alerts come here to General from now on: {queries}. To bind a subscription to a "
        "topic again, send /move with its number from /list inside that topic.",
        topic=topic, queries=listed)

"""Alerts, cards and digests as a researcher sees them in Telegram: well-formed, complete, short."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from html.parser import HTMLParser

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from telegram import InlineKeyboardMarkup

from bot.core.models import ArxivId, Feedback, Paper
from bot.core.text import utf16_len
from bot.delivery.callbacks import DigestRest, Rate, ToggleAbstract, ToggleSave, decode
from bot.delivery.diff import describe_changes
from bot.delivery.latex import latex_to_unicode
from bot.delivery.render import (
    PREVIEW_CHARS,
    PREVIEW_MAX_CHARS,
    SAVER_NAME_CHARS,
    DigestEntry,
    RenderedMessage,
    format_categories,
    render_alert,
    render_digest,
    render_paper_card,
    saver_name,
    sentence_preview,
    shorten_authors,
    truncate_at_word,
    with_feedback_state,
    with_more,
    with_saved_state,
)

TELEGRAM_LIMIT = 4096
ALLOWED_TAGS = {"b", "i", "code", "a"}

ABSTRACT = (
    "Transformers dominate sequence modelling, but attention costs grow quadratically with "
    "length. We introduce a sparse attention scheme that routes each query to a handful of "
    "learned clusters, which keeps memory linear while matching dense attention on language "
    "modelling, retrieval and long-range arena benchmarks. On 64k-token documents our kernels "
    "run 1.93x faster than FlashAttention-2 and use a third of the memory. We also show that "
    "the routing is stable under fine-tuning and analyse when it fails. Code is public."
)

PAPER = Paper(
    arxiv_id="2611.11450",
    version=1,
    title=r"Routing Attention: $1.93\times$ Faster <Sparse> Transformers & Friends",
    authors=("Eiko Yoneki", "Alan Turing", "Grace Hopper", "Ada Lovelace", "Kurt Gödel",
             "Emmy Noether", "John von Neumann", "Barbara Liskov"),
    abstract=ABSTRACT,
    categories=("cs.LG", "cs.CL", "stat.ML"),
    comment="12 pages, 4 figures",
    updated=datetime(2026, 11, 20, tzinfo=UTC),
)


class _Telegramish(HTMLParser):
    """Parses a message the way Telegram's HTML mode does and keeps what a reader sees."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.visible: list[str] = []
        self.stack: list[str] = []
        self.bold: list[str] = []
        self.errors: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.errors.append(f"unexpected tag <{tag}>")
        if tag == "a" and [name for name, _ in attrs] != ["href"]:
            self.errors.append(f"bad link attributes {attrs}")
        self.stack.append(tag)
        if tag == "b":
            self.bold.append("")

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            self.errors.append(f"unbalanced </{tag}>")

    def handle_data(self, data: str) -> None:
        self.visible.append(data)
        if "b" in self.stack:
            self.bold[-1] += data

    def handle_comment(self, data: str) -> None:
        self.errors.append("comment")

    def handle_decl(self, decl: str) -> None:
        self.errors.append("declaration")

    def handle_pi(self, data: str) -> None:
        self.errors.append("processing instruction")

    def unknown_decl(self, data: str) -> None:
        self.errors.append("unknown declaration")


def parse(text: str) -> _Telegramish:
    """Parse Telegram HTML, failing on anything Telegram would reject or show wrongly."""
    # Telegram knows only these named entities; any other `&` must have been escaped.
    bare = re.findall(r"&(?!amp;|lt;|gt;|quot;|#[0-9]+;|#x[0-9a-fA-F]+;)", text)
    assert not bare, f"unescaped & in {text!r}"
    parser = _Telegramish()
    parser.feed(text)
    parser.close()
    assert not parser.errors, parser.errors
    assert not parser.stack, f"unclosed tags {parser.stack}"
    return parser


def visible_text(text: str) -> str:
    return "".join(parse(text).visible)


def assert_fits(message: RenderedMessage) -> None:
    assert utf16_len(message.text) < TELEGRAM_LIMIT
    shown = visible_text(message.text)
    assert utf16_len(shown) < TELEGRAM_LIMIT
    assert not [ch for ch in shown if ord(ch) < 32 and ch != "\n"], "control characters shown"
    assert isinstance(message.reply_markup, InlineKeyboardMarkup)
    buttons = [b for row in message.reply_markup.inline_keyboard for b in row]
    assert 0 < len(buttons) <= 100
    assert all(len(row) <= 8 for row in message.reply_markup.inline_keyboard)
    for button in buttons:
        if button.callback_data is not None:
            assert len(button.callback_data.encode()) <= 64
            assert decode(button.callback_data) is not None


def callback_actions(markup: InlineKeyboardMarkup) -> list[object]:
    return [decode(b.callback_data) for row in markup.inline_keyboard for b in row
            if b.callback_data is not None]


def button_labels(markup: InlineKeyboardMarkup) -> list[str]:
    return [b.text for row in markup.inline_keyboard for b in row]


# ---------------------------------------------------------------------------------------------
# Helpers


def test_truncate_at_word_cuts_on_a_space_and_marks_the_cut() -> None:
    assert truncate_at_word("short", 10) == "short"
    cut = truncate_at_word("the quick brown fox jumps over the lazy dog", 20)
    assert cut == "the quick brown fox…"
    assert len(cut) <= 20
    assert truncate_at_word("x" * 50, 10) == "x" * 9 + "…"
    assert truncate_at_word("anything", 0) == ""


def test_shorten_authors() -> None:
    assert shorten_authors(["A", "B"]) == "A, B"
    assert shorten_authors(["A", "B", "C", "D"]) == "A, B, C, D"
    assert shorten_authors([f"Author {i}" for i in range(8)]) == \
        "Author 0, Author 1, Author 2 et al. (8 authors)"
    assert shorten_authors([]) == "Unknown authors"


def test_format_categories_keeps_primary_first() -> None:
    assert format_categories(["cs.LG", "cs.AI", "stat.ML"]) == "cs.LG · cs.AI · stat.ML"
    many = [f"cs.X{i}" for i in range(9)]
    assert format_categories(many, limit=3) == "cs.X0 · cs.X1 · cs.X2 +6"


# ---------------------------------------------------------------------------------------------
# Alerts


def test_new_alert_shows_everything_a_reader_needs() -> None:
    message = render_alert(PAPER, kind="new", matched=["au:Yoneki", "cat:cs.LG"], saved=False,
                           expanded=False, diff=None)
    assert_fits(message)
    text = visible_text(message.text)
    # The badge shares the title's line, so a notification preview starts with the title.
    assert text.startswith("🆕 Routing Attention: 1.93× Faster <Sparse> Transformers & Friends\n")
    parsed = parse(message.text)
    assert parsed.bold[0] == "Routing Attention: 1.93× Faster <Sparse> Transformers & Friends"
    assert "&lt;Sparse&gt; Transformers &amp; Friends" in message.text
    assert "Eiko Yoneki, Alan Turing, Grace Hopper et al. (8 authors)" in text
    assert "cs.LG +2 · arXiv:2611.11450v1" in text  # the primary category, then how many more
    assert "cs.CL" not in text
    assert "2026-11-20" not in text  # a new paper is from today
    assert "🔎 Matched: au:Yoneki, cat:cs.LG" in text
    assert "💬 12 pages, 4 figures" in text
    assert ABSTRACT[:200] in text
    assert ABSTRACT not in text  # collapsed: only the first part
    assert text.count("\n") == 6, "title, authors, meta, comment, matched, blank, abstract"


def test_collapsed_abstract_is_about_250_characters_ending_at_a_sentence() -> None:
    text = visible_text(render_alert(PAPER, kind="new", matched=[], saved=False, expanded=False,
                                     diff=None).text)
    preview = text.split("\n\n", 1)[1]
    assert PREVIEW_CHARS * 2 // 3 <= len(preview) <= PREVIEW_MAX_CHARS
    assert preview.endswith("benchmarks.")
    assert ABSTRACT.startswith(preview)


@pytest.mark.parametrize(("text", "expected"), [
    # The sentence end nearest 250 characters wins, even a little beyond it.
    ("A" * 200 + " ends here. " + "B" * 30 + " then this one ends. " + "C" * 200,
     "A" * 200 + " ends here. " + "B" * 30 + " then this one ends."),
    # An initial ("E. Yoneki") or a decimal is no sentence end.
    ("x " * 100 + "by E. Yoneki and 1.93 times " + "y " * 200, None),
    # Chinese full stops end sentences too.
    ("这是第一句。" * 60, "这是第一句。" * 42),
])
def test_sentence_preview_ends_at_the_sentence_end_nearest_the_target(
        text: str, expected: str | None) -> None:
    preview, cut = sentence_preview(text)
    assert cut
    if expected is None:  # no sentence end in reach: cut at a word, with "…"
        assert preview.endswith("…") and len(preview) <= PREVIEW_CHARS
        assert text.startswith(preview[:-1])
    else:
        assert preview == expected


def test_a_short_abstract_is_shown_whole() -> None:
    assert sentence_preview("One sentence. Another one.") == ("One sentence. Another one.", False)


def test_matched_queries_take_one_line_with_plus_n() -> None:
    queries = ['cs.CL ("retrieval augmented" OR rag) -survey', "au:yoneki", "cat:cs.LG"]
    text = visible_text(render_alert(PAPER, kind="new", matched=queries).text)
    [line] = [line for line in text.splitlines() if line.startswith("🔎")]
    assert line.endswith(" +2") and len(line) <= 48
    assert line.startswith('🔎 Matched: cs.CL ("retrieval')
    short = visible_text(render_alert(PAPER, kind="new", matched=["au:yoneki", "cat:cs.LG",
                                                                   'ti:"graph neural"']).text)
    assert "🔎 Matched: au:yoneki, cat:cs.LG +1" in short


def test_the_date_shows_on_revisions_and_cards_only() -> None:
    v2 = replace(PAPER, version=2)
    assert "2026-11-20" in visible_text(render_alert(v2, kind="revision").text)
    assert "2026-11-20" in visible_text(render_paper_card(PAPER).text)
    assert "2026-11-20" not in visible_text(render_alert(PAPER, kind="new").text)


def test_the_chinese_card_has_its_own_labels_and_the_same_layout() -> None:
    v3 = replace(PAPER, version=3)
    message = render_alert(v3, kind="revision", matched=["au:yoneki"], lang="zh")
    text = visible_text(message.text)
    assert text.startswith("🔄 v3 · Routing Attention")
    assert "Eiko Yoneki, Alan Turing, Grace Hopper 等 8 人" in text
    assert "🔎 匹配：au:yoneki" in text
    assert button_labels(message.reply_markup) == [
        "⭐ 收藏", "👍", "👎", "📄 展开摘要", "🌐 arXiv 页面", "📥 PDF"]


def test_expanded_alert_shows_the_full_abstract_and_a_collapse_button() -> None:
    message = render_alert(PAPER, kind="new", matched=[], saved=False, expanded=True, diff=None)
    assert ABSTRACT in visible_text(message.text)
    assert "🔼 Collapse" in button_labels(message.reply_markup)
    assert ToggleAbstract(ArxivId("2611.11450", 1), expand=False) in \
        callback_actions(message.reply_markup)


def test_buttons_save_abstract_and_links() -> None:
    markup = render_alert(PAPER, kind="new", matched=[], saved=False, expanded=False,
                          diff=None).reply_markup
    assert button_labels(markup) == [
        "⭐ Save", "👍", "👎", "📄 Full abstract", "🌐 arXiv", "📥 PDF"]
    assert callback_actions(markup) == [
        ToggleSave(ArxivId("2611.11450", 1)),
        Rate(ArxivId("2611.11450"), Feedback.MORE, give=True),
        Rate(ArxivId("2611.11450"), Feedback.LESS, give=True),
        ToggleAbstract(ArxivId("2611.11450", 1), expand=True),
    ]
    urls = [b.url for row in markup.inline_keyboard for b in row if b.url]
    assert urls == ["https://arxiv.org/abs/2611.11450", "https://arxiv.org/pdf/2611.11450v1"]


def test_saved_paper_shows_saved_button() -> None:
    markup = render_alert(PAPER, kind="new", matched=[], saved=True, expanded=False,
                          diff=None).reply_markup
    assert button_labels(markup)[0] == "⭐ Saved"


def test_short_abstract_needs_no_expand_button() -> None:
    paper = replace(PAPER, abstract="A short abstract.")
    message = render_alert(paper, kind="new", matched=[], saved=False, expanded=False, diff=None)
    assert "A short abstract." in visible_text(message.text)
    assert button_labels(message.reply_markup) == ["⭐ Save", "👍", "👎", "🌐 arXiv", "📥 PDF"]


def test_the_given_label_is_lit_and_pressing_it_again_clears_it() -> None:
    message = render_alert(PAPER, kind="new", feedback=Feedback.LESS)
    assert button_labels(message.reply_markup)[:3] == ["⭐ Save", "👍", "👎✓"]
    actions = callback_actions(message.reply_markup)
    assert Rate(ArxivId("2611.11450"), Feedback.LESS, give=False) in actions
    assert Rate(ArxivId("2611.11450"), Feedback.MORE, give=True) in actions
    liked = with_feedback_state(message.reply_markup, "2611.11450", Feedback.MORE)
    assert button_labels(liked)[:3] == ["⭐ Save", "👍✓", "👎"]
    cleared = with_feedback_state(liked, "2611.11450", None)
    assert cleared == render_alert(PAPER, kind="new").reply_markup
    assert with_feedback_state(liked, "2611.99999", None) == liked, "another paper's pair"


def test_every_button_fits_telegrams_limits_with_feedback_on_an_old_style_id() -> None:
    old = replace(PAPER, arxiv_id="math-ph/0612345", version=999)
    markup = render_alert(old, kind="revision", feedback=Feedback.MORE).reply_markup
    rows = markup.inline_keyboard
    assert all(len(row) <= 8 for row in rows) and sum(map(len, rows)) <= 100
    assert all(len(b.callback_data.encode()) <= 64 for row in rows for b in row
               if b.callback_data)
    assert "👍✓" in button_labels(markup)


def test_with_saved_state_flips_only_that_papers_save_button() -> None:
    message = render_alert(PAPER, kind="new", matched=[], saved=False, expanded=True, diff=None)
    saved = with_saved_state(message.reply_markup, "2611.11450", saved=True)
    assert button_labels(saved) == ["⭐ Saved", "👍", "👎", "🔼 Collapse", "🌐 arXiv", "📥 PDF"]
    back = with_saved_state(saved, "2611.11450", saved=False)
    assert back == message.reply_markup
    assert with_saved_state(message.reply_markup, "2611.99999", saved=True) == \
        message.reply_markup


def test_revision_alert_says_what_changed() -> None:
    v1 = replace(PAPER, title="Routing Attention", authors=PAPER.authors[:2], comment=None,
                 abstract=ABSTRACT.replace(" Code is public.", ""))
    v2 = replace(PAPER, version=2, comment="Accepted at NeurIPS 2026")
    message = render_alert(v2, kind="revision", matched=[], saved=True, expanded=False,
                           diff=describe_changes(v1, v2))
    assert_fits(message)
    text = visible_text(message.text)
    assert text.startswith("🔄 v2 · Routing Attention: 1.93× Faster <Sparse>")
    assert "Title was: Routing Attention" in text
    assert "Authors: +Grace Hopper, +Ada Lovelace" in text
    assert "Comment added: Accepted at NeurIPS 2026" in text
    assert "Abstract: +3 words, −0 words — “Code is public.”" in text
    assert "Matched" not in text  # a saved-paper revision, no subscription involved
    assert "arXiv:2611.11450v2 · 2026-11-20" in text
    assert button_labels(message.reply_markup)[0] == "⭐ Saved"


def test_a_revision_counts_one_word_in_the_singular() -> None:
    v2 = replace(PAPER, version=2, abstract=ABSTRACT + " Really.")
    text = visible_text(render_alert(v2, kind="revision",
                                     diff=describe_changes(PAPER, v2)).text)
    assert "Abstract: +1 word, −0 words" in text


def test_a_diff_excerpt_shows_dashes_as_the_abstract_does() -> None:
    v1 = replace(PAPER, abstract=r"With $x$ we gain on most tasks.")
    v2 = replace(PAPER, version=2, abstract=r"With $x$ we gain 8--17 points on most tasks.")
    text = visible_text(render_alert(v2, kind="revision", expanded=True,
                                     diff=describe_changes(v1, v2)).text)
    assert "gain 8–17 points" in text  # the full abstract
    assert "“8–17 points”" in text and "8--17" not in text


def test_revision_skipping_versions_names_the_version_compared_with() -> None:
    v3 = replace(PAPER, version=3, comment="Camera-ready")
    diff = describe_changes(replace(PAPER, comment="Draft"), v3)
    text = visible_text(render_alert(v3, kind="revision", matched=["cat:cs.LG"], saved=False,
                                     expanded=False, diff=diff).text)
    assert "Changes since v1:" in text
    assert "Comment: Draft → Camera-ready" in text


def test_revision_with_nothing_visible_changed_says_so() -> None:
    v2 = replace(PAPER, version=2)
    text = visible_text(render_alert(v2, kind="revision", matched=[], saved=True, expanded=False,
                                     diff=describe_changes(PAPER, v2)).text)
    assert "Title, authors, abstract and comments unchanged" in text


def test_paper_card_has_no_badge_and_the_same_buttons() -> None:
    card = render_paper_card(PAPER, saved=False)
    alert = render_alert(PAPER, kind="new", matched=[], saved=False, expanded=False, diff=None)
    assert visible_text(card.text).startswith("Routing Attention")
    assert card.reply_markup == alert.reply_markup


def test_old_style_ids_get_working_buttons() -> None:
    paper = replace(PAPER, arxiv_id="math.AG/0601001", version=12)
    message = render_paper_card(paper, saved=False)
    assert_fits(message)
    assert ToggleSave(ArxivId("math.AG/0601001", 12)) in callback_actions(message.reply_markup)


def test_label_language_is_passed_through() -> None:
    # Unknown languages fall back to English rather than failing.
    message = render_alert(PAPER, kind="new", matched=[], saved=False, expanded=False, diff=None,
                           lang="xx")
    assert visible_text(message.text).startswith("🆕 Routing Attention")
    assert "⭐ Save" in button_labels(message.reply_markup)


def test_huge_paper_still_fits_in_one_message() -> None:
    paper = replace(
        PAPER,
        title="<&> " * 400,
        authors=tuple(f"Author & <{i}>" for i in range(500)),
        abstract="&<>" * 3500 + " word" * 1000,
        comment="&" * 2000,
        categories=tuple(f"cs.X{i}" for i in range(50)),
    )
    diff = describe_changes(replace(paper, title="old & <title>" * 100, comment=None,
                                    authors=("Someone & <else>",) * 200), paper)
    for expanded in (False, True):
        message = render_alert(paper, kind="revision", matched=["ti:&<>" * 50] * 40, saved=False,
                               expanded=expanded, diff=diff)
        assert_fits(message)
        assert "(500 authors)" in visible_text(message.text)


def test_ten_thousand_character_abstract_expanded_is_cut_to_fit() -> None:
    paper = replace(PAPER, abstract="lorem ipsum dolor sit amet " * 400)
    message = render_alert(paper, kind="new", matched=[], saved=False, expanded=True, diff=None)
    assert_fits(message)
    text = visible_text(message.text)
    assert text.endswith("…")
    assert utf16_len(message.text) > 3500  # uses the room it has


# ---------------------------------------------------------------------------------------------
# Hypothesis: arbitrary text never breaks the markup, the limit or the renderer

fragments = st.sampled_from([*"<>&\"'%$\\{}_^~#\n\t\x00\x07\u200d 🎉🧪a", "&amp;", "</b>", "<b>",
                             r"$\alpha$", r"\emph{", "--", "&#x27;"])
nasty_text = st.lists(fragments | st.text(max_size=8), max_size=60).map("".join)
ids = st.one_of(
    st.from_regex(r"[0-9]{4}\.[0-9]{5}", fullmatch=True),
    st.sampled_from(["hep-th/9901001", "math.AG/0601001"]),
)
papers = st.builds(
    Paper,
    arxiv_id=ids,
    version=st.integers(1, 30),
    title=nasty_text,
    authors=st.lists(st.text(max_size=60), max_size=40).map(tuple),
    abstract=st.text(max_size=3000) | nasty_text,
    categories=st.lists(st.sampled_from(["cs.LG", "cs.AI", "math.AG", "stat.ML"]), max_size=6)
    .map(tuple),
    comment=st.none() | nasty_text,
)
matched_lists = st.lists(nasty_text, max_size=8)

BIG = replace(PAPER, title="<b>&amp;</b> " * 60, authors=tuple(f"A{i} <&>" for i in range(500)),
              abstract="x & <y> " * 1300, comment="<i>" * 100)


@settings(max_examples=150, deadline=None)
@given(papers, papers, st.sampled_from(["new", "revision", "card"]), matched_lists,
       st.booleans(), st.booleans())
@example(BIG, replace(BIG, version=2, title="t"), "revision", ["<&>" * 100] * 30, True, True)
def test_any_paper_renders_well_formed_and_fits(old: Paper, paper: Paper, kind: str,
                                                matched: list[str], saved: bool,
                                                expanded: bool) -> None:
    diff = describe_changes(old, paper) if kind == "revision" else None
    message = render_alert(paper, kind=kind, matched=matched, saved=saved, expanded=expanded,
                           diff=diff)
    assert_fits(message)
    parsed = parse(message.text)
    title = latex_to_unicode(paper.title)
    shown_title = parsed.bold[0]
    if shown_title.endswith("…") and shown_title != title:
        assert title.startswith(shown_title[:-1])
    else:
        assert shown_title == title
    assert ToggleSave(ArxivId(paper.arxiv_id, paper.version)) in \
        callback_actions(message.reply_markup)


@settings(max_examples=100, deadline=None)
@given(nasty_text)
@example("<b>Ada</b> & \u202eco\n")
def test_any_first_name_shows_escaped_on_one_short_line(name: str) -> None:
    message = render_paper_card(PAPER, saved=True, saved_by=name)
    assert_fits(message)
    [line] = [ln for ln in visible_text(message.text).splitlines() if ln.startswith("📌")]
    assert line == "📌 Saved by " + saver_name(name)
    assert len(saver_name(name)) <= SAVER_NAME_CHARS


# ---------------------------------------------------------------------------------------------
# Digests


def realistic_entries(count: int) -> list[DigestEntry]:
    title = ("Scaling Laws for Sparse Mixture-of-Experts Language Models under Quantisation "
             "and Distillation: {i}")
    return [
        DigestEntry(
            replace(PAPER, arxiv_id=f"2611.{11450 + i}", title=title.format(i=i),
                    authors=tuple(f"Firstname Lastname{j}" for j in range(5 + i % 16))),
            kind="revision" if i % 7 == 0 else "new",
            matched=("cat:cs.LG", "au:Yoneki"),
        )
        for i in range(count)
    ]


def test_digest_of_25_typical_matches_fits_in_three_messages() -> None:
    messages = render_digest(realistic_entries(25))
    assert 1 <= len(messages) <= 3
    for message in messages:
        assert_fits(message)


def test_digest_numbers_entries_across_messages_with_save_buttons() -> None:
    entries = realistic_entries(60)
    messages = render_digest(entries, title="While you were paused")
    assert len(messages) > 1
    numbers: list[int] = []
    saves: list[ToggleSave] = []
    for page, message in enumerate(messages, 1):
        assert_fits(message)
        text = visible_text(message.text)
        assert text.startswith(f"📬 While you were paused {page}/{len(messages)} · "
                               "60 new matches (9 revised)\n")
        numbers += [int(n) for n in re.findall(r"^(\d+)\. ", text, flags=re.MULTILINE)]
        for row in message.reply_markup.inline_keyboard:
            assert len(row) <= 5
        actions = callback_actions(message.reply_markup)
        assert all(isinstance(a, ToggleSave) for a in actions)
        saves += actions  # type: ignore[arg-type]
    assert numbers == list(range(1, 61))
    assert [m.entry_count for m in messages] == [len(re.findall(r"^\d+\. ", visible_text(m.text),
                                                                flags=re.MULTILINE))
                                                 for m in messages]
    assert [s.number for s in saves] == list(range(1, 61))
    assert [s.paper for s in saves] == [ArxivId(e.paper.arxiv_id, e.paper.version)
                                        for e in entries]


def test_digest_entry_shows_number_title_authors_and_link() -> None:
    [message] = render_digest(realistic_entries(11))
    text = visible_text(message.text)
    # Counted once: "11 new matches", the revisions among them in brackets.
    assert text.startswith("📬 11 new matches (2 revised)\n")
    assert "1. Scaling Laws for Sparse" in text
    assert "Firstname Lastname0, Firstname Lastname1 et al. (5 authors)" in text
    assert '<a href="https://arxiv.org/abs/2611.11450">2611.11450v1</a>' in message.text
    assert "🔄 v1" in text  # entry 1 (i == 0) is a revision
    assert button_labels(message.reply_markup)[:3] == ["💾 1", "💾 2", "💾 3"]


def test_digest_save_buttons_toggle_by_number() -> None:
    [message] = render_digest(realistic_entries(11))
    saved = with_saved_state(message.reply_markup, "2611.11452", saved=True)
    assert button_labels(saved)[:4] == ["💾 1", "💾 2", "✅ 3", "💾 4"]


def test_a_digest_without_revisions_counts_only_matches_in_both_languages() -> None:
    entries = [replace(entry, kind="new") for entry in realistic_entries(12)]
    [english] = render_digest(entries)
    assert visible_text(english.text).startswith("📬 12 new matches\n")
    [chinese] = render_digest(realistic_entries(12), lang="zh")
    assert visible_text(chinese.text).startswith("📬 12 篇新匹配（其中修订 2 篇）\n")
    assert "Firstname Lastname0, Firstname Lastname1 等 5 人" in visible_text(chinese.text)
    [one] = render_digest(entries[:1])
    assert visible_text(one.text).startswith("📬 1 new match\n")


def test_empty_digest_renders_nothing() -> None:
    assert render_digest([]) == []


digest_entries = st.lists(
    st.builds(DigestEntry, papers, st.sampled_from(["new", "revision"]),
              matched_lists.map(tuple), st.booleans()),
    min_size=1, max_size=120,
)


@settings(max_examples=40, deadline=None)
@given(digest_entries, st.none() | nasty_text)
def test_any_digest_is_well_formed_numbered_and_fits(entries: list[DigestEntry],
                                                    title: str | None) -> None:
    messages = render_digest(entries, title=title)
    numbers: list[int] = []
    for message in messages:
        assert_fits(message)
        numbers += [a.number for a in callback_actions(message.reply_markup)]  # type: ignore
    assert numbers == list(range(1, len(entries) + 1))
    assert sum(m.entry_count for m in messages) == len(entries)


@settings(max_examples=40, deadline=None)
@given(digest_entries, st.integers(1, 3), st.integers(0, 800))
def test_a_capped_digest_is_the_first_messages_of_the_whole_numbered_on_and_fits_its_button(
        entries: list[DigestEntry], max_messages: int, numbered: int) -> None:
    whole = render_digest(entries, first_number=numbered + 1)
    capped = render_digest(entries, max_messages=max_messages, first_number=numbered + 1,
                           counted=["new"] * 1000)
    assert [m.entry_count for m in capped] == [m.entry_count for m in whole[:max_messages]]
    assert all(visible_text(m.text).startswith("📬 1000 new matches") for m in capped)
    shown = sum(m.entry_count for m in capped)
    numbers = [a.number for m in capped for a in callback_actions(m.reply_markup)]  # type: ignore
    assert numbers == list(range(numbered + 1, numbered + shown + 1))
    assert_fits(with_more(capped[-1], 1000 - shown, DigestRest(numbered + shown, 0, 2**62)))


def test_a_digest_of_fifty_in_one_message_shows_what_fits_and_counts_them_all() -> None:
    entries = realistic_entries(50)
    [first] = render_digest(entries, max_messages=1)
    assert 10 < first.entry_count < 50
    assert visible_text(first.text).startswith("📬 50 new matches (8 revised)\n")
    assert f"{first.entry_count + 1}. " not in visible_text(first.text)


@pytest.mark.parametrize("count", [11, 25, 100, 400])
def test_digest_messages_are_packed_full(count: int) -> None:
    messages = render_digest(realistic_entries(count))
    for message in messages[:-1]:
        buttons = sum(len(row) for row in message.reply_markup.inline_keyboard)
        # Full means: no room for one more entry (~300 units), or the 40-entry cap reached.
        assert utf16_len(message.text) > 3600 or buttons == 40


def test_chinese_labels_hold_their_value_without_a_stray_space() -> None:
    v1 = replace(PAPER, title="Routing Attention", authors=PAPER.authors[:7])
    v2 = replace(PAPER, version=2)
    text = visible_text(render_alert(v2, kind="revision", matched=["au:yoneki"], lang="zh",
                                     diff=describe_changes(v1, v2)).text)
    assert "✏️ 原标题：Routing Attention\n" in text
    assert "👥 作者变动：+Barbara Liskov\n" in text
    assert "🔎 匹配：au:yoneki\n" in text


@settings(max_examples=300)
@given(st.lists(st.sampled_from([*"ab .!?。E\n(\"", "Word", "e.g.", "1.93", " The"]),
                max_size=400).map(lambda parts: " ".join("".join(parts).split())))
def test_a_preview_is_a_short_prefix_of_the_abstract(text: str) -> None:
    preview, cut = sentence_preview(text)
    if not cut:
        assert preview == text and len(text) <= PREVIEW_MAX_CHARS
    elif preview.endswith("…"):  # cut at a word
        assert text.startswith(preview[:-1]) and len(preview) <= PREVIEW_CHARS
    else:  # cut at a sentence end, near the target
        assert text.startswith(preview) and PREVIEW_CHARS // 2 <= len(preview) <= PREVIEW_MAX_CHARS
        assert preview[-1] in ".!?。\"”’)]"

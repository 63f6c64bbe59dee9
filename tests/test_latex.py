"""Titles and abstracts read as a researcher expects: basic LaTeX as Unicode, nothing eaten."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.delivery.latex import latex_to_unicode


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (r"$1.93\times$ faster inference", "1.93× faster inference"),
        (r"$\alpha$-stable processes", "α-stable processes"),
        (r"\alpha and $\beta$", "α and β"),
        (r"An $O(n^2)$ algorithm", "An O(n²) algorithm"),
        (r"$x_i$ and $x^{-1}$", "xᵢ and x⁻¹"),
        (r"$\ell_2$ regularisation", "ℓ₂ regularisation"),
        (r"M\"uller and {\l}ukasz", "Müller and łukasz"),
        (r"Schr\"{o}dinger bridges", "Schrödinger bridges"),
        (r"\L{}ukasz \'Swi\k{a}tek", "Łukasz Świątek"),
        (r"\emph{Deep} learning", "Deep learning"),
        (r"\textbf{Bold} and \texttt{code} and \mbox{box}", "Bold and code and box"),
        (r"$\mathcal{O}(n\log n)$ sorting", "𝒪(n log n) sorting"),
        (r"$a \ne b$", "a ≠ b"),
        (r"\LaTeX{} tables", "LaTeX tables"),
        (r"Caf\'e \& bar", "Café & bar"),
        (r"See \href{https://example.org}{our code}", "See our code"),
        (r"$\tilde{O}(\sqrt{n})$ regret", "Õ(√(n)) regret"),
    ],
)
def test_latex_is_rendered_as_unicode(source: str, expected: str) -> None:
    assert latex_to_unicode(source) == expected


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("A & B", "A & B"),
        ("100% sure", "100% sure"),
        ("Over 50% of users & 30% of bots", "Over 50% of users & 30% of bots"),
        (r"With $x$: 50% & more", "With x: 50% & more"),
        ("a < b > c", "a < b > c"),
        ("It costs $5 per run", "It costs $5 per run"),
        (r"Costs $5 with $\alpha$-tuning", "Costs $5 with α-tuning"),
        ("Between $5 and $10 per hour", "Between $5 and $10 per hour"),
        (r"A $2$-approximation in $O(1)$", "A 2-approximation in O(1)"),
        ("Pages 1--2 of the A---Z guide", "Pages 1--2 of the A---Z guide"),
        ("~5% error, Fig.~1", "~5% error, Fig.~1"),
        (r"Approximately ~5% error, Fig.~\ref{f1}", "Approximately ~5% error, Fig."),
        ("#hashtags and under_scores and ^carets", "#hashtags and under_scores and ^carets"),
        ("Emoji 🎉 stay 🧪", "Emoji 🎉 stay 🧪"),
    ],
)
def test_plain_text_and_literal_characters_survive(source: str, expected: str) -> None:
    assert latex_to_unicode(source) == expected


def test_whitespace_is_collapsed_and_control_characters_dropped() -> None:
    assert latex_to_unicode("  Deep\n\tlearning\x00 for\x07  $x$\r\n") == "Deep learning for x"


@pytest.mark.parametrize(
    "source",
    [
        r"\begin{itemize} no end",
        "{" * 3000 + "deep",
        "\\",
    ],
)
def test_broken_latex_falls_back_to_the_raw_text(source: str) -> None:
    assert latex_to_unicode(source) == " ".join(source.split())


def test_an_unclosed_group_keeps_its_text() -> None:
    assert latex_to_unicode(r"\textit{unclosed group") == "unclosed group"


def test_empty_text_stays_empty() -> None:
    assert latex_to_unicode("") == ""
    assert latex_to_unicode("   \n ") == ""


latexy = st.text(
    alphabet=st.sampled_from(list("\\${}^_&%~#<> abcxyz019\n'\"`-")) | st.characters(),
    max_size=300,
)


@settings(max_examples=300, deadline=None)
@given(latexy)
def test_never_raises_and_never_returns_control_characters(source: str) -> None:
    result = latex_to_unicode(source)
    assert isinstance(result, str)
    assert result == result.strip()
    assert "  " not in result
    assert not any(ord(ch) < 32 for ch in result)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_characters="\\$"), max_size=300))
def test_text_without_latex_is_only_whitespace_normalised(source: str) -> None:
    # Control characters and lone surrogates (which cannot even be sent) are dropped.
    visible = (ch for ch in source
               if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cs"))
    expected = " ".join("".join(visible).split())
    assert latex_to_unicode(source) == expected


def _fixture_texts() -> list[str]:
    from pathlib import Path

    from bot.arxiv.feeds import parse_api, parse_rss

    texts = []
    for path in sorted((Path(__file__).parent / "fixtures").glob("*.xml")):
        parser = parse_api if path.name.startswith("api") else parse_rss
        try:
            papers = parser(path.read_bytes()).papers
        except Exception:  # the error and empty samples
            continue
        texts += [t for p in papers for t in (p.title, p.abstract, p.comment or "") if t]
    return texts


def test_converting_run_by_run_equals_converting_the_whole_text_on_real_abstracts() -> None:
    from bot.delivery.latex import _convert, clean_text

    texts = [t for t in _fixture_texts() if "$" in t or "\\" in t]
    assert len(texts) >= 5
    for text in texts:
        assert latex_to_unicode(text) == _convert(clean_text(text))


def test_display_math_and_dashes_are_converted_as_before() -> None:
    text = r"Landau--Zener gives \[\frac{n}{\log n} \cdot x_2^2,\] and it~works"
    out = latex_to_unicode(text)
    assert "Landau–Zener" in out and "x₂²" in out and "it works" in out.replace("\xa0", " ")


def test_the_preview_source_never_cuts_inside_math_or_braces() -> None:
    from bot.delivery.render import preview_source

    abstract = ("word " * 150) + r"$a + b = \frac{c}{d}$ " + r"\emph{stress test} " * 40
    for budget in range(700, 900, 7):
        prefix, cut = preview_source(abstract, budget)
        assert cut
        assert prefix.count("$") % 2 == 0
        assert prefix.count("{") == prefix.count("}")


@settings(max_examples=300)
@given(st.text(alphabet=st.characters(codec=None, categories=None), max_size=200))
def test_clean_text_drops_control_characters_and_collapses_whitespace(text: str) -> None:
    from bot.delivery.latex import clean_text

    expected = " ".join("".join(
        " " if ch.isspace() else ch for ch in text
        if ch.isspace() or unicodedata.category(ch) not in ("Cc", "Cs")
    ).split())
    assert clean_text(text) == expected


def test_clean_text_handles_surrogates_and_next_line() -> None:
    from bot.delivery.latex import clean_text

    assert clean_text("a\ud800b\x00c\x85d\te\u2028f") == "abc d e f"

"""LaTeX without loss: nothing a title or abstract says may disappear when it is rendered.

The examples are the ones real arXiv abstracts lost before (issue 13): a Greek letter with a
subscript, author-defined macros, astronomers' units.
"""

from __future__ import annotations

import re
import string
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.delivery.latex import latex_to_unicode


@pytest.mark.parametrize(("source", "expected"), [
    (r"$\alpha_p(E_{0+})=+3.2$", "αₚ(E₀₊)=+3.2"),
    (r"$T_1,\dots,T_d$ and $\sigma$", "T₁,…,T_d and σ"),
    (r"In $\XQM$, a quark", r"In \XQM, a quark"),
    (r"Hilbert $G$-$\cla$ module", r"Hilbert G-\cla module"),
    (r"${\mathcal S}(\R)$ over $\R$", "S(ℝ) over ℝ"),
    (r"(10.4 \micron, 11.7 \micron)", "(10.4 µm, 11.7 µm)"),
    (r"$M_\odot$ stars of 2 $M_\sun$", "M_☉ stars of 2 M_☉"),
    (r"$\N$, $\Z$, $\Q$ and $\C$", "ℕ, ℤ, ℚ and ℂ"),
    (r"a 5000 \AA{} line", "a 5000 Å line"),
    (r"$\sim 3$, $\lesssim 1$ and $\gtrsim 2$", "∼ 3, ≲ 1 and ≳ 2"),
    (r"as shown before \cite{smith2020, lee2021}.", "as shown before."),
    (r"$\beta_{ij}^{k}$ and $\Gamma^\mu$ and $\alpha^2_3$", "βᵢⱼᵏ and Γ^μ and α²₃"),
    (r"the \XQM model", r"the \XQM model"),
])
def test_what_real_abstracts_lost_is_now_shown(source: str, expected: str) -> None:
    assert latex_to_unicode(source) == expected


# --- the property ------------------------------------------------------------------------------

_WORD = st.text(alphabet=string.ascii_letters + string.digits, min_size=1, max_size=8)
_GREEK = st.sampled_from([r"\alpha", r"\beta", r"\Gamma", r"\sigma", r"\mu", r"\ell", r"\omega"])
_UNKNOWN = st.sampled_from([r"\XQM", r"\cla", r"\Tr", r"\myop", r"\R", r"\micron", r"\sun"])
_SYMBOL = st.sampled_from([r"\dots", r"\sim", r"\lesssim", r"\gtrsim", r"\times", r"\odot"])
_SCRIPT_BODY = st.one_of(
    st.sampled_from(list(string.ascii_letters + string.digits + "+-")),
    st.text(alphabet=string.ascii_lowercase + string.digits + "+-", min_size=1,
            max_size=4).map(lambda s: "{" + s + "}"),
    _GREEK,
)
_MATH_ATOM = st.one_of(
    st.sampled_from(list(string.ascii_letters + string.digits)), _GREEK, _UNKNOWN, _SYMBOL,
    st.sampled_from(["+", "-", "=", ",", "(", ")", " "]),
)
_MATH_TERM = st.one_of(
    _MATH_ATOM,
    st.tuples(st.one_of(st.sampled_from(list("xyETM")), _GREEK), st.sampled_from("_^"),
              _SCRIPT_BODY).map("".join),
)
_MATH = st.lists(_MATH_TERM, min_size=1, max_size=6).map(
    lambda parts: "$" + "".join(parts).strip() + "$").filter(lambda m: m != "$$")
_TEXT_TOKEN = st.one_of(
    _WORD, _WORD, _WORD, _MATH,
    st.sampled_from([",", ".", ";", ":", "(", ")", "-", "--", "!", "?", "'s", "Fig.~2"]),
    st.tuples(st.sampled_from([r"\emph", r"\textbf", r"\textit", r"\mathrm", r"\foo", r"\XQM"]),
              _WORD).map(lambda p: f"{p[0]}{{{p[1]}}}"),
    st.sampled_from([r"\alpha", r"\XQM", r"\R", r"\micron", r"\sun", r"\AA{}", r"\dots",
                     r"\LaTeX{}", r"\ell"]),
    st.tuples(st.sampled_from(['\\"', "\\'", "\\`", "\\^", "\\~"]),
              st.sampled_from(list("aeiouAEIOU")), _WORD).map("".join),
)
# Each math segment stands between two marker words, so its rendering can be found again.
_TEXT = st.lists(st.tuples(_TEXT_TOKEN, st.sampled_from([" ", " ", ""])), max_size=25).map(
    lambda pairs: "".join(
        (f"mk{i}L {token} mk{i}R " if token.startswith("$") else token + gap)
        for i, (token, gap) in enumerate(pairs)))
_GREEK_LETTERS = {r"\alpha": "α", r"\beta": "β", r"\Gamma": "Γ", r"\sigma": "σ", r"\mu": "μ",
                  r"\ell": "ℓ", r"\omega": "ω"}

_CONTROL = re.compile(r"\\(?:[A-Za-z]+|.)", re.DOTALL)
_MATH_RE = re.compile(r"(?<!\\)\$[^$]+\$")


def _fold(text: str) -> str:
    """Compatibility forms and accents folded, so `xᵢ` reads `xi` and `é` reads `e`."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _runs_outside_math(text: str) -> list[str]:
    """The alphanumeric runs a reader must find again: not a macro's name, not inside math."""
    plain = _MATH_RE.sub(" ", text)
    return re.findall(r"[A-Za-z0-9]+", _CONTROL.sub(" ", plain))


@settings(max_examples=400, deadline=None)
@given(_TEXT)
def test_every_word_outside_math_survives_and_no_math_converts_to_nothing(source: str) -> None:
    rendered = latex_to_unicode(source)
    shown = _fold(rendered)

    for run in _runs_outside_math(source):
        assert run in shown, f"{run!r} disappeared from {source!r}: {shown!r}"
    for marker, math in re.findall(r"mk(\d+)L (\$[^$]+\$) mk\1R", source):
        between = re.search(f"mk{marker}L(.*)mk{marker}R", rendered)
        assert between is not None and between.group(1).strip(), f"{math!r} became nothing"
        for macro, letter in _GREEK_LETTERS.items():
            if re.search(re.escape(macro) + "(?![A-Za-z])", math):
                assert letter in between.group(1), f"{macro} lost from {math!r}"

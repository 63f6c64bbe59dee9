"""Matching papers against subscriptions: real arXiv records, and the index against naive truth."""

import dataclasses
import gc
import os
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bot.core.models import GENERAL, Alert, AlertKind, Match, Paper, PlainAlerts
from bot.query.alerts import Pairs
from bot.query.matcher import Matcher, anchors, evaluate
from bot.query.parser import MIN_PREFIX_LENGTH, Node, QueryError, is_anchored, parse

FIXTURES = Path(__file__).parent / "fixtures"
_ATOM = {"a": "http://www.w3.org/2005/Atom", "arxiv": "http://arxiv.org/schemas/atom"}


def _recorded_papers(filename: str) -> dict[str, Paper]:
    """The entries of a recorded arXiv API response, keyed by base id."""
    papers = {}
    for entry in ET.parse(FIXTURES / filename).getroot().findall("a:entry", _ATOM):
        versioned = entry.findtext("a:id", "", _ATOM).rsplit("/abs/", 1)[1]
        base, _, version = versioned.rpartition("v")
        primary = entry.find("arxiv:primary_category", _ATOM)
        categories = [c.get("term", "") for c in entry.findall("a:category", _ATOM)]
        if primary is not None and primary.get("term") in categories:
            categories.remove(primary.get("term", ""))
            categories.insert(0, primary.get("term", ""))
        papers[base] = Paper(
            arxiv_id=base,
            version=int(version),
            title=entry.findtext("a:title", "", _ATOM),
            authors=tuple(a.findtext("a:name", "", _ATOM)
                          for a in entry.findall("a:author", _ATOM)),
            abstract=entry.findtext("a:summary", "", _ATOM),
            categories=tuple(categories),
        )
    return papers


RECORDED = {
    **_recorded_papers("api-search-all-testing-m10.atom.xml"),
    **_recorded_papers("api-idlist-1707.08567-utf8-authors.atom.xml"),
    **_recorded_papers("api-legacy2016-search-au-del_maestro.atom.xml"),
}


def _paper(title: str = "", abstract: str = "", authors: Sequence[str] = (),
           categories: Sequence[str] = ("cs.LG",), arxiv_id: str = "2611.00001") -> Paper:
    return Paper(arxiv_id, 1, title, tuple(authors), abstract, tuple(categories))


def _matched_ids(query: str, papers: Sequence[Paper]) -> set[str]:
    """Ids of the papers the query matches, through the indexed matcher."""
    found = Matcher.build([(1, 10, parse(query))]).match(papers)
    return {match.paper.arxiv_id for match in found.get(10, [])}


@pytest.mark.parametrize(
    ("query", "arxiv_id"),
    [
        ("au:wubben", "1707.08567"),
        ('au:"D. Wübben"', "1707.08567"),
        ('au:"Dirk Wubben"', "1707.08567"),
        ('au:"Peter de With"', "1707.08567"),
        ('au:"P. H. N. de With"', "1707.08567"),
        ('au:"Aurora Ramirez"', "2405.13786"),
        ('au:"J. R. Romero"', "2405.13786"),
        ('au:"Thomas LaToza"', "2302.03287"),
    ],
)
def test_accented_and_initialled_authors_are_found(query: str, arxiv_id: str) -> None:
    assert arxiv_id in _matched_ids(query, list(RECORDED.values()))


def test_an_author_with_a_particle_is_found_however_it_is_written() -> None:
    papers = list(RECORDED.values())
    del_maestro = {p.arxiv_id for p in papers if any("Del Maestro" in a for a in p.authors)}
    assert len(del_maestro) == 10
    for query in ("au:Maestro", 'au:"Del Maestro"', "au:del_maestro", 'au:"A. Del Maestro"',
                  'au:"Adrian Del Maestro"'):
        assert _matched_ids(query, papers) == del_maestro, query
    assert _matched_ids('au:"Bernd Del Maestro"', papers) == set()


def test_a_different_given_name_is_a_different_person() -> None:
    papers = [_paper(authors=["Eiko Yoneki"], arxiv_id="1"), _paper(authors=["Emma Yoneki"],
                                                                    arxiv_id="2")]
    assert _matched_ids('au:"Eiko Yoneki"', papers) == {"1"}
    assert _matched_ids('au:"E. Yoneki"', papers) == {"1", "2"}
    assert _matched_ids("au:yoneki", papers) == {"1", "2"}


def test_a_cross_listed_paper_matches_its_secondary_category() -> None:
    papers = list(RECORDED.values())
    # 2202.12139 is primary cs.SE, cross-listed in cs.LG; 1412.6529 is cond-mat with quant-ph.
    assert "2202.12139" in _matched_ids("cat:cs.LG", papers)
    assert "1412.6529" in _matched_ids("quant-ph", papers)
    assert "2204.08348" not in _matched_ids("cs.LG", papers)  # cs.SE only
    cross = _paper(categories=("stat.ML", "cs.LG"))
    assert _matched_ids("cat:cs.LG", [cross]) == {cross.arxiv_id}


def test_archives_and_old_style_categories() -> None:
    papers = list(RECORDED.values())
    old = RECORDED["cond-mat/0412498"]
    assert old.arxiv_id in _matched_ids("cat:cond-mat", papers)
    assert old.arxiv_id in _matched_ids("cond-mat.str-el", papers)
    assert old.arxiv_id not in _matched_ids("cat:cs", papers)
    string_theory = _paper("Dualities", categories=("hep-th", "gr-qc"), arxiv_id="hep-th/9901001")
    assert _matched_ids("hep-th", [string_theory]) == {"hep-th/9901001"}
    assert _matched_ids("cat:gr-qc", [string_theory]) == {"hep-th/9901001"}
    assert _matched_ids("hep-ph", [string_theory]) == set()


def test_phrases_match_across_punctuation_and_keep_their_order() -> None:
    paper = _paper("Graph-Neural Networks: a survey", "We revisit message-passing.")
    assert _matched_ids('"graph neural"', [paper]) == {paper.arxiv_id}
    assert _matched_ids('ti:"neural networks a survey"', [paper]) == {paper.arxiv_id}
    assert _matched_ids('"message passing"', [paper]) == {paper.arxiv_id}
    assert _matched_ids('"neural graph"', [paper]) == set()
    assert _matched_ids('abs:"graph neural"', [paper]) == set()
    # A phrase does not run from the title into the abstract.
    assert _matched_ids('"survey we"', [paper]) == set()


def test_latex_and_html_in_titles_are_read_as_text() -> None:
    recorded = RECORDED["2302.03287"]  # "ChatGPT and Software Testing Education: Promises & Perils"
    assert _matched_ids('ti:"promises perils"', [recorded]) == {recorded.arxiv_id}
    paper = _paper(r"$\alpha$-Stable Processes for M\"uller &amp; \emph{Friends}",
                   r"Costs drop by $1.93\times$ with Przemys{\l}aw's trick.")
    for query in ("ti:alpha", 'ti:"alpha stable"', "ti:muller", "ti:müller", "friends",
                  '"przemyslaw s trick"', "emph OR ti:friends"):
        assert _matched_ids(query, [paper]) == {paper.arxiv_id}, query
    assert _matched_ids("ti:emph", [paper]) == set()
    assert _matched_ids("ti:amp", [paper]) == set()


def test_words_are_whole_words_and_prefixes_are_explicit() -> None:
    paper = _paper("Quantized transformers", "Post-training quantization.")
    assert _matched_ids("quantiz*", [paper]) == {paper.arxiv_id}
    assert _matched_ids("ti:quantiz*", [paper]) == {paper.arxiv_id}
    assert _matched_ids("quantiz", [paper]) == set()
    assert _matched_ids("transformer", [paper]) == set()
    assert _matched_ids("post-train*", [paper]) == {paper.arxiv_id}


def test_matches_are_grouped_per_chat_in_paper_order_with_sorted_subscription_ids() -> None:
    first = _paper("Graph networks", authors=["Eiko Yoneki"], arxiv_id="1")
    second = _paper("Graph kernels", categories=("math.CO",), arxiv_id="2")
    third = _paper("Unrelated", categories=("hep-ex",), arxiv_id="3")
    matcher = Matcher.build([
        (7, 100, parse("graph")),
        (3, 100, parse("au:yoneki OR math.CO")),
        (5, 200, parse("cat:cs.LG -kernels")),
    ])
    assert matcher.match([first, second, third]) == {
        100: [Match(100, first, (3, 7)), Match(100, second, (3, 7))],
        200: [Match(200, first, (5,))],
    }
    assert matcher.remove(7) is True
    assert matcher.remove(7) is False
    assert matcher.match([second]) == {100: [Match(100, second, (3,))]}
    assert len(matcher) == 2
    # Adding under an existing id replaces that subscription.
    matcher.add(3, 300, parse("kernels"))
    assert matcher.match([first, second]) == {
        200: [Match(200, first, (5,))],
        300: [Match(300, second, (3,))],
    }
    assert matcher.matching(first) == {5}


def test_finding_and_grouping_are_the_two_halves_of_match() -> None:
    first = _paper("Graph networks", authors=["Eiko Yoneki"], arxiv_id="1")
    second = _paper("Graph kernels", categories=("math.CO",), arxiv_id="2")
    third = _paper("Unrelated", categories=("hep-ex",), arxiv_id="3")
    matcher = Matcher.build([(7, 100, parse("graph")), (3, 100, parse("au:yoneki OR math.CO")),
                             (5, 200, parse("cat:cs.LG -kernels"))])
    found = matcher.find([first, second, third])
    assert found == [{3, 5, 7}, {3, 7}, set()]
    assert [matcher.matching(p) for p in (first, second, third)] == found
    assert matcher.alerts([first, second, third], found) == matcher.match([first, second, third])
    with pytest.raises(ValueError):
        matcher.alerts([first, second], found)  # one id set per paper, or it is a caller's bug


@pytest.mark.parametrize("enabled", [True, False])
def test_matching_leaves_the_garbage_collector_as_it_found_it(enabled: bool) -> None:
    matcher = Matcher.build([(1, 10, parse("graph"))])
    paper = _paper("Graph networks")
    was = gc.isenabled()
    try:
        if not enabled:
            gc.disable()
        assert matcher.match([paper]) == {10: [Match(10, paper, (1,))]}
        assert gc.isenabled() is enabled
        with pytest.raises(ValueError):
            matcher.alerts([paper], [])
        assert gc.isenabled() is enabled
    finally:
        if was:
            gc.enable()


def test_prefixes_and_phrases_added_or_removed_later_are_seen_at_once() -> None:
    # The matcher remembers which prefixes a paper's words have and which word pairs it looks
    # for; subscriptions changing between polls must not be served from stale memory.
    paper = _paper("Quantized transformers", "Post-training quantization of graph neural nets.")
    matcher = Matcher.build([(1, 10, parse("quantiz*"))])
    assert matcher.matching(paper) == {1}
    matcher.add(2, 20, parse("transf*"))
    matcher.add(3, 30, parse('"graph neural"'))
    matcher.add(4, 40, parse('cat:cs.LG "neural nets"'))
    assert matcher.matching(paper) == {1, 2, 3, 4}
    matcher.remove(1)
    matcher.remove(3)
    assert matcher.matching(paper) == {2, 4}
    matcher.add(2, 20, parse("transfo*"))  # same id, another prefix
    matcher.add(5, 50, parse("quantizat*"))
    assert matcher.matching(paper) == {2, 4, 5}
    matcher.remove(4)
    assert matcher.matching(paper) == {2, 5}


def test_the_matcher_refuses_a_subscription_it_cannot_index() -> None:
    from bot.query.parser import Not, Text

    with pytest.raises(ValueError, match="no positive term"):
        Matcher().add(1, 1, Not(Text("any", ("survey",))))
    with pytest.raises(ValueError, match="prefix shorter"):
        Matcher().add(1, 1, Text("any", ("ab",), prefix=True))


def test_every_subscription_is_indexed_under_few_keys() -> None:
    node = parse('cat:cs.LG au:"E. Yoneki" (graph OR quantiz*)')
    assert anchors(node) == {("u1", "e yoneki")}
    assert anchors(parse('au:"J. A. Smith"')) == {("u1", "j smith")}
    assert anchors(parse('au:"Hao Jui Chen"')) == {
        ("uf", "hao chen"), ("ua", "h chen"), ("ua", "ha chen"), ("ua", "hao chen")}
    assert anchors(parse('au:"van der Berg"')) == {
        ("uf", "van berg"), ("ua", "v berg"), ("ua", "va berg"), ("ua", "van berg")}
    assert anchors(parse("graph OR quantiz* OR hep-th")) == {
        ("w", "graph"), ("pw", "quantiz"), ("a", "hep-th")}
    # A phrase is filed under a pair of its adjacent words, far rarer than either word alone.
    assert anchors(parse('ti:"graph neural" abs:transformer')) == {("t2", "graph neural")}
    assert anchors(parse('"message passing neural"')) == {("w2", "message passing")}


# --- the index agrees with naive evaluation ------------------------------------------------

_WORDS = ["graph", "neural", "network", "networks", "quantized", "quantization", "language",
          "model", "models", "alpha", "stable", "muller", "learning"]
_NAMES = ["Eiko Yoneki", "E. Yoneki", "Emma Yoneki", "Ei. Yoneki", "Dirk Wübben", "D. Wubben",
          "Jan van der Berg", "Anna Berg", "Vânia de Oliveira Neves", "Jean-Marc Azaïs",
          "Müller, Hans", r"Hans M\"uller", "H. Muller"]
_CATEGORIES = ["cs.LG", "stat.ML", "cs.AI", "cs.CL", "hep-th", "math.AG", "astro-ph.CO",
               "q-bio.NC"]
_SEPARATORS = [" ", " ", " ", "-", ": ", ", ", " $\\", " &amp; "]


# A text's pieces: a separator and a word, one in six in capitals. Drawn as one choice each,
# from strategies built once: a composite drawing separator, word and case apart, and building
# its strategies on every draw, spent most of the differential test's CPU making examples.
_TEXT_PIECES = st.sampled_from([separator + spelling for separator in _SEPARATORS
                                for word in _WORDS for spelling in [word] * 5 + [word.upper()]])


def _texts(max_words: int) -> st.SearchStrategy[str]:
    return st.lists(_TEXT_PIECES, max_size=max_words).map("".join)


def _papers() -> st.SearchStrategy[Paper]:
    return st.builds(
        Paper,
        arxiv_id=st.integers(10000, 99999).map(lambda number: f"2611.{number}"),
        version=st.just(1),
        title=_texts(6),
        authors=st.lists(st.sampled_from(_NAMES), max_size=3).map(tuple),
        abstract=_texts(14),
        categories=st.lists(st.sampled_from(_CATEGORIES), min_size=1, max_size=3,
                            unique=True).map(tuple),
    )


_QUERY_AUTHORS = ["au:yoneki", 'au:"E. Yoneki"', 'au:"Eiko Yoneki"', 'au:"Ei. Yoneki"', "au:wubben",
                  'au:"D. Wübben"', "au:berg", 'au:"van der Berg"', 'au:"Anna Berg"',
                  "au:neves", 'au:"J.-M. Azaïs"', 'au:"H. Müller"']
_QUERY_CATEGORIES = ["cs.LG", "cat:stat.ML", "cat:cs", "hep-th", "cat:astro-ph", "math.AG",
                     "q-bio.NC"]


def _text_term(field: str, chosen: list[str], prefix: int) -> str:
    if prefix == 0:
        return f"{field}{'-'.join(chosen)[:-2]}*"  # a prefix, at least 3 letters
    return f'{field}"{" ".join(chosen)}"' if len(chosen) > 1 else f"{field}{chosen[0]}"


_TERMS = st.one_of(st.sampled_from(_QUERY_AUTHORS), st.sampled_from(_QUERY_CATEGORIES),
                   st.builds(_text_term, st.sampled_from(["", "", "ti:", "abs:"]),
                             st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3),
                             st.integers(0, 3)))


def _combine(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    pair = st.tuples(children, children)
    return st.one_of(
        pair.map(lambda p: f"({p[0]}) ({p[1]})"),
        pair.map(lambda p: f"({p[0]}) OR ({p[1]})"),
        pair.map(lambda p: f"({p[0]}) -({p[1]})"),
    )


_QUERIES = st.recursive(_TERMS, _combine, max_leaves=5)


def _subscriptions(queries: list[str]) -> list[tuple[int, int, Node]]:
    subscriptions = []
    for number, query in enumerate(queries):
        try:
            subscriptions.append((number, number % 4, parse(query)))
        except QueryError:
            continue  # only exclusions, or too long: the parser refuses it, nothing to index
    return subscriptions


def _naive(subscriptions: list[tuple[int, int, Node]], papers: list[Paper]) -> dict:
    expected: dict[int, list[Match]] = {}
    for paper in papers:
        per_chat: dict[int, list[int]] = {}
        for sub_id, chat_id, node in subscriptions:
            if evaluate(node, paper):
                per_chat.setdefault(chat_id, []).append(sub_id)
        for chat_id, ids in per_chat.items():
            expected.setdefault(chat_id, []).append(Match(chat_id, paper, tuple(sorted(ids))))
    return expected


@given(st.lists(_QUERIES, min_size=1, max_size=25), st.lists(_papers(), min_size=1, max_size=8),
       st.data())
# 600 examples keep the suite quick; DIFFERENTIAL_EXAMPLES=5000 runs the thorough version.
@settings(max_examples=int(os.environ.get("DIFFERENTIAL_EXAMPLES", "600")), deadline=None)
def test_indexed_matching_equals_naive_evaluation(queries: list[str], papers: list[Paper],
                                                  data: st.DataObject) -> None:
    subscriptions = _subscriptions(queries)
    matcher = Matcher.build(subscriptions)
    expected = _naive(subscriptions, papers)
    found = matcher.match(papers)
    assert found == expected
    # Chats come in the order they first match, as a dict filled paper by paper has them.
    assert list(found) == list(expected)
    assert found.alert_count == sum(map(len, expected.values()))
    assert matcher.find(papers) == [
        {sub_id for sub_id, _, node in subscriptions if evaluate(node, paper)} for paper in papers]
    # Removing subscriptions keeps the index consistent with what is left.
    removed = data.draw(st.sets(st.sampled_from(range(len(queries)))))
    for sub_id in removed:
        matcher.remove(sub_id)
    remaining = [s for s in subscriptions if s[0] not in removed]
    assert matcher.match(papers) == _naive(remaining, papers)


def _queries_of(sub_ids: tuple[int, ...]) -> tuple[str, ...]:
    """Matched queries as the service gives them: a subscription removed meanwhile has none."""
    return tuple(f"query {s}" for s in sub_ids if s % 3)


@given(st.lists(_QUERIES, min_size=1, max_size=25), st.lists(_papers(), min_size=1, max_size=8),
       st.data())
@settings(max_examples=int(os.environ.get("DIFFERENTIAL_EXAMPLES", "300")), deadline=None)
def test_a_polls_plain_alerts_from_arrays_equal_naive_alerts_grouped_by_chat(
        queries: list[str], papers: list[Paper], data: st.DataObject) -> None:
    # What a poll stages for its new papers, built from the matcher's arrays: for the papers
    # of a batch, per chat, an alert per paper and forum topic (subscriptions bound to topics
    # split a paper's alert), with its subscriptions and their queries, as naive evaluation
    # and one object per alert give them.
    papers = [dataclasses.replace(paper, version=1 + i % 3) for i, paper in enumerate(papers)]
    subscriptions = _subscriptions(queries)
    topics = data.draw(st.dictionaries(st.sampled_from([s for s, _, _ in subscriptions]),
                                       st.sampled_from([5, 7]))) if subscriptions else {}
    wanted = sorted(data.draw(st.sets(st.sampled_from(range(len(papers))), min_size=1)))
    expected = []
    for index in wanted:
        paper = papers[index]
        per_chat: dict[int, list[int]] = {}
        for sub_id, chat_id, node in subscriptions:
            if evaluate(node, paper):
                per_chat.setdefault(chat_id, []).append(sub_id)
        for chat_id, ids in per_chat.items():
            by_topic: dict[int, list[int]] = {}
            for sub_id in sorted(ids):
                by_topic.setdefault(topics.get(sub_id, GENERAL), []).append(sub_id)
            expected += [Alert(chat_id, paper.arxiv_id, paper.version, AlertKind.NEW,
                               tuple(group), _queries_of(tuple(group)), topic_id=topic)
                         for topic, group in by_topic.items()]
    pairs = Pairs(lambda sub_id: _queries_of((sub_id,))[0] if sub_id % 3 else None)
    units = Matcher.build(subscriptions).match(papers).plain_units(topics, pairs)
    plain = units.plain(wanted)
    assert plain == PlainAlerts.from_alerts(expected)
    assert sorted(plain.alerts(), key=repr) == sorted(expected, key=repr)
    assert sum(units.per_paper()[i] for i in wanted) == len(expected)


def test_the_differential_test_sees_real_matches() -> None:
    # Guard against a vacuous property: the generated vocabulary does produce matches.
    paper = Paper("2611.00001", 1, "Graph-NEURAL network", ("Eiko Yoneki",), "quantized model",
                  ("cs.LG",))
    subscriptions = _subscriptions(["(graph-neural) -(au:berg)", "quantiz*", "au:\"E. Yoneki\""])
    assert len(_naive(subscriptions, [paper])[0][0].subscription_ids) == 1
    assert Matcher.build(subscriptions).match([paper]) == _naive(subscriptions, [paper])


_ASCII_TEXT = st.text(st.sampled_from("abcXYZ019 -_.,;:$\\{}()&;'\"\t\n/+*^~=|<>?!#%@`[]"),
                      max_size=60)


@given(_ASCII_TEXT)
def test_ascii_text_splits_into_the_words_the_pattern_finds(text: str) -> None:
    from bot.query.text import _WORD_RE, fold, words

    assert words(text) == _WORD_RE.findall(fold(text))


@given(st.lists(_QUERIES, min_size=1, max_size=10))
@settings(max_examples=300, deadline=None)
def test_common_shapes_are_planned_as_the_general_planner_plans_them(queries: list[str]) -> None:
    # Terms, ANDs and ORs of them skip the general planner when the index is built; they must
    # come out as it would plan them, refusals included.
    from bot.query.matcher import _checked_plan, _plan

    for sub_id, chat_id, node in _subscriptions(queries):
        try:
            planned = _checked_plan(sub_id, chat_id, node)
        except ValueError:
            planned = None
        general = _plan(chat_id, node) if is_anchored(node) else None
        if general is not None and any(kind[0] == "p" and len(value) < MIN_PREFIX_LENGTH
                                       for kind, value in general.looked_at()):
            general = None
        assert planned == general


def test_an_index_grown_by_additions_and_removals_matches_one_built_at_once() -> None:
    # Subscriptions added with higher ids extend the compiled index in place, removed ones are
    # masked; any other change compiles afresh. Each way must match what a fresh build does.
    papers = [_paper("Quantized graph transformers", "Neural nets for graph kernels.",
                     authors=["Eiko Yoneki", "Jan van der Berg"], arxiv_id="1"),
              _paper("Kernels", "Stable models.", categories=("math.CO",), arxiv_id="2")]
    queries = ["quantiz*", '"graph kernels"', 'au:"E. Yoneki"', "cat:math.CO", "stable -graph",
               'au:"Jan van der Berg"', "transformers OR kern*", "cat:cs.LG graph"]
    grown = Matcher.build([(1, 10, parse("unrelated"))])
    assert grown.match(papers) == {}
    for sub_id, query in enumerate(queries, start=2):
        grown.add(sub_id, 10 + sub_id % 3, parse(query))
        built = Matcher.build([(s, 10 + s % 3, parse(q))
                               for s, q in enumerate(queries[:sub_id - 1], start=2)])
        assert grown.match(papers) == built.match(papers)
    for sub_id in (3, 5, 8):
        grown.remove(sub_id)
    kept = [(s, 10 + s % 3, parse(q)) for s, q in enumerate(queries, start=2)
            if s not in (3, 5, 8)]
    assert grown.match(papers) == Matcher.build(kept).match(papers)
    assert grown.find(papers) == Matcher.build(kept).find(papers)


# --- a batch's words as bytes --------------------------------------------------------------

_ANY_TEXT = st.text(st.one_of(st.sampled_from("abcXYZ019 -_.,;:$\\{}()&;'\"\n/*^~"),
                              st.sampled_from("éüßøŁæΩαµ\u0301\u00a0ﬁ中文граф\u200b\u3000"),
                              st.characters()), max_size=60)


@given(_ANY_TEXT)
@settings(max_examples=300)
def test_a_texts_words_are_its_runs_of_word_bytes(text: str) -> None:
    # The matcher splits `word_text` as bytes: ASCII letters and digits and every byte of a
    # non-ASCII character make words, anything else breaks them. That must be `words()`.
    import re

    from bot.query.text import word_text, words

    folded = word_text(text)
    assert [w.decode() for w in re.findall(rb"[A-Za-z0-9\x80-\xff]+", folded.encode())] == words(
        text)


_LONG = "pneumonoultramicroscopicsilicovolcanoconiosis"  # 45 letters: too long to pack


@pytest.mark.parametrize("query", [
    _LONG, f"{_LONG[:24]}*", f"{_LONG[:24]}", f"{_LONG[:30]}*", f'"{_LONG} lungs"',
    f'"lungs {_LONG[:24]}"', "ti:граф", '"граф сети"', "граф*", "中文", "abcdefghijklmnopqrstuvwx",
    "abcdefghijklmnopqrstuvwxy", "abcdefghijklmnopqrstuvw*", '"end start"', "ti:start",
    '"alpha beta"', "abs:omega",
])
def test_long_non_ascii_and_boundary_words_match_as_naive_evaluation_does(query: str) -> None:
    # Words of 24 bytes or more (the packing's edge), non-ASCII words, and words at the
    # edges of the title and abstract, which are joined into one buffer for splitting.
    papers = [
        _paper(f"Silicosis and {_LONG}", f"The {_LONG} lungs; {_LONG[:24]} lungs",
               arxiv_id="1"),
        _paper(f"{_LONG[:24]}x", f"lungs {_LONG[:24]}", arxiv_id="2"),
        _paper("Граф сети", "и граф, 中文 text", arxiv_id="3"),
        _paper("abcdefghijklmnopqrstuvwx", "abcdefghijklmnopqrstuvwxy", arxiv_id="4"),
        _paper("The end", "Start here", arxiv_id="5"),  # no phrase across title and abstract
        _paper("", "$\\alpha$ beta ω", arxiv_id="6"),
        _paper("Start", "", arxiv_id="7"),
    ]
    subscriptions = [(1, 10, parse(query))]
    assert Matcher.build(subscriptions).match(papers) == _naive(subscriptions, papers)


@pytest.mark.parametrize("remembered", [500_000, 2])
def test_words_remembered_as_boring_are_seen_once_a_subscription_needs_them(
        remembered: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # The matcher remembers the words no key needs (up to a limit, then it starts afresh); a
    # later subscription, word or prefix, must still find them, in the next batch too.
    from bot.query import matcher as matcher_module

    monkeypatch.setattr(matcher_module, "_MAX_BORING_WORDS", remembered)
    first = _paper("Tensor sketching", "Randomised sketches of tensors.", arxiv_id="1")
    second = _paper("More sketching", "Sketches again, randomised.", arxiv_id="2")
    matcher = Matcher.build([(1, 10, parse("graph"))])
    assert matcher.match([first]) == {}
    matcher.add(2, 20, parse("sketching"))
    matcher.add(3, 30, parse("randomis*"))
    matcher.add(4, 40, parse('"sketches again"'))
    assert matcher.find([first, second]) == [{2, 3}, {2, 3, 4}]
    matcher.add(5, 50, parse("tens*"))  # a new prefix: the boring words are looked at again
    assert matcher.find([first, second]) == [{2, 3, 5}, {2, 3, 4}]
    long_word = "antidisestablishmentarianisms"  # boring, and too long for the table
    third = _paper(f"{long_word} again", "tensors", arxiv_id="3")
    assert matcher.find([third]) == [{5}]
    matcher.add(6, 60, parse(long_word))
    assert matcher.find([third, first]) == [{5, 6}, {2, 3, 5}]


def test_many_words_and_colliding_hashes_match_as_naive_evaluation_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A weak hash makes most words collide: the table must still tell them apart by their
    # bytes. Thousands of distinct words make it grow.
    from bot.query import matcher as matcher_module

    weak = matcher_module.np.uint64(7)
    monkeypatch.setattr(matcher_module, "_hash", lambda rows: rows[:, 0] & weak)
    vocabulary = [f"w{number}x{number % 7}" for number in range(6_000)]
    papers = [_paper(" ".join(vocabulary[i::5][:3]), " ".join(vocabulary[i::5]),
                     arxiv_id=str(i)) for i in range(5)]
    queries = ["w12x5", "w13x6*", '"w5x5 w10x3"', "ti:w1x1", "abs:w1x1", "w59*", "w5999x0"]
    subscriptions = [(number, number % 3, parse(q)) for number, q in enumerate(queries)]
    matcher = Matcher.build(subscriptions)
    for _ in range(2):  # the second batch finds the words the first remembered
        assert matcher.match(papers) == _naive(subscriptions, papers)


@pytest.mark.parametrize("query", ["au:yoneki", 'au:"E. Yoneki"', 'au:"Eiko Yoneki"',
                                   'au:"Ei. Yoneki"', 'au:"Emma Yoneki"', 'au:"E Yoneki"',
                                   'au:"Eik. Yoneki"', "au:eiko", 'au:"Y. Eiko"'])
def test_two_word_author_names_match_as_naive_evaluation_does(query: str) -> None:
    # "Given Surname" in plain ASCII letters takes a short path to its keys; an initial
    # without a dot, capitals, doubled spaces and tabs must come out as the general path has.
    names = ["Eiko Yoneki", "E Yoneki", "EIKO YONEKI", "Eiko  Yoneki", "Eiko\tYoneki",
             "Ei Yoneki", "Emma Yoneki", "Yoneki Eiko", "Eiko Yoneki Jr", "E. Yoneki"]
    papers = [_paper("Title", authors=[name], arxiv_id=str(number))
              for number, name in enumerate(names)]
    subscriptions = [(1, 10, parse(query))]
    assert Matcher.build(subscriptions).match(papers) == _naive(subscriptions, papers)

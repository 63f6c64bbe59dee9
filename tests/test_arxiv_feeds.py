"""Parsing what arXiv really sends: recorded feeds and API responses, plus garbage."""

from __future__ import annotations

import contextlib
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bot.arxiv.errors import ApiError, ArxivError, FeedError
from bot.arxiv.feeds import ApiResult, RssFeed, parse_api, parse_rss
from bot.arxiv.listing import parse_listing
from bot.core.authors import detex_name, split_authors
from bot.core.models import AnnounceType, Paper
from tests.conftest import make_paper
from tests.fakes.feedgen import api_feed, listing_page, rss_feed, synth_papers

FIXTURES = Path(__file__).parent / "fixtures"
RSS_EXCERPT = "rss-new-format-2024-11-28-all-archives.EXCERPT-29-of-1504-items.xml"


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def simple_paper(arxiv_id: str, version: int = 1) -> Paper:
    return Paper(arxiv_id=arxiv_id, version=version, title=f"Paper {arxiv_id}",
                 authors=("A. Author",), abstract="Abstract.", categories=("cs.LG",))


@pytest.fixture(scope="module")
def announcement() -> dict[str, Paper]:
    feed = parse_rss(fixture(RSS_EXCERPT))
    return {paper.arxiv_id: paper for paper in feed.papers}


# --- the 2024-11-28 announcement feed ------------------------------------------------------------

def test_announcement_feed_yields_every_item_with_type_and_version() -> None:
    feed = parse_rss(fixture(RSS_EXCERPT))

    assert len(feed.papers) == 29
    assert feed.skipped == 0
    by_type = Counter(paper.announce_type for paper in feed.papers)
    assert by_type == {AnnounceType.NEW: 10, AnnounceType.CROSS: 9, AnnounceType.REPLACE: 10}
    versions = {kind: Counter(p.version for p in feed.papers if p.announce_type == kind)
                for kind in by_type}
    assert versions[AnnounceType.NEW] == {1: 10}
    assert versions[AnnounceType.CROSS] == {1: 7, 3: 2}
    assert versions[AnnounceType.REPLACE] == {2: 5, 3: 1, 4: 2, 5: 2}
    assert feed.papers[0].versioned_id == "2411.17700v1"
    assert feed.papers[-1].versioned_id == "2011.06533v2"


def test_announcement_feed_channel_metadata() -> None:
    feed = parse_rss(fixture(RSS_EXCERPT))

    assert feed.title.startswith("astro-ph, cond-mat, physics, quant-ph, math, cs")
    assert feed.skip_days == ("Saturday", "Sunday")
    assert feed.build_date == datetime(2024, 11, 28, 14, 47, 20, tzinfo=UTC)
    assert feed.pub_date == datetime(2024, 11, 28, 5, 0, tzinfo=UTC)


def test_new_item_fields_are_clean(announcement: dict[str, Paper]) -> None:
    paper = announcement["2411.17702"]

    assert paper.title == ('Finding "Good Views" of Electrocardiogram Signals for Inferring '
                           "Abnormalities in Cardiac Condition")
    assert paper.authors == ("Hyewon Jeong", "Suyeol Yun", "Hammaad Adam")
    assert paper.categories == ("eess.SP", "cs.LG")
    assert paper.primary_category == "eess.SP"
    assert paper.abstract.startswith("Electrocardiograms (ECGs) are an established technique")
    assert "Announce Type" not in paper.abstract
    assert paper.abstract.endswith("https://github.com/mandiehyewon/goodviews_ecg.git")
    assert paper.license == "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"
    assert paper.updated == datetime(2024, 11, 28, 5, 0, tzinfo=UTC)
    assert paper.doi is None and paper.journal_ref is None


def test_tex_escapes_in_author_names_become_readable(announcement: dict[str, Paper]) -> None:
    authors = announcement["2411.17709"].authors

    assert len(authors) == 8
    assert "Przemysław Olbratowski" in authors
    assert authors[-1] == "Jarosław Żygierewicz"


def test_cross_listing_with_doi_and_journal_reference(announcement: dict[str, Paper]) -> None:
    paper = announcement["2202.06515"]

    assert paper.announce_type is AnnounceType.CROSS
    assert paper.version == 3
    assert paper.categories == ("astro-ph.CO", "astro-ph.GA", "physics.flu-dyn")
    assert paper.doi == "10.1063/5.0236964"
    assert paper.journal_ref == "Physics of Fluids 36, 117158 (2024)"


def test_replacement_keeps_primary_first(announcement: dict[str, Paper]) -> None:
    paper = announcement["1903.04209"]

    assert paper.announce_type is AnnounceType.REPLACE
    assert paper.announce_type.is_revision
    assert paper.versioned_id == "1903.04209v5"
    assert paper.categories == ("stat.ML", "cs.LG", "econ.EM")
    assert announcement["2007.03598"].doi == "10.1103/PhysRevB.102.195418"


def test_empty_feed_is_valid_and_reports_skip_days() -> None:
    feed = parse_rss(fixture("rss-new-format-empty-feed-test-archive.xml"))

    assert feed.papers == ()
    assert feed.title == "test updates on arXiv.org"
    assert feed.skip_days == ("Saturday", "Sunday")


def test_bad_archive_error_feed_raises_with_arxivs_message() -> None:
    with pytest.raises(FeedError, match="Bad archive 'astroph'") as caught:
        parse_rss(fixture("rss-new-format-error-bad-archive.xml"))
    assert caught.value.retryable is False


# --- garbage never passes for an empty feed ------------------------------------------------------

@pytest.mark.parametrize("body", [
    b"<!DOCTYPE html><html><head><title>arXiv</title></head><body>Maintenance</body></html>",
    b"",
    b"Service Unavailable",
    b'{"error": "rate limited"}',
    b"<?xml version='1.0'?><rss version='2.0'><channel><title>x</title><item><title>",
])
def test_garbage_raises_feed_error(body: bytes) -> None:
    with pytest.raises(FeedError):
        parse_rss(body)


def test_body_naming_a_local_file_is_not_read_from_disk() -> None:
    path = str(FIXTURES / RSS_EXCERPT).encode()

    with pytest.raises(FeedError):
        parse_rss(path)


def test_truncated_feed_is_rejected_instead_of_returning_its_first_items() -> None:
    body = fixture(RSS_EXCERPT)
    cut = body[: body.index(b"oai:arXiv.org:2411.16552v1")]

    with pytest.raises(FeedError, match="malformed"):
        parse_rss(cut)


def test_api_response_is_not_an_rss_feed() -> None:
    with pytest.raises(FeedError):
        parse_rss(fixture("api-search-all-testing-m10.atom.xml"))
    with pytest.raises(FeedError):
        parse_api(fixture(RSS_EXCERPT))


def test_item_without_any_arxiv_id_is_counted_not_invented() -> None:
    papers = [simple_paper(f"2411.0000{n}") for n in (1, 2, 3)]
    body = rss_feed(papers).replace(
        b"oai:arXiv.org:2411.00002v1", b"oai:example:xyz").replace(
        b"arXiv:2411.00002v1 Announce", b"Announce")

    feed = parse_rss(body)

    assert [p.arxiv_id for p in feed.papers] == ["2411.00001", "2411.00003"]
    assert feed.skipped == 1


def test_feed_whose_items_all_lack_ids_is_an_error_not_an_empty_day() -> None:
    body = rss_feed([simple_paper("2411.00001")]).replace(
        b"oai:arXiv.org:2411.00001v1", b"x").replace(b"arXiv:2411.00001v1 Announce", b"Announce")

    with pytest.raises(FeedError, match="usable arXiv id"):
        parse_rss(body)


def test_math_comparisons_and_ampersands_survive() -> None:
    paper = Paper(
        arxiv_id="2411.00001", version=1, title="Bounds for $a<b$ & <b>c</b>",
        authors=("A. Author",), abstract="We show $x<y$ and $y>z$; p<0.05 in R&D, 1 &lt; 2.",
        categories=("cs.LG",), announce_type=AnnounceType.NEW)

    parsed = parse_rss(rss_feed([paper])).papers[0]

    assert parsed.title == "Bounds for $a<b$ & <b>c</b>"
    assert parsed.abstract == "We show $x<y$ and $y>z$; p<0.05 in R&D, 1 &lt; 2."


def test_old_style_ids_and_replace_cross_from_a_category_feed() -> None:
    paper = Paper(
        arxiv_id="hep-th/9901001", version=2, title="An old paper", authors=("E. Witten",),
        abstract="Old.", categories=("hep-th", "math.AG"),
        announce_type=AnnounceType.REPLACE_CROSS)

    parsed = parse_rss(rss_feed([paper], names=("math.AG",))).papers[0]

    assert parsed.arxiv_id == "hep-th/9901001"
    assert parsed.version == 2
    assert parsed.announce_type is AnnounceType.REPLACE_CROSS
    assert parsed.pdf_url == "https://arxiv.org/pdf/hep-th/9901001v2"


def test_generated_feed_round_trips_through_the_parser() -> None:
    papers = synth_papers(60, seed=7)

    parsed = parse_rss(rss_feed(papers)).papers

    assert [p.versioned_id for p in parsed] == [p.versioned_id for p in papers]
    assert [p.announce_type for p in parsed] == [p.announce_type for p in papers]
    assert [p.abstract for p in parsed] == [p.abstract for p in papers]
    assert [p.categories for p in parsed] == [p.categories for p in papers]
    assert {p.announce_type for p in parsed} == set(AnnounceType)


@pytest.mark.parametrize(("creator", "expected"), [
    ("Jun Cui", ("Jun Cui",)),
    ("Ann Lee and Bo Chen", ("Ann Lee", "Bo Chen")),
    ("Ann Lee, Bo Chen, and Cy Dee", ("Ann Lee", "Bo Chen", "Cy Dee")),
    ("Ann Lee, Bo Chen and Cy Dee", ("Ann Lee", "Bo Chen", "Cy Dee")),
    ("Martin Luther King, Jr., Sandra Anderson", ("Martin Luther King, Jr.", "Sandra Anderson")),
    ("G\\\"unter M{\\\"u}ller, Paul Erd\\H{o}s", ("Günter Müller", "Paul Erdős")),
    ("ATLAS Collaboration", ("ATLAS Collaboration",)),
    ("", ()),
])
def test_author_lists(creator: str, expected: tuple[str, ...]) -> None:
    assert split_authors(creator) == expected


def test_tex_conversion_keeps_the_whole_name() -> None:
    assert detex_name("A 100% {\\l}ukasz") == "A 100% łukasz"
    assert detex_name("Plain Name") == "Plain Name"


# --- the API ------------------------------------------------------------------------------------

def test_api_search_result() -> None:
    result = parse_api(fixture("api-search-all-testing-m10.atom.xml"))

    assert result.total_results == 214881
    assert result.items_per_page == 10
    assert len(result.papers) == 10
    assert Counter(p.version for p in result.papers) == {1: 5, 2: 3, 3: 2}
    first = result.papers[0]
    assert first.versioned_id == "2202.12139v1"
    assert first.title == ("Testing Deep Learning Models: A First Comparative Study of Multiple "
                           "Testing Techniques")
    assert first.authors == ("Mohit Kumar Ahuja", "Arnaud Gotlieb", "Helge Spieker")
    assert first.categories == ("cs.SE", "cs.LG")
    assert first.comment == "Artificial Intelligence in Software Testing 2022 workshop @ ICST 2022"
    assert first.doi == "10.1109/ICSTW55395.2022.00035"
    assert first.journal_ref is not None and first.journal_ref.startswith(
        "Artificial Intelligence in Software Testing @ 2022 IEEE")
    assert first.published == datetime(2022, 2, 24, 15, 5, 19, tzinfo=UTC)
    assert first.announce_type is None


def test_api_id_lookup_with_34_authors_in_utf8() -> None:
    (paper,) = parse_api(fixture("api-idlist-1707.08567-utf8-authors.atom.xml")).papers

    assert paper.versioned_id == "1707.08567v1"
    assert len(paper.authors) == 34
    assert "Dirk Wübben" in paper.authors
    assert paper.categories[0] == "cs.IT"
    assert paper.comment == ("44 pages, editors for the proceedings: Yanling Chen and "
                             "A. J. Han Vinck")


def test_api_lookup_drops_the_nonexistent_id() -> None:
    result = parse_api(fixture("api-idlist-two-ids-one-nonexistent.atom.xml"))

    assert result.total_results == 1
    assert [p.versioned_id for p in result.papers] == ["1707.08567v1"]


def test_api_empty_result() -> None:
    result = parse_api(fixture("api-empty-idlist-0000.0000.atom.xml"))

    assert result.papers == ()
    assert result.total_results == 0


def test_api_error_entry_raises_with_arxivs_message() -> None:
    with pytest.raises(ApiError, match="incorrect id format for abc"):
        parse_api(fixture("api-error-idlist-abc-http400.atom.xml"))


def test_legacy_api_id_list_with_explicit_version() -> None:
    (paper,) = parse_api(fixture("api-legacy2016-idlist-1111.2011v2.atom.xml")).papers

    assert paper.versioned_id == "1111.2011v2"
    assert paper.title == ("Quantum Criticality for Extended Nodes on a Bethe Lattice in the "
                           "Large Connectivity Limit")
    assert paper.abstract.startswith("Theoretical description of anisotropic systems, such as "
                                     "layered superconductors and coupled spin chains")
    assert "\n" not in paper.abstract
    assert paper.authors == ("James M. Murray", "Adrian Del Maestro", "Zlatko Tesanovic")
    assert paper.categories == ("cond-mat.str-el", "cond-mat.stat-mech")
    assert paper.doi == "10.1103/PhysRevB.85.115117"
    assert paper.journal_ref == "Phys. Rev. B 85, 115117 (2012)"
    assert paper.comment == "8 pages, 3 figures. Published version"
    assert paper.published == datetime(2011, 11, 8, 18, 48, 36, tzinfo=UTC)
    assert paper.updated == datetime(2012, 4, 2, 12, 38, 54, tzinfo=UTC)


def test_legacy_api_search_with_old_style_id() -> None:
    result = parse_api(fixture("api-legacy2016-search-au-del_maestro.atom.xml"))

    assert result.total_results == 31
    assert len(result.papers) == 10
    old = next(p for p in result.papers if p.arxiv_id == "cond-mat/0412498")
    assert old.version == 1
    assert old.categories[0] == "cond-mat.str-el"
    assert Counter(p.version for p in result.papers) == {1: 6, 2: 4}


def test_truncated_api_response_is_rejected() -> None:
    body = fixture("api-legacy2016-search-au-del_maestro.atom.xml")
    cut = body[: body.index(b"<id>http://arxiv.org/abs/1412.6529v2")]

    with pytest.raises(FeedError, match="malformed"):
        parse_api(cut)


def test_api_primary_category_comes_first_even_when_listed_later() -> None:
    paper = Paper(arxiv_id="2401.00001", version=1, title="T", authors=("A",), abstract="B",
                  categories=("math.PR", "cs.LG"))
    body = api_feed([paper]).replace(
        b'<category term="math.PR" scheme="http://arxiv.org/schemas/atom"/>\n', b"").replace(
        b"</summary>", b'</summary>\n<category term="math.PR"/>')

    assert parse_api(body).papers[0].categories == ("math.PR", "cs.LG")


# --- arbitrary bytes ----------------------------------------------------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(
    st.binary(max_size=400),
    st.text(max_size=300).map(str.encode),
    st.sampled_from([fixture(RSS_EXCERPT)[:2000], fixture("api-legacy2016-idlist-1111.2011v2"
                                                          ".atom.xml")]).flatmap(
        lambda body: st.integers(0, len(body)).map(lambda cut: body[:cut])),
))
def test_any_bytes_parse_or_raise_an_arxiv_error(body: bytes) -> None:
    with contextlib.suppress(ArxivError):
        assert isinstance(parse_rss(body), RssFeed)
    with contextlib.suppress(ArxivError):
        assert isinstance(parse_api(body), ApiResult)


# --- invisible characters -----------------------------------------------------------------------

# Direction overrides, isolates, zero-width characters and non-characters, as a hostile submitter
# could type them (U+FFFE and U+FFFF are not even allowed in XML; U+FDD0 and U+10FFFF are).
HOSTILE = make_paper(
    9, title="Safe \u202eexe.txt\u202c \u2066title\u2069\u200b of \u200dpapers\ufeff",
    authors=("\u200fMallory\u200e Evil", "\u2060\u200b", "Bob \u061cSmith\ufdd0"),
    abstract="An \u202aabstract\u202c with \U0010ffffhidden\U0001fffe text.",
    comment="12 pages\u200c, \u2067code\u2069", journal_ref="\u202dJ. Spoof\u202c 1 (2026)")
CLEAN = ("Safe exe.txt title of papers", ("Mallory Evil", "Bob Smith"),
         "An abstract with hidden text.", "12 pages, code", "J. Spoof 1 (2026)")


def _fields(paper: Paper) -> tuple[object, ...]:
    return paper.title, paper.authors, paper.abstract, paper.comment, paper.journal_ref


def test_an_announced_papers_text_loses_direction_and_invisible_characters() -> None:
    [paper] = parse_rss(rss_feed([HOSTILE])).papers
    assert _fields(paper)[:3] == CLEAN[:3]
    assert paper.journal_ref == CLEAN[4]


def test_a_looked_up_papers_text_loses_direction_and_invisible_characters() -> None:
    [paper] = parse_api(api_feed([HOSTILE])).papers
    assert _fields(paper) == CLEAN


def test_a_listed_papers_text_loses_direction_and_invisible_characters() -> None:
    [entry] = parse_listing(listing_page([HOSTILE], announced_on=date(2026, 11, 30))).entries
    paper = entry.paper(1)
    assert _fields(paper)[:4] == CLEAN[:4]

"""Generate arXiv-format response bodies: announcement RSS and API Atom, from `Paper` values.

The layout copies rss.arxiv.org as recorded on 2024-11-28 (tests/fixtures/
rss-new-format-2024-11-28-all-archives.EXCERPT-29-of-1504-items.xml) and the 2026 API backend.
`synth_papers` makes realistic, seeded batches for benchmarks and soak tests.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta, timezone
from email.utils import format_datetime
from xml.sax.saxutils import escape, quoteattr

from bot.core.models import AnnounceType, Paper

_EASTERN = timezone(timedelta(hours=-5))
ANNOUNCE_DAY = datetime(2024, 11, 28, 5, 0, tzinfo=UTC)  # Thu, 28 Nov 2024 00:00:00 -0500

_RSS_HEAD = """<?xml version='1.0' encoding='UTF-8'?>
<rss xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:dc="http://purl.org/dc/elements/1.1/" \
xmlns:atom="http://www.w3.org/2005/Atom" xmlns:content="http://purl.org/rss/1.0/modules/content/" \
version="2.0">
  <channel>
    <title>{title} updates on arXiv.org</title>
    <link>{link}</link>
    <description>{title} updates on the arXiv.org e-print archive.</description>
    <atom:link href={link_attr} rel="self" type="application/rss+xml"/>
    <docs>http://www.rssboard.org/rss-specification</docs>
    <language>en-us</language>
    <lastBuildDate>{build}</lastBuildDate>
    <managingEditor>rss-help@arxiv.org</managingEditor>
    <pubDate>{pub}</pubDate>
{skip}"""


def rss_feed(
    papers: Iterable[Paper],
    *,
    names: Sequence[str] = ("cs",),
    announce_date: datetime = ANNOUNCE_DAY,
    build_date: datetime | None = None,
    skip_days: Sequence[str] = ("Saturday", "Sunday"),
) -> bytes:
    """An rss.arxiv.org feed for `names` (e.g. ("cs", "math")) announcing `papers`."""
    link = f"http://rss.arxiv.org/rss/{'+'.join(names)}"
    build = build_date or announce_date + timedelta(hours=9, minutes=47)
    skip = ""
    if skip_days:
        days = "".join(f"      <day>{escape(day)}</day>\n" for day in skip_days)
        skip = f"    <skipDays>\n{days}    </skipDays>\n"
    parts = [_RSS_HEAD.format(
        title=escape(", ".join(names)), link=escape(link), link_attr=quoteattr(link),
        build=format_datetime(build.astimezone(UTC)), pub=_rss_date(announce_date), skip=skip)]
    parts.extend(rss_item(paper, announce_date=announce_date) for paper in papers)
    parts.append("  </channel>\n</rss>\n")
    return "".join(parts).encode("utf-8")


def rss_item(paper: Paper, *, announce_date: datetime = ANNOUNCE_DAY) -> str:
    """One `<item>` exactly as arXiv writes it."""
    announce = paper.announce_type or (
        AnnounceType.NEW if paper.version == 1 else AnnounceType.REPLACE)
    lines = [
        "    <item>",
        f"      <title>{escape(paper.title)}</title>",
        f"      <link>https://arxiv.org/abs/{paper.arxiv_id}</link>",
        # arXiv leaves a space before the line break.
        f"      <description>arXiv:{paper.versioned_id} Announce Type: {announce.value} \n"
        f"Abstract: {escape(paper.abstract)}</description>",
        f'      <guid isPermaLink="false">oai:arXiv.org:{paper.versioned_id}</guid>',
        *(f"      <category>{escape(c)}</category>" for c in paper.categories),
        f"      <pubDate>{_rss_date(paper.updated or announce_date)}</pubDate>",
        f"      <arxiv:announce_type>{announce.value}</arxiv:announce_type>",
        f"      <dc:rights>{escape(paper.license or _DEFAULT_LICENSE)}</dc:rights>",
    ]
    if paper.doi:
        lines.append(f"      <arxiv:DOI>{escape(paper.doi)}</arxiv:DOI>")
    if paper.journal_ref:
        lines.append(
            f"      <arxiv:journal_reference>{escape(paper.journal_ref)}"
            "</arxiv:journal_reference>")
    lines.append(f"      <dc:creator>{escape(', '.join(paper.authors))}</dc:creator>")
    lines.append("    </item>\n")
    return "\n".join(lines)


def rss_error_feed(query: str) -> bytes:
    """arXiv's answer (HTTP 200) to a feed URL naming an unknown archive."""
    link = f"http://rss.arxiv.org/rss/{query}"
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<rss xmlns:arxiv="http://arxiv.org/schemas/atom" version="2.0">\n  <channel>\n'
        f"    <title>Feed error for query: {escape(link)}</title>\n"
        f"    <link>{escape(link)}</link>\n"
        f"    <description>Bad archive {escape(repr(query))}. Valid archive names are: astro-ph, "
        "cond-mat, cs, econ, eess, gr-qc, hep-ex, hep-lat, hep-ph, hep-th, math, math-ph, nlin, "
        "nucl-ex, nucl-th, physics, q-bio, q-fin, quant-ph, stat, test.</description>\n"
        "  </channel>\n</rss>\n"
    ).encode()


def api_feed(papers: Sequence[Paper], *, query: str = "", total_results: int | None = None,
             start: int = 0) -> bytes:
    """An export.arxiv.org API response (the 2026 backend's layout) listing `papers`."""
    now = "2026-04-12T22:09:26Z"
    parts = [
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
        "  <id>https://arxiv.org/api/fake</id>\n"
        f"  <title>arXiv Query: {escape(query)}</title>\n"
        f"  <updated>{now}</updated>\n"
        f"  <opensearch:itemsPerPage>{len(papers)}</opensearch:itemsPerPage>\n"
        "  <opensearch:totalResults>"
        f"{len(papers) if total_results is None else total_results}</opensearch:totalResults>\n"
        f"  <opensearch:startIndex>{start}</opensearch:startIndex>\n"
    ]
    for paper in papers:
        published = paper.published or paper.updated or ANNOUNCE_DAY
        updated = paper.updated or published
        entry = [
            "  <entry>",
            f"    <id>http://arxiv.org/abs/{paper.versioned_id}</id>",
            f"    <title>{escape(paper.title)}</title>",
            f"    <updated>{_iso(updated)}</updated>",
            f'    <link href="https://arxiv.org/abs/{paper.versioned_id}" rel="alternate" '
            'type="text/html"/>',
            f"    <summary>{escape(paper.abstract)}</summary>",
            *(f'    <category term={quoteattr(c)} scheme="http://arxiv.org/schemas/atom"/>'
              for c in paper.categories),
            f"    <published>{_iso(published)}</published>",
        ]
        if paper.comment:
            entry.append(f"    <arxiv:comment>{escape(paper.comment)}</arxiv:comment>")
        if paper.categories:
            entry.append(f"    <arxiv:primary_category term={quoteattr(paper.categories[0])}/>")
        if paper.journal_ref:
            entry.append(f"    <arxiv:journal_ref>{escape(paper.journal_ref)}</arxiv:journal_ref>")
        entry.extend(f"    <author>\n      <name>{escape(a)}</name>\n    </author>"
                     for a in paper.authors)
        if paper.doi:
            entry.append(f"    <arxiv:doi>{escape(paper.doi)}</arxiv:doi>")
        entry.append("  </entry>\n")
        parts.append("\n".join(entry))
    parts.append("</feed>\n")
    return "".join(parts).encode("utf-8")


def api_error_feed(message: str) -> bytes:
    """The API's error response body (sent with HTTP 400), e.g. "incorrect id format for abc"."""
    anchor = escape("_".join(message.split()))
    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        '<feed xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns="http://www.w3.org/2005/Atom">\n'
        "  <id>https://arxiv.org/</id>\n  <title>arXiv Search Results</title>\n"
        "  <updated>2026-04-12T22:59:06Z</updated>\n"
        "  <opensearch:itemsPerPage>1</opensearch:itemsPerPage>\n"
        "  <opensearch:totalResults>1</opensearch:totalResults>\n"
        "  <opensearch:startIndex>0</opensearch:startIndex>\n"
        "  <entry>\n"
        f"    <id>https://arxiv.org/api/errors#{anchor}</id>\n"
        "    <title>Error</title>\n    <updated>2026-04-12T22:59:06Z</updated>\n"
        f"    <summary>{escape(message)}</summary>\n"
        "    <author>\n      <name>arXiv api core</name>\n    </author>\n"
        "  </entry>\n</feed>\n"
    ).encode()


_DEFAULT_LICENSE = "http://arxiv.org/licenses/nonexclusive-distrib/1.0/"
_LICENSES = (
    _DEFAULT_LICENSE,
    "http://creativecommons.org/licenses/by/4.0/",
    "http://creativecommons.org/licenses/by-nc-sa/4.0/",
    "http://creativecommons.org/publicdomain/zero/1.0/",
)
_CATEGORIES = (
    "cs.LG", "cs.AI", "cs.CL", "cs.CV", "cs.RO", "cs.CR", "cs.DS", "cs.IT", "stat.ML", "stat.ME",
    "math.AG", "math.PR", "math.OC", "math.NT", "hep-th", "hep-ph", "quant-ph", "gr-qc",
    "astro-ph.CO", "astro-ph.GA", "cond-mat.str-el", "cond-mat.mes-hall", "physics.optics",
    "eess.SP", "eess.SY", "q-bio.NC", "econ.EM", "nlin.CD",
)
_GIVEN = ("Anna", "Wei", "Jun", "Maria", "José", "Dirk", "Sofia", "Hiroshi", "Priya", "Lukas",
          "Chloé", "Ahmed", "Olga", "Pierre", "Mei", "Tomás", "Eiko", "Rahul", "Ingrid", "Kofi")
_FAMILY = ("Müller", "Zhang", "Yoneki", "García", "Novak", "Smith", "Kowalski", "Rossi", "Wübben",
           "Nguyen", "Okafor", "Ivanova", "Dubois", "Tanaka", "Sharma", "Larsen", "O'Brien",
           "Przemys{\\l}awski", "Erd\\H{o}s", "de la Cruz")
_TITLE_WORDS = ("Learning", "Graph", "Neural", "Quantum", "Sparse", "Bayesian", "Robust",
                "Diffusion", "Transformer", "Manifolds", "Lattice", "Spectral", "Stochastic",
                "Optimal", "Causal", "Inference", "Networks", "Topological", "Equivariant",
                "Scaling", "Operators", "Dynamics", "Estimation", "Language", "Models")
_ABSTRACT_WORDS = ("we", "propose", "a", "method", "for", "the", "problem", "of", "learning",
                   "with", "guarantees", "and", "show", "that", "it", "outperforms", "baselines",
                   "on", "benchmarks", "our", "analysis", "relies", "bounds", "in", "regime",
                   "$O(n\\log n)$", "$x<y$", "p<0.05", "R&D", "\"robust\"", "state-of-the-art")


def synth_papers(n: int, *, seed: int = 0, first_number: int = 1,
                 announce_date: datetime = ANNOUNCE_DAY) -> list[Paper]:
    """`n` realistic papers: about 60% new, 10% cross, 25% replace, 5% replace-cross."""
    rng = random.Random(seed)
    papers: list[Paper] = []
    used: set[str] = set()
    for index in range(n):
        roll = rng.random()
        if roll < 0.60:
            announce, version = AnnounceType.NEW, 1
        elif roll < 0.70:
            announce, version = AnnounceType.CROSS, rng.choice((1, 1, 1, 2, 3))
        elif roll < 0.95:
            announce, version = AnnounceType.REPLACE, rng.randint(2, 6)
        else:
            announce, version = AnnounceType.REPLACE_CROSS, rng.randint(2, 4)
        if version == 1:
            arxiv_id = f"2411.{first_number + index:05d}"
        else:
            arxiv_id = f"{rng.randint(20, 23)}{rng.randint(1, 12):02d}.{rng.randint(1, 29999):05d}"
            while arxiv_id in used:
                arxiv_id = f"{arxiv_id[:5]}{rng.randint(1, 29999):05d}"
        used.add(arxiv_id)
        categories = tuple(dict.fromkeys(rng.sample(_CATEGORIES, rng.randint(1, 4))))
        authors = tuple(f"{rng.choice(_GIVEN)} {rng.choice(_FAMILY)}"
                        for _ in range(rng.choice((1, 2, 3, 3, 4, 5, 8, 12))))
        title = " ".join(rng.choice(_TITLE_WORDS) for _ in range(rng.randint(4, 12)))
        abstract = " ".join(rng.choice(_ABSTRACT_WORDS) for _ in range(rng.randint(80, 220)))
        has_ref = version > 1 and rng.random() < 0.3
        papers.append(Paper(
            arxiv_id=arxiv_id,
            version=version,
            title=title,
            authors=authors,
            abstract=abstract[0].upper() + abstract[1:] + ".",
            categories=categories,
            journal_ref=f"Phys. Rev. B {rng.randint(80, 110)}, {rng.randint(1000, 99999)} "
                        f"({rng.randint(2015, 2024)})" if has_ref else None,
            doi=f"10.1103/PhysRevB.{rng.randint(80, 110)}.{rng.randint(1000, 99999)}"
            if has_ref else None,
            updated=announce_date,
            announce_type=announce,
            license=rng.choice(_LICENSES),
        ))
    return papers


def _rss_date(value: datetime) -> str:
    # arXiv writes the announcement day as midnight US Eastern time, e.g. "... -0500".
    return format_datetime(value.astimezone(_EASTERN))


def _iso(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


_LISTING_SECTIONS = (
    ("New submissions", (AnnounceType.NEW,)),
    ("Cross submissions", (AnnounceType.CROSS,)),
    ("Replacement submissions", (AnnounceType.REPLACE, AnnounceType.REPLACE_CROSS)),
)


def listing_page(papers: Iterable[Paper], *, announced_on: date, category: str = "cs",
                 shown: dict[str, int] | None = None) -> bytes:
    """An arxiv.org/list/{category}/new page announcing `papers`, in the markup of
    tests/fixtures/listing-new-cs.AI-2026-08-12.EXCERPT.html. `shown` overrides a section's
    "showing N" (to make a page whose counts disagree with its entries)."""
    papers = list(papers)
    heading = f"{announced_on:%A}, {announced_on.day} {announced_on:%B %Y}"
    parts = [f"<html><body><h3>Showing new listings for {heading}</h3>\n"]
    number = 0
    for title, kinds in _LISTING_SECTIONS:
        members = [p for p in papers if (p.announce_type or AnnounceType.NEW) in kinds]
        if not members:
            continue
        count = (shown or {}).get(title, len(members))
        parts.append(f"<h3>{title} (showing {count} of {len(members)} entries)</h3>\n")
        for paper in members:
            number += 1
            parts.append(_listing_entry(paper, number, category))
    parts.append("</body></html>\n")
    return "".join(parts).encode("utf-8")


def _listing_entry(paper: Paper, number: int, category: str) -> str:
    kind = paper.announce_type or AnnounceType.NEW
    primary = paper.categories[0] if paper.categories else category
    marker = {AnnounceType.CROSS: f"(cross-list from {primary})",
              AnnounceType.REPLACE: "(replaced)",
              AnnounceType.REPLACE_CROSS: f"(cross-list from {primary}, replaced)"}.get(kind, "")
    pid = escape(paper.arxiv_id)
    authors = ", ".join(
        f'<a href="https://arxiv.org/search/cs?searchtype=author&amp;query={escape(a)}">'
        f"{escape(a)}</a>" for a in paper.authors)
    subjects = "; ".join(
        (f'<span class="primary-subject">{escape(c)} ({escape(c)})</span>' if i == 0
         else f"{escape(c)} ({escape(c)})") for i, c in enumerate(paper.categories))
    comment = (f"        <div class='list-comments mathjax'><span class='descriptor'>Comments:"
               f"</span>\n          {escape(paper.comment)}\n        </div>\n"
               if paper.comment else "")
    return (
        f"<dt>\n      <a name='item{number}'>[{number}]</a>\n"
        f'      <a href ="/abs/{pid}" title="Abstract" id="{pid}">\n        arXiv:{pid}\n'
        f"      </a>\n          {marker}\n\n"
        f'        [<a href="/pdf/{pid}" title="Download PDF" id="pdf-{pid}">pdf</a>, '
        f'<a href="https://arxiv.org/html/{escape(paper.versioned_id)}" title="View HTML" '
        f'id="html-{pid}">html</a>]\n    </dt>\n'
        "    <dd>\n      <div class='meta'>\n"
        "        <div class='list-title mathjax'><span class='descriptor'>Title:</span>\n"
        f"          {escape(paper.title)}\n        </div>\n"
        f"        <div class='list-authors'>{authors}</div>\n"
        f"{comment}"
        "        <div class='list-subjects'><span class='descriptor'>Subjects:</span>\n"
        f"          {subjects}\n        </div>\n"
        f"        <p class='mathjax'>\n          {escape(paper.abstract)}\n        </p>\n"
        "      </div>\n    </dd>\n"
    )

"""Which announcement feeds to poll: the fewest rss.arxiv.org URLs covering what chats follow.

Names come from users, so only arXiv's real archives and categories are accepted: one unknown name
in a combined URL makes arXiv answer with an error feed for the whole URL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

log = logging.getLogger(__name__)

# arXiv's archives and their subject classes (arxiv.org/category_taxonomy). Archives without an
# entry here (gr-qc, hep-*, math-ph, nucl-*, quant-ph) are single categories.
_SUBJECTS: dict[str, str] = {
    "astro-ph": "CO EP GA HE IM SR",
    "cond-mat": "dis-nn mes-hall mtrl-sci other quant-gas soft stat-mech str-el supr-con",
    "cs": "AI AR CC CE CG CL CR CV CY DB DC DL DM DS ET FL GL GR GT HC IR IT LG LO MA MM MS NA "
          "NE NI OH OS PF PL RO SC SD SE SI SY",
    "econ": "EM GN TH",
    "eess": "AS IV SP SY",
    "gr-qc": "",
    "hep-ex": "",
    "hep-lat": "",
    "hep-ph": "",
    "hep-th": "",
    "math": "AC AG AP AT CA CO CT CV DG DS FA GM GN GR GT HO IT KT LO MG MP NA NT OA OC PR QA RA "
            "RT SG SP ST",
    "math-ph": "",
    "nlin": "AO CD CG PS SI",
    "nucl-ex": "",
    "nucl-th": "",
    "physics": "acc-ph ao-ph app-ph atm-clus atom-ph bio-ph chem-ph class-ph comp-ph data-an "
               "ed-ph flu-dyn gen-ph geo-ph hist-ph ins-det med-ph optics plasm-ph pop-ph "
               "soc-ph space-ph",
    "q-bio": "BM CB GN MN NC OT PE QM SC TO",
    "q-fin": "CP EC GN MF PM PR RM ST TR",
    "quant-ph": "",
    "stat": "AP CO ME ML OT TH",
}

ARCHIVES: frozenset[str] = frozenset(_SUBJECTS)
CATEGORIES: frozenset[str] = frozenset(
    {f"{archive}.{subject}" for archive, subjects in _SUBJECTS.items()
     for subject in subjects.split()}
    | {archive for archive, subjects in _SUBJECTS.items() if not subjects}
)
# Users type "cs.lg" or "CS.LG"; arXiv only knows "cs.LG".
_CANONICAL: dict[str, str] = {name.lower(): name for name in ARCHIVES | CATEGORIES}

DEFAULT_MAX_URL_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class FeedPlan:
    """The feed URLs to poll, the names they cover, and the names refused as unknown."""

    urls: tuple[str, ...]
    sources: tuple[str, ...]  # canonical archives/categories, in URL order
    rejected: tuple[str, ...] = ()


def canonical_name(name: str) -> str | None:
    """arXiv's spelling of an archive or category (`CS.lg` → `cs.LG`); None if arXiv has none."""
    if not isinstance(name, str) or len(name) > 40:
        return None
    return _CANONICAL.get(name.strip().lower())


def archive_of(name: str) -> str | None:
    """The archive an archive or category belongs to (`astro-ph.CO` → `astro-ph`), or None."""
    canonical = canonical_name(name)
    if canonical is None:
        return None
    return canonical.split(".", 1)[0]


def is_archive(name: str) -> bool:
    """True for an archive name such as `cs` or `physics` (also `hep-th`, its own archive)."""
    return canonical_name(name) in ARCHIVES


def build_feed_plan(
    archives: Iterable[str],
    followed: Iterable[str],
    *,
    rss_url: str,
    max_url_length: int = DEFAULT_MAX_URL_LENGTH,
) -> FeedPlan:
    """The fewest feed URLs covering `archives` plus every followed category, in a stable order."""
    wanted: set[str] = set()
    rejected: dict[str, None] = {}
    for name in (*archives, *followed):
        canonical = canonical_name(name)
        if canonical is None:
            rejected.setdefault(str(name)[:80], None)
        else:
            wanted.add(canonical)
    if rejected:
        log.warning("ignoring unknown arXiv archives/categories: %s", ", ".join(rejected))

    whole_archives = {name for name in wanted if name in ARCHIVES}
    # An archive's feed lists all its categories, so "cs" makes "cs.LG" redundant.
    sources = sorted(
        (name for name in wanted
         if name in whole_archives or name.split(".", 1)[0] not in whole_archives),
        key=lambda name: (name.split(".", 1)[0], "." in name, name),
    )
    return FeedPlan(
        urls=tuple(_chunk_urls(rss_url.rstrip("/"), sources, max_url_length)),
        sources=tuple(sources),
        rejected=tuple(rejected),
    )


def _chunk_urls(base: str, sources: list[str], max_url_length: int) -> list[str]:
    urls: list[str] = []
    current: list[str] = []
    for name in sources:
        candidate = f"{base}/{'+'.join([*current, name])}"
        if current and len(candidate) > max_url_length:
            urls.append(f"{base}/{'+'.join(current)}")
            current = [name]
        else:
            current.append(name)
    if current:
        urls.append(f"{base}/{'+'.join(current)}")
    return urls

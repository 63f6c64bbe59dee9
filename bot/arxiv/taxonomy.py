"""arXiv's archives and categories: the one list the query parser and the feed planner share.

Names come from users (`/follow cat:cs.lg`, `ARXIV_ARCHIVES`) and from papers. Only arXiv's real
names are accepted, in arXiv's own spelling: one unknown name in a combined feed URL makes
arXiv answer with an error feed for the whole URL. Archives arXiv closed long ago (`cmp-lg`,
`alg-geom`) are read as the category that took them over (`cs.CL`, `math.AG`), as arXiv itself
does, so a query naming one follows a feed that still exists.
"""

from __future__ import annotations

# arXiv's archives and their subject classes (arxiv.org/category_taxonomy). Archives without
# subjects here (gr-qc, hep-*, math-ph, nucl-*, quant-ph) are single categories.
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

# Closed archives and the categories that subsumed them (arXiv/arxiv-base, taxonomy
# definitions, ARCHIVES_SUBSUMED). Old papers still list them.
SUBSUMED: dict[str, str] = {
    "acc-phys": "physics.acc-ph", "adap-org": "nlin.AO", "alg-geom": "math.AG",
    "ao-sci": "physics.ao-ph", "atom-ph": "physics.atom-ph", "bayes-an": "physics.data-an",
    "chao-dyn": "nlin.CD", "chem-ph": "physics.chem-ph", "cmp-lg": "cs.CL", "comp-gas": "nlin.CG",
    "dg-ga": "math.DG", "funct-an": "math.FA", "mtrl-th": "cond-mat.mtrl-sci",
    "patt-sol": "nlin.PS", "plasm-ph": "physics.plasm-ph", "q-alg": "math.QA",
    "solv-int": "nlin.SI", "supr-con": "cond-mat.supr-con",
}

ARCHIVES: frozenset[str] = frozenset(_SUBJECTS)
CATEGORIES: frozenset[str] = frozenset(
    {f"{archive}.{subject}" for archive, subjects in _SUBJECTS.items()
     for subject in subjects.split()}
    | {archive for archive, subjects in _SUBJECTS.items() if not subjects}
)
# Users type "cs.lg" or "CS.LG"; arXiv only knows "cs.LG".
_CANONICAL: dict[str, str] = {
    **{old: new for old, new in SUBSUMED.items()},
    **{name.lower(): name for name in ARCHIVES | CATEGORIES},
}


def canonical_name(name: str) -> str | None:
    """arXiv's spelling of an archive or category (`CS.lg` → `cs.LG`, `cmp-lg` → `cs.CL`);
    None if arXiv has no such name."""
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


def listed_in(category: str) -> tuple[str, str]:
    """(category, archive) for a category a paper is listed in. A name this list does not know
    (one arXiv added since) is kept as written, so papers in it still match `cat:` queries."""
    canonical = canonical_name(category) or category
    return canonical, canonical.partition(".")[0].lower()

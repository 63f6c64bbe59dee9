"""How much of a real corpus renders without LaTeX residue (titles and abstracts from arXiv).

Run with `.venv/bin/python bench/latex_residue.py [-v]`. The corpus is every title and abstract in
the recorded arXiv responses of `tests/fixtures/` (API searches, id look-ups, the announcement
feed excerpt, and the OAI-PMH set of 46 cs records). Each text holding LaTeX (a backslash or a
`$`) goes through `latex_to_unicode`, the function the alerts use. A rendering has residue when
markup is still visible: a control word (`\\foo`), a `$`, or a `^`/`_` script the converter
left as written (`u_L`: Unicode has no subscript L). Residue is not loss: unknown macros are
kept on purpose. The script also checks that no alphanumeric run outside math disappeared (a
citation key or a link target is meant to go). `-v` lists every residue.
"""

from __future__ import annotations

import argparse
import re
import sys
import unicodedata
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.arxiv.feeds import parse_api, parse_rss  # noqa: E402
from bot.delivery.latex import latex_to_unicode  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
_OAI = {"oai": "http://www.openarchives.org/OAI/2.0/", "a": "http://arxiv.org/OAI/arXiv/"}
_RESIDUE = re.compile(r"\\[A-Za-z]+|\$|[A-Za-z0-9)][_^]")
# Markup whose argument is meant to vanish: a citation key, a label, a link target.
_DROPPED = re.compile(r"\\(?:cite[tp]?|ref|eqref|label)\s*\{[^{}]*\}|\\href\s*\{[^{}]*\}")
_CONTROL = re.compile(r"\\(?:[A-Za-z]+|.)", re.DOTALL)
_MATH = re.compile(r"(?<!\\)\$[^$]*\$")


def corpus() -> dict[str, str]:
    """Every distinct title and abstract of the recorded responses, keyed by where it is from."""
    texts: dict[str, str] = {}
    for path in sorted(FIXTURES.glob("*.xml")):
        if path.name.startswith("oai-"):
            for record in ET.parse(path).getroot().iter(f"{{{_OAI['a']}}}arXiv"):
                arxiv_id = record.findtext("a:id", "", _OAI)
                for field in ("title", "abstract"):
                    texts.setdefault(record.findtext(f"a:{field}", "", _OAI), f"{arxiv_id} {field}")
            continue
        parser = parse_api if path.name.startswith("api") else parse_rss
        try:
            papers = parser(path.read_bytes()).papers
        except Exception:  # the error and empty samples hold no papers
            continue
        for paper in papers:
            texts.setdefault(paper.title, f"{paper.arxiv_id} title")
            texts.setdefault(paper.abstract, f"{paper.arxiv_id} abstract")
    return {where: text for text, where in texts.items() if text.strip()}


def _fold(text: str) -> str:
    return "".join(ch for ch in unicodedata.normalize("NFKD", text)
                   if not unicodedata.combining(ch))


def lost_words(source: str, rendered: str) -> list[str]:
    """Alphanumeric runs outside math and macro names that the rendering no longer shows."""
    shown = _fold(rendered)
    plain = _CONTROL.sub(" ", _MATH.sub(" ", _DROPPED.sub(" ", source)))
    return [run for run in re.findall(r"[A-Za-z0-9]+", plain) if run not in shown]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="list every residue")
    args = parser.parse_args()
    texts = corpus()
    with_latex = {where: text for where, text in texts.items() if "\\" in text or "$" in text}
    residues: dict[str, list[str]] = {}
    losses: dict[str, list[str]] = {}
    for where, text in with_latex.items():
        rendered = latex_to_unicode(text)
        if found := _RESIDUE.findall(rendered):
            residues[where] = found
        if lost := lost_words(text, rendered):
            losses[where] = lost
    clean = len(with_latex) - len(residues)
    print(f"corpus: {len(texts)} distinct titles and abstracts from {FIXTURES.name}/*.xml")
    print(f"holding LaTeX: {len(with_latex)}")
    share = 100 * clean / len(with_latex) if with_latex else 100.0
    print(f"rendered without residue: {clean} of {len(with_latex)} ({share:.1f} %)")
    print(f"with words lost outside math: {len(losses)}")
    if args.verbose:
        for where, found in sorted(residues.items()):
            print(f"  residue {where}: {' '.join(sorted(set(found)))}")
        for where, lost in sorted(losses.items()):
            print(f"  lost {where}: {' '.join(lost)}")


if __name__ == "__main__":
    main()

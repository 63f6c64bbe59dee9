"""Benchmark: how long an alert is on a phone, on real arXiv records, in both languages.

Run with `.venv/bin/python bench/alert_length.py`. Every paper in the verbatim arXiv responses
of `tests/fixtures/` (RSS announcements and API results) is rendered as the alert a chat gets:
a new paper (v1) or a revision (later versions), matched by two subscriptions, collapsed. The
figures are the median visible length (characters as Telegram shows them, tags removed) and the
median number of screen lines on a phone, estimated as 36 columns a line (a Chinese character
or an emoji takes two).

`--repo PATH` renders with the code of another checkout, for a before/after comparison, e.g.
`git worktree add /tmp/before <commit> && .venv/bin/python bench/alert_length.py --repo
/tmp/before`.
"""

from __future__ import annotations

import argparse
import html
import math
import re
import statistics
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
_TAG = re.compile(r"<[^>]+>")


def visible(text: str) -> str:
    """The text as Telegram shows it: tags gone, entities decoded."""
    return html.unescape(_TAG.sub("", text))


PHONE_COLUMNS = 36  # a 6-inch phone in portrait, Telegram's default font size


def phone_lines(text: str) -> int:
    """Screen lines `text` takes on a phone: each line wraps every `PHONE_COLUMNS` columns."""
    total = 0
    for line in text.split("\n"):
        width = sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)
        total += max(1, math.ceil(width / PHONE_COLUMNS))
    return total


def sample_papers() -> list:
    """Every paper with an abstract in the recorded RSS and API responses, once each."""
    from bot.arxiv.feeds import parse_api, parse_rss

    papers = {}
    for path in sorted(FIXTURES.glob("*.xml")):
        body = path.read_bytes()
        try:
            found = parse_rss(body).papers if path.name.startswith("rss") else \
                parse_api(body).papers
        except Exception:  # the recorded error responses
            continue
        for paper in found:
            if paper.abstract:
                papers.setdefault(paper.versioned_id, paper)
    return list(papers.values())


def matched_for(paper) -> tuple[str, ...]:
    """Two subscriptions as researchers write them: the category and a title phrase."""
    words = re.findall(r"[A-Za-z]{4,}", paper.title)[:2]
    return (f"cat:{paper.categories[0]}", f'ti:"{" ".join(words).lower()}"')


def measure(lang: str, papers: list) -> tuple[float, float, int]:
    from bot.delivery.render import render_alert

    chars, lines = [], []
    for paper in papers:
        kind = "new" if paper.version == 1 else "revision"
        message = render_alert(paper, kind=kind, matched=matched_for(paper), saved=False,
                               expanded=False, diff=None, lang=lang)
        text = visible(message.text)
        chars.append(len(text))
        lines.append(phone_lines(text))
    return statistics.median(chars), statistics.median(lines), max(chars)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT,
                        help="render with the bot package of this checkout")
    args = parser.parse_args()
    sys.path.insert(0, str(args.repo.resolve()))
    sys.path.insert(1, str(ROOT))
    papers = sample_papers()
    print(f"code: {args.repo.resolve()}; {len(papers)} real arXiv records from tests/fixtures "
          f"({sum(p.version == 1 for p in papers)} new, "
          f"{sum(p.version > 1 for p in papers)} revisions)")
    for lang in ("en", "zh"):
        median_chars, median_lines, longest = measure(lang, papers)
        print(f"{lang}: median {median_chars:.0f} characters, {median_lines:.0f} phone lines "
              f"(longest {longest} characters)")


if __name__ == "__main__":
    main()

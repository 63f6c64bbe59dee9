"""The arXiv vocabulary the benchmarks write titles, abstracts and names with."""

from __future__ import annotations

from pathlib import Path

VOCABULARY = Path(__file__).with_name("vocabulary.txt")


def load_vocabulary() -> tuple[list[str], list[str]]:
    """(words by frequency, author names) from `vocabulary.txt`."""
    section, words, names = "", [], []
    for line in VOCABULARY.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line
        elif section == "[words]":
            words.append(line.split()[0])
        elif section == "[names]":
            names.append(line)
    return words, names

"""Extract the bot's message ids into `bot/locales/bot.pot` and merge them into every catalog.

Run it after changing user-facing text: `python tools/extract_messages.py`. Existing
translations are kept; a changed message keeps its old translation marked fuzzy (which the bot
ignores and `tests/test_i18n.py` reports) until a translator checks it. `--check` writes
nothing and exits non-zero while any message lacks a translation.
"""

from __future__ import annotations

import argparse
import io
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parents[1]
MAPPING_FILE = ROOT / "babel.cfg"
LOCALES_DIR = ROOT / "bot" / "locales"
TEMPLATE = LOCALES_DIR / "bot.pot"
DOMAIN = "bot"
LANGUAGES = ("zh",)  # English is the message ids themselves
PROJECT = "arxiv-alert-bot"
HOLDER = "the arxiv-alert-bot contributors"
# Babel fills in PROJECT, YEAR and ORGANIZATION (the copyright holder).
HEADER = """\
# {subject} for PROJECT.
# Copyright (C) YEAR ORGANIZATION
# This file is distributed under the same license as the PROJECT project.
# Regenerate with: python tools/extract_messages.py
#"""


def _only_the_package(path: str) -> bool:
    """Walk `bot/` only (not the virtualenv or tests), skipping hidden and `__pycache__` dirs."""
    relative = Path(path).resolve().relative_to(ROOT)
    if relative.parts[:1] not in ((), ("bot",)):
        return False
    return not any(part.startswith((".", "_")) for part in relative.parts)


def extract_messages(root: Path = ROOT) -> Iterator[tuple[str, int, str | tuple[str, ...]]]:
    """Every marked message in `bot/`: (file, line, msgid or (singular, plural))."""
    with MAPPING_FILE.open(encoding="utf-8") as config:
        method_map, options_map = parse_mapping_cfg(config, str(MAPPING_FILE))
    # No default keywords: only t, tn and _ (from babel.cfg) mark our messages.
    for filename, lineno, message, _comments, _context in extract_from_dir(
        root, method_map, options_map, keywords={}, directory_filter=_only_the_package
    ):
        yield filename, lineno, message


def build_template(root: Path = ROOT) -> Catalog:
    """The template catalog: every message id found in the code, with where it is used."""
    template = Catalog(project=PROJECT, domain=DOMAIN, fuzzy=False, copyright_holder=HOLDER,
                       header_comment=HEADER.replace("{subject}", "Messages"))
    for filename, lineno, message in extract_messages(root):
        template.add(message, None, [(filename, lineno)])
    return template


def catalog_path(language: str) -> Path:
    return LOCALES_DIR / language / "LC_MESSAGES" / f"{DOMAIN}.po"


def updated_catalog(language: str, template: Catalog) -> Catalog:
    """The language's catalog with the template's messages; existing translations kept."""
    path = catalog_path(language)
    if path.exists():
        with path.open("rb") as po_file:
            catalog = read_po(po_file, locale=language, domain=DOMAIN)
    else:
        catalog = Catalog(locale=language, project=PROJECT, domain=DOMAIN, fuzzy=False,
                          copyright_holder=HOLDER,
                          header_comment=HEADER.replace("{subject}", f"Translations ({language})"))
    catalog.update(template)
    return catalog


def untranslated(catalog: Catalog) -> list[str]:
    """Message ids with no usable translation (empty, or fuzzy after a change)."""
    missing = []
    for message in catalog:
        if not message.id:
            continue  # the header
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        if message.fuzzy or not all(strings):
            missing.append(message.id if isinstance(message.id, str) else message.id[0])
    return missing


_CREATION_DATE = re.compile(rb'^"POT-Creation-Date: .*$', re.MULTILINE)


def _write(catalog: Catalog, path: Path, *, template: bool = False) -> bool:
    """Write the catalog unless only its creation date would change; True if written."""
    buffer = io.BytesIO()
    # No line numbers: they change with every edit and would bury real changes in diffs.
    write_po(buffer, catalog, width=100, include_lineno=False, ignore_obsolete=True,
             sort_by_file=template)
    content = buffer.getvalue()
    if path.exists() and (_CREATION_DATE.sub(b"", path.read_bytes())
                          == _CREATION_DATE.sub(b"", content)):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(content)
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; fail if a message lacks a translation")
    args = parser.parse_args(argv)
    template = build_template()
    missing_any = False
    if not args.check:
        _write(template, TEMPLATE, template=True)
        print(f"{TEMPLATE.relative_to(ROOT)}: {len(template)} messages")
    for language in LANGUAGES:
        catalog = updated_catalog(language, template)
        missing = untranslated(catalog)
        missing_any = missing_any or bool(missing)
        if not args.check:
            _write(catalog, catalog_path(language))
        print(f"{catalog_path(language).relative_to(ROOT)}: {len(missing)} of "
              f"{len(catalog)} messages need a translation")
        for msgid in missing:
            print("    " + msgid.splitlines()[0][:90])
    return 1 if args.check and missing_any else 0


if __name__ == "__main__":
    sys.exit(main())

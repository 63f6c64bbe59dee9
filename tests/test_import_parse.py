"""Reading imports: real Zotero, JabRef and Google Scholar exports, every way an export writes
arXiv, ID lists, refused files, and hypothesis properties over arbitrary text and bytes."""

from __future__ import annotations

import codecs
import itertools
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.core.models import ArxivId
from bot.importer.parse import (
    MAX_IMPORT_BYTES,
    MAX_IMPORT_ENTRIES,
    ImportProblem,
    ImportRefused,
    ImportSource,
    SourceKind,
    read_id_list,
    read_text,
    read_upload,
)

FIXTURES = Path(__file__).parent / "fixtures" / "imports"


def ids(source: ImportSource) -> list[str]:
    return [str(arxiv_id) for arxiv_id in source.ids]


# ----------------------------------------------------------------------------- real exports


def test_a_zotero_export_gives_its_arxiv_papers_and_skips_the_rest_with_reasons() -> None:
    source = read_upload((FIXTURES / "zotero-exported-items-domenicrosati-2022.bib").read_bytes())

    assert source.kind is SourceKind.BIBTEX
    assert len(source.ids) == 15
    # url = {http://arxiv.org/abs/…} with doi = {10.48550/arXiv.…} and note = {arXiv:… [cs]}
    assert ids(source)[:2] == ["1809.02922", "2203.12990"]
    # An arXiv URL next to a journal's DOI (10.1186/s12859-019-3119-4) is still arXiv.
    assert "1901.08079" in ids(source)
    assert (source.not_arxiv, source.doi_only, source.unreadable, source.repeated) == (6, 29, 0, 0)


def test_a_jabref_file_with_crlf_and_capitalised_fields_gives_its_corr_preprint() -> None:
    source = read_upload((FIXTURES / "jabref-2.10-papers4cnn.bib").read_bytes())

    assert ids(source) == ["1611.07191"]  # Archiveprefix = {arXiv}, Eprint = {1611.07191}
    assert (source.not_arxiv, source.doi_only) == (12, 0)


def test_a_google_scholar_entry_names_arxiv_in_its_journal() -> None:
    source = read_upload((FIXTURES / "google-scholar-he2022rethinking.bib").read_bytes())

    assert ids(source) == ["2301.00303"]


# ----------------------------------------------------------------------------- each form


_KEYS = itertools.count(1)


def entry(*fields: str, kind: str = "article") -> str:
    return f"@{kind}{{key{next(_KEYS)},\n  " + ",\n  ".join(fields) + "\n}\n"


@pytest.mark.parametrize(("fields", "expected"), [
    # Better BibTeX / arXiv's own export, with the prefix and a version inside eprint
    (("eprint = {arXiv:2211.00593v2}", "archivePrefix = {arXiv}"), "2211.00593v2"),
    # biblatex and DBLP
    (("eprint = {1412.2970}", "eprinttype = {arxiv}"), "1412.2970"),
    # JabRef without a prefix field
    (("eprint = {hep-th/9901001}",), "hep-th/9901001"),
    # arXiv's DataCite DOI, in capitals as DBLP writes it, and as a doi.org link
    (("doi = {10.48550/ARXIV.2405.13576}",), "2405.13576"),
    (("url = {https://doi.org/10.48550/arXiv.2305.11527}",), "2305.11527"),
    (("url = {https://arxiv.org/pdf/1706.03762v5.pdf}",), "1706.03762v5"),
    # Google Scholar, old and new style
    (("journal={arXiv preprint arXiv:1503.02531}",), "1503.02531"),
    (("journal={arXiv preprint arXiv: Arxiv-2305.16291}",), "2305.16291"),
    (("journal = {arXiv preprint cond-mat/0412498}",), "cond-mat/0412498"),
    # Zotero before and after 2022
    (("journal = {arXiv:1611.06612 [cs]}", "note = {arXiv: 1611.06612}"), "1611.06612"),
    (("number = {arXiv:2211.00593}", "publisher = {arXiv}"), "2211.00593"),
    (("note = {arXiv: 1403.2036 [cs.DL]}",), "1403.2036"),
    # DBLP's CoRR
    (("journal = {CoRR}", "volume = {abs/1903.11508}"), "1903.11508"),
])
def test_every_way_an_export_writes_arxiv_is_recognised(fields: tuple[str, ...],
                                                        expected: str) -> None:
    assert ids(read_text(entry(*fields))) == [expected]


def test_entries_without_arxiv_are_skipped_with_their_reason() -> None:
    text = (entry("doi = {10.18653/v1/2021.naacl-main.52}", "title = {Get Your Vitamin C!}")
            + entry("title = {SciTaiL}", "booktitle = {AAAI}")
            + entry("eprint = {hal-01234567}", "archivePrefix = {HAL}")
            + entry("eprint = {2211.00593}", "archivePrefix = {arXiv}")
            + entry("url = {http://arxiv.org/abs/2211.00593v1}")
            + "@article{broken,\n  title = {no closing brace\n")

    source = read_text(text)

    assert ids(source) == ["2211.00593"]
    assert (source.doi_only, source.not_arxiv, source.repeated) == (1, 2, 1)
    assert source.unreadable == 1 and source.skipped == 4


def test_an_id_list_reads_ids_links_and_dois_and_counts_lines_without_one() -> None:
    source = read_id_list(
        "My reading list:\n"
        "1. https://arxiv.org/abs/1706.03762v5 (Attention)\n"
        "- [Circuits](https://arxiv.org/abs/2211.00593), arXiv:hep-th/9901001;\n"
        "https://doi.org/10.48550/arXiv.2305.11527 and export.arxiv.org/abs/cond-mat/0412498\n"
        "not ids: 0000.00000 2613.00001 0703.0001 1501.1234 1412.12345 10.1000/xyz\n")

    assert ids(source) == ["1706.03762v5", "2211.00593", "hep-th/9901001", "2305.11527",
                           "cond-mat/0412498"]
    assert source.not_arxiv == 2 and source.kind is SourceKind.ID_LIST


def test_text_files_in_other_encodings_are_read() -> None:
    listing = "Référence: arXiv:2211.00593\n"
    for data in (codecs.BOM_UTF8 + listing.encode(), listing.encode("utf-16"),
                 listing.encode("latin-1"), listing.encode("cp1252")):
        assert ids(read_upload(data)) == ["2211.00593"]


@pytest.mark.parametrize(("data", "problem"), [
    (b"%PDF-1.5\n\x00\x01\x02stream", ImportProblem.BINARY),
    (b"PK\x03\x04\x14\x00\x06\x00", ImportProblem.BINARY),
    (bytes(range(1, 32)) * 10, ImportProblem.BINARY),
    (b"Dear colleague, here are my notes.", ImportProblem.UNRECOGNISED),
    (b"@article{broken,\n  title = {no closing brace\n", ImportProblem.UNRECOGNISED),
    (b"", ImportProblem.UNRECOGNISED),
    (b" " * (MAX_IMPORT_BYTES + 1), ImportProblem.TOO_LARGE),
    ("\n".join(f"2401.{n:05d}" for n in range(1, MAX_IMPORT_ENTRIES + 2)).encode(),
     ImportProblem.TOO_MANY),
    ("".join(entry(f"eprint = {{2401.{n:05d}}}") for n in range(1, MAX_IMPORT_ENTRIES + 2))
     .encode(), ImportProblem.TOO_MANY),
])
def test_bad_uploads_are_refused_with_the_reason(data: bytes, problem: ImportProblem) -> None:
    with pytest.raises(ImportRefused) as refused:
        read_upload(data)
    assert refused.value.problem is problem


# ----------------------------------------------------------------------------- properties

_NEW = re.compile(r"(\d{2})(\d{2})\.(\d{4,5})")
_OLD = re.compile(r"([a-z][a-z\-]*)(?:\.[A-Z]{2})?/(\d{2})(\d{2})(\d{3})")


def assert_real_arxiv_id(arxiv_id: ArxivId) -> None:
    """arXiv's own ID rules, checked apart from the parser's code."""
    assert ArxivId.parse(str(arxiv_id)) == arxiv_id
    assert arxiv_id.version is None or arxiv_id.version >= 1
    if match := _NEW.fullmatch(arxiv_id.base):
        year, month, number = int(match[1]), int(match[2]), match[3]
        assert 1 <= month <= 12 and (year, month) >= (7, 4)
        assert len(number) == (5 if year >= 15 else 4) and int(number) > 0
        return
    match = _OLD.fullmatch(arxiv_id.base)
    assert match is not None, arxiv_id
    year, month = int(match[2]), int(match[3])
    assert 1 <= month <= 12 and ((year, month) >= (91, 8) or (year, month) <= (7, 3))


def assert_well_formed(source: ImportSource) -> None:
    for arxiv_id in source.ids:
        assert_real_arxiv_id(arxiv_id)
    assert len({arxiv_id.base for arxiv_id in source.ids}) == len(source.ids)
    assert min(source.not_arxiv, source.doi_only, source.unreadable, source.repeated) >= 0


# Pieces real exports are made of, so that generated text often holds IDs, near-IDs and BibTeX.
FRAGMENTS = st.sampled_from([
    "@article{k,", "@misc{", "}", "{", ",", "=", " eprint = {", " archivePrefix = {arXiv}",
    " doi = {10.48550/arXiv.", " url = {https://arxiv.org/abs/", " journal={arXiv preprint arXiv:",
    "2211.00593", "1706.03762v5", "0704.0001", "0703.9999", "1412.12345", "1501.1234", "2613.00001",
    "hep-th/9901001", "math.AG/0601001", "xx-yy/9901001", "hep-th/0801001", "v0", "v12", "\n",
    " ", "\r\n", "arXiv:", "abs/", "10.1000/x", "\x00", "é", "\ufeff", "%", "@comment{", '"',
])


@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_export_like_text_gives_only_real_arxiv_ids(text: str) -> None:
    try:
        source = read_text(text)
    except ImportRefused:
        return
    assert_well_formed(source)


@given(st.text(max_size=400))
def test_any_text_is_read_or_refused_never_crashes(text: str) -> None:
    try:
        source = read_text(text)
    except ImportRefused:
        return
    assert_well_formed(source)
    assert_well_formed(read_id_list(text))


@given(st.binary(max_size=400))
def test_any_bytes_are_read_or_refused_never_crash(data: bytes) -> None:
    try:
        source = read_upload(data)
    except ImportRefused:
        return
    assert_well_formed(source)

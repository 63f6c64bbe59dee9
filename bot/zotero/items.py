"""Zotero items and arXiv papers, both ways: the arXiv id an item names (read as the importer
reads a BibTeX entry), and a paper as a Zotero `preprint` item.

The preprint's fields are those of Zotero's template (`GET /items/new?itemType=preprint`, Web
API v3), written as Zotero's own arXiv translator fills them: `archiveID` "arXiv:ID",
`repository` "arXiv", the arXiv DOI, the abstract page's URL. The version the item describes
is in its URL (`…/abs/IDvN`) and `extra` ("arXiv:IDvN [category]"), and `date` is that
version's date: what a new version changes.
"""

from __future__ import annotations

from typing import Any

from bot.core.models import ArxivId, Paper
from bot.delivery.bibtex import split_author
from bot.importer.parse import arxiv_id_of_entry

COLLECTION_NAME = "arXiv alerts"

# Zotero's item fields, by the BibTeX field the importer reads the same text from: an arXiv
# id is found in an item wherever it is found in the BibTeX export of that item.
_AS_BIBTEX = {
    "archiveID": "eprint",  # preprint: "arXiv:2211.00593"
    "DOI": "doi",
    "url": "url",
    "extra": "note",  # "arXiv:2211.00593 [cs]" (the arXiv translator), Better BibTeX notes
    "publicationTitle": "journal",  # "arXiv preprint arXiv:1706.03762" (Google Scholar)
    "proceedingsTitle": "booktitle",
    "reportNumber": "number",  # report: "arXiv:1809.02922"
    "number": "number",
    "series": "series",
    "institution": "institution",
    "publisher": "publisher",
    "volume": "volume",  # with journal "CoRR": "abs/1903.11508" (DBLP)
}

# GET /items/new?itemType=preprint, as the Web API documents and answers it.
PREPRINT_TEMPLATE: dict[str, Any] = {
    "itemType": "preprint", "title": "",
    "creators": [{"creatorType": "author", "firstName": "", "lastName": ""}],
    "abstractNote": "", "genre": "", "repository": "", "archiveID": "", "place": "",
    "date": "", "series": "", "seriesNumber": "", "DOI": "", "citationKey": "", "url": "",
    "accessDate": "", "archive": "", "archiveLocation": "", "shortTitle": "", "language": "",
    "libraryCatalog": "", "callNumber": "", "rights": "", "extra": "", "tags": [],
    "collections": [], "relations": {},
}


def arxiv_id_of_item(data: dict[str, Any]) -> ArxivId | None:
    """The arXiv paper a Zotero item's `data` names, or None."""
    fields: dict[str, str] = {}
    for name, bibtex in _AS_BIBTEX.items():
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            fields.setdefault(bibtex, value)
    if data.get("repository", "").strip().lower() == "arxiv" and "eprint" in fields:
        fields["archiveprefix"] = "arXiv"
    return arxiv_id_of_entry(fields)


def is_trashed(data: dict[str, Any]) -> bool:
    return bool(data.get("deleted"))


def _creator(name: str) -> dict[str, str]:
    surname, given, suffix = split_author(name)
    if not given:
        return {"creatorType": "author", "name": name}
    return {"creatorType": "author", "firstName": given,
            "lastName": f"{surname}, {suffix}" if suffix else surname}


def _version_fields(paper: Paper) -> dict[str, str]:
    """What a new version of the paper changes in its item."""
    when = paper.updated or paper.published
    category = f" [{paper.primary_category}]" if paper.primary_category else ""
    return {"url": f"{paper.abs_url}v{paper.version}",
            "extra": f"arXiv:{paper.versioned_id}{category}",
            "date": when.date().isoformat() if when else ""}


def preprint_item(paper: Paper, collection_key: str | None) -> dict[str, Any]:
    """The paper as a new Zotero preprint item, in the collection (if any)."""
    item = dict(PREPRINT_TEMPLATE)
    item.update(
        title=paper.title, creators=[_creator(name) for name in paper.authors],
        abstractNote=paper.abstract, repository="arXiv", archiveID=f"arXiv:{paper.arxiv_id}",
        DOI=paper.doi or f"10.48550/arXiv.{paper.arxiv_id}", libraryCatalog="arXiv.org",
        collections=[collection_key] if collection_key else [], tags=[], relations={},
        **_version_fields(paper))
    return item


def version_update(paper: Paper) -> dict[str, str]:
    """The fields to PATCH when the paper has a new version."""
    return _version_fields(paper)

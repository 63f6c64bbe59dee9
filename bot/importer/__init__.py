"""Seeding a chat's library from what the researcher already has: a BibTeX export (Zotero,
JabRef, Google Scholar) or a list of arXiv IDs and links.

`parse` reads an upload or a message into the arXiv IDs it names (pure, no I/O); `service`
decides what each ID becomes (already saved, stored, to look up) and saves them. Neither imports
`telegram` or `handlers`.
"""

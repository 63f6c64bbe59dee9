"""Zotero's Web API: `client` speaks it (asynchronously, politely), `items` turns Zotero items
into arXiv ids and papers into Zotero preprint items. What is linked, pulled and pushed is
decided in `bot/services/zotero.py`."""

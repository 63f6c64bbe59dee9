"""The application layer: use-cases that every edge (chat, jobs, CLI) calls; `container.py`
builds them all once."""

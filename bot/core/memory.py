"""The process's memory: glibc's malloc arenas capped, and freed memory handed back.

glibc gives each thread that allocates its own arena, up to eight per core; the bot's threads
(the database's, the matcher's worker pool, httpx's resolver) each fill one with the day's
polls, and an arena's freed memory stays with the process. A 30-day soak grew 147 → 226 MB
that way, in steps; with two arenas it held at 142 MB. `MALLOC_ARENA_MAX=2` in the
environment does the same, but only if the operator sets it before start; this needs nothing.

Even in two arenas, what a big round frees (a feed's parse, the ranker's fit over thousands of
papers: tens of MB of arrays and strings) stays with the process: glibc gives memory back by
itself only from the top of its main heap, and the holes below stay resident. A 90-day soak
held 60–90 MB so; `release_free_memory` (glibc's `malloc_trim`) after such a round gives the
free pages back (docs/performance.md, "Ninety simulated days").

A trim returns only whole free pages, and glibc's own rule puts big blocks among the small
ones: a block of 128 KiB or more is mapped apart and unmapped when freed, until one such block
is freed; from then on the threshold rises to that block's size (up to 32 MiB), so a feed's
body, a corpus's sparse rows or a list of a million tokens come from the heap, where the small
objects allocated meanwhile pin their pages and the free memory grows between trims.
`fix_mmap_threshold` keeps the threshold where glibc starts it, so such blocks go back to the
system when freed (the 90-day soak at 200 chats: malloc's free memory at the end of a day
27-70 MB with glibc's rule, and RSS swinging 30 MB with it; 11-21 MB with this).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
import threading

log = logging.getLogger(__name__)

M_ARENA_MAX = -8  # mallopt's parameter number for the arena cap (glibc's malloc.h)
ARENA_MAX = 2
M_MMAP_THRESHOLD = -3  # mallopt's parameter number for the mmap threshold
MMAP_THRESHOLD = 128 * 1024  # glibc's starting value, kept instead of raised as blocks are freed

_libc: ctypes.CDLL | None = None
_trim_lock = threading.Lock()


def _glibc() -> ctypes.CDLL | None:
    global _libc
    if _libc is None and sys.platform.startswith("linux"):
        name = ctypes.util.find_library("c")
        try:
            _libc = ctypes.CDLL(name) if name else ctypes.CDLL(None)
        except OSError:
            return None
    return _libc


def cap_malloc_arenas(arenas: int = ARENA_MAX) -> bool:
    """Cap glibc's malloc arenas at `arenas` (call at start, before threads allocate); True
    if the cap is in force. A MALLOC_ARENA_MAX the operator set is left as it is; on another
    C library (musl, macOS) there is nothing to cap."""
    return _mallopt("MALLOC_ARENA_MAX", M_ARENA_MAX, arenas,
                    "mallopt(M_ARENA_MAX) refused; arenas stay uncapped")


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Keep glibc's mmap threshold at `threshold` bytes (call at start, with the arena cap):
    blocks that big are mapped apart and go back to the system when freed, instead of the
    threshold rising to the size of each bigger block freed; True if in force. A
    MALLOC_MMAP_THRESHOLD_ the operator set is left as it is; nothing on another C library."""
    return _mallopt("MALLOC_MMAP_THRESHOLD_", M_MMAP_THRESHOLD, threshold,
                    "mallopt(M_MMAP_THRESHOLD) refused; the threshold stays dynamic")


def _mallopt(variable: str, option: int, value: int, refused: str) -> bool:
    """glibc's mallopt(option, value), unless the operator set its environment `variable`
    or the C library is another; True if in force."""
    if not sys.platform.startswith("linux") or os.environ.get(variable):
        return False
    mallopt = getattr(_glibc(), "mallopt", None)
    if mallopt is None:
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    if mallopt(option, value) != 1:
        log.debug(refused)
        return False
    return True


def release_free_memory() -> bool:
    """Give the pages malloc holds free back to the system (glibc's `malloc_trim(0)`, which
    also returns whole free pages inside its heaps, not only at their top); True if any went.
    Nothing to do on another C library. Meant after a big round, off the event loop: it walks
    every arena (a few ms for a few hundred MB). Two calls at once wait for each other."""
    libc = _glibc()
    trim = getattr(libc, "malloc_trim", None)
    if trim is None:
        return False
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    with _trim_lock:
        return bool(trim(0))

"""Where a process's memory is: what the soak's `--memory-detail` prints once a simulated day.

RSS alone cannot tell a Python structure that grows from SQLite's caches or from memory glibc
keeps after a free. This reads, from inside the process:

- /proc/self/smaps_rollup: anonymous memory (the heap, pymalloc's arenas, thread stacks) apart
  from file-backed pages (shared libraries, a memory-mapped database);
- glibc's mallinfo2: bytes malloc hands out (`in use`) and bytes it holds free in its arenas
  (`free`: fragmentation or not yet returned), plus chunks it mmapped on its own;
- pymalloc's arenas (from `sys._debugmallocstats`), where Python's small objects live;
- SQLite's own allocations (`sqlite3_memory_used`: page caches, statements, FTS buffers);
- how many objects the garbage collector tracks, by type, to compare two days.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import os
import re
import sys
import tempfile
import threading
from collections import Counter

MB = 2**20


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(ctypes.util.find_library("c") or None)
    except OSError:
        return None


def _sqlite() -> ctypes.CDLL | None:
    import _sqlite3  # the library the bot's connections use

    with open("/proc/self/maps") as maps:
        for line in maps:
            if "libsqlite3" in line:
                return ctypes.CDLL(line.split()[-1])
    return ctypes.CDLL(_sqlite3.__file__)


def smaps_rollup() -> dict[str, float]:
    values: dict[str, float] = {}
    with open("/proc/self/smaps_rollup") as rollup:
        for line in rollup:
            parts = line.split()
            if len(parts) == 3 and parts[2] == "kB":
                values[parts[0].rstrip(":")] = int(parts[1]) / 1024
    return values


def mallinfo() -> dict[str, float]:
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return {"arena": info.arena / MB, "in use": info.uordblks / MB, "free": info.fordblks / MB,
            "mmapped": info.hblkhd / MB, "top pad": info.keepcost / MB}


def malloc_trim() -> bool:
    libc = _libc()
    return bool(libc is not None and libc.malloc_trim(0))


def pymalloc() -> dict[str, float]:
    """pymalloc's arenas now and the bytes in its allocated blocks (C-level stderr, captured)."""
    with tempfile.TemporaryFile(mode="w+b") as capture:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(capture.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        capture.seek(0)
        text = capture.read().decode(errors="replace")
    out: dict[str, float] = {}
    for key, pattern in (("arenas", r"# arenas allocated current\s*=\s*([\d,]+)"),
                         ("blocks", r"# bytes in allocated blocks\s*=\s*([\d,]+)"),
                         ("unused", r"# bytes in available blocks\s*=\s*([\d,]+)")):
        found = re.search(pattern, text)
        if found:
            out[key] = int(found.group(1).replace(",", ""))
    if "blocks" in out:
        out["blocks"] /= MB
    if "unused" in out:
        out["unused"] /= MB
    return out


def sqlite_memory() -> float | None:
    try:
        lib = _sqlite()
    except OSError:
        return None
    if lib is None:
        return None
    lib.sqlite3_memory_used.restype = ctypes.c_int64
    return lib.sqlite3_memory_used() / MB


def file_mappings(top: int = 4) -> list[tuple[str, float]]:
    """The file-backed mappings with the most resident memory (MB), by file name."""
    sizes: Counter[str] = Counter()
    current = ""
    with open("/proc/self/smaps") as smaps:
        for line in smaps:
            head = line.split()
            if not head:
                continue
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                current = os.path.basename(head[5]) if len(head) >= 6 else "[anon]"
            elif head[0] == "Rss:":
                sizes[current] += int(head[1]) / 1024
    return [(name, mb) for name, mb in sizes.most_common(top)]


def object_counts() -> Counter[str]:
    return Counter(type(o).__qualname__ for o in gc.get_objects())


def line(rss: float) -> str:
    """One line: where `rss` MB are."""
    rollup, malloc, arenas, lite = smaps_rollup(), mallinfo(), pymalloc(), sqlite_memory()
    parts = [f"RSS {rss:.0f}", f"anon {rollup.get('Anonymous', 0):.0f}",
             f"file {rollup.get('Rss', 0) - rollup.get('Anonymous', 0):.0f}"]
    if malloc:
        parts.append(f"malloc in use {malloc['in use']:.0f} free {malloc['free']:.0f} "
                     f"mmapped {malloc['mmapped']:.0f}")
    if arenas:
        parts.append(f"pymalloc {arenas.get('arenas', 0)} arenas, "
                     f"{arenas.get('blocks', 0):.0f} MB in blocks, "
                     f"{arenas.get('unused', 0):.0f} MB free blocks")
    if lite is not None:
        parts.append(f"sqlite {lite:.1f}")
    parts.append(f"{len(gc.get_objects()):,} gc objects, {threading.active_count()} threads")
    return "; ".join(parts)

"""glibc's malloc arenas are capped from inside the process (bot/core/memory.py): threads that
allocate side by side share two arenas instead of getting one each, big blocks go back to the
system when freed, and `python -m bot` sets both before anything else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot.__main__
from bot.core.memory import ARENA_MAX, MMAP_THRESHOLD

ROOT = Path(__file__).resolve().parent.parent

# Eight threads each allocate from C while all eight are alive, then malloc_info counts the
# arenas (its XML has one <heap nr=…> per arena).
ARENAS = r"""
import ctypes, sys, tempfile, threading
from bot.core.memory import cap_malloc_arenas
capped = cap_malloc_arenas() if sys.argv[1] == "cap" else False
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.fopen.restype, libc.fopen.argtypes = ctypes.c_void_p, [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
together = threading.Barrier(8)
def work():
    block = libc.malloc(4000)
    together.wait()
    libc.free(block)
threads = [threading.Thread(target=work) for _ in range(8)]
for thread in threads: thread.start()
for thread in threads: thread.join()
with tempfile.NamedTemporaryFile("r") as info:
    stream = libc.fopen(info.name.encode(), b"w")
    libc.malloc_info(0, stream)
    libc.fclose(stream)
    print(capped, info.read().count("<heap nr="))
"""


# A 16 MiB block is freed (glibc then serves blocks up to that size from its heap), then 24
# blocks of 1 MiB are filled, a small object is allocated after them, and the blocks are freed:
# how much of the 24 MiB the process still holds.
BLOCKS = r"""
import ctypes, sys
from bot.core.memory import fix_mmap_threshold
fixed = fix_mmap_threshold() if sys.argv[1] == "fix" else False
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
libc.memset.restype, libc.memset.argtypes = ctypes.c_void_p, [ctypes.c_void_p, ctypes.c_int,
                                                              ctypes.c_size_t]
def resident():
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20
def filled(size):
    block = libc.malloc(size)
    libc.memset(block, 1, size)
    return block
libc.free(filled(16 << 20))
before = resident()
blocks = [filled(1 << 20) for _ in range(24)]
pin = libc.malloc(64)
for block in blocks: libc.free(block)
print(fixed, resident() - before)
"""


def run(script: str, mode: str) -> list[str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", script, mode], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    return done.stdout.split()


def arenas(mode: str) -> tuple[str, int]:
    capped, count = run(ARENAS, mode)
    return capped, int(count)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_threads_allocating_together_share_the_capped_arenas() -> None:
    capped, count = arenas("cap")
    assert capped == "True" and count <= ARENA_MAX
    # The measure can fail: without the cap the same threads take an arena each.
    uncapped, count = arenas("none")
    assert uncapped == "False" and count > ARENA_MAX


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mmap threshold")
def test_big_blocks_go_back_to_the_system_even_after_a_bigger_one_was_freed() -> None:
    fixed, held = run(BLOCKS, "fix")
    assert fixed == "True" and float(held) < 4, held
    assert MMAP_THRESHOLD <= 1 << 20  # the test's blocks are above it
    # The measure can fail: left to glibc, the 24 MiB stay with the process.
    dynamic, held = run(BLOCKS, "none")
    assert dynamic == "False" and float(held) >= 20, held


def test_the_bot_caps_the_arenas_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(bot.__main__, "cap_malloc_arenas", lambda: calls.append("capped"))
    monkeypatch.setattr(bot.__main__, "fix_mmap_threshold", lambda: calls.append("threshold"))
    monkeypatch.setattr(bot.__main__, "load_settings", lambda: calls.append("settings") or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bot.__main__.main(["health"])
    assert calls == ["capped", "threshold", "settings"]

"""glibc's malloc arenas are capped from inside the process (bot/core/memory.py): threads that
allocate side by side share two arenas instead of getting one each, and `python -m bot` caps
them before anything else."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import bot.__main__
from bot.core.memory import ARENA_MAX

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


def arenas(mode: str) -> tuple[str, int]:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run([sys.executable, "-c", ARENAS, mode], env=env, capture_output=True,
                          text=True, timeout=60, check=True)
    capped, count = done.stdout.split()
    return capped, int(count)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's arenas")
def test_threads_allocating_together_share_the_capped_arenas() -> None:
    capped, count = arenas("cap")
    assert capped == "True" and count <= ARENA_MAX
    # The measure can fail: without the cap the same threads take an arena each.
    uncapped, count = arenas("none")
    assert uncapped == "False" and count > ARENA_MAX


def test_the_bot_caps_the_arenas_before_anything_else(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    monkeypatch.setattr(bot.__main__, "cap_malloc_arenas", lambda: calls.append("capped"))
    monkeypatch.setattr(bot.__main__, "load_settings", lambda: calls.append("settings") or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        bot.__main__.main(["health"])
    assert calls == ["capped", "settings"]

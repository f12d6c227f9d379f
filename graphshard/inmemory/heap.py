"""Freed memory kept in this process for the length of a call (glibc's malloc only), so that the shuffle's many
large temporary arrays reuse pages already mapped instead of faulting fresh ones in for each.

By default glibc serves every allocation above 32 MiB by `mmap` and unmaps it on free, so each of the shuffle's
partition-sized arrays is faulted in page by page again (on this project's VMs first-touch faults were half of the
in-process shuffle's wall time: 6.0 s -> 3.1 s, BENCHMARKS.md). Inside `kept()` allocations up to 2 GiB come from
the heap and the heap keeps up to 2 GiB free; on leaving, the thresholds are set to glibc's own dynamic ceilings
(32 MiB mmap, 64 MiB trim: where a numpy process's settle anyway) and what is free is handed back (`malloc_trim`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import platform
import threading
from contextlib import contextmanager
from typing import Iterator

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
KEPT = {M_MMAP_THRESHOLD: 2**31 - 1, M_TRIM_THRESHOLD: 2**31 - 1}  # while kept: mmap and trim above 2 GiB only
AFTER = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20}  # glibc's dynamic ceilings (64-bit)
_LOCK = threading.Lock()
_depth = 0


def _libc() -> ctypes.CDLL | None:
    """glibc, or None elsewhere (musl, macOS, Windows: nothing is changed there)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def _set(libc: ctypes.CDLL, values: dict[int, int]) -> None:
    for param, value in values.items():
        libc.mallopt(ctypes.c_int(param), ctypes.c_int(value))


@contextmanager
def kept() -> Iterator[None]:
    """Keep freed memory in this process's heap inside the block (nested or concurrent blocks: the outermost
    restores); returned to the system on leaving."""
    global _depth
    libc = _libc()
    if libc is None:
        yield
        return
    with _LOCK:
        _depth += 1
        if _depth == 1:
            _set(libc, KEPT)
    try:
        yield
    finally:
        with _LOCK:
            _depth -= 1
            if _depth == 0:
                _set(libc, AFTER)
                libc.malloc_trim(ctypes.c_size_t(0))

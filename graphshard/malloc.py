"""Freed memory kept in this process for the length of a call or a task (glibc's malloc only), so that many large
temporary arrays reuse pages already mapped instead of faulting fresh ones in for each.

By default glibc serves every allocation above 32 MiB by `mmap` and unmaps it on free, so each of the in-memory
shuffle's partition-sized arrays is faulted in page by page again (on this project's VMs first-touch faults were half
of the in-process shuffle's wall time: 6.0 s -> 3.1 s, BENCHMARKS.md); Dask starts its workers with
MALLOC_TRIM_THRESHOLD_ set, which pins that threshold at 128 KiB, so there every larger temporary is a fresh mapping
(the multilevel rounds' tasks: `daskrun.run_tasks(..., kept=True)`). Inside `kept()` allocations up to 2 GiB come from
the heap and the heap keeps up to 2 GiB free; on leaving, what is free is handed back (`malloc_trim`) and the
thresholds are set to those the environment gave (a Dask worker's: its later tasks keep their memory behaviour;
leaving glibc's ceilings there raised validation's worker peak at 100M edges from 0.58 to 0.85 GB), else to glibc's own
dynamic ceilings (32 MiB mmap, 64 MiB trim: where a numpy process's settle anyway).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import platform
import threading
from contextlib import contextmanager
from typing import Iterator

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters (malloc.h)
KEPT = {M_MMAP_THRESHOLD: 2**31 - 1, M_TRIM_THRESHOLD: 2**31 - 1}  # while kept: mmap and trim above 2 GiB only
AFTER = {M_MMAP_THRESHOLD: 32 << 20, M_TRIM_THRESHOLD: 64 << 20}  # glibc's dynamic ceilings (64-bit)
DASK_MMAP = 128 << 10  # glibc's mmap threshold where MALLOC_TRIM_THRESHOLD_ is set (it stops the dynamic one)
_LOCK = threading.Lock()
_depth = 0


def _libc() -> ctypes.CDLL | None:
    """glibc, or None elsewhere (musl, macOS, Windows: nothing is changed there)."""
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return None
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def _after() -> dict[int, int]:
    """The thresholds to leave: the ones the process started with where its environment set them (Dask starts its
    workers with MALLOC_TRIM_THRESHOLD_, which also fixes the mmap threshold at 128 KiB: other tasks there rely on
    freed memory going back at once), else glibc's dynamic ceilings."""
    trim = os.environ.get("MALLOC_TRIM_THRESHOLD_")
    if trim is None:
        return AFTER
    return {M_MMAP_THRESHOLD: int(os.environ.get("MALLOC_MMAP_THRESHOLD_", DASK_MMAP)), M_TRIM_THRESHOLD: int(trim)}


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
                _set(libc, _after())
                libc.malloc_trim(ctypes.c_size_t(0))

"""Random reads and writes of a memory-mapped array (a scratch map over a graph's nodes or edges) one window of it at
a time, the window's pages released after each. Random positions touch every page of a map, so a plain gather or
scatter puts the whole map, a graph-sized array, into the task's RSS (what Dask's memory limit counts); here a task
holds one window (the pages stay in the page cache, and written pages are the file's, so nothing is lost). Arrays
that are not memory maps, or small ones, are indexed directly.
"""

from __future__ import annotations

import mmap
from typing import Iterator

import numpy as np

WINDOW_BYTES = 32 << 20  # bytes of a map one window covers


def take(arr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """arr[rows] (any order, repeats allowed)."""
    rows = np.asarray(rows)
    if not _windowed(arr):
        return np.asarray(arr[rows])
    out = np.empty((len(rows), *arr.shape[1:]), dtype=arr.dtype)
    for pick, at in _windows(arr, rows):
        out[pick] = arr[at]
    return out


def put(arr: np.ndarray, rows: np.ndarray, values: np.ndarray | int) -> None:
    """arr[rows] = values; where a row repeats, the last of its values in `rows` order is kept, as numpy does."""
    rows = np.asarray(rows)
    if not _windowed(arr):
        arr[rows] = values
        return
    values = np.broadcast_to(np.asarray(values, dtype=arr.dtype), (len(rows), *arr.shape[1:]))
    for pick, at in _windows(arr, rows):
        arr[at] = values[pick]


def _windowed(arr: np.ndarray) -> bool:
    return getattr(arr, "_mmap", None) is not None and arr.nbytes > WINDOW_BYTES


def _windows(arr: np.ndarray, rows: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(positions in `rows`, their rows) per window of the map, windows in order, each window's rows in their order
    in `rows` (so repeats keep their order); the window's pages are released once the caller is done with it.
    Grouping by window is a stable sort of small integers (numpy's radix sort), not a sort of the rows."""
    span = max(1, WINDOW_BYTES // max(1, arr.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))))
    window = rows // span
    if len(window) and int(window.max()) < 1 << 16:
        window = window.astype(np.uint16)
    order = np.argsort(window, kind="stable")
    ends = np.cumsum(np.bincount(window, minlength=1))
    for w in np.flatnonzero(np.diff(np.r_[0, ends])):
        pick = order[(ends[w - 1] if w else 0):ends[w]]
        yield pick, rows[pick]
        release(arr, int(w) * span, (int(w) + 1) * span)


def release(arr: np.ndarray, lo: int = 0, hi: int | None = None) -> None:
    """Drop rows [lo, hi) of a memory map (all by default) from this process's pages."""
    held = getattr(arr, "_mmap", None)
    if held is None:
        return
    row = arr.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64))
    hi = arr.shape[0] if hi is None else min(hi, arr.shape[0])
    base = arr.ctypes.data - np.frombuffer(held, dtype=np.uint8).ctypes.data  # where the rows start in the mapping
    start = (base + lo * row) // mmap.PAGESIZE * mmap.PAGESIZE
    end = min(len(held), base + hi * row)
    if end > start:
        held.madvise(mmap.MADV_DONTNEED, start, end - start)

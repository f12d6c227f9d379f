"""Compiled loops (numba) that turn edge lists into a symmetric, sorted, deduplicated, loop-free CSR by counting, in
O(nodes + edges) with no comparison sort.

Each endpoint pair (u, v), u != v, gives the entries u -> v and v -> u, so the entry multiset is symmetric. Scattering
the entries by row gives each row its neighbours in no order; walking that CSR row by row in ascending order and
appending the row's ID to each neighbour's row then gives every row its neighbours in ascending order (by symmetry,
the rows of that transpose are the rows of the graph), and a repeat is then always the row's last entry.
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np


def njit(**options) -> Callable[[Callable], Callable]:
    """numba's `njit(**options)`, applied at the first call: a process that builds no CSR (random partitioning, the
    shuffle) does not import numba (0.6 s here)."""
    def wrap(fn: Callable) -> Callable:
        compiled: list[Callable] = []

        @functools.wraps(fn)
        def call(*args):
            if not compiled:
                from numba import njit as numba_njit

                compiled.append(numba_njit(**options)(fn))
            return compiled[0](*args)
        return call
    return wrap


@njit(cache=True, nogil=True)
def count_ends(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(entries per row of the symmetric graph before deduplication, in-degree of the directed edges), each n long."""
    rows = np.zeros(n, dtype=np.int64)
    in_deg = np.zeros(n, dtype=np.int64)
    for i in range(len(src)):
        u = src[i]
        v = dst[i]
        in_deg[v] += 1
        if u != v:
            rows[u] += 1
            rows[v] += 1
    return rows, in_deg


@njit(cache=True, nogil=True)
def scatter_ends(src: np.ndarray, dst: np.ndarray, fill: np.ndarray, cols: np.ndarray) -> None:
    """Append both directions of every non-loop edge to its rows: `fill[r]` is row r's next free slot in `cols`."""
    for i in range(len(src)):
        u = src[i]
        v = dst[i]
        if u != v:
            cols[fill[u]] = v
            fill[u] += 1
            cols[fill[v]] = u
            fill[v] += 1


@njit(cache=True, nogil=True)
def sorted_unique_rows(indptr: np.ndarray, cols: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) of the same symmetric graph with each row ascending and without repeats."""
    n = len(indptr) - 1
    fill = indptr[:-1].copy()
    out = np.empty(len(cols), dtype=np.int64)
    for r in range(n):
        for e in range(indptr[r], indptr[r + 1]):
            c = cols[e]
            if fill[c] == indptr[c] or out[fill[c] - 1] != r:
                out[fill[c]] = r
                fill[c] += 1
    kept = np.zeros(n + 1, dtype=np.int64)
    w = 0
    for r in range(n):
        for e in range(indptr[r], fill[r]):
            out[w] = out[e]
            w += 1
        kept[r + 1] = w
    return kept, out[:w].copy()

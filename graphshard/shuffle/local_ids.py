"""A partition's node-ID work in memory that follows the partition, not the graph: the distinct IDs of its halo and
the new -> local ID map of its edges' ends.

A dense array indexed by new ID (a mark byte, a local ID) is the fastest way to do both (a gather; a binary search
over the halo was 10x slower), but over the whole ID space it costs bytes per node of the graph in every partition's
task. Here the dense array covers at most `WINDOW_IDS` consecutive IDs: while the IDs involved span no more than
that (every graph below `WINDOW_IDS` nodes) it is one gather as before; past it the values are grouped by window
(numpy's radix sort of the window numbers, O(values)) and each window is a dense array in turn. The owned range
[lo, hi) maps by arithmetic where the IDs are known to be owned (the owned edges' destinations).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from graphshard.shuffle.plan import id_dtype_for

WINDOW_IDS = 1 << 22  # new IDs one dense window covers: 4 MB of marks, 16 MB of int32 local IDs


def _span(lo: int, hi: int) -> tuple[int, int]:
    """(base, length) of the dense array over IDs [lo, hi): from 0 while that fits one window (no offset to
    subtract: a plain gather), else from lo."""
    base = 0 if hi <= WINDOW_IDS else lo
    return base, hi - base


def _windows(values: np.ndarray, base: int) -> Iterator[tuple[np.ndarray, int]]:
    """(positions in `values`, first ID of the window) for every window of `WINDOW_IDS` IDs from `base` that holds
    values, windows in ascending order; grouping by window is a stable sort of small integers (a radix sort)."""
    window = (values - base) // WINDOW_IDS
    window = window.astype(np.uint16 if int(window.max()) < 1 << 16 else np.uint32)
    order = np.argsort(window, kind="stable")
    ends = np.cumsum(np.bincount(window))
    del window
    for w in np.flatnonzero(np.diff(ends, prepend=0)):
        yield order[(ends[w - 1] if w else 0):ends[w]], base + int(w) * WINDOW_IDS


def unique_ids(arrays: list[np.ndarray]) -> np.ndarray:
    """The distinct values of the arrays, ascending (int64): marks over one window at a time."""
    arrays = [a for a in arrays if len(a)]
    if not arrays:
        return np.zeros(0, np.int64)
    base, length = _span(min(int(a.min()) for a in arrays), max(int(a.max()) for a in arrays) + 1)
    if length <= WINDOW_IDS:
        marks = np.zeros(length, dtype=bool)
        for a in arrays:
            marks[a - base if base else a] = True
        return np.flatnonzero(marks) + base
    if len(arrays) > 1:  # each array's distinct values, then theirs (each at most the halo's size)
        return unique_ids([np.concatenate([unique_ids([a]) for a in arrays])])
    values = arrays[0]
    return np.concatenate([_distinct(values[pick]) for pick, _ in _windows(values, base)])


def _distinct(values: np.ndarray) -> np.ndarray:
    """The distinct values of one window's values: a sort where they are few for the window's marks."""
    return np.unique(values).astype(np.int64) if len(values) * 8 < WINDOW_IDS else unique_ids([values])


def contains(keys: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Whether each of `values` is in the ascending array `keys` (a binary search: for the partition-sized sets of
    the multi-hop halo)."""
    if not len(keys):
        return np.zeros(len(values), dtype=bool)
    at = np.minimum(np.searchsorted(keys, values), len(keys) - 1)
    return keys[at] == values


class LocalIds:
    """new ID -> local ID of a partition: owned node x -> x - lo, halo node -> (hi - lo) + its rank among the halo
    nodes (ascending new IDs), as DGL's partition_graph numbers them."""

    def __init__(self, lo: int, hi: int, halo: np.ndarray):
        self.lo, self.hi, self.halo = lo, hi, halo
        self.dtype = id_dtype_for(hi - lo + len(halo))
        first = min(lo, int(halo[0])) if len(halo) else lo
        last = max(hi, int(halo[-1]) + 1) if len(halo) else hi
        self.base, self.length = _span(first, last)
        self._dense: np.ndarray | None = None  # the one window's table, while one window covers every ID

    def owned(self, ids: np.ndarray, out: np.ndarray) -> None:
        """out[:] = local IDs of IDs known to be owned."""
        np.subtract(ids, self.lo, out=out)

    def __call__(self, ids: np.ndarray, out: np.ndarray) -> None:
        """out[:] = local IDs of owned or halo IDs. Past one window, `ids` are taken a piece at a time (a piece's
        window grouping holds 10 B per ID; a piece is at least the partition's local nodes, which bounds the windows'
        rebuilding to one more write per ID)."""
        if not len(ids):
            return
        if self.length <= WINDOW_IDS:
            if self._dense is None:
                self._dense = self._table(self.base, self.length)
            out[:] = self._dense[ids - self.base if self.base else ids]
            return
        table = np.empty(WINDOW_IDS, dtype=self.dtype)
        step = max(WINDOW_IDS, self.hi - self.lo + len(self.halo))
        for at in range(0, len(ids), step):
            piece = ids[at:at + step]
            for pick, start in _windows(piece, self.base):
                out[at + pick] = self._table(start, WINDOW_IDS, table)[piece[pick] - start]

    def _table(self, start: int, length: int, table: np.ndarray | None = None) -> np.ndarray:
        """Local IDs of the owned and halo IDs in [start, start + length), at their offset from `start`, in `table`
        or a new array (other entries are never read: every ID looked up is owned or a halo node)."""
        table = np.empty(length, dtype=self.dtype) if table is None else table
        lo, hi = max(self.lo, start), min(self.hi, start + length)
        if hi > lo:
            table[lo - start:hi - start] = np.arange(lo - self.lo, hi - self.lo)
        first, last = np.searchsorted(self.halo, [start, start + length])
        table[self.halo[first:last] - start] = np.arange(self.hi - self.lo + first, self.hi - self.lo + last)
        return table

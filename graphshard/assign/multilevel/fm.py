"""Boundary FM refinement of one block (numba): k-way Fiduccia-Mattheyses moves that may lose cut for a while,
kept only up to the best point of the pass. Label propagation stops at the first local minimum; FM climbs out of it.

The block's nodes see each other's moves; other blocks' parts stay as at the round's start (kernels.py's
conventions: `loc`, `nbr`, `ew`, `vw`, `budget`). A max-heap of (gain, seeded tie key) holds each movable node's
best move; entries carry a stamp so that a neighbour's move outdates them. Ties depend on the seed only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphshard.assign.multilevel.kernels import _connections, _fits, mix

# A pass stops after STALL_MOVES moves without a new best cut; nodes above MAX_DEGREE are not re-rated after a
# neighbour moves (hubs rarely should move, and re-rating them was most of the pass's time). Was 100 / 1,000; Chung-Lu
# 50k / 500k coarsened to 150k edges, k = 4 / 16: 1.072 / 1.052 x METIS -> 0.945 / 0.998, in less CPU time;
# BENCHMARKS.md "Partition quality", a longer FM pass.
STALL_MOVES = 3000
MAX_DEGREE = 200


@njit(cache=True)
def _better(gain, tie, i, j):
    return gain[i] > gain[j] or (gain[i] == gain[j] and tie[i] > tie[j])


@njit(cache=True)
def _push(heap, size, gain, tie, node, stamp, g, t, u, s):
    """Add (g, t, u, s) to the heap arrays (grown when full); returns them and the new size."""
    if size == len(heap):
        heap = np.concatenate((heap, np.arange(len(heap), 2 * len(heap))))
        gain, tie = np.concatenate((gain, gain)), np.concatenate((tie, tie))
        node, stamp = np.concatenate((node, node)), np.concatenate((stamp, stamp))
    slot = heap[size]
    gain[slot], tie[slot], node[slot], stamp[slot] = g, t, u, s
    i = size
    while i > 0 and _better(gain, tie, heap[i], heap[(i - 1) // 2]):
        heap[i], heap[(i - 1) // 2] = heap[(i - 1) // 2], heap[i]
        i = (i - 1) // 2
    return heap, gain, tie, node, stamp, size + 1


@njit(cache=True)
def _pop(heap, size, gain, tie):
    """Remove the top entry; returns its slot (the caller reads it before the next push)."""
    top = heap[0]
    size -= 1
    heap[0], heap[size] = heap[size], top
    i = 0
    while True:
        left, best = 2 * i + 1, i
        if left < size and _better(gain, tie, heap[left], heap[best]):
            best = left
        if left + 1 < size and _better(gain, tie, heap[left + 1], heap[best]):
            best = left + 1
        if best == i:
            return top, size
        heap[i], heap[best] = heap[best], heap[i]
        i = best


@njit(cache=True)
def _best_move(u, indptr, loc, nbr, ew, parts, vw, delta, budget, conn, touched, salt, nparts):
    """(target, gain) of u's best move to a neighbouring part within the block's budget; target -1 if none."""
    nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
    p = parts[u]
    best, best_c, best_h = np.int64(-1), np.int64(0), np.uint64(0)
    for i in range(nt):
        q = touched[i]
        if q == p:
            continue
        h = mix(salt, u * nparts + q)
        if best >= 0 and (conn[q] < best_c or (conn[q] == best_c and h <= best_h)):
            continue
        if _fits(delta, q, vw[u], budget[q]):
            best, best_c, best_h = q, conn[q], h
    gain = best_c - conn[p]
    for i in range(nt):
        conn[touched[i]] = 0
    return best, gain


@njit(cache=True)
def fm_round(indptr, loc, nbr, ew, parts, vw, budget, salt, nparts, delta):
    """One FM pass over the block's boundary nodes, each moved at most once, rolled back to the best prefix.
    Updates `parts` and `delta` (net weight change per part, within `budget`); returns (moves kept, cut gain)."""
    n = len(parts)
    conn = np.zeros(nparts, dtype=np.int64)
    touched = np.empty(nparts, dtype=np.int64)
    cap = max(16, n // 4)
    heap, gain, tie = np.arange(cap), np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.uint64)
    node, stamp = np.zeros(cap, dtype=np.int64), np.zeros(cap, dtype=np.int64)
    current = np.zeros(n, dtype=np.int64)
    locked = np.zeros(n, dtype=np.bool_)
    size = 0
    for u in range(n):
        q, g = _best_move(u, indptr, loc, nbr, ew, parts, vw, delta, budget, conn, touched, salt, nparts)
        if q >= 0:
            heap, gain, tie, node, stamp, size = _push(heap, size, gain, tie, node, stamp, g, mix(salt, u), u, 0)
    log_node, log_from = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    moved, total, best_total, best_len = 0, np.int64(0), np.int64(0), 0
    while size > 0 and moved - best_len < STALL_MOVES:
        slot, size = _pop(heap, size, gain, tie)
        u = node[slot]
        if locked[u] or stamp[slot] != current[u]:
            continue
        q, g = _best_move(u, indptr, loc, nbr, ew, parts, vw, delta, budget, conn, touched, salt, nparts)
        if q < 0:
            continue
        p = parts[u]
        delta[p] -= vw[u]
        delta[q] += vw[u]
        parts[u] = q
        locked[u] = True
        log_node[moved], log_from[moved] = u, p
        moved += 1
        total += g
        if total > best_total:
            best_total, best_len = total, moved
        for e in range(indptr[u], indptr[u + 1]):
            v = loc[e]
            if v < 0 or locked[v] or indptr[v + 1] - indptr[v] > MAX_DEGREE:
                continue
            current[v] += 1
            qv, gv = _best_move(v, indptr, loc, nbr, ew, parts, vw, delta, budget, conn, touched, salt, nparts)
            if qv >= 0:
                heap, gain, tie, node, stamp, size = _push(heap, size, gain, tie, node, stamp, gv, mix(salt, v), v,
                                                           current[v])
    for i in range(moved - 1, best_len - 1, -1):
        u, p = log_node[i], log_from[i]
        q = parts[u]
        delta[q] -= vw[u]
        delta[p] += vw[u]
        parts[u] = p
    return best_len, best_total

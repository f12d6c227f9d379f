"""Jet-style refinement of one block (numba): rounds of unconstrained moves, filtered by an afterburner, then a
rebalance back within the block's budget; the best balanced state of the pass is kept. Unlike LP and FM, whose every
move must fit a part's room, a Jet round may overfill a part and pay it back, so it leaves the local optima that
balance alone holds (after Gilbert, Madduri, Boman, Rajamanickam: "Jet: Multilevel Graph Partitioning on GPUs").

Same conventions as kernels.py and fm.py (`loc`, `nbr`, `ew`, `vw`, `budget`, `delta`); ties by seeded hashes only.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphshard.assign.multilevel.kernels import _connections, _fits, _label_of, _weight, mix

# A pass runs at most MAX_ROUNDS rounds (sooner ended by `jet_pass`'s rule).
MAX_ROUNDS = 60
REBALANCE_SWEEPS = 4


@njit(cache=True)
def _candidates(indptr, loc, nbr, ew, parts, locked, salt, nparts, coef, dest, gain, conn, touched, dirty):
    """Each movable node's most connected other part and the gain of going there, whatever the balance; dest -1
    unless the gain is at least -coef x its connection to its own part (Jet's negative-gain allowance). Only `dirty`
    nodes are rated again: the others' parts, neighbours' parts and locks are as when they were last rated."""
    for u in range(len(parts)):
        if not dirty[u]:
            continue
        dirty[u] = False
        dest[u] = -1
        if locked[u]:
            continue
        nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
        p = parts[u]
        best, best_c, best_h = np.int64(-1), np.int64(0), np.uint64(0)
        for i in range(nt):
            q = touched[i]
            if q == p:
                continue
            h = mix(salt, u * nparts + q)
            if best < 0 or conn[q] > best_c or (conn[q] == best_c and h > best_h):
                best, best_c, best_h = q, conn[q], h
        if best >= 0:
            g = best_c - conn[p]
            if g >= 0 or -g < np.floor(coef * conn[p]):
                dest[u], gain[u] = best, g
        for i in range(nt):
            conn[touched[i]] = 0


@njit(cache=True)
def _mark_changed(indptr, loc, parts, before, dirty):
    """Nodes whose part changed since `before`, and their neighbours in the block, are to be rated again."""
    for u in range(len(parts)):
        if parts[u] != before[u]:
            dirty[u] = True
            for e in range(indptr[u], indptr[u + 1]):
                if loc[e] >= 0:
                    dirty[loc[e]] = True


@njit(cache=True)
def _afterburner(indptr, loc, nbr, ew, parts, dest, gain, tie, keep):
    """Keep a candidate if its gain stays >= 0 when every neighbouring candidate of higher priority (gain, then
    tie key) has moved too."""
    for u in range(len(parts)):
        keep[u] = False
        if dest[u] < 0:
            continue
        p, d, g = parts[u], dest[u], np.int64(0)
        for e in range(indptr[u], indptr[u + 1]):
            v = loc[e]
            q = _label_of(e, loc, nbr, parts)
            if v >= 0 and dest[v] >= 0 and (gain[v] > gain[u] or (gain[v] == gain[u] and tie[v] > tie[u])):
                q = dest[v]
            w = _weight(ew, e)
            if q == d:
                g += w
            elif q == p:
                g -= w
        keep[u] = g >= 0


@njit(cache=True)
def _move(u, q, indptr, loc, nbr, ew, parts, vw, delta, conn, touched):
    """Move u to q; returns the exact cut gain at the current parts."""
    nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
    p = parts[u]
    g = conn[q] - conn[p]
    for i in range(nt):
        conn[touched[i]] = 0
    delta[p] -= vw[u]
    delta[q] += vw[u]
    parts[u] = q
    return g


@njit(cache=True)
def _over(delta, budget, p):
    for c in range(delta.shape[1]):
        if delta[p, c] > budget[p, c]:
            return True
    return False


@njit(cache=True)
def _balanced(delta, budget):
    for p in range(delta.shape[0]):
        if _over(delta, budget, p):
            return False
    return True


@njit(cache=True)
def _rebalance(indptr, loc, nbr, ew, parts, vw, delta, budget, tie, nparts, conn, touched, loss, unrated):
    """Move the cheapest nodes out of parts above their budget into parts with room (most connected first), until
    every part fits or nothing can move; returns the exact cut gain (<= 0 mostly). `loss` keeps each node's loss
    between calls, computed again only where `unrated` (its part or a neighbour's changed since)."""
    n = len(parts)
    total = np.int64(0)
    before = parts.copy()
    for _ in range(REBALANCE_SWEEPS):
        if _balanced(delta, budget):
            break
        _mark_changed(indptr, loc, parts, before, unrated)
        before[:] = parts
        rows = np.empty(n, dtype=np.int64)
        m = 0
        for u in range(n):
            if _over(delta, budget, parts[u]):
                rows[m] = u
                m += 1
                if not unrated[u]:
                    continue
                unrated[u] = False
                nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
                best = np.int64(0)
                for i in range(nt):
                    if touched[i] != parts[u] and conn[touched[i]] > best:
                        best = conn[touched[i]]
                loss[u] = conn[parts[u]] - best
                for i in range(nt):
                    conn[touched[i]] = 0
        rows = rows[:m]
        rows = rows[np.argsort(loss[rows] * np.int64(1 << 20) - (tie[rows] >> np.uint64(44)).astype(np.int64),
                               kind="mergesort")]
        for u in rows:
            p = parts[u]
            if not _over(delta, budget, p):
                continue
            nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
            best, best_c = np.int64(-1), np.int64(-1)
            for q in range(nparts):
                if q != p and conn[q] > best_c and _fits(delta, q, vw[u], budget[q]):
                    best, best_c = q, conn[q]
            for i in range(nt):
                conn[touched[i]] = 0
            if best >= 0:
                total += _move(u, best, indptr, loc, nbr, ew, parts, vw, delta, conn, touched)
    _mark_changed(indptr, loc, parts, before, unrated)
    return total


@njit(cache=True)
def jet_pass(indptr, loc, nbr, ew, parts, vw, budget, salt, nparts, delta, coef, patience, enough):
    """Jet rounds over the block's nodes until `patience` rounds in a row bring no balanced cut better than
    the best by more than `enough` (Jet's own end rule, a share of the cut: on R-MAT a pass gains nearly all in its
    first round, then swings nodes back and forth for a few edges a round); leaves `parts` and `delta` at the best
    balanced state seen (the start if none is better); returns (nodes changed, cut gain)."""
    n = len(parts)
    conn = np.zeros(nparts, dtype=np.int64)
    touched = np.empty(nparts, dtype=np.int64)
    dest, gain = np.empty(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    keep, locked = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    tie = np.empty(n, dtype=np.uint64)
    for u in range(n):
        tie[u] = mix(salt, u)
    start, best_parts, best_delta = parts.copy(), parts.copy(), delta.copy()
    total, best_total, stale = np.int64(0), np.int64(0), 0
    dirty, before = np.ones(n, dtype=np.bool_), parts.copy()
    loss, unrated = np.empty(n, dtype=np.int64), np.ones(n, dtype=np.bool_)
    for _ in range(MAX_ROUNDS):
        _candidates(indptr, loc, nbr, ew, parts, locked, salt, nparts, coef, dest, gain, conn, touched, dirty)
        _afterburner(indptr, loc, nbr, ew, parts, dest, gain, tie, keep)
        before[:] = parts
        for u in range(n):
            dirty[u] |= locked[u] or keep[u]  # locked or unlocked next round
            locked[u] = keep[u]
            if keep[u]:
                total += _move(u, dest[u], indptr, loc, nbr, ew, parts, vw, delta, conn, touched)
        _mark_changed(indptr, loc, parts, before, unrated)
        total += _rebalance(indptr, loc, nbr, ew, parts, vw, delta, budget, tie, nparts, conn, touched, loss,
                            unrated)
        _mark_changed(indptr, loc, parts, before, dirty)
        balanced = _balanced(delta, budget)
        stale = 0 if balanced and total > best_total + enough else stale + 1
        if total > best_total and balanced:
            best_total = total
            best_parts[:] = parts
            best_delta[:] = delta
        if stale >= patience:
            break
    parts[:] = best_parts
    delta[:] = best_delta
    return np.sum(best_parts != start), best_total

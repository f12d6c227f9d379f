"""The compiled inner loops of the multilevel partitioner (numba): label propagation for clustering and for
refinement, and the overweight fix. Each works on one block of nodes in ascending order (Gauss-Seidel inside the
block: a node sees the block's earlier moves), with the other blocks' labels frozen at the round's start.

Conventions: `indptr` is the block's CSR row pointer; per adjacency entry, `loc[e]` is the neighbour's row in the
block (or -1) and `nbr[e]` its label (or part) at the round's start; `ew` holds edge weights (empty = all 1);
`vw` is (rows, columns) of int64 node weights. Ties are broken by `mix(salt, label)`, a splitmix64 hash, so that
results depend on the seed only, never on scheduling.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from graphshard.splitmix import GOLDEN, M1, M2

MASK64 = 0xFFFFFFFFFFFFFFFF


@njit(cache=True)
def mix(salt: np.uint64, value: np.int64) -> np.uint64:
    """splitmix64 of (salt, value): a seeded, well-spread tie-break key."""
    z = salt + np.uint64(value) * GOLDEN
    z = (z ^ (z >> np.uint64(30))) * M1
    z = (z ^ (z >> np.uint64(27))) * M2
    return z ^ (z >> np.uint64(31))


@njit(cache=True)
def _weight(ew: np.ndarray, e: int) -> np.int64:
    return np.int64(1) if len(ew) == 0 else ew[e]


@njit(cache=True)
def _fits(load: np.ndarray, row: int, w: np.ndarray, limit: np.ndarray) -> bool:
    for c in range(len(w)):
        if load[row, c] + w[c] > limit[c]:
            return False
    return True


@njit(cache=True)
def _label_of(e: int, loc: np.ndarray, nbr: np.ndarray, own: np.ndarray) -> np.int64:
    return own[loc[e]] if loc[e] >= 0 else nbr[e]


def index_dtype(count: int) -> type:
    """The narrowest of int32 / int64 that holds indices below `count` (a block's rows or labels): int32 halves the
    per-entry arrays the kernels stream through, and the pages a task faults in for them."""
    return np.int32 if count < 2**31 else np.int64


def local_rows(indices: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per adjacency entry, the neighbour's row in the block [lo, hi), or -1 when another block holds it."""
    return _local_rows(indices, lo, hi, np.empty(len(indices), dtype=index_dtype(hi - lo)))


@njit(cache=True)
def _local_rows(indices, lo, hi, out):
    for e in range(len(indices)):
        v = indices[e]
        out[e] = v - lo if lo <= v < hi else -1
    return out


@njit(cache=True)
def coarse_keys(indptr, f2c, cv, ew, bits):
    """A block's entries between different coarse nodes: (coarse source << bits | coarse target, weight), in entry
    order (`f2c` per row, `cv` per entry: the coarse nodes)."""
    keys = np.empty(len(cv), dtype=np.int64)
    w = np.empty(len(cv), dtype=np.int64)
    m = 0
    for u in range(len(f2c)):
        cu = np.int64(f2c[u])
        for e in range(indptr[u], indptr[u + 1]):
            if cv[e] != cu:
                keys[m] = (cu << bits) | cv[e]
                w[m] = _weight(ew, e)
                m += 1
    return keys[:m], w[:m]


@njit(cache=True)
def sum_sorted(keys, w):
    """Sorted keys' distinct values and the sum of `w` over each, written over the inputs' fronts (no new arrays)."""
    m = 0
    for i in range(len(keys)):
        if i and keys[i] == keys[m - 1]:
            w[m - 1] += w[i]
        else:
            keys[m], w[m] = keys[i], w[i]
            m += 1
    return keys[:m], w[:m]


def compact_labels(own: np.ndarray, nbr: np.ndarray, labels: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Number the distinct labels of a block (its own, then its neighbours') in first-seen order, O(entries) where a
    sort would be O(entries log entries). Returns (labels by local index, own as local indices, neighbours as local
    indices). Labels lie in [0, `labels`): while that range is no larger than an open addressing table for the block
    (2 slots per entry), the table is indexed by the label itself (3-7x faster at R-MAT 20M's level 0: no hashing,
    no probing); else it is that hash table. Either way 4 bytes a slot below 2^31 entries, so the memory follows the
    block and never the graph (a power-of-two size doubled it just past 2^23 entries)."""
    total = len(own) + len(nbr)
    direct = labels <= 2 * total + 1
    dtype = index_dtype(total)
    table = np.full(labels if direct else 2 * total + 1, -1, dtype=dtype)
    found = np.empty(min(total, labels), dtype=np.int64)
    return _compact(own, nbr, table, direct, found, np.empty(len(own), dtype=dtype), np.empty(len(nbr), dtype=dtype))


@njit(cache=True)
def _compact(own, nbr, table, direct, found, own_l, nbr_l):
    """compact_labels' loop: `table` maps a slot (the label itself when `direct`, else its hash modulo the table's
    length, linear probing) to the local index of the label stored there (-1: empty); `found` lists the labels."""
    size = np.uint64(len(table))
    count = 0
    for i in range(len(own) + len(nbr)):
        lab = own[i] if i < len(own) else nbr[i - len(own)]
        h = np.uint64(lab) if direct else mix(np.uint64(0), lab) % size
        while table[h] != -1 and found[table[h]] != lab:
            h = h + np.uint64(1) if h + np.uint64(1) < size else np.uint64(0)
        if table[h] == -1:
            table[h] = count
            found[count] = lab
            count += 1
        if i < len(own):
            own_l[i] = table[h]
        else:
            nbr_l[i - len(own)] = table[h]
    return found[:count].copy(), own_l, nbr_l


@njit(cache=True)
def cluster_round(indptr, loc, nbr, ew, own, cw, vw, maxw, active, salt, quota, names, order, lone, runs):
    """One size-constrained LP sweep over the block's rows in `order` (coarsen.py: low degree first at level 0,
    so leaves settle before hubs absorb them); labels are indices into the round's candidate clusters.

    `own` (block labels) and `cw` (candidate cluster weights, column 0 = node count) are updated in place;
    `names` are the clusters' global labels (ties are broken on them). A node joins the neighbouring cluster of
    highest connection that stays within `maxw` in every column (staying on ties). With `quota` >= 0, up to `quota`
    nodes of at most `lone` input nodes left alone afterwards are grouped: by their favourite neighbouring cluster,
    and isolated nodes in runs, one per value of `runs` (per row, or empty: one run; a V-cycle keeps parts apart)
    (clusters must form on graphs with leaves and edgeless node types); the quota keeps the level from shrinking far
    below the coarsest level's size. Returns moves.
    """
    n = len(own)
    rating = np.zeros(cw.shape[0], dtype=np.int64)
    touched = np.empty(cw.shape[0], dtype=np.int64)
    favourite = np.full(n, -1, dtype=np.int64)
    moves = 0
    for u in order:
        if quota < 0 and not active[u]:  # its favourite cluster serves only the grouping
            continue
        nt = _connections(u, indptr, loc, nbr, ew, own, rating, touched)
        cur = own[u]
        best, best_r, best_h = cur, rating[cur], np.uint64(0)
        fav, fav_r = np.int64(-1), np.int64(0)
        for i in range(nt):
            lab = touched[i]
            r = rating[lab]
            if lab != cur and r > fav_r:
                fav, fav_r = lab, r
            if not active[u] or lab == cur or r < best_r:
                continue
            h = mix(salt, names[lab])
            if r == best_r and (best == cur or h >= best_h):
                continue
            if _fits(cw, lab, vw[u], maxw):
                best, best_r, best_h = lab, r, h
        for i in range(nt):
            rating[touched[i]] = 0
        favourite[u] = fav
        if best != cur:
            cw[cur] -= vw[u]
            cw[best] += vw[u]
            own[u] = best
            moves += 1
    if quota >= 0:
        moves += _group_singletons(indptr, own, cw, vw, maxw, favourite, quota, lone, runs)
    return moves


@njit(cache=True)
def _group_singletons(indptr, own, cw, vw, maxw, favourite, quota, lone, runs):
    """Nodes of at most `lone` input nodes still alone in their cluster join the first such node with the same
    favourite cluster (isolated nodes: the previous isolated one of their run), while it fits, `quota` moves at
    most."""
    leader = np.full(cw.shape[0] + 1 + (runs.max() if len(runs) else 0), -1, dtype=np.int64)  # the last: isolated
    moves = 0
    for u in range(len(own)):
        if moves >= quota:
            break
        if cw[own[u], 0] != vw[u, 0] or vw[u, 0] > lone:  # alone: column 0 counts input nodes
            continue
        key = favourite[u] if indptr[u + 1] > indptr[u] else cw.shape[0] + (runs[u] if len(runs) else 0)
        if key < 0:
            continue
        lead = leader[key]
        if lead >= 0 and _fits(cw, own[lead], vw[u], maxw):
            cw[own[u]] -= vw[u]
            cw[own[lead]] += vw[u]
            own[u] = own[lead]
            moves += 1
        else:
            leader[key] = u
    return moves


@njit(cache=True)
def _connections(u, indptr, loc, nbr, ew, parts, conn, touched):
    nt = 0
    for e in range(indptr[u], indptr[u + 1]):
        q = _label_of(e, loc, nbr, parts)
        if conn[q] == 0:
            touched[nt] = q
            nt += 1
        conn[q] += _weight(ew, e)
    return nt


@njit(cache=True)
def block_cut(indptr, nbr, ew, parts):
    """The block's cut at the round's start, as it sees it (`nbr` holds every neighbour's part then, the block's own
    too): the weight of its entries whose ends lie in different parts. Summed over a level's blocks it is twice the
    level's cut."""
    total = np.int64(0)
    for u in range(len(parts)):
        p = parts[u]
        for e in range(indptr[u], indptr[u + 1]):
            if nbr[e] != p:
                total += _weight(ew, e)
    return total


@njit(cache=True)
def refine_round(indptr, loc, nbr, ew, parts, vw, budget, salt, nparts):
    """One LP refinement sweep: move a node to the part it has most edge weight to, if that beats its
    own part and the block's net weight gain of the target stays within `budget` (rows parts, columns constraints).
    Updates `parts`; returns (net weight change per part, moves, cut gain at the block's view of the parts)."""
    conn = np.zeros(nparts, dtype=np.int64)
    touched = np.empty(nparts, dtype=np.int64)
    delta = np.zeros(budget.shape, dtype=np.int64)
    moves, gain = 0, 0
    for u in range(len(parts)):
        nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
        p = parts[u]
        best, best_c, best_h = p, conn[p], np.uint64(0)
        for i in range(nt):
            q = touched[i]
            c = conn[q]
            if q == p or c < best_c:
                continue
            h = mix(salt, u * nparts + q)
            if c == best_c and (best == p or h >= best_h):
                continue
            if _fits(delta, q, vw[u], budget[q]):
                best, best_c, best_h = q, c, h
        if best != p:
            gain += best_c - conn[p]
            delta[p] -= vw[u]
            delta[best] += vw[u]
            parts[u] = best
            moves += 1
        for i in range(nt):
            conn[touched[i]] = 0
    return delta, moves, gain


@njit(cache=True)
def rebalance_candidates(indptr, loc, nbr, ew, parts, vw, excess, room, load, nparts):
    """For every node of a part above its bound (`excess` > 0 per column) that carries weight in such a column: the
    part to move it to (one with `room` for all its weights; most connected first, then the lightest by `load`)
    and the connection lost; (loss, target), target -1 for nodes that cannot help."""
    n = len(parts)
    conn = np.zeros(nparts, dtype=np.int64)
    touched = np.empty(nparts, dtype=np.int64)
    none = np.zeros(room.shape, dtype=np.int64)
    loss = np.zeros(n, dtype=np.int64)
    target = np.full(n, -1, dtype=np.int64)
    for u in range(n):
        p = parts[u]
        helps = False
        for c in range(excess.shape[1]):
            if excess[p, c] > 0 and vw[u, c] > 0:
                helps = True
        if not helps:
            continue
        nt = _connections(u, indptr, loc, nbr, ew, parts, conn, touched)
        best, best_c, best_l = -1, np.int64(-1), np.int64(0)
        for q in range(nparts):
            if q == p or not _fits(none, q, vw[u], room[q]):
                continue
            if conn[q] > best_c or (conn[q] == best_c and load[q, 0] < best_l):
                best, best_c, best_l = q, conn[q], load[q, 0]
        if best >= 0:
            loss[u] = conn[p] - best_c
            target[u] = best
        for i in range(nt):
            conn[touched[i]] = 0
    return loss, target

"""Coarsening one level: size-constrained label propagation rounds, then contraction of the clusters.

A round is one task per block (`cluster_block`: moves, new labels into the round's label map, weight changes into
delta buckets, one per block range) and one task per block range (`update_weights`: cluster weights of the next
round). Contraction numbers the non-empty clusters in ID order (`number_clusters`), maps every fine edge to its
coarse endpoints and sends it, summed per coarse pair, to the coarse block owning its source (`contract_block`),
where `coarse_block` sums the pieces into the coarse CSR with edge weights.
"""

from __future__ import annotations

import numpy as np

from graphshard.assign.graph_build import key_bits
from graphshard.assign.multilevel.hashing import half, salt_of
from graphshard.assign.multilevel.kernels import (
    cluster_round,
    coarse_keys,
    compact_labels,
    index_dtype,
    local_rows,
    sum_sorted,
)
from graphshard.assign.multilevel.store import Level, gather, open_ro, prefetch, read_block, save_array, write_range
from graphshard.formats.buckets import read_bucket, read_buckets, write_bucket, write_buckets
from graphshard.storage.scratch import ScratchPath

# Level 0 sweeps nodes by degree // DEGREE_BUCKET, then ID (meshes, all below it, keep the ID order). R-MAT 100k/2M:
# cut 81.9% -> 75.6% at k=16 (METIS 66.4%), 46.0% -> 39.3% at k=4 (METIS 44.6%); exact degree order: 76.3%, 43.4%,
# and it cost 22% on the small grid test. Coarser levels keep the ID order (on a mesh their degrees pass 8).
DEGREE_BUCKET = 8
# Every node clusters by the same rule. Hubs clustered apart on levels of skewed degrees until refinement ran in
# phases (the hub rule: leaves glued to hubs had kept a balanced partition from gathering them, R-MAT 50k k=4 0.83 ->
# 0.41x METIS's cut); with the phases it no longer paid: the matrix's cuts within about 1% either way, Barabasi-Albert
# 1.03 -> 1.00x METIS, R-MAT 20M in one level instead of two and 100M in one or two instead of five, at 0.68-0.90x
# the wall (BENCHMARKS.md, issue 18, "the hub rule removed").


def lone_weight(far: bool) -> int:
    """The heaviest node (in input nodes) that a level's last round groups when it is left alone: any while the level
    is far above the coarsest size; near it (only the edge cap left), input nodes only. R-MAT 50k coarsened to 150k
    edges, k = 8 (under the hub rule): grouping any node there cut 50.7% of the edges, input nodes only 34.3%."""
    return np.iinfo(np.int64).max if far else 1


def _round_state(level: Level, rnd: int, lo: int, hi: int, indices: np.ndarray):
    """(block labels, neighbour labels, cluster weights' map) at the start of round `rnd` (round 0: singletons)."""
    if rnd == 0:
        return np.arange(lo, hi, dtype=np.int64), indices, level.vwgt
    prefetch(level.labels(rnd), level.cluster_weights(rnd), level.vwgt)
    return np.array(open_ro(level.labels(rnd))[lo:hi]), gather(level.labels(rnd), indices), level.cluster_weights(rnd)


def within_block(b: int, *, level: Level, parts: ScratchPath) -> None:
    """Block b without its edges between parts of the parts map `parts`, and its rows' parts (a V-cycle's clusters
    stay within a part; isolated nodes group per part): what each LP round of the level reads instead of the block."""
    lo, hi = level.span(b)
    indptr, indices, ew = read_block(level, b)
    own_p = np.array(open_ro(parts)[lo:hi])
    rows = np.repeat(np.arange(hi - lo), np.diff(indptr))
    keep = gather(parts, indices) == own_p[rows]
    kept = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[keep], minlength=hi - lo), out=kept[1:])
    write_bucket(level.within(b), [kept, indices[keep], ew[keep] if len(ew) else ew, own_p.astype(np.int64)])


def cluster_block(b: int, quota: int, *, level: Level, rnd: int, seed: int, maxw: np.ndarray, lone: int,
                  within: bool = False) -> int:
    """One LP round over block b (grouping up to `quota` leftover singletons of at most `lone` input nodes, none if
    `quota` is negative; `within`: the round reads the level's within-part blocks, `within_block`, so clusters stay
    within parts): writes its labels for round rnd+1 and its cluster weight changes; returns moves."""
    lo, hi = level.span(b)
    if within:
        indptr, indices, ew, runs = read_bucket(level.within(b), mapped=True)
    else:
        (indptr, indices, ew), runs = read_block(level, b), np.empty(0, dtype=np.int64)
    own, nbr, weights = _round_state(level, rnd, lo, hi, indices)
    cand, own_l, nbr_l = compact_labels(own, np.asarray(nbr), level.nodes)
    before = own_l.copy()
    cw = gather(weights, cand)
    vw = np.array(open_ro(level.vwgt)[lo:hi])
    salt = salt_of(seed, level.index, rnd)
    order = np.arange(hi - lo) if level.index else np.argsort(np.diff(indptr) // DEGREE_BUCKET, kind="stable")
    moves = cluster_round(indptr, local_rows(indices, lo, hi), nbr_l, ew, own_l, cw, vw, maxw,
                          half(salt, lo, hi), salt, quota, cand, order, lone, runs)
    write_range(level.labels(rnd + 1), lo, cand[own_l].astype(index_dtype(level.nodes)))
    changed = np.flatnonzero(own_l != before)
    ids = np.concatenate([cand[before[changed]], cand[own_l[changed]]])
    w = np.concatenate([-vw[changed], vw[changed]])
    order = np.argsort(ids, kind="stable")
    ids, w = ids[order], w[order]
    cuts = np.searchsorted(ids, np.asarray(level.bounds))
    write_buckets([(level.delta(rnd, b, d), [ids[cuts[d]:cuts[d + 1]], w[cuts[d]:cuts[d + 1]]]) for d in level.blocks])
    return int(moves)


def update_weights(d: int, *, level: Level, rnd: int) -> int:
    """Cluster weights of range d after round rnd (start + every block's changes); returns its non-empty clusters."""
    lo, hi = level.span(d)
    start = level.vwgt if rnd == 0 else level.cluster_weights(rnd)
    cw = np.array(open_ro(start)[lo:hi])
    for ids, w in read_buckets([level.delta(rnd, b, d) for b in level.blocks]):
        for c in range(cw.shape[1]):  # float64 sums are exact below 2^53
            cw[:, c] += np.rint(np.bincount(ids - lo, weights=w[:, c], minlength=hi - lo)).astype(np.int64)
    write_range(level.cluster_weights(rnd + 1), lo, cw)
    return int(np.count_nonzero(cw[:, 0]))


def number_clusters(d: int, offset: int, *, level: Level, rnd: int, coarse: Level, parts: ScratchPath | None = None
                    ) -> None:
    """Coarse IDs of the non-empty clusters of range d (in ID order from `offset`) and their weights; with
    `parts` (clusters within parts), the coarse level's inherited parts: a cluster's part is its label node's, as a
    node only ever joins a cluster through a neighbour of its own part."""
    lo, hi = level.span(d)
    cw = np.array(open_ro(level.cluster_weights(rnd))[lo:hi])
    keep = cw[:, 0] > 0
    cmap = np.full(hi - lo, -1, dtype=index_dtype(coarse.nodes))
    cmap[keep] = offset + np.arange(int(keep.sum()))
    write_range(level.cmap, lo, cmap)
    write_range(coarse.vwgt, offset, cw[keep])
    if parts is not None:
        write_range(coarse.inherited, offset, np.array(open_ro(parts)[lo:hi])[keep])


def contract_block(b: int, *, level: Level, rnd: int, coarse: Level) -> int:
    """Coarse edges of fine block b, summed per coarse pair, into one bucket per coarse block; saves the block's
    fine -> coarse map. Round 0's clusters are the nodes themselves (the cluster map then renumbers the level:
    regions.py). Returns the number of coarse entries sent."""
    lo, hi = level.span(b)
    indptr, indices, ew = read_block(level, b)
    prefetch(level.cmap, *([level.labels(rnd)] if rnd else []))
    own = np.arange(lo, hi) if rnd == 0 else np.asarray(open_ro(level.labels(rnd))[lo:hi])
    f2c = gather(level.cmap, own)
    save_array(level.fine_to_coarse(b), f2c)
    cv = gather(level.cmap, indices if rnd == 0 else gather(level.labels(rnd), indices))
    del indices
    bits = key_bits(coarse.nodes)
    keys, w = sum_duplicates(*coarse_keys(indptr, f2c, cv, ew, bits))
    cuts = np.searchsorted(keys, np.asarray(coarse.bounds, dtype=np.int64) << bits)
    write_buckets([(level.contracted(b, d), [keys[cuts[d]:cuts[d + 1]], w[cuts[d]:cuts[d + 1]]])
                   for d in coarse.blocks])
    return len(keys)


def sum_duplicates(keys: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique keys (non-negative) and the summed weights of each (integer sums: the order among equal keys is
    irrelevant, so any sort is as deterministic)."""
    if not len(keys):
        return keys, w
    keys, order = _sort_with_order(keys)
    return sum_sorted(keys, w[order])


def _sort_with_order(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(sorted keys, their positions): when key and position fit one int64 together, by a sort of the two packed
    (numpy's vectorised sort: 2.7x faster than an argsort and its gather on 7M keys), else by an argsort."""
    pos = max(1, (len(keys) - 1).bit_length())
    if int(keys.max()).bit_length() + pos > 63:
        order = np.argsort(keys)
        return keys[order], order
    packed = np.left_shift(keys, pos)
    packed |= np.arange(len(keys))
    packed.sort()
    order = packed & ((1 << pos) - 1)
    packed >>= pos
    return packed, order


def coarse_block(d: int, *, level: Level, coarse: Level) -> int:
    """Coarse block d's CSR (with edge weights) from the pieces every fine block sent; returns its entries."""
    lo, hi = coarse.span(d)
    pieces = list(read_buckets([level.contracted(b, d) for b in level.blocks]))
    keys, w = sum_duplicates(np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces]))
    del pieces
    bits = key_bits(coarse.nodes)
    rows = (keys >> bits) - lo
    indptr = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=hi - lo), out=indptr[1:])
    write_bucket(coarse.block(d), [indptr, keys & ((1 << bits) - 1), w if coarse.weighted else w[:0]])
    return len(keys)

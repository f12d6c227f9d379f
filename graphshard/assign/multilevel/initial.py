"""The coarsest level, partitioned in one task: KaMinPar's strong preset when only node counts are balanced and the
level has at most KAMINPAR_MAX_ENTRIES adjacency entries (through the weighted ParHiP file its binding reads), else
METIS (multi-constraint, edge weights) through metis_capi; the best of `tries` seeds, and of METIS's partition beside
KaMinPar's. Both with node and edge weights, one thread, seeded: the same level gives the same parts."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np

from graphshard.assign.constraints import attainable
from graphshard.assign.kaminpar import write_parhip_weighted
from graphshard.assign.metis_capi import load_metis
from graphshard.assign.multilevel.hashing import pair_key, salt_of
from graphshard.assign.multilevel.store import Level, create, local_folder, open_ro, read_block, write_range

KAMINPAR_PRESET = "strong"
# KaMinPar's strong preset takes ~15 s per million edges on one thread (R-MAT 300k nodes / 6M edges: 91 s at k=4,
# 190 s at k=16), so it partitions the coarsest level only up to this many adjacency entries (1M edges); larger
# levels go to METIS, which keeps the method's wall under METIS's own on the whole graph.
KAMINPAR_MAX_ENTRIES = 2_000_000


def assemble(level: Level, budget: int | None = None, seed: int = 0
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The whole level as one CSR (indptr, indices, edge weights or None) from its blocks; with `budget`, a level of
    more edges keeps a seeded sample of about that many (each edge kept or dropped whichever way it is read), so the
    task holds no more than a level of `budget` edges (edge weights unchanged: every edge is kept alike)."""
    edges = level.entries // 2
    share = None if budget is None or edges <= budget else budget / edges
    blocks = [_sampled(level, b, share, salt_of(seed, level.index, SAMPLE_SALT)) for b in level.blocks]
    indptr = np.zeros(level.nodes + 1, dtype=np.int64)
    np.cumsum(np.concatenate([np.diff(ip) for ip, _, _ in blocks]), out=indptr[1:])
    indices = np.concatenate([ix for _, ix, _ in blocks])
    ew = np.concatenate([w for _, _, w in blocks]) if level.weighted else None
    return indptr, indices, ew


SAMPLE_SALT = 3000  # the sample's salt_of round: apart from the refinement's (rounds, 1000 + round, 2000 + round)


def _sampled(level: Level, b: int, share: float | None, salt: np.uint64) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Block b's CSR, each edge kept with probability `share` (None: all) by a key of its two ends alone."""
    indptr, indices, ew = read_block(level, b)
    if share is None:
        return indptr, indices, ew
    lo, hi = level.span(b)
    local = np.repeat(np.arange(hi - lo), np.diff(indptr))
    rows, cols = (local + lo).astype(np.uint64), indices.astype(np.uint64)
    keep = pair_key(np.minimum(rows, cols), np.maximum(rows, cols), salt) < np.uint64(int(share * (1 << 53)) << 11)
    kept = np.zeros(hi - lo + 1, dtype=np.int64)
    np.cumsum(np.bincount(local[keep], minlength=hi - lo), out=kept[1:])
    return kept, indices[keep], ew[keep] if len(ew) else ew


def kaminpar_parts(indptr: np.ndarray, indices: np.ndarray, vw: np.ndarray, ew: np.ndarray | None, nparts: int,
                   bound: int, seed: int, scratch: Path) -> np.ndarray:
    """KaMinPar (strong preset, 1 thread, seeded) with every part at most `bound` (node weights `vw`)."""
    import kaminpar

    ew = np.ones(len(indices), dtype=np.int64) if ew is None else ew
    with tempfile.TemporaryDirectory(dir=scratch) as tmp:
        path = write_parhip_weighted(Path(tmp) / "coarsest.parhip", indptr, indices, vw, ew)
        graph = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.PARHIP)
    kaminpar.reseed(seed)
    solver = kaminpar.KaMinPar(1, kaminpar.context_by_name(KAMINPAR_PRESET))
    return np.asarray(solver.compute_partition(graph, [int(bound)] * nparts), dtype=np.int64)


def metis_parts(indptr: np.ndarray, indices: np.ndarray, vw: np.ndarray, ew: np.ndarray | None, nparts: int,
                seed: int, ufactor: int, metis_lib: str | None) -> np.ndarray:
    """METIS k-way (multi-constraint, edge weights), seeded, with the balance whole nodes can meet
    (`constraints.attainable`)."""
    vw = vw.reshape(len(indptr) - 1, -1)
    bounds = attainable(vw.sum(axis=0), vw.max(axis=0, initial=0), nparts, ufactor)
    return load_metis(metis_lib).part_kway(indptr, indices, nparts, bounds.columns(vw), seed=seed, ufactor=ufactor,
                                           adjwgt=ew, ubvec=bounds.ubvec)[1]


def partition_coarsest(level: Level, *, nparts: int, balance: list[int], seed: int, ufactor: int, method: str,
                       tries: int, metis_lib: str | None, inherited: bool = False, budget: int | None = None
                       ) -> tuple[int, np.ndarray, str]:
    """Partition the level into its parts map 0: of `tries` seeds (seed, seed+1, ...), with `inherited` the level's
    inherited parts (kept on ties), and, when KaMinPar partitions the level, METIS's partition beside KaMinPar's (on
    the input graph itself, refinement then starts from a cut no larger than METIS's), the one with the least weight
    over the bounds plus one more slack, then the smallest cut (METIS may overfill parts of a graph of few heavy hubs
    far beyond what refinement repairs); a level of more than `budget` edges is partitioned by a sample of them
    (`assemble`); returns (edge cut of what was partitioned, weight per part and column, which partition was kept:
    kaminpar, metis or inherited)."""
    indptr, indices, ew = assemble(level, budget, seed)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[:, balance])
    totals = vw.sum(axis=0)
    bounds = np.maximum(np.floor((1 + ufactor / 1000) * totals / nparts), -(-totals // nparts)).astype(np.int64)
    # KaMinPar's balancer does not end when one node outweighs a part's bound (a hub's in-degree with balance_edges
    # at a large k: R-MAT 50k / 800k, k=96); METIS returns its best partition then
    kaminpar = (method == "kaminpar" and vw.shape[1] == 1 and len(indices) <= KAMINPAR_MAX_ENTRIES
                and vw.max() <= bounds[0])

    def make(s: int) -> np.ndarray:
        if kaminpar:
            return kaminpar_parts(indptr, indices, vw[:, 0], ew, nparts, int(bounds[0]), s, local_folder(level.root))
        return metis_parts(indptr, indices, vw, ew, nparts, s, ufactor, metis_lib)
    found = [("inherited", np.array(open_ro(level.inherited), dtype=np.int64))] if inherited else []
    found += [("kaminpar" if kaminpar else "metis", make(seed + t)) for t in range(tries)]
    if kaminpar:  # METIS's partition is a candidate too: on some graphs it cuts less (BENCHMARKS.md, issue 18)
        found.append(("metis", metis_parts(indptr, indices, vw, ew, nparts, seed, ufactor, metis_lib)))
    loads = [np.stack([np.bincount(parts, weights=vw[:, c], minlength=nparts) for c in range(vw.shape[1])], axis=1)
             for _, parts in found]
    fixable = 2 * bounds + totals // -nparts  # one more slack over the bound: refinement's overweight fix repairs it
    scores = [(int(np.clip(load - fixable, 0, None).sum()), _cut(indptr, indices, ew, parts))
              for load, (_, parts) in zip(loads, found)]
    best = min(range(len(found)), key=scores.__getitem__)
    by, parts = found[best]
    write_range(create(level.parts(0), (level.nodes,), np.int32), 0, parts.astype(np.int32))
    return scores[best][1], np.rint(loads[best]).astype(np.int64), by


def _cut(indptr: np.ndarray, indices: np.ndarray, ew: np.ndarray | None, parts: np.ndarray) -> int:
    """The level's edge cut under `parts` (edge weights summed)."""
    crossing = parts[np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))] != parts[indices]
    return int((ew[crossing].sum() if ew is not None else crossing.sum()) // 2)

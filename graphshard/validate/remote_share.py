"""Estimated remote share of mini-batch input nodes: what DistDGL training fetches from other partitions.

A trainer of partition p draws mini-batches of its own seed nodes, and DGL's `NeighborSampler(fanouts)` samples,
layer by layer from the last fanout to the first, min(fanout, in-degree) in-edges of every frontier node without
replacement; the batch's input nodes are the last frontier (seeds included). Input nodes owned by another
partition are remote fetches. This module draws the same, seeded, with numpy over an in-edge CSR, and reports
remote / input nodes per partition and overall (sums over the drawn batches).
"""

from __future__ import annotations

import numpy as np

BATCH_SIZE = 1000  # seeds per mini-batch, as in DGL's DistDGL GraphSAGE example
BATCHES = 8  # mini-batches drawn per partition


def in_csr(src: np.ndarray, dst: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, sources) of every node's in-edges (duplicates and self-loops kept, as DGL samples them)."""
    order = np.argsort(dst, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=indptr[1:])
    return indptr, src[order]


def sample_layer(indptr: np.ndarray, sources: np.ndarray, frontier: np.ndarray, fanout: int,
                 rng: np.random.Generator) -> np.ndarray:
    """Sources of min(fanout, in-degree) in-edges per frontier node, drawn without replacement."""
    deg = indptr[frontier + 1] - indptr[frontier]
    total = int(deg.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.cumsum(deg) - deg
    seg = np.repeat(np.arange(len(frontier)), deg)
    pos = np.arange(total) - np.repeat(starts, deg) + np.repeat(indptr[frontier], deg)
    order = np.lexsort((rng.random(total), seg))
    rank = np.empty(total, dtype=np.int64)
    rank[order] = np.arange(total) - np.repeat(starts, deg)
    return sources[pos[rank < fanout]]


def batch_inputs(indptr: np.ndarray, sources: np.ndarray, seeds: np.ndarray, fanouts: list[int],
                 rng: np.random.Generator) -> np.ndarray:
    """The input nodes of one mini-batch: the frontier after every layer, seeds included."""
    frontier = np.unique(seeds)
    for fanout in reversed(fanouts):
        frontier = np.union1d(frontier, sample_layer(indptr, sources, frontier, fanout, rng))
    return frontier


def remote_share(indptr: np.ndarray, sources: np.ndarray, parts: np.ndarray, seeds: np.ndarray,
                 fanouts: list[int], seed: int = 0, batch_size: int = BATCH_SIZE, batches: int = BATCHES) -> dict:
    """Remote / input nodes per partition and overall, over `batches` seeded mini-batches of each partition's seed
    nodes (`seeds`: a boolean mask over all nodes; `parts`: each node's partition)."""
    nparts = int(parts.max()) + 1 if len(parts) else 0
    remote, inputs = np.zeros(nparts, dtype=np.int64), np.zeros(nparts, dtype=np.int64)
    for p in range(nparts):
        rng = np.random.default_rng([seed, p])
        own = np.flatnonzero(seeds & (parts == p))
        rng.shuffle(own)
        for i in range(min(batches, -(-len(own) // batch_size))):
            nodes = batch_inputs(indptr, sources, own[i * batch_size:(i + 1) * batch_size], fanouts, rng)
            inputs[p] += len(nodes)
            remote[p] += int(np.count_nonzero(parts[nodes] != p))
    return {"fanouts": list(fanouts), "batch_size": batch_size, "batches_per_part": batches,
            "per_part": [float(r / i) if i else 0.0 for r, i in zip(remote, inputs)],
            "overall": float(remote.sum() / inputs.sum()) if inputs.sum() else 0.0}

"""The coarsest level, partitioned in one task by METIS (multi-constraint, edge weights) through metis_capi."""

from __future__ import annotations

import numpy as np

from graphshard.assign.metis_capi import load_metis
from graphshard.assign.multilevel.store import Level, create, open_ro, read_block


def assemble(level: Level) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The whole level as one CSR (indptr, indices, edge weights or None) from its blocks."""
    blocks = [read_block(level, b) for b in level.blocks]
    indptr = np.zeros(level.nodes + 1, dtype=np.int64)
    np.cumsum(np.concatenate([np.diff(ip) for ip, _, _ in blocks]), out=indptr[1:])
    indices = np.concatenate([ix for _, ix, _ in blocks])
    ew = np.concatenate([w for _, _, w in blocks]) if level.weighted else None
    return indptr, indices, ew


def partition_coarsest(level: Level, *, nparts: int, balance: list[int], seed: int, ufactor: int,
                       metis_lib: str | None) -> tuple[int, np.ndarray]:
    """METIS k-way of the level into its parts map 0; returns (METIS's edge cut, weight per part and column)."""
    indptr, indices, ew = assemble(level)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[:, balance])
    cut, parts = load_metis(metis_lib).part_kway(indptr, indices, nparts, vw, seed=seed, ufactor=ufactor, adjwgt=ew)
    out = np.load(create(level.parts(0), (level.nodes,), np.int32), mmap_mode="r+")
    out[:] = parts
    out.flush()
    load = np.stack([np.bincount(parts, weights=vw[:, c], minlength=nparts) for c in range(vw.shape[1])], axis=1)
    return cut, np.rint(load).astype(np.int64)

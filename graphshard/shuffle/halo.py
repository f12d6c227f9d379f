"""Halo nodes and edges of one partition, with the semantics of DGL's `partition_graph` (C++ GetSubgraphWithHalo).

For `num_hops` h >= 1, DGL's partition p holds:
  * every in-edge of an owned node; its sources outside p form the first frontier F0;
  * for k = 1 .. h-1, the in-edges of F(k-1) whose source is not owned, and their new sources form F(k)
    (a node already owned or in an earlier frontier is not added again);
  * every out-edge from an owned node to a node outside p; those destinations become halo nodes, never expanded.
For h = 0 only owned nodes and the in-edges between them. halo_mode "in_edges" stops after the first item (DGL's
distributed pipeline). Edges of other partitions live in their buckets, so each hop is one scan of the other
partitions' (src, dst) columns; membership tests use mark arrays over the new node-ID space (one byte per node,
far cheaper than np.unique or isin on large arrays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.plan import ShufflePlan
from graphshard.shuffle.scratch import read_bucket


@dataclass
class Edges:
    """Edges in new IDs: source, destination, new edge ID, edge type id."""

    src: np.ndarray
    dst: np.ndarray
    eid: np.ndarray
    etype: np.ndarray

    @classmethod
    def concat(cls, pieces: list["Edges"]) -> "Edges":
        if not pieces:
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty, empty, empty, np.zeros(0, dtype=np.int32))
        return cls(*(np.concatenate([getattr(e, f) for e in pieces]) for f in ("src", "dst", "eid", "etype")))

    def take(self, idx: np.ndarray) -> "Edges":
        return Edges(self.src[idx], self.dst[idx], self.eid[idx], self.etype[idx])


def _other_buckets(plan: ShufflePlan, part: int, edges: IdSpace) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """(edge type, first new edge ID of the bucket, src, dst) of every bucket owned by another partition."""
    for q in range(plan.num_parts):
        if q == part:
            continue
        for et in range(plan.num_etypes):
            bases = edges.block_bases(et)[:, q]
            for chunk in range(plan.num_chunks(et)):
                src, dst = read_bucket(plan.scratch.edge_bucket(et, chunk, q), 2)
                yield et, int(bases[chunk]), src, dst


def find_halo(plan: ShufflePlan, part: int, nodes: IdSpace, edges: IdSpace,
              inner_src: np.ndarray) -> tuple[Edges, np.ndarray]:
    """Halo edges (sorted by new edge ID) and halo nodes (sorted new IDs) of a partition whose owned in-edges
    have sources `inner_src`; `halo_hops` >= 1."""
    lo, hi = (int(x) for x in nodes.part_starts()[part:part + 2])
    hops = plan.options.halo_hops
    seen = np.zeros(nodes.total, dtype=bool)  # frontier nodes found so far (owned nodes are the range [lo, hi))
    seen[inner_src[(inner_src < lo) | (inner_src >= hi)]] = True
    if plan.options.halo_mode == "in_edges" or plan.num_parts == 1:
        return Edges.concat([]), np.flatnonzero(seen)
    frontier, out_dst, passes = seen.copy(), np.zeros(nodes.total, dtype=bool), []
    for k in range(1, max(1, hops - 1) + 1):
        want_out, expand = k == 1, k <= hops - 1
        found, grown = [], np.zeros(nodes.total, dtype=bool)
        for et, base, src, dst in _other_buckets(plan, part, edges):
            own = (src >= lo) & (src < hi)
            take = own.copy() if want_out else np.zeros(len(src), dtype=bool)
            if want_out:
                out_dst[dst[own]] = True
            if expand:
                into_frontier = frontier[dst] & ~own
                take |= into_frontier
                grown[src[into_frontier]] = True
            idx = np.flatnonzero(take)
            found.append(Edges(src[idx], dst[idx], base + idx, np.full(len(idx), et, dtype=np.int32)))
        passes.append(Edges.concat(found))
        if expand:
            frontier = grown & ~seen
            seen |= frontier
    halo_edges = Edges.concat(passes)
    if len(passes) > 1:  # each pass is in new-ID order already; several passes interleave
        halo_edges = halo_edges.take(np.argsort(halo_edges.eid, kind="stable"))
    return halo_edges, np.flatnonzero(seen | out_dst)

"""Halo nodes and edges of one partition, with the semantics of DGL's `partition_graph` (C++ GetSubgraphWithHalo).

For `num_hops` h >= 1, DGL's partition p holds:
  * every in-edge of an owned node; its sources outside p form the first frontier F0;
  * for k = 1 .. h-1, the in-edges of F(k-1) whose source is not owned, and their new sources form F(k)
    (a node already owned or in an earlier frontier is not added again);
  * every out-edge from an owned node to a node outside p; those destinations become halo nodes, never expanded.
h = 0 is for one partition only, which has no halo (`ShuffleOptions.halo_problem`). halo_mode "in_edges" stops
after the first item (DGL's distributed pipeline). The out-edges come from the out-edge buckets the exchange wrote
for this partition; each further hop is one scan of the other partitions' (src, dst) bucket columns. Node sets are
ascending arrays of new IDs (`local_ids.unique_ids`: marks over one window of IDs at a time); a frontier's in-edges
are found owner by owner, with marks over that owner's node range only: nothing in the task is sized by the graph's
node count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from graphshard.formats.buckets import read_bucket
from graphshard.shuffle.ids import IdSpace
from graphshard.shuffle.local_ids import contains, unique_ids
from graphshard.shuffle.plan import ShufflePlan


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


def _out_edges(plan: ShufflePlan, part: int, edges: IdSpace) -> Edges:
    """Edges from owned nodes to other partitions' nodes, from the out-edge buckets, in new-edge-ID order
    (destination owner q, then type, then chunk, then rank: the order of q's buckets)."""
    pieces: list[list[Edges]] = [[] for _ in range(plan.num_parts)]
    for et in range(plan.num_etypes):
        bases = edges.block_bases(et)
        for chunk in range(plan.num_chunks(et)):
            src, dst, rank, counts = read_bucket(plan.scratch.out_bucket(et, chunk, part))
            ends = np.cumsum(counts)
            for q in np.flatnonzero(counts):
                rows = slice(int(ends[q] - counts[q]), int(ends[q]))
                pieces[q].append(Edges(src[rows], dst[rows], bases[chunk, q] + rank[rows],
                                       np.full(int(counts[q]), et, dtype=np.int32)))
    return Edges.concat([e for q_pieces in pieces for e in q_pieces])


def _owner_buckets(plan: ShufflePlan, q: int, edges: IdSpace) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """(edge type, first new edge ID of the bucket, src, dst) of every bucket partition q owns."""
    for et in range(plan.num_etypes):
        bases = edges.block_bases(et)[:, q]
        for chunk in range(plan.num_chunks(et)):
            src, dst = read_bucket(plan.scratch.edge_bucket(et, chunk, q), 2)
            yield et, int(bases[chunk]), src, dst


def _frontier_in_edges(plan: ShufflePlan, part: int, nodes: IdSpace, edges: IdSpace,
                       frontier: np.ndarray) -> tuple[Edges, np.ndarray]:
    """One hop: in-edges of the frontier (ascending new IDs, none owned) whose source is not owned, in new-edge-ID
    order, and their sources. A frontier node's in-edges are in its owner's buckets, so the other partitions are
    scanned one by one with marks over the owner's node range."""
    starts = nodes.part_starts()
    lo, hi = int(starts[part]), int(starts[part + 1])
    found, sources = [], []
    for q in range(plan.num_parts):
        first, last = np.searchsorted(frontier, starts[q:q + 2])
        if q == part or first == last:
            continue
        marks = np.zeros(int(starts[q + 1] - starts[q]), dtype=bool)
        marks[frontier[first:last] - starts[q]] = True
        for et, base, src, dst in _owner_buckets(plan, q, edges):
            idx = np.flatnonzero(marks[dst - starts[q]] & ((src < lo) | (src >= hi)))
            found.append(Edges(src[idx], dst[idx], base + idx, np.full(len(idx), et, dtype=np.int32)))
            sources.append(src[idx])
    return Edges.concat(found), np.concatenate(sources) if sources else np.zeros(0, np.int64)


def _outside(ids: np.ndarray, lo: int, hi: int) -> np.ndarray:
    return ids[(ids < lo) | (ids >= hi)]


def find_halo(plan: ShufflePlan, part: int, nodes: IdSpace, edges: IdSpace,
              inner_src: np.ndarray) -> tuple[Edges, np.ndarray]:
    """Halo edges (sorted by new edge ID) and halo nodes (sorted new IDs) of a partition whose owned in-edges
    have sources `inner_src`; `halo_hops` >= 1."""
    lo, hi = (int(x) for x in nodes.part_starts()[part:part + 2])
    seen = _outside(unique_ids([inner_src]), lo, hi)  # frontier nodes found so far (the owned nodes are [lo, hi))
    if not plan.out_buckets:
        return Edges.concat([]), seen
    found = [_out_edges(plan, part, edges)]
    halo = [seen, found[0].dst]  # out-edge destinations are halo nodes but are never expanded
    frontier = seen
    for _ in range(1, plan.options.halo_hops):
        hop_edges, sources = _frontier_in_edges(plan, part, nodes, edges, frontier)
        found.append(hop_edges)
        frontier = unique_ids([sources])
        frontier = frontier[~contains(seen, frontier)]
        seen = unique_ids([seen, frontier])
        halo.append(frontier)
    if len(found) == 1:
        return found[0], unique_ids(halo)
    merged = Edges.concat(found)  # each piece is in new-ID order; the pieces interleave
    return merged.take(np.argsort(merged.eid, kind="stable")), unique_ids(halo)

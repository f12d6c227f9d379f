"""Per-edge checks of one partition (§5.1-4, 5.7), fed piece by piece so that a worker holds one piece of the edge
arrays at a time, never all of them: each check is a small class with `add(piece)` and `problems()`.

The node arrays (`checks.NodeView`) are held whole; a piece holds `piecewise.PIECE_ROWS` edges' ends, IDs, types and
inner flags, read from `graph.dgl`. Results do not depend on the piece size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

from graphshard.formats.dgl_columns import GraphColumns
from graphshard.storage.windowed import put
from graphshard.validate import hashing
from graphshard.validate.checks import Exactly, Marks, NodeView, expected_ids, repeats
from graphshard.validate.layout import Layout, owners
from graphshard.validate.piecewise import pieces
from graphshard.validate.problems import Hits, Problem, first_values
from graphshard.validate.scratch import SharedArrays


class EndsOutside(Exception):
    """An edge end outside the graph's nodes: the per-edge checks cannot go on for this partition."""


@dataclass
class EdgePiece:
    """Local edges [start, start + n) of a partition."""

    start: int
    src: np.ndarray
    dst: np.ndarray
    eid: np.ndarray
    etype: np.ndarray
    inner_edge: np.ndarray  # bool
    flag: np.ndarray  # inner_edge as stored
    memo: dict = field(default_factory=dict)  # what several checks derive from the piece, computed once

    def derived(self, name: str, make: Callable[[], np.ndarray]) -> np.ndarray:
        if name not in self.memo:
            self.memo[name] = make()
        return self.memo[name]

    def inner_idx(self) -> np.ndarray:
        return self.derived("inner_idx", lambda: np.flatnonzero(self.inner_edge))

    def ends_inner(self, v: NodeView) -> tuple[np.ndarray, np.ndarray]:
        """Per edge: is its source inner, is its destination inner."""
        return (self.derived("src_inner", lambda: v.inner[self.src]),
                self.derived("dst_inner", lambda: v.inner[self.dst]))

    def inner_new_ends(self, v: NodeView) -> tuple[np.ndarray, np.ndarray]:
        """New (homogeneous) IDs of the inner edges' source and destination."""
        idx = self.inner_idx()
        return (self.derived("inner_new_src", lambda: v.nid[self.src[idx]]),
                self.derived("inner_new_dst", lambda: v.nid[self.dst[idx]]))


def edge_pieces(g: GraphColumns, size: int | None = None, ends_only: bool = False) -> Iterator[EdgePiece]:
    """The partition's edges piece by piece; raises EndsOutside on an end outside [0, num_nodes)."""
    etype = g.edata.get("_TYPE")
    typed = etype is not None and etype.shape == (g.num_edges,)
    for a, b in pieces(g.num_edges, size):
        src, dst = g.src.read(a, b), g.dst.read(a, b)
        if min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= g.num_nodes:
            raise EndsOutside()
        if ends_only:
            yield EdgePiece(a, src, dst, None, None, None, None)
            continue
        flag = g.edata["inner_edge"].read(a, b)
        yield EdgePiece(a, src, dst, g.edata["_ID"].read(a, b).astype(np.int64, copy=False),
                        etype.read(a, b).astype(np.int64) if typed else np.zeros(b - a, dtype=np.int64),
                        flag == 1, flag)


def halo_levels(v: NodeView, g: GraphColumns, hops: int) -> np.ndarray:
    """Level of each local node by in-edges from the inner nodes (0 inner, k <= hops, -1 not reached): one pass over
    the edges per level."""
    level = np.where(v.inner, 0, -1)
    for k in range(1, hops + 1):
        for e in edge_pieces(g, ends_only=True):
            reached = e.src[level[e.dst] == k - 1]
            level[reached[level[reached] == -1]] = k
    return level


def _count(acc: np.ndarray, values: np.ndarray, length: int) -> np.ndarray:
    """acc + bincount(values) (non-negative values only), grown when a value is beyond acc."""
    got = np.bincount(values[values >= 0], minlength=length)
    if got.shape[0] > acc.shape[0]:
        acc = np.concatenate([acc, np.zeros(got.shape[0] - acc.shape[0], dtype=acc.dtype)])
    acc[:got.shape[0]] += got
    return acc


class InnerEdges:
    """inner_edge holds 0/1 and == (destination is inner); inner edge _IDs are exactly the edge_map ranges; no edge
    ID twice; non-inner edges are owned by another partition."""

    def __init__(self, v: NodeView, layout: Layout):
        self.v, self.layout = v, layout
        self.bad_flag, self.not_inner_dst, self.unmarked, self.foreign = Hits(), Hits(), Hits(), Hits()
        self.counts = np.zeros(len(layout.etypes), dtype=np.int64)
        self.inner_ids = Exactly(layout.edge_ranges[:, v.part], layout.num_edges)
        self.halo_ids = Marks(layout.num_edges)

    def add(self, e: EdgePiece) -> None:
        self.bad_flag.add(e.start + np.flatnonzero((e.flag != 0) & (e.flag != 1)))
        _, dst_inner = e.ends_inner(self.v)
        wrong = np.flatnonzero(e.inner_edge & ~dst_inner)
        self.not_inner_dst.add(e.start + wrong, e.dst[wrong])
        self.unmarked.add(e.start + np.flatnonzero(~e.inner_edge & dst_inner))
        self.counts = _count(self.counts, e.etype[e.inner_edge], len(self.layout.etypes))
        self.inner_ids.add(e.eid[e.inner_idx()])
        halo = np.flatnonzero(~e.inner_edge)
        self.halo_ids.add(e.eid[halo])
        owner, _ = owners(self.layout.edge_ranges, e.eid[halo])
        self.foreign.add(e.start + halo[(owner == self.v.part) | (owner == -1)])

    def problems(self, g: GraphColumns) -> list[Problem]:
        v, layout, problems = self.v, self.layout, []
        if self.bad_flag:
            problems.append(Problem("reserved-dtypes", f"'inner_edge' holds values other than 0/1 at local IDs "
                                    f"{self.bad_flag.text()}", v.part, v.file))
        if self.not_inner_dst:
            problems.append(Problem("inner-edges", f"edges marked inner whose destination is a halo node: local edge "
                                    f"IDs {self.not_inner_dst.text()} (destinations "
                                    f"{self.not_inner_dst.paired_text()})", v.part, v.file))
        if self.unmarked:
            problems.append(Problem("inner-edges", f"edges into inner nodes not marked inner: local edge IDs "
                                    f"{self.unmarked.text()}", v.part, v.file))
        for t, name in enumerate(layout.etypes):
            s, e = layout.edge_ranges[t, v.part]
            if self.counts[t] != e - s:
                problems.append(Problem("inner-edges", f"type '{name}': {self.counts[t]} inner edges, edge_map range "
                                        f"[{s}, {e}) holds {e - s}", v.part, v.file))
        if not self.inner_ids.exact():
            problems += self._id_mismatch(g)
        # Inner IDs equal to the ranges hold no repeats and non-inner IDs must be owned elsewhere, so repeats can
        # only hide among the non-inner edges.
        dup = np.zeros(0) if self.halo_ids.clean() else repeats(self._eids(g, inner=False), layout.num_edges)
        if dup.size:
            problems.append(Problem("inner-edges", f"edge _ID appears twice in the partition: {first_values(dup)}",
                                    v.part, v.file))
        if self.foreign:
            problems.append(Problem("inner-edges", f"non-inner edges whose _ID is owned by this partition or by none: "
                                    f"local edge IDs {self.foreign.text()}", v.part, v.file))
        return problems

    @staticmethod
    def _eids(g: GraphColumns, inner: bool) -> np.ndarray:
        """All inner (or non-inner) edge _IDs: read again only to word a problem found."""
        return np.concatenate([e.eid[e.inner_edge == inner] for e in edge_pieces(g)] or [np.zeros(0, np.int64)])

    def _id_mismatch(self, g: GraphColumns) -> list[Problem]:
        """How the inner edge _IDs differ from the edge_map ranges (sorts both)."""
        v = self.v
        ids, _ = expected_ids(self.layout.edge_ranges, v.part)
        ids = ids if (ids[1:] >= ids[:-1]).all() else np.sort(ids)
        got = np.sort(self._eids(g, inner=True))
        if got.shape != ids.shape:
            return [Problem("inner-edges", f"{got.size} inner edges, edge_map ranges of this partition hold "
                            f"{ids.size}", v.part, v.file)]
        bad = np.flatnonzero(got != ids)
        return [Problem("inner-edges", f"inner edge _IDs are not the edge_map ranges: found {first_values(got[bad])} "
                        f"where {first_values(ids[bad])} belong", v.part, v.file)] if bad.size else []


class EdgeTypes:
    """Edge _TYPE agrees with edge_map, and with the node types of both ends (canonical types, §5.4)."""

    def __init__(self, v: NodeView, layout: Layout):
        self.v, self.layout, self.ends = v, layout, layout.etype_ends
        self.homogeneous = len(layout.ntypes) == 1 and len(layout.etypes) == 1
        self.not_zero, self.not_map, self.outside, self.mismatch = Hits(), Hits(), Hits(), Hits()
        self.first_mismatch = ""

    def add(self, e: EdgePiece) -> None:
        if self.homogeneous:  # every edge must simply be type 0
            self.not_zero.add(e.start + np.flatnonzero(e.etype != 0))
            return
        _, typ = owners(self.layout.edge_ranges, e.eid)
        self.not_map.add(e.start + np.flatnonzero((typ >= 0) & (typ != e.etype)))
        ok = (e.etype >= 0) & (e.etype < len(self.ends))
        self.outside.add(e.start + np.flatnonzero(~ok))
        et = np.where(ok, e.etype, 0)
        ntype = self.v.ntype
        bad = np.flatnonzero(ok & ((self.ends[et, 0] != ntype[e.src]) | (self.ends[et, 1] != ntype[e.dst])))
        if bad.size and not self.mismatch:
            i = int(bad[0])
            self.first_mismatch = (f"type '{self.layout.etypes[et[i]]}' joins node types {int(self.v.ntype[e.src[i]])}"
                                   f" -> {int(self.v.ntype[e.dst[i]])}")
        self.mismatch.add(e.start + bad)

    def problems(self) -> list[Problem]:
        v, out = self.v, []
        for hits, what in ((self.not_zero, "edge _TYPE is not 0 in a homogeneous graph at local edge IDs "),
                           (self.not_map, "edge _TYPE disagrees with edge_map at local edge IDs "),
                           (self.outside, f"edge _TYPE outside 0..{len(self.ends) - 1} at local edge IDs ")):
            if hits:
                out.append(Problem("edge-types", what + hits.text(), v.part, v.file))
        if self.mismatch:
            out.append(Problem("edge-types", f"edges whose end node types do not match their canonical type at local "
                               f"edge IDs {self.mismatch.text()} (first: {self.first_mismatch})", v.part, v.file))
        return out


class Stats:
    """Quality figures' edge part: inner/halo edges per type, edges per source partition, the cut."""

    def __init__(self, v: NodeView, layout: Layout, node_owner: np.ndarray):
        self.v, self.layout, self.node_owner = v, layout, node_owner
        et = len(layout.etypes)
        self.inner_edges, self.halo_edges = np.zeros(et, np.int64), np.zeros(et, np.int64)
        self.edges_from, self.cut_in = np.zeros(layout.num_parts, np.int64), 0

    def add(self, e: EdgePiece) -> None:
        et = len(self.layout.etypes)
        self.inner_edges += np.bincount(e.etype[e.inner_edge], minlength=et)[:et]
        self.halo_edges += np.bincount(e.etype[~e.inner_edge], minlength=et)[:et]
        src_owner = self.node_owner[e.src[e.inner_idx()]]
        self.edges_from += np.bincount(src_owner[src_owner >= 0], minlength=self.layout.num_parts)
        self.cut_in += int((src_owner != self.v.part).sum())

    def figures(self, file_bytes: dict[str, int]) -> dict:
        v, nt = self.v, len(self.layout.ntypes)
        return {"inner_nodes": np.bincount(v.ntype[v.inner], minlength=nt)[:nt].tolist(),
                "halo_nodes": np.bincount(v.ntype[~v.inner], minlength=nt)[:nt].tolist(),
                "inner_edges": self.inner_edges.tolist(), "halo_edges": self.halo_edges.tolist(),
                "edges_from": self.edges_from.tolist(), "cut_in": self.cut_in, "file_bytes": file_bytes}


class HaloRule:
    """Per halo mode, the edges the rule does not keep, and halo nodes without an edge.

    "full" (partition_graph): inner edges, out-edges of inner nodes, in-edges of halo levels 1..hops-1.
    "in_edges" (DGL's pipeline): inner edges only. The client picks the mode the whole set follows.
    """

    def __init__(self, v: NodeView, hops: int, levels: np.ndarray | None):
        self.v, self.hops, self.levels = v, hops, levels
        self.touched = np.zeros(v.num_nodes, dtype=bool)
        self.bad_full, self.bad_in, self.halo_edges = Hits(), Hits(), 0

    def add(self, e: EdgePiece) -> None:
        src_inner, dst_inner = e.ends_inner(self.v)
        self.touched[e.src[~src_inner]] = True  # only halo nodes can be orphans
        self.touched[e.dst[~dst_inner]] = True
        ok = e.inner_edge | (src_inner & ~dst_inner)
        if self.hops >= 2:
            lv = self.levels[e.dst]
            ok |= (lv >= 1) & (lv < self.hops)
        self.bad_full.add(e.start + np.flatnonzero(~ok))
        halo = np.flatnonzero(~e.inner_edge)
        self.bad_in.add(e.start + halo)
        self.halo_edges += halo.size

    def result(self) -> dict[str, list]:
        orphan = np.flatnonzero(~self.v.inner & ~self.touched)
        return {"full": [self.bad_full.count, self.bad_full.first], "in_edges": [self.bad_in.count, self.bad_in.first],
                "orphans": [int(orphan.size), orphan[:5].tolist()]}


class CutSums:
    """Per other partition q: [count, checksum] of the (edge ID, src, dst) triples of the inner edges whose source q
    owns ("sent": q must hold them as out-edges), and of the out-edges to q's nodes this partition holds ("held")."""

    def __init__(self, v: NodeView, layout: Layout, node_owner: np.ndarray):
        self.v, self.node_owner, self.P = v, node_owner, layout.num_parts
        self.counts = {k: np.zeros(self.P, np.int64) for k in ("sent", "held")}
        self.sums = {k: [0] * self.P for k in ("sent", "held")}

    def add(self, e: EdgePiece) -> None:
        v = self.v
        src_inner, dst_inner = e.ends_inner(v)
        held = np.flatnonzero(src_inner & ~dst_inner)
        inner = e.inner_idx()
        for name, idx, end, ends in (("sent", inner, e.src, e.inner_new_ends(v)),
                                     ("held", held, e.dst, (v.nid[e.src[held]], v.nid[e.dst[held]]))):
            owner = self.node_owner[end[idx]]
            self.counts[name] += np.bincount(owner[owner >= 0], minlength=self.P)[:self.P]
            sums = hashing.pair_sums(e.eid[idx], *ends, owner, self.P)
            self.sums[name] = [hashing.add(a, b) for a, b in zip(self.sums[name], sums)]

    def result(self) -> dict[str, list[list[int]]]:
        return {name: [[int(self.counts[name][q]), self.sums[name][q]] if q != self.v.part else [0, 0]
                       for q in range(self.P)] for name in ("sent", "held")}


class LevelArrays:
    """In-degree of this partition's nodes and the ends of its inner edges (read by hops >= 2 halo checks)."""

    def __init__(self, v: NodeView, layout: Layout, scratch: SharedArrays):
        self.v, self.layout, self.scratch = v, layout, scratch
        self.lo, self.hi = layout.part_span(layout.node_ranges, v.part)
        self.indeg = np.zeros(max(self.hi - self.lo, 0), dtype=np.int64)

    def add(self, e: EdgePiece) -> None:
        v, lo, hi = self.v, self.lo, self.hi
        new_src, inner_dst = e.inner_new_ends(v)
        ok = (inner_dst >= lo) & (inner_dst < hi)
        self.indeg += np.bincount(inner_dst[ok] - lo, minlength=hi - lo)[:hi - lo]
        eid = e.eid[e.inner_idx()]
        ok = (eid >= 0) & (eid < self.layout.num_edges)
        for name, ends in (("edge_src", new_src), ("edge_dst", inner_dst)):
            put(self.scratch.open(name, writable=True), eid[ok], ends[ok])

    def finish(self) -> None:
        self.scratch.open("indeg", writable=True)[self.lo:self.hi] = self.indeg

"""Phase two, one task per partition: checks against what the other partitions wrote in phase one.

- orig-ids: every original ID this partition lists kept its claim (an ID listed twice keeps one writer only).
- halo (§5.7) for num_hops = h >= 2 (DGL `partition_graph` semantics, halo mode "full"): halo nodes of levels
  1..h-1 (level k: new sources of in-edges into level k-1) keep all their in-edges: their in-degree here equals their
  in-degree over all partitions, and each such edge equals its owner's copy. (Out-edges of inner nodes, the 1-hop
  part, are compared by checksums on the client: per_partition.out_edge_problems. In-edges of inner nodes are the inner
  edges themselves, §5.4-5. Halo mode "in_edges", DGL's pipeline, keeps inner edges only.)
"""

from __future__ import annotations

import numpy as np

from graphshard.formats.dgl_columns import GraphColumns
from graphshard.storage.windowed import take
from graphshard.validate import checks
from graphshard.validate.edges import EdgePiece, halo_levels
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS, orig_ids
from graphshard.validate.per_partition import ScanSetup
from graphshard.validate.piecewise import pieces
from graphshard.validate.problems import Hits, Problem, first_values
from graphshard.validate.scratch import SharedArrays


def check_claims(layout: Layout, part: int, setup: ScanSetup) -> list[Problem]:
    """Each original ID this partition lists maps back to it; a loser of a double claim is named here."""
    problems = []
    for names, name, ranges, flag, nodes in ((layout.ntypes, ORIG_NIDS, layout.node_ranges, setup.orig_nids, True),
                                             (layout.etypes, ORIG_EIDS, layout.edge_ranges, setup.orig_eids, False)):
        cols = orig_ids(layout, part, name) if flag else None
        for t, typ in enumerate(names):
            col, (a, b) = (cols or {}).get(typ), ranges[t, part]
            if col is None or col.shape != (b - a,):
                continue
            lost, other = Hits(), set()
            table = setup.scratch.open(f"node_new_{t}" if nodes else f"edge_owner_{t}")
            for lo, hi in pieces(b - a):
                arr = col.read(lo, hi)
                arr = arr[(arr >= 0) & (arr < table.shape[0])] if not nodes else arr
                if nodes:
                    ok = (arr >= 0) & (arr < table.shape[0])
                    bad = ok & (take(table, np.where(ok, arr, 0)) != np.arange(a + lo, a + hi))
                    claim = owners(layout.node_ranges, take(table, arr[bad]))[0]
                else:
                    claim = take(table, arr)
                    bad = claim != part
                    claim = claim[bad]
                lost.add(arr[bad])
                other.update(np.unique(claim).tolist())
            if lost:
                what = "original IDs" if nodes else "original edge IDs"
                problems.append(Problem("orig-ids", f"'{typ}' {what} {lost.text()} are also listed by partition(s) "
                                        f"{first_values(sorted(other))}", part, layout.extra_rel(part, name)))
    return problems


class Levels:
    """hops >= 2: halo nodes of levels 1..h-1 keep all their in-edges, each a copy of its owner's edge."""

    def __init__(self, v: checks.NodeView, g: GraphColumns, layout: Layout, scratch: SharedArrays,
                 broken: frozenset[int]):
        self.v, self.layout, self.scratch = v, layout, scratch
        self.levels = halo_levels(v, g, layout.halo_hops)
        node_owner, _ = owners(layout.node_ranges, v.nid)
        self.known = (node_owner >= 0) & ~np.isin(node_owner, list(broken))
        self.local_in = np.zeros(v.num_nodes, dtype=np.int64)
        self.differ, self.first = 0, ""

    def add(self, e: EdgePiece) -> None:
        v = self.v
        self.local_in += np.bincount(e.dst, minlength=v.num_nodes)
        h = np.flatnonzero(~e.inner_edge & ~v.inner[e.src] & self.known[e.dst])
        eid = e.eid[h]
        ok = (eid >= 0) & (eid < self.layout.num_edges)
        h, eid = h[ok], eid[ok]
        src, dst = take(self.scratch.open("edge_src"), eid), take(self.scratch.open("edge_dst"), eid)
        differ = np.flatnonzero((src != v.nid[e.src[h]]) | (dst != v.nid[e.dst[h]]))
        if differ.size and not self.differ:
            i = int(differ[0])
            self.first = (f"edge _ID {int(eid[i])}: here {int(v.nid[e.src[h[i]]])} -> {int(v.nid[e.dst[h[i]]])}, "
                          f"owner has {int(src[i])} -> {int(dst[i])}")
        self.differ += int(differ.size)

    def problems(self) -> list[Problem]:
        v, hops, problems = self.v, self.layout.halo_hops, []
        keep_in = self.known & (self.levels >= 1) & (self.levels < hops)
        global_in = take(self.scratch.open("indeg"), np.where(keep_in, v.nid, 0))
        bad = np.flatnonzero(keep_in & (self.local_in != global_in))
        if bad.size:
            b = int(bad[0])
            problems.append(Problem("halo-completeness", f"{bad.size} halo nodes of levels 1..{hops - 1} miss in-edges "
                                    f"(first: local ID {b}, _ID {int(v.nid[b])}, level {int(self.levels[b])}: "
                                    f"{int(self.local_in[b])} in-edges here, {int(global_in[b])} in the graph)",
                                    v.part, v.file))
        if self.differ:
            problems.append(Problem("halo-edges", f"{self.differ} halo edges differ from their owner's edge (first: "
                                    f"{self.first})", v.part, v.file))
        return problems

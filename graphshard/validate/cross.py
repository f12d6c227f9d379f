"""Phase two, one task per partition: checks against other partitions' slices of the scratch arrays.

- orig-ids: every original ID this partition lists is claimed by it alone (the scatter of phase one kept one owner).
- halo-edges: every non-inner edge equals its owner's copy (same edge ID, same endpoints).
- halo-completeness (§5.7), DGL `partition_graph` semantics for num_hops = h (halo_mode "full"): levels by in-edges,
  level 0 = inner nodes, level k = new sources of in-edges into level k-1; nodes of levels 0..h-1 keep all their
  in-edges (their in-degree here equals their in-degree over all partitions' inner edges, which edge-identity ties to
  the input), and inner nodes keep all their out-edges to other partitions (compared edge by edge with the cut lists
  the other partitions wrote). halo_mode "in_edges" (DGL's pipeline) keeps only level-0 in-edges.
"""

from __future__ import annotations

import numpy as np

from graphshard.validate import checks
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_NIDS, PartData
from graphshard.validate.problems import Problem, first_values
from graphshard.validate.scratch import Scratch


def check_orig_claims(data: PartData, layout: Layout, scratch: Scratch) -> list[Problem]:
    """An original node ID listed by two partitions keeps one owner in the scatter; the loser is named here."""
    problems = []
    if data.orig_nids is None or not scratch.exists("node_orig"):
        return problems
    for t, name in enumerate(layout.ntypes):
        arr = data.orig_nids.get(name)
        if arr is None:
            continue
        owner_map = scratch.open(f"node_owner_{t}")
        arr = arr[(arr >= 0) & (arr < owner_map.shape[0])]
        owner = np.asarray(owner_map[arr])
        bad = owner != data.part
        if bad.any():
            problems.append(Problem("orig-ids", f"'{name}' original IDs {first_values(arr[bad])} are also listed by "
                                    f"partition(s) {first_values(np.unique(owner[bad]))}", data.part,
                                    layout.extra_rel(data.part, ORIG_NIDS)))
    return problems


def check_halo_edges(v: checks.PartView, layout: Layout, scratch: Scratch, broken: frozenset[int]) -> list[Problem]:
    """Non-inner edges are copies of their owners' inner edges: same endpoints (new IDs) for the same edge ID.
    Edges owned by partitions that could not be read (`broken`, reported already) are not compared."""
    h = np.flatnonzero(~v.inner_edge)
    eid = v.eid[h]
    owner, _ = owners(layout.edge_ranges, eid)
    ok = (owner >= 0) & ~np.isin(owner, list(broken))
    h, eid = h[ok], eid[ok]
    src = np.asarray(scratch.open("edge_src")[eid])
    dst = np.asarray(scratch.open("edge_dst")[eid])
    bad = (src != v.nid[v.src[h]]) | (dst != v.nid[v.dst[h]])
    if not bad.any():
        return []
    i = int(np.flatnonzero(bad)[0])
    return [Problem("halo-edges", f"{int(bad.sum())} halo edges differ from their owner's edge (first: local edge "
                    f"{int(h[i])}, _ID {int(eid[i])}: here {int(v.nid[v.src[h[i]]])} -> {int(v.nid[v.dst[h[i]]])}, "
                    f"owner has {int(src[i])} -> {int(dst[i])})", v.part, v.file)]


def sorted_minus(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Elements of sorted `a` that are not in sorted `b` (np.setdiff1d without its hashing, ~10x faster here)."""
    if not b.size:
        return a
    pos = np.clip(np.searchsorted(b, a), 0, b.size - 1)
    return a[b[pos] != a]


def halo_levels(v: checks.PartView, hops: int) -> np.ndarray:
    """Level of each local node by in-edges from the inner nodes (0 inner, k <= hops, -1 not reached)."""
    level = np.where(v.inner, 0, -1)
    for k in range(1, hops + 1):
        reached = v.src[level[v.dst] == k - 1]
        new = reached[level[reached] == -1]
        level[new] = k
    return level


def check_halo_completeness(v: checks.PartView, layout: Layout, scratch: Scratch, mode: str,
                            broken: frozenset[int]) -> list[Problem]:
    """§5.7 by the rule in the module docstring; `mode` is "full" or "in_edges". Nodes owned by unreadable
    partitions (`broken`) have no known in-degree and are skipped."""
    hops = layout.halo_hops
    if hops < 1:
        return []
    problems = []
    levels = halo_levels(v, hops if mode == "full" else 1)
    keep_in = (levels >= 0) & (levels < (hops if mode == "full" else 1))
    node_owner, _ = owners(layout.node_ranges, v.nid)
    known = (node_owner >= 0) & ~np.isin(node_owner, list(broken))
    local_in = np.bincount(v.dst, minlength=v.num_nodes)
    global_in = np.asarray(scratch.open("indeg")[np.where(known, v.nid, 0)])
    bad = np.flatnonzero(keep_in & known & (local_in != global_in))
    if bad.size:
        b = int(bad[0])
        problems.append(Problem("halo-completeness", f"{bad.size} nodes whose in-edges must all be here are missing "
                                f"some (first: local ID {b}, _ID {int(v.nid[b])}, level {int(levels[b])}: "
                                f"{int(local_in[b])} in-edges here, {int(global_in[b])} in the graph)", v.part, v.file))
    out_edge = v.inner[v.src] & ~v.inner[v.dst]
    if mode == "full":
        got = np.sort(v.eid[out_edge & known[v.dst]])
        files = [scratch.root / "cut" / f"{v.part}_from_{q}.npy" for q in range(layout.num_parts)
                 if q != v.part and q not in broken]
        want = np.sort(np.concatenate([np.load(f) for f in files if f.exists()] or [np.zeros(0, np.int64)]))
        missing, extra = (np.zeros(0, np.int64),) * 2 if np.array_equal(got, want) else \
            (sorted_minus(want, got), sorted_minus(got, want))
        if missing.size:
            e = int(missing[0])
            src, dst = int(scratch.open("edge_src")[e]), int(scratch.open("edge_dst")[e])
            problems.append(Problem("halo-completeness", f"{missing.size} out-edges from inner nodes to other "
                                    f"partitions are missing: halo nodes lose in-edges (first: edge _ID {e}, node "
                                    f"{src} -> halo node {dst}; edge _IDs {first_values(missing)})", v.part, v.file))
        if extra.size:
            problems.append(Problem("halo-completeness", f"{extra.size} out-edges from inner nodes are not edges of "
                                    f"the graph (edge _IDs {first_values(extra)})", v.part, v.file))
    allowed = v.inner_edge | (out_edge if mode == "full" else False) | \
        ((levels[v.dst] >= 1) & (levels[v.dst] < hops) if mode == "full" else False)
    bad = np.flatnonzero(~allowed)
    if bad.size:
        problems.append(Problem("halo-completeness", f"{bad.size} edges kept that the halo rule ({mode}, "
                                f"{hops} hops) does not keep: local edge IDs {first_values(bad)}", v.part, v.file))
    touched = np.zeros(v.num_nodes, dtype=bool)
    touched[v.src] = True
    touched[v.dst] = True
    orphan = np.flatnonzero(~v.inner & ~touched)
    if orphan.size:
        problems.append(Problem("halo-completeness", f"{orphan.size} halo nodes without any edge in the partition "
                                f"(local IDs {first_values(orphan)})", v.part, v.file))
    return problems

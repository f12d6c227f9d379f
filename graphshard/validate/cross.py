"""Phase two, one task per partition: checks against what the other partitions wrote in phase one.

- orig-ids: every original ID this partition lists kept its claim (an ID listed twice keeps one writer only).
- halo (§5.7) for num_hops = h >= 2 (DGL `partition_graph` semantics, halo mode "full"): halo nodes of levels
  1..h-1 (level k: new sources of in-edges into level k-1) keep all their in-edges: their in-degree here equals their
  in-degree over all partitions, and each such edge equals its owner's copy. (Out-edges of inner nodes, the 1-hop
  part, are compared by checksums on the client: scan.out_edge_problems. In-edges of inner nodes are the inner edges
  themselves, §5.4-5. Halo mode "in_edges", DGL's pipeline, keeps inner edges only.)
"""

from __future__ import annotations

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.dgl_binary import load_tensor_dict
from graphshard.validate import checks
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS
from graphshard.validate.problems import Problem, first_values
from graphshard.validate.scan import ScanSetup, halo_levels
from graphshard.validate.scratch import Scratch


def _orig_file(layout: Layout, part: int, name: str) -> dict | None:
    path = layout.extra_file(part, name)
    try:
        return load_tensor_dict(path) if path.exists() else None
    except (GraphshardError, OSError):
        return None  # reported by phase one


def check_claims(layout: Layout, part: int, setup: ScanSetup) -> list[Problem]:
    """Each original ID this partition lists maps back to it; a loser of a double claim is named here."""
    problems = []
    nids = _orig_file(layout, part, ORIG_NIDS) if setup.orig_nids else None
    for t, name in enumerate(layout.ntypes):
        arr, (a, b) = (nids or {}).get(name), layout.node_ranges[t, part]
        if arr is None or arr.shape != (b - a,):
            continue
        new_map = setup.scratch.open(f"node_new_{t}")
        ok = (arr >= 0) & (arr < new_map.shape[0])
        bad = ok & (np.asarray(new_map[np.where(ok, arr, 0)]) != np.arange(a, b))
        if bad.any():
            other = owners(layout.node_ranges, np.asarray(new_map[arr[bad]]))[0]
            problems.append(Problem("orig-ids", f"'{name}' original IDs {first_values(arr[bad])} are also listed by "
                                    f"partition(s) {first_values(np.unique(other))}", part,
                                    layout.extra_rel(part, ORIG_NIDS)))
    eids = _orig_file(layout, part, ORIG_EIDS) if setup.orig_eids else None
    for t, name in enumerate(layout.etypes):
        arr, (a, b) = (eids or {}).get(name), layout.edge_ranges[t, part]
        if arr is None or arr.shape != (b - a,):
            continue
        owner_map = setup.scratch.open(f"edge_owner_{t}")
        arr = arr[(arr >= 0) & (arr < owner_map.shape[0])]
        owner = np.asarray(owner_map[arr])
        if (owner != part).any():
            problems.append(Problem("orig-ids", f"'{name}' original edge IDs {first_values(arr[owner != part])} are "
                                    f"also listed by partition(s) {first_values(np.unique(owner[owner != part]))}",
                                    part, layout.extra_rel(part, ORIG_EIDS)))
    return problems


def check_levels(v: checks.PartView, layout: Layout, scratch: Scratch, broken: frozenset[int]) -> list[Problem]:
    """hops >= 2: halo nodes of levels 1..h-1 keep all their in-edges, each a copy of its owner's edge."""
    problems = []
    hops = layout.halo_hops
    levels = halo_levels(v, hops)
    node_owner, _ = owners(layout.node_ranges, v.nid)
    known = (node_owner >= 0) & ~np.isin(node_owner, list(broken))
    keep_in = known & (levels >= 1) & (levels < hops)
    local_in = np.bincount(v.dst, minlength=v.num_nodes)
    global_in = np.asarray(scratch.open("indeg")[np.where(keep_in, v.nid, 0)])
    bad = np.flatnonzero(keep_in & (local_in != global_in))
    if bad.size:
        b = int(bad[0])
        problems.append(Problem("halo-completeness", f"{bad.size} halo nodes of levels 1..{hops - 1} miss in-edges "
                                f"(first: local ID {b}, _ID {int(v.nid[b])}, level {int(levels[b])}: "
                                f"{int(local_in[b])} in-edges here, {int(global_in[b])} in the graph)", v.part, v.file))
    h = np.flatnonzero(~v.inner_edge & ~v.inner[v.src] & known[v.dst])
    eid = v.eid[h]
    ok = (eid >= 0) & (eid < layout.num_edges)
    h, eid = h[ok], eid[ok]
    src, dst = np.asarray(scratch.open("edge_src")[eid]), np.asarray(scratch.open("edge_dst")[eid])
    differ = np.flatnonzero((src != v.nid[v.src[h]]) | (dst != v.nid[v.dst[h]]))
    if differ.size:
        i = int(differ[0])
        problems.append(Problem("halo-edges", f"{differ.size} halo edges differ from their owner's edge (first: edge "
                                f"_ID {int(eid[i])}: here {int(v.nid[v.src[h[i]]])} -> {int(v.nid[v.dst[h[i]]])}, owner "
                                f"has {int(src[i])} -> {int(dst[i])})", v.part, v.file))
    return problems

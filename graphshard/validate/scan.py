"""Phase one, one task per partition: read its files, run the single-partition checks, measure it, and write the
partition's own slices of the cross-partition scratch arrays (orig-ID owners, in-degrees, edge endpoints, cut lists).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.validate import checks
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS, load_part
from graphshard.validate.scratch import Scratch

TRAINER_FEAT = "trainer_id"


@dataclass(frozen=True)
class ScanSetup:
    """Which scratch arrays phase one fills (decided on the client from the first partition's files)."""

    scratch: Scratch
    orig_nids: bool
    orig_eids: bool


def create_arrays(layout: Layout, scratch: Scratch, orig_nids: bool, orig_eids: bool) -> ScanSetup:
    """Allocate the scratch arrays: sized by the graph, on disk, filled by the partition tasks."""
    scratch.create("indeg", np.int64, layout.num_nodes)
    scratch.create("edge_src", np.int64, layout.num_edges, fill=-1)
    scratch.create("edge_dst", np.int64, layout.num_edges, fill=-1)
    if orig_nids:
        scratch.create("node_orig", np.int64, layout.num_nodes, fill=-1)
        for t, n in enumerate(layout.nodes_per_type()):
            scratch.create(f"node_owner_{t}", np.int32, int(n), fill=-1)
    if orig_eids:
        for t, n in enumerate(layout.edges_per_type()):
            scratch.create(f"edge_owner_{t}", np.int32, int(n), fill=-1)
    (scratch.root / "cut").mkdir(exist_ok=True)
    return ScanSetup(scratch, orig_nids, orig_eids)


def part_stats(v: checks.PartView, layout: Layout, src_owner: np.ndarray, file_bytes: dict[str, int]) -> dict:
    """Quality figures of one partition: nodes/edges per type (inner, halo), cut and source-partition counts;
    `src_owner` is the owning partition of each inner edge's source."""
    nt, et = len(layout.ntypes), len(layout.etypes)
    return {
        "inner_nodes": np.bincount(v.ntype[v.inner], minlength=nt)[:nt].tolist(),
        "halo_nodes": np.bincount(v.ntype[~v.inner], minlength=nt)[:nt].tolist(),
        "inner_edges": np.bincount(v.etype[v.inner_edge], minlength=et)[:et].tolist(),
        "halo_edges": np.bincount(v.etype[~v.inner_edge], minlength=et)[:et].tolist(),
        "edges_from": np.bincount(src_owner[src_owner >= 0], minlength=layout.num_parts).tolist(),
        "cut_in": int((src_owner != v.part).sum()),
        "file_bytes": file_bytes,
    }


def _scatter(v: checks.PartView, layout: Layout, setup: ScanSetup, src_owner: np.ndarray) -> None:
    """Write this partition's slices of the structure arrays; phase-two tasks of other partitions read them."""
    s, p = setup.scratch, v.part
    lo, hi = layout.part_span(layout.node_ranges, p)
    inner_dst = v.nid[v.dst[v.inner_edge]]
    ok = (inner_dst >= lo) & (inner_dst < hi)
    indeg = s.open("indeg", writable=True)
    indeg[lo:hi] = np.bincount(inner_dst[ok] - lo, minlength=hi - lo)[:hi - lo]
    indeg.flush()
    eid = v.eid[v.inner_edge]
    elo, ehi = layout.part_span(layout.edge_ranges, p)
    ok = (eid >= elo) & (eid < ehi)
    in_order = eid.size == ehi - elo and eid.size and eid[0] == elo and (np.diff(eid) == 1).all()
    for name, ends in (("edge_src", v.src), ("edge_dst", v.dst)):
        arr = s.open(name, writable=True)
        if in_order:  # inner edges stored in edge-ID order (graphshard's writer): one sequential slice write
            arr[elo:ehi] = v.nid[ends[v.inner_edge]]
        else:
            arr[eid[ok]] = v.nid[ends[v.inner_edge]][ok]
        arr.flush()
    for q in range(layout.num_parts):
        if q != p:
            s.save(f"cut/{q}_from_{p}", np.sort(eid[src_owner == q]))


def _scatter_orig(layout: Layout, part: int, setup: ScanSetup, orig_nids: dict | None,
                  orig_eids: dict | None) -> None:
    """Claim this partition's original IDs in the owner arrays (and its new->original node slice)."""
    s, p = setup.scratch, part
    if setup.orig_nids and orig_nids is not None:
        node_orig = s.open("node_orig", writable=True)
        for t, name in enumerate(layout.ntypes):
            a, b = layout.node_ranges[t, p]
            arr = orig_nids.get(name)
            if arr is None or arr.shape != (b - a,):
                continue
            node_orig[a:b] = arr
            valid = arr[(arr >= 0) & (arr < s.open(f"node_owner_{t}").shape[0])]
            owner = s.open(f"node_owner_{t}", writable=True)
            owner[valid] = p
            owner.flush()
        node_orig.flush()
    if setup.orig_eids and orig_eids is not None:
        for t, name in enumerate(layout.etypes):
            arr = orig_eids.get(name)
            a, b = layout.edge_ranges[t, p]
            if arr is None or arr.shape != (b - a,):
                continue
            owner = s.open(f"edge_owner_{t}", writable=True)
            owner[arr[(arr >= 0) & (arr < owner.shape[0])]] = p
            owner.flush()


def feature_signature(feats: dict | None) -> dict[str, list] | None:
    """{key: [dtype, trailing shape]} so that partitions can be compared with each other."""
    return None if feats is None else {k: [str(a.dtype), list(a.shape[1:])] for k, a in sorted(feats.items())}


def trainer_range(feats: dict | None) -> dict[str, list[int]]:
    """{key: [min, max]} of trainer_id features, for the §5.8 check."""
    out = {}
    for key, arr in (feats or {}).items():
        if key.rsplit("/", 1)[-1] == TRAINER_FEAT and arr.size:
            out[key] = [int(arr.min()), int(arr.max())]
    return out


def scan_partition(layout: Layout, part: int, setup: ScanSetup) -> dict:
    """Phase one for one partition: problems, stats and scatter; returns a small picklable summary."""
    data = load_part(layout, part)
    problems = list(data.problems)
    graph_file = layout.rel(part, "part_graph")
    summary = {"part": part, "problems": problems, "stats": None, "halo_edge_count": 0,
               "node_feats": feature_signature(data.node_feats), "edge_feats": feature_signature(data.edge_feats),
               "trainer_ids": trainer_range(data.node_feats), "file_bytes": data.file_bytes,
               "has_orig_nids": data.orig_nids is not None, "has_orig_eids": data.orig_eids is not None}
    problems += checks.check_features(data.node_feats, layout, part, layout.rel(part, "node_feats"), nodes=True)
    problems += checks.check_features(data.edge_feats, layout, part, layout.rel(part, "edge_feats"), nodes=False)
    problems += checks.check_orig_ids(data.orig_nids, layout, part, layout.extra_rel(part, ORIG_NIDS), nodes=True)
    problems += checks.check_orig_ids(data.orig_eids, layout, part, layout.extra_rel(part, ORIG_EIDS), nodes=False)
    _scatter_orig(layout, part, setup, data.orig_nids, data.orig_eids)
    if data.graph is None:
        return summary
    problems += checks.check_reserved_fields(data.graph, layout, part, graph_file)
    view = checks.make_view(data.graph, part, graph_file)
    if view is None:
        return summary
    problems += checks.check_flags(view, data.graph)
    problems += checks.check_inner_nodes(view, layout)
    problems += checks.check_halo_nodes(view, layout)
    problems += checks.check_inner_edges(view, layout)
    problems += checks.check_edge_types(view, layout)
    src_owner = owners(layout.node_ranges, view.nid)[0][view.src[view.inner_edge]]
    summary["stats"] = part_stats(view, layout, src_owner, data.file_bytes)
    summary["halo_edge_count"] = int((~view.inner_edge).sum())
    _scatter(view, layout, setup, src_owner)
    return summary

"""Phase one, one task per partition, the only full read of its files: the single-partition checks, the quality
figures, the partition side of the input checksums (and the sampled rows), and this partition's part of the shared
scratch data: original-ID maps and (hops >= 2 only) in-degrees and edge ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.validate import checks, hashing
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS, PartData, load_part
from graphshard.validate.problems import Problem, first_values
from graphshard.validate.sampling import sample_rows
from graphshard.validate.scratch import Scratch

TRAINER_FEAT = "trainer_id"


@dataclass(frozen=True)
class ScanSetup:
    """What phase one computes and which scratch arrays exist (decided on the client before it starts)."""

    scratch: Scratch
    orig_nids: bool
    orig_eids: bool
    with_input: bool  # partition-side checksums and samples (needs orig_nids)
    level_arrays: bool  # in-degrees and edge ends per edge ID: only halo levels >= 1 (hops >= 2) need them
    full: bool = False
    seed: int = 0
    sample_size: int = 1024


def owner_dtype(num_parts: int) -> type:
    """The smallest signed integer type that holds every partition number and -1."""
    return np.int8 if num_parts < 2**7 else np.int16 if num_parts < 2**15 else np.int32


def create_arrays(layout: Layout, scratch: Scratch, orig_nids: bool, orig_eids: bool, with_input: bool,
                  full: bool, seed: int, sample_size: int) -> ScanSetup:
    """Allocate the scratch arrays (on disk, sized by the graph) that the partition tasks fill."""
    if layout.halo_hops >= 2:
        scratch.create("indeg", np.int64, layout.num_nodes)
        scratch.create("edge_src", np.int64, layout.num_edges, fill=-1)
        scratch.create("edge_dst", np.int64, layout.num_edges, fill=-1)
    if orig_nids:
        for t, n in enumerate(layout.nodes_per_type()):
            scratch.create(f"node_new_{t}", np.int64, int(n), fill=-1)
            if with_input:  # the input side finds each row's partition by direct indexing
                scratch.create(f"node_owner_{t}", owner_dtype(layout.num_parts), int(n), fill=-1)
    if orig_eids:
        for t, n in enumerate(layout.edges_per_type()):
            scratch.create(f"edge_owner_{t}", np.int32, int(n), fill=-1)
    return ScanSetup(scratch, orig_nids, orig_eids, with_input and orig_nids, layout.halo_hops >= 2, full, seed,
                     sample_size)


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


def cut_sums(v: checks.PartView, layout: Layout, node_owner: np.ndarray) -> dict[str, list[list[int]]]:
    """Per other partition q: [count, checksum] of the (edge ID, src, dst) triples of the inner edges whose source q
    owns ("sent": q must hold them as out-edges), and of the out-edges to q's nodes this partition holds ("held")."""
    P = layout.num_parts
    out = {}
    for name, mask, end in (("sent", v.inner_edge, v.src), ("held", v.inner[v.src] & ~v.inner[v.dst], v.dst)):
        idx = np.flatnonzero(mask)
        h = hashing.column_hashes(v.eid[idx], [v.nid[v.src[idx]], v.nid[v.dst[idx]]])
        owner = node_owner[end[idx]]
        counts = np.bincount(owner[owner >= 0], minlength=P)
        sums = hashing.sums_by_owner(h, owner, P)
        out[name] = [[int(counts[q]), sums[q]] if q != v.part else [0, 0] for q in range(P)]
    return out


def write_level_arrays(v: checks.PartView, layout: Layout, scratch: Scratch) -> None:
    """In-degree of this partition's nodes and the ends of its inner edges (read by hops >= 2 halo checks)."""
    lo, hi = layout.part_span(layout.node_ranges, v.part)
    inner_dst = v.nid[v.dst[v.inner_edge]]
    ok = (inner_dst >= lo) & (inner_dst < hi)
    scratch.open("indeg", writable=True)[lo:hi] = np.bincount(inner_dst[ok] - lo, minlength=hi - lo)[:hi - lo]
    eid = v.eid[v.inner_edge]
    ok = (eid >= 0) & (eid < layout.num_edges)
    for name, ends in (("edge_src", v.src), ("edge_dst", v.dst)):
        scratch.open(name, writable=True)[eid[ok]] = v.nid[ends[v.inner_edge]][ok]


def write_orig_maps(layout: Layout, data: PartData, setup: ScanSetup) -> None:
    """original -> new node ID per type (with the input: also the owning partition per original node ID), and the
    claiming partition per original edge ID (phase two checks that every claim stuck: a value listed twice keeps
    only one writer)."""
    s, p = setup.scratch, data.part
    if setup.orig_nids and data.orig_nids is not None:
        for t, name in enumerate(layout.ntypes):
            arr, (a, b) = data.orig_nids.get(name), layout.node_ranges[t, p]
            if arr is not None and arr.shape == (b - a,):
                new = s.open(f"node_new_{t}", writable=True)
                ok = (arr >= 0) & (arr < new.shape[0])
                new[arr[ok]] = np.arange(a, b, dtype=np.int64)[ok]
                if setup.with_input:
                    s.open(f"node_owner_{t}", writable=True)[arr[ok]] = p
    if setup.orig_eids and data.orig_eids is not None:
        for t, name in enumerate(layout.etypes):
            arr, (a, b) = data.orig_eids.get(name), layout.edge_ranges[t, p]
            if arr is not None and arr.shape == (b - a,):
                owner = s.open(f"edge_owner_{t}", writable=True)
                owner[arr[(arr >= 0) & (arr < owner.shape[0])]] = p


def halo_rule(v: checks.PartView, layout: Layout) -> dict[str, list]:
    """Per halo mode, [count, first local IDs] of edges the rule does not keep, and of halo nodes without an edge.

    "full" (partition_graph): inner edges, out-edges of inner nodes, in-edges of halo levels 1..hops-1.
    "in_edges" (DGL's pipeline): inner edges only. The client picks the mode the whole set follows.
    """
    hops = layout.halo_hops
    touched = np.zeros(v.num_nodes, dtype=bool)
    touched[v.src] = True
    touched[v.dst] = True
    orphan = np.flatnonzero(~v.inner & ~touched)
    out_edge = v.inner[v.src] & ~v.inner[v.dst]
    levels = halo_levels(v, hops)
    full_ok = v.inner_edge | out_edge | ((levels[v.dst] >= 1) & (levels[v.dst] < hops))
    bad_full, bad_in = np.flatnonzero(~full_ok), np.flatnonzero(~v.inner_edge)
    return {"full": [int(bad_full.size), bad_full[:5].tolist()], "in_edges": [int(bad_in.size), bad_in[:5].tolist()],
            "orphans": [int(orphan.size), orphan[:5].tolist()]}


def halo_levels(v: checks.PartView, hops: int) -> np.ndarray:
    """Level of each local node by in-edges from the inner nodes (0 inner, k <= hops, -1 not reached)."""
    level = np.where(v.inner, 0, -1)
    for k in range(1, hops + 1):
        reached = v.src[level[v.dst] == k - 1]
        level[reached[level[reached] == -1]] = k
    return level


def partition_rows(data: PartData, v: checks.PartView | None, layout: Layout) -> dict:
    """{(kind, key): (original IDs, rows)} this partition holds, in new-ID order: per edge type the (new src, new dst)
    of its inner edges, per feature its rows. What the input checks compare, by checksum or row by row."""
    out = {}
    if v is not None and data.orig_eids is not None:
        for t, et in enumerate(layout.etypes):
            idx = np.flatnonzero(v.inner_edge & (v.etype == t))
            if idx.size and (np.diff(v.eid[idx]) < 0).any():
                idx = idx[np.argsort(v.eid[idx], kind="stable")]
            orig = data.orig_eids.get(et)
            if orig is not None and orig.shape == idx.shape:
                out[("edges", et)] = (orig, np.stack([v.nid[v.src[idx]], v.nid[v.dst[idx]]], axis=1))
    for kind, feats, types, orig_ids in (("node_feat", data.node_feats, layout.ntypes, data.orig_nids),
                                         ("edge_feat", data.edge_feats, layout.etypes, data.orig_eids)):
        for key, arr in (feats or {}).items():
            split = checks.split_feature_key(key, types, types[0])
            orig = (orig_ids or {}).get(split[0]) if split else None
            if orig is not None and orig.shape[0] == arr.shape[0]:
                out[(kind, f"{split[0]}/{split[1]}")] = (orig, arr)
    return out


def input_side(data: PartData, v: checks.PartView | None, layout: Layout, setup: ScanSetup) -> tuple[dict, dict]:
    """Checksums over every row, and the seeded sample of rows (sampled mode), of what this partition holds."""
    sums, samples = {}, {}
    for (kind, key), (orig, rows) in partition_rows(data, v, layout).items():
        sums[(kind, key)] = hashing.hash_sum(orig, rows)
        if not setup.full:
            pick = sample_rows(orig.shape[0], False, setup.seed, data.part, key, setup.sample_size)
            samples[(kind, key)] = (orig[pick], np.ascontiguousarray(rows[pick]))
    return sums, samples


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
    """Phase one for one partition; returns a small picklable summary (problems, figures, checksums, samples)."""
    data = load_part(layout, part)
    problems = list(data.problems)
    graph_file = layout.rel(part, "part_graph")
    summary = {"part": part, "problems": problems, "stats": None, "halo_edge_count": 0, "halo_rule": None,
               "node_feats": feature_signature(data.node_feats), "edge_feats": feature_signature(data.edge_feats),
               "trainer_ids": trainer_range(data.node_feats), "file_bytes": data.file_bytes,
               "has_orig_nids": data.orig_nids is not None, "has_orig_eids": data.orig_eids is not None,
               "sums": {}, "samples": {}, "cut": None}
    problems += checks.check_features(data.node_feats, layout, part, layout.rel(part, "node_feats"), nodes=True)
    problems += checks.check_features(data.edge_feats, layout, part, layout.rel(part, "edge_feats"), nodes=False)
    problems += checks.check_orig_ids(data.orig_nids, layout, part, layout.extra_rel(part, ORIG_NIDS), nodes=True)
    problems += checks.check_orig_ids(data.orig_eids, layout, part, layout.extra_rel(part, ORIG_EIDS), nodes=False)
    write_orig_maps(layout, data, setup)
    view = None
    if data.graph is not None:
        problems += checks.check_reserved_fields(data.graph, layout, part, graph_file)
        view = checks.make_view(data.graph, part, graph_file)
    if view is not None:
        problems += checks.check_flags(view, data.graph)
        problems += checks.check_inner_nodes(view, layout)
        problems += checks.check_halo_nodes(view, layout)
        problems += checks.check_inner_edges(view, layout)
        problems += checks.check_edge_types(view, layout)
        node_owner = owners(layout.node_ranges, view.nid)[0]
        summary["stats"] = part_stats(view, layout, node_owner[view.src[view.inner_edge]], data.file_bytes)
        summary["halo_edge_count"] = int((~view.inner_edge).sum())
        if layout.halo_hops >= 1:
            summary["halo_rule"] = halo_rule(view, layout)
            summary["cut"] = cut_sums(view, layout, node_owner)
        if setup.level_arrays:
            write_level_arrays(view, layout, setup.scratch)
    if setup.with_input:
        summary["sums"], summary["samples"] = input_side(data, view, layout, setup)
    return summary


def out_edge_problems(layout: Layout, summaries: list[dict]) -> list[Problem]:
    """Halo mode "full": partition p holds, as out-edges to q's nodes, exactly the edges q owns whose source p owns:
    same count and same checksum of (edge ID, src, dst) triples, which proves the halo edges complete and equal to
    their owners' copies (a difference goes unnoticed with probability about 2**-64)."""
    cut = {s["part"]: s["cut"] for s in summaries if s["cut"] is not None}
    problems = []
    for p, mine in sorted(cut.items()):
        for q, theirs in sorted(cut.items()):
            if q == p:
                continue
            (held, held_sum), (sent, sent_sum) = mine["held"][q], theirs["sent"][p]
            file = layout.rel(p, "part_graph")
            if held != sent:
                what = "missing: halo nodes lose in-edges" if held < sent else "extra"
                problems.append(Problem("halo-completeness", f"holds {held} out-edges from inner nodes to partition "
                                        f"{q}'s nodes, partition {q} owns {sent} edges whose source is here: "
                                        f"{abs(sent - held)} {what}", p, file))
            elif held_sum != sent_sum:
                problems.append(Problem("halo-edges", f"the {held} out-edges to partition {q}'s nodes differ from "
                                        f"partition {q}'s copies (checksum of edge IDs and ends)", p, file))
    return problems


def halo_rule_problems(layout: Layout, summaries: list[dict], mode: str) -> list[Problem]:
    """Edges the chosen halo rule does not keep, and halo nodes without any edge, per partition."""
    problems = out_edge_problems(layout, summaries) if mode == "full" else []
    for s in summaries:
        rule, p = s["halo_rule"], s["part"]
        if rule is None:
            continue
        count, first = rule[mode]
        if count:
            problems.append(Problem("halo-completeness", f"{count} edges kept that the halo rule ({mode}, "
                                    f"{layout.halo_hops} hops) does not keep: local edge IDs {first_values(first)}",
                                    p, layout.rel(p, "part_graph")))
        count, first = rule["orphans"]
        if count:
            problems.append(Problem("halo-completeness", f"{count} halo nodes without any edge in the partition "
                                    f"(local IDs {first_values(first)})", p, layout.rel(p, "part_graph")))
    return problems

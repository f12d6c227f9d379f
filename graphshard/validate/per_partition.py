"""Phase zero, one small task per partition: its original node ID maps (`node_maps`). Phase one, one task per
partition, one pass over its files (edges piece by piece: validate/edges.py): the single-partition checks, the
quality figures, the partition side of the input checksums (and the sampled rows), and this partition's part of the
shared scratch data: original edge ID claims and (hops >= 2 only) in-degrees and edge ends.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.formats.assignment import TRAINER_FEAT
from graphshard.formats.dgl_columns import Column
from graphshard.formats.set_digests import FileEntry
from graphshard.storage.windowed import put
from graphshard.validate import checks, edges, file_digests, piecewise
from graphshard.validate.layout import Layout, owners
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS, PartData, load_part, orig_ids
from graphshard.validate.piecewise import PIECE_ROWS, pieces
from graphshard.validate.problems import Problem, first_values
from graphshard.validate.rows import EdgeRows, SumsAndSamples, feature_rows
from graphshard.validate.scratch import SharedArrays


@dataclass(frozen=True)
class ScanSetup:
    """What phase one computes and which scratch arrays exist (decided on the client before it starts)."""

    scratch: SharedArrays
    orig_nids: bool
    orig_eids: bool
    with_input: bool  # partition-side checksums and samples (needs orig_nids)
    level_arrays: bool  # in-degrees and edge ends per edge ID: only halo levels >= 1 (hops >= 2) need them
    full: bool = False
    seed: int = 0
    sample_size: int = 1024
    piece_rows: int = PIECE_ROWS  # edges (or rows of as many bytes) held at a time, decided on the client
    listed: dict[str, FileEntry] | None = None  # the set's digests file, when it has one (the `digests` check)


def owner_dtype(num_parts: int) -> type:
    """The smallest signed integer type that holds every partition number and -1."""
    return np.int8 if num_parts < 2**7 else np.int16 if num_parts < 2**15 else np.int32


def create_arrays(layout: Layout, scratch: SharedArrays, orig_nids: bool, orig_eids: bool, with_input: bool,
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
            scratch.create(f"edge_owner_{t}", owner_dtype(layout.num_parts), int(n), fill=-1)
    return ScanSetup(scratch, orig_nids, orig_eids, with_input and orig_nids, layout.halo_hops >= 2, full, seed,
                     sample_size, piecewise.PIECE_ROWS)


def write_orig_maps(layout: Layout, part: int, orig: dict[str, Column] | None, nodes: bool,
                    setup: ScanSetup) -> None:
    """Node IDs: original -> new ID per type, and with the input the owning partition per original ID (phase zero:
    the input checksums read both). Edge IDs: the claiming partition per original edge ID (phase one). Phase two
    checks that every claim stuck: a value listed twice keeps only one writer. Piece by piece."""
    names, ranges, flag = ((layout.ntypes, layout.node_ranges, setup.orig_nids) if nodes else
                           (layout.etypes, layout.edge_ranges, setup.orig_eids))
    if not flag or orig is None:
        return
    s = setup.scratch
    for t, name in enumerate(names):
        col, (a, b) = orig.get(name), ranges[t, part]
        if col is None or col.shape != (b - a,):
            continue
        for lo, hi in pieces(b - a):
            arr = col.read(lo, hi)
            if nodes:
                new = s.open(f"node_new_{t}", writable=True)
                ok = (arr >= 0) & (arr < new.shape[0])
                put(new, arr[ok], np.arange(a + lo, a + hi, dtype=np.int64)[ok])
                if setup.with_input:
                    put(s.open(f"node_owner_{t}", writable=True), arr[ok], part)
            else:
                owner = s.open(f"edge_owner_{t}", writable=True)
                put(owner, arr[(arr >= 0) & (arr < owner.shape[0])], part)
            del arr


def node_maps(layout: Layout, part: int, setup: ScanSetup) -> None:
    """Phase zero for one partition (before the input checksums, beside phase one): its original node ID maps."""
    piecewise.set_piece_rows(setup.piece_rows)
    write_orig_maps(layout, part, orig_ids(layout, part, ORIG_NIDS), True, setup)


def feature_signature(feats: dict[str, Column] | None) -> dict[str, list] | None:
    """{key: [dtype, trailing shape]} so that partitions can be compared with each other."""
    return None if feats is None else {k: [str(a.dtype), list(a.shape[1:])] for k, a in sorted(feats.items())}


def trainer_range(feats: dict[str, Column] | None) -> dict[str, list[int]]:
    """{key: [min, max]} of trainer_id features, for the §5.8 check."""
    out = {}
    for key, col in (feats or {}).items():
        if key.rsplit("/", 1)[-1] == TRAINER_FEAT and col.rows and col.ndim:
            arr = col.read()
            out[key] = [int(arr.min()), int(arr.max())]
    return out


def _edge_pass(data: PartData, v: checks.NodeView, layout: Layout, setup: ScanSetup, summary: dict,
               sink: SumsAndSamples | None) -> list[Problem]:
    """Every per-edge check of phase one in one pass over the edges, piece by piece."""
    g, hops = data.graph, layout.halo_hops
    node_owner = owners(layout.node_ranges, v.nid)[0].astype(owner_dtype(layout.num_parts))  # small: fast gathers
    inner, types, stats = edges.InnerEdges(v, layout), edges.EdgeTypes(v, layout), edges.Stats(v, layout, node_owner)
    rule = edges.HaloRule(v, hops, edges.halo_levels(v, g, hops) if hops >= 2 else None) if hops >= 1 else None
    cut = edges.CutSums(v, layout, node_owner) if hops >= 1 else None
    levels = edges.LevelArrays(v, layout, setup.scratch) if setup.level_arrays else None
    rows = EdgeRows(data, v, layout, sink) if sink is not None and data.orig_eids is not None else None
    tallies = [t for t in (inner, types, stats, rule, cut, levels, rows) if t is not None]
    for piece in edges.edge_pieces(g):
        for tally in tallies:
            tally.add(piece)
    summary["stats"] = stats.figures(data.file_bytes)
    summary["halo_edge_count"] = int(stats.halo_edges.sum())
    if hops >= 1:
        summary["halo_rule"], summary["cut"] = rule.result(), cut.result()
    if levels is not None:
        levels.finish()
    return inner.problems(g) + types.problems()


def scan_partition(layout: Layout, part: int, setup: ScanSetup) -> dict:
    """Phase one for one partition; returns a small picklable summary (problems, figures, checksums, samples)."""
    piecewise.set_piece_rows(setup.piece_rows)
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
    write_orig_maps(layout, part, data.orig_eids, False, setup)
    sink = SumsAndSamples(part, setup.full, setup.seed, setup.sample_size) if setup.with_input else None
    if data.graph is not None:
        problems += checks.check_reserved_fields(data.graph, layout, part, graph_file)
        view = checks.make_view(data.graph, part, graph_file)
        if view is not None:
            problems += checks.check_node_flags(view)
            problems += checks.check_inner_nodes(view, layout)
            problems += checks.check_halo_nodes(view, layout)
            try:
                problems += _edge_pass(data, view, layout, setup, summary, sink)
            except edges.EndsOutside:
                problems.append(Problem("inner-edges", f"edge endpoints outside the graph's {data.graph.num_nodes} "
                                        "nodes", part, graph_file))
                summary.update(stats=None, halo_edge_count=0, halo_rule=None, cut=None)
                sink = SumsAndSamples(part, setup.full, setup.seed, setup.sample_size) if sink else None
    if setup.listed is not None:
        problems += file_digests.part_problems(layout, part, setup.listed)
    if sink is not None:
        feature_rows(data, layout, sink)
        summary["sums"], summary["samples"] = sink.sums, sink.samples()
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

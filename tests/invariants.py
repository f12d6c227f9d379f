"""A test oracle: checks a partition set against its input graph and assignment, invariant by invariant (reference
formats.md §5), with expectations computed here from scratch on the whole (small) graph.

Independent of graphshard.shuffle on purpose: new IDs, ownership and DGL's halo are recomputed with plain numpy
from their definitions (reference §3 and DGL's GetSubgraphWithHalo), then compared with what was written.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.formats.assignment import read_meta, read_parts
from graphshard.formats.chunked import ChunkedGraph, load_metadata
from graphshard.formats.dgl_binary import load_graph, load_tensor_dict
from graphshard.formats.readers import read_edge_chunk, read_rows

NODE_DTYPES = {"_ID": np.int64, "inner_node": np.uint8, "part_id": np.int64, "_TYPE": np.int32}
EDGE_DTYPES = {"_ID": np.int64, "inner_edge": np.uint8, "_TYPE": np.int32}


@dataclass
class Expected:
    """The input graph in the new ID space, as the definitions say it must be."""

    graph: ChunkedGraph
    num_parts: int
    node_new: list[np.ndarray]      # per ntype: new homogeneous ID of each original node
    node_starts: np.ndarray         # (P, T) first new ID of each (partition, type) group
    node_counts: np.ndarray         # (P, T)
    edge_new: list[np.ndarray]      # per etype: new homogeneous ID of each original edge
    edge_starts: np.ndarray
    edge_counts: np.ndarray
    src: np.ndarray                 # all edges, indexed by new edge ID: new src, new dst, etype
    dst: np.ndarray
    etype: np.ndarray
    node_owner: np.ndarray          # indexed by new node ID
    node_type: np.ndarray
    node_orig: np.ndarray           # per-type original ID, indexed by new node ID
    edge_orig: np.ndarray
    trainer: np.ndarray | None = None  # trainer id, indexed by new node ID (several trainers per machine)


def _layout(owner_per_type: list[np.ndarray], num_parts: int) -> tuple[list[np.ndarray], np.ndarray, np.ndarray]:
    """New IDs by definition: partition-major, then type, then original order."""
    counts = np.array([[np.sum(o == p) for o in owner_per_type] for p in range(num_parts)], dtype=np.int64)
    starts = (np.cumsum(counts.ravel()) - counts.ravel()).reshape(counts.shape)
    new = []
    for t, owner in enumerate(owner_per_type):
        ids = np.empty(len(owner), dtype=np.int64)
        for p in range(num_parts):
            members = np.flatnonzero(owner == p)
            ids[members] = starts[p, t] + np.arange(len(members))
        new.append(ids)
    return new, starts, counts


def expected(metadata: Path, assignment_dir: Path) -> Expected:
    g = load_metadata(metadata)
    meta = read_meta(assignment_dir)
    num_parts, trainers = meta.num_parts, meta.num_trainers_per_machine
    parts = [read_parts(assignment_dir, nt, g.num_nodes(nt), num_parts) for nt in g.node_type]
    node_new, node_starts, node_counts = _layout(parts, num_parts)
    ends = []
    for et in g.edge_type:
        pieces = [read_edge_chunk(g, et, c) for c in range(len(g.edges[et].data))]
        ends.append((np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])))
    edge_owner = [parts[g.ntype_id(g.canonical(et).dst)][dst] for et, (_, dst) in zip(g.edge_type, ends)]
    edge_new, edge_starts, edge_counts = _layout(edge_owner, num_parts)
    total_e, total_n = g.total_edges, g.total_nodes
    src, dst, etype, edge_orig = (np.empty(total_e, np.int64) for _ in range(4))
    for i, (et, (s, d)) in enumerate(zip(g.edge_type, ends)):
        can = g.canonical(et)
        src[edge_new[i]] = node_new[g.ntype_id(can.src)][s]
        dst[edge_new[i]] = node_new[g.ntype_id(can.dst)][d]
        etype[edge_new[i]] = i
        edge_orig[edge_new[i]] = np.arange(len(s))
    node_owner, node_type, node_orig, trainer = (np.empty(total_n, np.int64) for _ in range(4))
    for t, ids in enumerate(node_new):
        node_owner[ids], node_type[ids], node_orig[ids] = parts[t], t, np.arange(len(ids))
        if trainers > 1:
            trainer[ids] = read_parts(Path(assignment_dir) / "trainer_ids", g.node_type[t], len(ids),
                                      num_parts * trainers)
    return Expected(g, num_parts, node_new, node_starts, node_counts, edge_new, edge_starts, edge_counts,
                    src, dst, etype, node_owner, node_type, node_orig, edge_orig, trainer if trainers > 1 else None)


def dgl_halo(ex: Expected, part: int, hops: int, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """(edge IDs, node IDs) of partition `part` as DGL's GetSubgraphWithHalo selects them, in sorted order."""
    inner = ex.node_owner == part
    own_in = inner[ex.dst]
    if hops == 0:
        return np.flatnonzero(own_in & inner[ex.src]), np.flatnonzero(inner)
    edges = set(np.flatnonzero(own_in).tolist())
    frontier = set(ex.src[own_in & ~inner[ex.src]].tolist())
    nodes = set(np.flatnonzero(inner).tolist()) | frontier
    if mode == "full":
        for _ in range(1, hops):
            hit = np.isin(ex.dst, list(frontier)) & ~inner[ex.src]
            edges |= set(np.flatnonzero(hit).tolist())
            frontier = set(ex.src[hit].tolist()) - nodes
            nodes |= frontier
        out = inner[ex.src] & ~inner[ex.dst]
        edges |= set(np.flatnonzero(out).tolist())
        nodes |= set(ex.dst[out].tolist())
    return np.array(sorted(edges), dtype=np.int64), np.array(sorted(nodes), dtype=np.int64)


def _assert_range_layout(name: str, starts: np.ndarray, counts: np.ndarray, written: dict, types: list[str]) -> None:
    """Written ranges equal the (partition, type) groups; partition-major, type-minor, gap-free."""
    cursor = 0
    for p in range(starts.shape[0]):
        for t, tname in enumerate(types):
            lo, hi = written[tname][p]
            assert (lo, hi) == (starts[p, t], starts[p, t] + counts[p, t]), f"{name}[{tname}][{p}] = {[lo, hi]}"
            assert lo == cursor, f"{name}: gap or overlap before {tname} in partition {p}"
            cursor = hi


def check_partitions(config_path: Path, metadata: Path, assignment_dir: Path, halo_mode: str = "full") -> dict:
    """Assert every invariant of reference §5 for a partition set; returns a few totals for the caller."""
    ex = expected(Path(metadata), Path(assignment_dir))
    g = ex.graph
    config = json.loads(Path(config_path).read_text())
    base = Path(config_path).parent
    hops = config["halo_hops"]
    assert config["graph_name"] == g.graph_name
    assert config["num_parts"] == ex.num_parts
    assert config["num_nodes"] == g.total_nodes and config["num_edges"] == g.total_edges
    assert config["ntypes"] == {nt: i for i, nt in enumerate(g.node_type)}
    assert config["etypes"] == {et: i for i, et in enumerate(g.edge_type)}
    # §5.3: ranges partition-major, type-minor, gap-free, non-overlapping, equal to the definition
    _assert_range_layout("node_map", ex.node_starts, ex.node_counts, config["node_map"], g.node_type)
    _assert_range_layout("edge_map", ex.edge_starts, ex.edge_counts, config["edge_map"], g.edge_type)

    seen_nodes, seen_edges = [], []
    orig_nids = {nt: [] for nt in g.node_type}
    orig_eids = {et: [] for et in g.edge_type}
    totals = {"halo_nodes": 0, "halo_edges": 0}
    for p in range(ex.num_parts):
        files = config[f"part-{p}"]
        local = load_graph(base / files["part_graph"])
        nd, ed = local.ndata, local.edata
        # DGL 2.1's partition_graph: _TYPE for heterographs or one partition, part_id unless one partition; its
        # distributed pipeline (in_edges): _TYPE always, part_id never
        one = ex.num_parts == 1 and halo_mode == "full"
        typed = len(g.node_type) > 1 or len(g.edge_type) > 1 or halo_mode == "in_edges" or one
        with_part_id = halo_mode == "full" and not one
        assert ("_TYPE" in nd, "_TYPE" in ed, "part_id" in nd) == (typed, typed, with_part_id), f"part {p}: fields"
        nd = {"_TYPE": np.zeros(local.num_nodes, np.int32), "part_id": ex.node_owner[nd["_ID"]], **nd}
        ed = {"_TYPE": np.zeros(local.num_edges, np.int32), **ed}
        # §5.1 reserved fields with exact dtypes
        for key, dtype in NODE_DTYPES.items():
            assert nd[key].dtype == dtype, f"part {p} ndata[{key}] is {nd[key].dtype}, expected {np.dtype(dtype)}"
        for key, dtype in EDGE_DTYPES.items():
            assert ed[key].dtype == dtype, f"part {p} edata[{key}] is {ed[key].dtype}, expected {np.dtype(dtype)}"
        nid, eid = nd["_ID"], ed["_ID"]
        n_inner = int(nd["inner_node"].sum())
        lo, hi = int(ex.node_starts[p, 0]), int(ex.node_starts[p, 0] + ex.node_counts[p].sum())
        # §5.3 local IDs 0..n_inner-1 are the inner nodes in ID order, = the partition's range; halo after, sorted
        assert np.array_equal(nd["inner_node"], np.r_[np.ones(n_inner), np.zeros(local.num_nodes - n_inner)])
        assert np.array_equal(nid[:n_inner], np.arange(lo, hi)), f"part {p}: inner node IDs are not its range"
        halo_nodes = nid[n_inner:]
        assert np.all(np.diff(halo_nodes) > 0), f"part {p}: halo nodes not sorted by new ID"
        assert np.array_equal(nd["part_id"], ex.node_owner[nid]), f"part {p}: part_id wrong"
        assert np.array_equal(nd["_TYPE"], ex.node_type[nid]), f"part {p}: node _TYPE wrong"
        # edges: inner first (new-ID order), then halo edges (new-ID order); each local edge is the input edge
        n_inner_e = int(ed["inner_edge"].sum())
        assert np.array_equal(ed["inner_edge"], np.r_[np.ones(n_inner_e), np.zeros(local.num_edges - n_inner_e)])
        assert np.all(np.diff(eid[:n_inner_e]) > 0) and np.all(np.diff(eid[n_inner_e:]) > 0), f"part {p}: edge order"
        assert np.array_equal(nid[local.src], ex.src[eid]), f"part {p}: edge sources differ from the input"
        assert np.array_equal(nid[local.dst], ex.dst[eid]), f"part {p}: edge destinations differ from the input"
        assert np.array_equal(ed["_TYPE"], ex.etype[eid]), f"part {p}: edge _TYPE wrong"
        # §5.4 every inner edge's destination is inner; endpoint types match the canonical edge type
        assert np.all(local.dst[:n_inner_e] < n_inner), f"part {p}: an inner edge has a halo destination"
        for i, et in enumerate(g.edge_type):
            can, mask = g.canonical(et), ed["_TYPE"] == i
            assert np.all(nd["_TYPE"][local.src[mask]] == g.ntype_id(can.src)), f"part {p}: {et} source type"
            assert np.all(nd["_TYPE"][local.dst[mask]] == g.ntype_id(can.dst)), f"part {p}: {et} destination type"
        # DGL's halo exactly (hops 0, 1, >= 2), which implies §5.7 halo completeness; checked directly below too
        want_edges, want_nodes = dgl_halo(ex, p, hops, halo_mode)
        assert np.array_equal(np.sort(eid), want_edges), f"part {p}: edge set differs from DGL's (hops={hops})"
        want_halo = want_nodes[(want_nodes < lo) | (want_nodes >= hi)]
        assert np.array_equal(nid, np.r_[np.arange(lo, hi), want_halo]), f"part {p}: nodes differ from DGL's"
        if hops >= 1:
            _check_in_neighbourhoods(ex, p, nid, local, n_inner, hops, halo_mode)
        seen_nodes.append(nid[:n_inner])
        inner_e = eid[:n_inner_e]
        seen_edges.append(inner_e)
        totals["halo_nodes"] += local.num_nodes - n_inner
        totals["halo_edges"] += local.num_edges - n_inner_e
        # §5.3 for edges: the inner edges of (type, partition) are that edge_map range (hops 0 drops cut edges)
        for i, et in enumerate(g.edge_type):
            rng = np.arange(*config["edge_map"][et][p])
            mine = inner_e[ed["_TYPE"][:n_inner_e] == i]
            if hops == 0:
                assert np.all(np.isin(mine, rng)), f"part {p}: {et} inner edges outside edge_map"
            else:
                assert np.array_equal(mine, rng), f"part {p}: {et} inner edges are not edge_map's range"
        _check_features(ex, p, base / files["node_feats"], base / files["edge_feats"], config)
        _collect_orig(base / files["part_graph"], orig_nids, orig_eids)

    # §5.2 inner nodes/edges add up per type, no ID twice
    all_nodes = np.concatenate(seen_nodes)
    assert len(all_nodes) == g.total_nodes and len(np.unique(all_nodes)) == g.total_nodes
    all_edges = np.concatenate(seen_edges)
    assert len(np.unique(all_edges)) == len(all_edges)
    if hops >= 1:
        assert len(all_edges) == g.total_edges
    # §5.5 original-ID files: permutations, and equal to the original IDs of the new IDs
    _check_orig_files(ex, config, orig_nids, orig_eids)
    return totals


def _check_in_neighbourhoods(ex: Expected, p: int, nid: np.ndarray, local, n_inner: int, hops: int,
                             mode: str) -> None:
    """§5.7: every inner node (and, for 2+ hops in full mode, every first-hop halo node) sees all its in-edges."""
    owner_nodes = list(nid[:n_inner])
    if hops >= 2 and mode == "full":
        owner_nodes += list(np.unique(ex.src[np.isin(ex.dst, nid[:n_inner])]))
    complete = np.unique(np.array(owner_nodes, dtype=np.int64))
    want = np.flatnonzero(np.isin(ex.dst, complete))
    have = local.edata["_ID"][np.isin(nid[local.dst], complete)]
    assert np.array_equal(np.sort(have), want), f"part {p}: in-neighbourhoods incomplete"
    # a neighbour-feature sum gives the input's result: sum of in-neighbour new IDs per node
    feat = np.arange(len(ex.node_owner), dtype=np.float64)
    want_sum = np.bincount(ex.dst, weights=feat[ex.src], minlength=len(feat))[complete]
    have_sum = np.bincount(nid[local.dst], weights=feat[nid[local.src]], minlength=len(feat))[complete]
    assert np.allclose(have_sum, want_sum)


def _check_features(ex: Expected, p: int, node_file: Path, edge_file: Path, config: dict) -> None:
    """§5.6: each feature row equals the input row of its original ID; bool stored as uint8."""
    g = ex.graph
    nfeat, efeat = load_tensor_dict(node_file), load_tensor_dict(edge_file)
    want_keys = {f"{nt}/{f}" for nt, fs in g.node_data.items() for f in fs}
    want_edge_keys = {f"{et}/{f}" for et, fs in g.edge_data.items() for f in fs}
    if ex.trainer is not None:  # DGL's trainer_id: a node's own, an edge's destination's (int64)
        for nt in g.node_type:
            got, (lo, hi) = nfeat.pop(f"{nt}/trainer_id"), config["node_map"][nt][p]
            assert got.dtype == np.int64 and np.array_equal(got, ex.trainer[lo:hi]), f"part {p}: {nt}/trainer_id"
        for et in g.edge_type:
            got, (lo, hi) = efeat.pop(f"{et}/trainer_id"), config["edge_map"][et][p]
            assert got.dtype == np.int64 and np.array_equal(got, ex.trainer[ex.dst[lo:hi]]), f"part {p}: {et}"
    assert set(nfeat) == want_keys, f"part {p}: node feature keys {sorted(nfeat)}"
    assert set(efeat) == want_edge_keys, f"part {p}: edge keys"
    for kind, data, feats, mapping in (("node", g.node_data, nfeat, config["node_map"]),
                                       ("edge", g.edge_data, efeat, config["edge_map"])):
        for tname, fs in data.items():
            lo, hi = mapping[tname][p]
            orig = (ex.node_orig if kind == "node" else ex.edge_orig)[lo:hi]
            for f, spec in fs.items():
                total = g.num_nodes(tname) if kind == "node" else g.num_edges(tname)
                src = read_rows(g, spec, 0, total)
                want = src[orig]
                if want.dtype == np.bool_:
                    want = want.astype(np.uint8)
                got = feats[f"{tname}/{f}"]
                assert got.dtype == want.dtype and got.shape == want.shape, \
                    f"part {p}: {tname}/{f} is {got.dtype}{got.shape}, expected {want.dtype}{want.shape}"
                assert np.array_equal(got, want), f"part {p}: {tname}/{f} rows differ from the input"


def _collect_orig(graph_file: Path, orig_nids: dict, orig_eids: dict) -> None:
    for name, store in (("orig_nids.dgl", orig_nids), ("orig_eids.dgl", orig_eids)):
        path = graph_file.parent / name
        if path.exists():
            for key, arr in load_tensor_dict(path).items():
                store[key].append(arr)


def _check_orig_files(ex: Expected, config: dict, orig_nids: dict, orig_eids: dict) -> None:
    g = ex.graph
    for kind, store, names, mapping, orig in (("node", orig_nids, g.node_type, config["node_map"], ex.node_orig),
                                              ("edge", orig_eids, g.edge_type, config["edge_map"], ex.edge_orig)):
        if not any(store.values()):
            continue
        for name in names:
            pieces = store[name]
            assert len(pieces) == ex.num_parts, f"orig {kind} IDs of {name} missing in some partition"
            got = np.concatenate(pieces)
            total = g.num_nodes(name) if kind == "node" else g.num_edges(name)
            assert got.dtype == np.int64 and np.array_equal(np.sort(got), np.arange(total)), \
                f"orig {kind} IDs of {name} are not a permutation"
            want = np.concatenate([orig[lo:hi] for lo, hi in mapping[name]])
            assert np.array_equal(got, want), f"orig {kind} IDs of {name} differ from the assignment's order"

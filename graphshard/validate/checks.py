"""Checks that need only one partition's files and the config: one small function per invariant (§5.1-4).

Each function takes a `PartView` (the partition's arrays, read from disk) and the `Layout`, and returns Problems
that name the partition, the file and the check. All rows are checked: these are vectorized and cheap.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.formats.dgl_binary import LocalGraph
from graphshard.validate.layout import Layout, owners
from graphshard.validate.problems import Problem, first_values

# Allowed dtypes per reserved field: formats.md §4 names node _TYPE int16, but DGL 2.1.0's own partition_graph writes
# int32 for heterogeneous graphs (measured on its output; its loader accepts int8..int64), so both pass.
NODE_FIELDS = {"_ID": ("int64",), "inner_node": ("uint8",), "part_id": ("int64",), "_TYPE": ("int16", "int32")}
EDGE_FIELDS = {"_ID": ("int64",), "inner_edge": ("uint8",), "_TYPE": ("int32",)}
_ALWAYS = {"_ID", "inner_node", "inner_edge"}


@dataclass
class PartView:
    """One partition's structure as flat arrays; missing optional fields are filled with what they must be."""

    part: int
    file: str
    num_nodes: int
    nid: np.ndarray
    ntype: np.ndarray
    inner: np.ndarray  # bool per local node
    part_id: np.ndarray | None
    src: np.ndarray
    dst: np.ndarray
    eid: np.ndarray
    etype: np.ndarray
    inner_edge: np.ndarray  # bool per local edge

    @property
    def n_inner(self) -> int:
        return int(self.inner.sum())


def required_fields(layout: Layout, fields: dict) -> set[str]:
    """_TYPE is required only for heterogeneous graphs (DGL omits it for homogeneous ones)."""
    hetero = len(layout.ntypes) > 1 or len(layout.etypes) > 1
    return {f for f in fields if f in _ALWAYS or (f == "_TYPE" and hetero)}


def check_reserved_fields(g: LocalGraph, layout: Layout, part: int, file: str) -> list[Problem]:
    """Reserved fields present where required, with exact dtypes and one row per node/edge (§5.1)."""
    problems = []
    for what, data, fields, rows in (("node", g.ndata, NODE_FIELDS, g.num_nodes),
                                     ("edge", g.edata, EDGE_FIELDS, g.num_edges)):
        for name, dtypes in fields.items():
            arr = data.get(name)
            if arr is None:
                if name in required_fields(layout, fields):
                    problems.append(Problem("reserved-dtypes", f"{what} field '{name}' is missing", part, file))
                continue
            if arr.dtype.name not in dtypes:
                problems.append(Problem("reserved-dtypes", f"{what} field '{name}' has dtype {arr.dtype}, "
                                        f"expected {' or '.join(dtypes)}", part, file))
            if arr.ndim != 1 or arr.shape[0] != rows:
                problems.append(Problem("reserved-dtypes", f"{what} field '{name}' has shape {arr.shape}, expected "
                                        f"({rows},) (one per {what})", part, file))
    if g.src.size and (min(g.src.min(), g.dst.min()) < 0 or max(g.src.max(), g.dst.max()) >= g.num_nodes):
        problems.append(Problem("inner-edges", f"edge endpoints outside the graph's {g.num_nodes} nodes", part, file))
    return problems


def make_view(g: LocalGraph, part: int, file: str) -> PartView | None:
    """Flat arrays of the structure, or None when the reserved fields are too broken to go on."""
    nd, ed = g.ndata, g.edata
    if any(nd.get(f) is None or nd[f].shape != (g.num_nodes,) for f in ("_ID", "inner_node")) or \
            any(ed.get(f) is None or ed[f].shape != (g.num_edges,) for f in ("_ID", "inner_edge")):
        return None
    if g.src.size and (min(g.src.min(), g.dst.min()) < 0 or max(g.src.max(), g.dst.max()) >= g.num_nodes):
        return None

    def typed(data: dict, rows: int) -> np.ndarray:
        t = data.get("_TYPE")
        return t.astype(np.int64) if t is not None and t.shape == (rows,) else np.zeros(rows, dtype=np.int64)

    pid = nd.get("part_id")
    return PartView(part, file, g.num_nodes, nd["_ID"].astype(np.int64, copy=False), typed(nd, g.num_nodes),
                    nd["inner_node"] == 1, pid.astype(np.int64) if pid is not None and pid.shape == (g.num_nodes,)
                    else None, g.src, g.dst, ed["_ID"].astype(np.int64, copy=False), typed(ed, g.num_edges),
                    ed["inner_edge"] == 1)


def check_flags(v: PartView, g: LocalGraph) -> list[Problem]:
    """inner_node and inner_edge hold only 0 and 1."""
    problems = []
    for name, arr in (("inner_node", g.ndata["inner_node"]), ("inner_edge", g.edata["inner_edge"])):
        bad = np.flatnonzero((arr != 0) & (arr != 1))
        if bad.size:
            problems.append(Problem("reserved-dtypes", f"'{name}' holds values other than 0/1 at local IDs "
                                    f"{first_values(bad)}", v.part, v.file))
    return problems


def repeats(values: np.ndarray, bound: int) -> np.ndarray:
    """Values that occur more than once (sorted, one entry per extra occurrence). A mark array proves the usual
    case (values in [0, bound), none repeated) without sorting; the sort only runs to name what is wrong."""
    if values.size and values.min() >= 0 and values.max() < bound:
        mark = np.zeros(bound, dtype=bool)
        mark[values] = True
        if np.count_nonzero(mark) == values.size:
            return values[:0]
    srt = np.sort(values)
    return srt[1:][srt[1:] == srt[:-1]]


def is_exactly(values: np.ndarray, ranges: np.ndarray, bound: int) -> bool:
    """True when `values` hold each ID of the disjoint (n, 2) half-open ranges exactly once and nothing else; a
    mark array instead of a sort (False when unsure, e.g. overlapping ranges: the caller then compares sorted)."""
    order = np.argsort(ranges[:, 0], kind="stable")
    starts, ends = ranges[order, 0], ranges[order, 1]
    if (ends[:-1] > starts[1:]).any() or values.size != int((ends - starts).sum()):
        return False
    if not values.size:
        return True
    if values.min() < 0 or values.max() >= bound or starts.min() < 0 or ends.max() > bound:
        return False
    mark = np.zeros(bound, dtype=bool)
    mark[values] = True
    return np.count_nonzero(mark) == values.size and all(mark[a:b].all() for a, b in zip(starts, ends))


def _expected_ids(ranges: np.ndarray, part: int) -> tuple[np.ndarray, np.ndarray]:
    """The partition's IDs in range order (type-minor) and their type ids."""
    ids = [np.arange(s, e, dtype=np.int64) for s, e in ranges[:, part]]
    types = [np.full(e - s, t, dtype=np.int64) for t, (s, e) in enumerate(ranges[:, part])]
    return np.concatenate(ids), np.concatenate(types)


def check_inner_nodes(v: PartView, layout: Layout) -> list[Problem]:
    """Inner nodes first (local IDs 0..n-1), their _ID exactly the node_map ranges in order, right type (§5.3)."""
    problems = []
    n = v.n_inner
    if not v.inner[:n].all():
        problems.append(Problem("inner-nodes", f"inner nodes are not local IDs 0..{n - 1}: halo nodes at local IDs "
                                f"{first_values(np.flatnonzero(~v.inner[:n]))}", v.part, v.file))
    ids, types = _expected_ids(layout.node_ranges, v.part)
    counts = np.bincount(v.ntype[v.inner], minlength=len(layout.ntypes)) if n else np.zeros(len(layout.ntypes), int)
    for t, name in enumerate(layout.ntypes):
        s, e = layout.node_ranges[t, v.part]
        if t < len(counts) and counts[t] != e - s:
            problems.append(Problem("inner-nodes", f"type '{name}': {counts[t]} inner nodes, node_map range "
                                    f"[{s}, {e}) holds {e - s}", v.part, v.file))
    got = v.nid[v.inner]
    if got.shape != ids.shape:
        problems.append(Problem("inner-nodes", f"{got.size} inner nodes, node_map ranges of this partition hold "
                                f"{ids.size}", v.part, v.file))
    else:
        bad = np.flatnonzero(got != ids)
        if bad.size:
            problems.append(Problem("inner-nodes", f"inner _ID differs from the node_map range (in order) at local "
                                    f"IDs {first_values(bad)}: found {first_values(got[bad])}, expected "
                                    f"{first_values(ids[bad])}", v.part, v.file))
        bad = np.flatnonzero(v.ntype[v.inner] != types)
        if bad.size:
            problems.append(Problem("inner-nodes", f"inner node _TYPE disagrees with node_map at local IDs "
                                    f"{first_values(bad)}", v.part, v.file))
    if v.part_id is not None and (v.part_id[v.inner] != v.part).any():
        problems.append(Problem("inner-nodes", f"inner nodes with part_id != {v.part} at local IDs "
                                f"{first_values(np.flatnonzero(v.inner & (v.part_id != v.part)))}", v.part, v.file))
    return problems


def check_halo_nodes(v: PartView, layout: Layout) -> list[Problem]:
    """Halo nodes: owned by another partition, no node ID twice, part_id and _TYPE of their owner."""
    problems = []
    halo = np.flatnonzero(~v.inner)
    if halo.size and layout.halo_hops == 0:
        problems.append(Problem("halo-nodes", f"{halo.size} halo nodes but halo_hops is 0", v.part, v.file))
    owner, typ = owners(layout.node_ranges, v.nid[halo])
    for mask, what in ((owner == -1, "outside every node_map range"), (owner == v.part, "owned by this partition")):
        if mask.any():
            problems.append(Problem("halo-nodes", f"halo nodes with _ID {what}: local IDs "
                                    f"{first_values(halo[mask])}", v.part, v.file))
    known = owner >= 0
    bad = halo[known & (typ != v.ntype[halo])]
    if bad.size:
        problems.append(Problem("halo-nodes", f"halo node _TYPE disagrees with node_map at local IDs "
                                f"{first_values(bad)}", v.part, v.file))
    if v.part_id is not None:
        bad = halo[known & (v.part_id[halo] != owner)]
        if bad.size:
            problems.append(Problem("halo-nodes", f"halo node part_id is not its owner at local IDs "
                                    f"{first_values(bad)}", v.part, v.file))
    dup = repeats(v.nid, layout.num_nodes)
    if dup.size:
        problems.append(Problem("halo-nodes", f"node _ID appears twice in the partition: {first_values(dup)}",
                                v.part, v.file))
    return problems


def _inner_id_mismatch(v: PartView, layout: Layout, got: np.ndarray) -> list[Problem]:
    """Names how the inner edge _IDs `got` differ from the edge_map ranges (sorts both: runs only on a mismatch)."""
    ids, _ = _expected_ids(layout.edge_ranges, v.part)
    ids = ids if (ids[1:] >= ids[:-1]).all() else np.sort(ids)
    got = np.sort(got)
    if got.shape != ids.shape:
        return [Problem("inner-edges", f"{got.size} inner edges, edge_map ranges of this partition hold {ids.size}",
                        v.part, v.file)]
    bad = np.flatnonzero(got != ids)
    return [Problem("inner-edges", f"inner edge _IDs are not the edge_map ranges: found {first_values(got[bad])} "
                    f"where {first_values(ids[bad])} belong", v.part, v.file)] if bad.size else []


def check_inner_edges(v: PartView, layout: Layout) -> list[Problem]:
    """inner_edge == (destination is inner); inner edge _IDs are exactly the edge_map ranges; no edge ID twice."""
    problems = []
    dst_inner = v.inner[v.dst]
    wrong = np.flatnonzero(v.inner_edge & ~dst_inner)
    if wrong.size:
        problems.append(Problem("inner-edges", f"edges marked inner whose destination is a halo node: local edge IDs "
                                f"{first_values(wrong)} (destinations {first_values(v.dst[wrong])})", v.part, v.file))
    wrong = np.flatnonzero(~v.inner_edge & dst_inner)
    if wrong.size:
        problems.append(Problem("inner-edges", f"edges into inner nodes not marked inner: local edge IDs "
                                f"{first_values(wrong)}", v.part, v.file))
    counts = np.bincount(v.etype[v.inner_edge], minlength=len(layout.etypes))
    for t, name in enumerate(layout.etypes):
        s, e = layout.edge_ranges[t, v.part]
        if t < len(counts) and counts[t] != e - s:
            problems.append(Problem("inner-edges", f"type '{name}': {counts[t]} inner edges, edge_map range "
                                    f"[{s}, {e}) holds {e - s}", v.part, v.file))
    got = v.eid[v.inner_edge]
    if not is_exactly(got, layout.edge_ranges[:, v.part], layout.num_edges):
        problems += _inner_id_mismatch(v, layout, got)
    # Inner IDs equal to the ranges hold no repeats and non-inner IDs must be owned elsewhere (below), so repeats
    # can only hide among the non-inner edges.
    dup = repeats(v.eid[~v.inner_edge], layout.num_edges)
    if dup.size:
        problems.append(Problem("inner-edges", f"edge _ID appears twice in the partition: {first_values(dup)}",
                                v.part, v.file))
    owner, _ = owners(layout.edge_ranges, v.eid[~v.inner_edge])
    if (owner == v.part).any() or (owner == -1).any():
        bad = np.flatnonzero(~v.inner_edge)[(owner == v.part) | (owner == -1)]
        problems.append(Problem("inner-edges", f"non-inner edges whose _ID is owned by this partition or by none: "
                                f"local edge IDs {first_values(bad)}", v.part, v.file))
    return problems


def check_edge_types(v: PartView, layout: Layout) -> list[Problem]:
    """Edge _TYPE agrees with edge_map, and with the node types of both ends (canonical types, §5.4)."""
    problems = []
    if len(layout.ntypes) == 1 and len(layout.etypes) == 1:  # homogeneous: every edge must simply be type 0
        bad = np.flatnonzero(v.etype != 0)
        return [Problem("edge-types", f"edge _TYPE is not 0 in a homogeneous graph at local edge IDs "
                        f"{first_values(bad)}", v.part, v.file)] if bad.size else []
    _, typ = owners(layout.edge_ranges, v.eid)
    bad = np.flatnonzero((typ >= 0) & (typ != v.etype))
    if bad.size:
        problems.append(Problem("edge-types", f"edge _TYPE disagrees with edge_map at local edge IDs "
                                f"{first_values(bad)}", v.part, v.file))
    ends = layout.etype_ends
    ok = (v.etype >= 0) & (v.etype < len(ends))
    bad = np.flatnonzero(~ok)
    if bad.size:
        problems.append(Problem("edge-types", f"edge _TYPE outside 0..{len(ends) - 1} at local edge IDs "
                                f"{first_values(bad)}", v.part, v.file))
    et = np.where(ok, v.etype, 0)
    bad = np.flatnonzero(ok & ((ends[et, 0] != v.ntype[v.src]) | (ends[et, 1] != v.ntype[v.dst])))
    if bad.size:
        e = int(bad[0])
        problems.append(Problem("edge-types", f"edges whose end node types do not match their canonical type at local "
                                f"edge IDs {first_values(bad)} (first: type '{layout.etypes[et[e]]}' joins node types "
                                f"{int(v.ntype[v.src[e]])} -> {int(v.ntype[v.dst[e]])})", v.part, v.file))
    return problems


def split_feature_key(key: str, types: tuple[str, ...], default: str) -> tuple[str, str] | None:
    """('type', 'feat') of a feature key 'type/feat' (old DGL files omit 'type/' for homogeneous graphs)."""
    if "/" not in key:
        return (default, key) if default in types else None
    typ, feat = key.rsplit("/", 1)
    return (typ, feat) if typ in types else None


def _types_and_ranges(layout: Layout, nodes: bool) -> tuple[list[str], np.ndarray]:
    """The type names and (types, partitions, 2) ID ranges of nodes or of edges."""
    return (layout.ntypes, layout.node_ranges) if nodes else (layout.etypes, layout.edge_ranges)


def check_features(feats: dict[str, np.ndarray] | None, layout: Layout, part: int, file: str,
                   nodes: bool) -> list[Problem]:
    """One row per inner node/edge of the key's type, keys naming a known type."""
    if feats is None:
        return []
    problems = []
    types, ranges = _types_and_ranges(layout, nodes)
    for key, arr in feats.items():
        split = split_feature_key(key, types, types[0])
        if split is None:
            problems.append(Problem("features", f"key '{key}' does not start with a known type of {list(types)}",
                                    part, file))
            continue
        t = types.index(split[0])
        rows = int(ranges[t, part, 1] - ranges[t, part, 0])
        if arr.ndim == 0 or arr.shape[0] != rows:
            problems.append(Problem("features", f"'{key}' has {arr.shape[0] if arr.ndim else 0} rows, expected "
                                    f"{rows} (inner {'nodes' if nodes else 'edges'} of type '{split[0]}')", part, file))
    return problems


def check_orig_ids(orig: dict[str, np.ndarray] | None, layout: Layout, part: int, file: str,
                   nodes: bool) -> list[Problem]:
    """Per type: int64, one entry per inner node/edge, values in [0, count), no value twice in the partition."""
    if orig is None:
        return []
    problems = []
    types, ranges = _types_and_ranges(layout, nodes)
    totals = (ranges[:, :, 1] - ranges[:, :, 0]).sum(axis=1)
    for key in orig:
        if key not in types:
            problems.append(Problem("orig-ids", f"key '{key}' is not a type of {list(types)}", part, file))
    for t, name in enumerate(types):
        arr = orig.get(name)
        rows = int(ranges[t, part, 1] - ranges[t, part, 0])
        if arr is None:
            if rows:
                problems.append(Problem("orig-ids", f"type '{name}' is missing", part, file))
            continue
        if arr.dtype != np.int64:
            problems.append(Problem("orig-ids", f"'{name}' has dtype {arr.dtype}, expected int64", part, file))
        if arr.shape != (rows,):
            problems.append(Problem("orig-ids", f"'{name}' has shape {arr.shape}, expected ({rows},)", part, file))
            continue
        bad = np.flatnonzero((arr < 0) | (arr >= totals[t]))
        if bad.size:
            problems.append(Problem("orig-ids", f"'{name}' values outside [0, {totals[t]}) at rows "
                                    f"{first_values(bad)}", part, file))
        dup = repeats(arr, int(totals[t]))
        if dup.size:
            problems.append(Problem("orig-ids", f"'{name}' is not a permutation: original IDs "
                                    f"{first_values(dup)} appear twice", part, file))
    return problems

"""Checks that need only one partition's files and the config: one small function per invariant (§5.1-4).

Each function takes a `NodeView` (the partition's node arrays, read from disk) or file columns and the `Layout`, and
returns Problems that name the partition, the file and the check. All rows are checked, vectorized, and arrays that
grow with the partition's edges are read piece by piece (validate/edges.py holds the per-edge checks).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphshard.formats.dgl_columns import Column, GraphColumns
from graphshard.validate.layout import Layout, owners
from graphshard.validate.piecewise import pieces
from graphshard.validate.problems import Hits, Problem, first_values

# Allowed dtypes per reserved field: node _TYPE is int32 as DGL 2.1 writes it (formats.md §4) and as graphshard
# writes it; int16 (what graphshard wrote before, DGL's declared NTYPE dtype) still passes, as DGL's loaders read it.
NODE_FIELDS = {"_ID": ("int64",), "inner_node": ("uint8",), "part_id": ("int64",), "_TYPE": ("int32", "int16")}
EDGE_FIELDS = {"_ID": ("int64",), "inner_edge": ("uint8",), "_TYPE": ("int32",)}
_ALWAYS = {"_ID", "inner_node", "inner_edge"}


@dataclass
class NodeView:
    """One partition's nodes as flat arrays (held whole: per local node); missing optional fields are filled with
    what they must be. Edges are read piece by piece (validate/edges.py)."""

    part: int
    file: str
    num_nodes: int
    nid: np.ndarray
    ntype: np.ndarray
    inner: np.ndarray  # bool per local node
    part_id: np.ndarray | None
    flag: np.ndarray  # inner_node as stored

    @property
    def n_inner(self) -> int:
        return int(self.inner.sum())


def required_fields(layout: Layout, fields: dict) -> set[str]:
    """_TYPE is required only for heterogeneous graphs (DGL omits it for homogeneous ones)."""
    hetero = len(layout.ntypes) > 1 or len(layout.etypes) > 1
    return {f for f in fields if f in _ALWAYS or (f == "_TYPE" and hetero)}


def check_reserved_fields(g: GraphColumns, layout: Layout, part: int, file: str) -> list[Problem]:
    """Reserved fields present where required, with exact dtypes and one row per node/edge (§5.1); the edge ends
    are checked against the node count as the edges are read (validate/edges.py)."""
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
    return problems


def edges_readable(g: GraphColumns) -> bool:
    """The edge fields every per-edge check reads have one row per edge."""
    return all(g.edata.get(f) is not None and g.edata[f].shape == (g.num_edges,) for f in ("_ID", "inner_edge"))


def make_view(g: GraphColumns, part: int, file: str) -> NodeView | None:
    """Flat node arrays, or None when the reserved fields are too broken to go on."""
    nd = {k: c.read() for k, c in g.ndata.items()}
    if any(nd.get(f) is None or nd[f].shape != (g.num_nodes,) for f in ("_ID", "inner_node")) or \
            not edges_readable(g):
        return None
    t, pid = nd.get("_TYPE"), nd.get("part_id")
    ntype = t.astype(np.int64) if t is not None and t.shape == (g.num_nodes,) else np.zeros(g.num_nodes, np.int64)
    return NodeView(part, file, g.num_nodes, nd["_ID"].astype(np.int64, copy=False), ntype, nd["inner_node"] == 1,
                    pid.astype(np.int64) if pid is not None and pid.shape == (g.num_nodes,) else None,
                    nd["inner_node"])


def check_node_flags(v: NodeView) -> list[Problem]:
    """inner_node holds only 0 and 1 (inner_edge: validate/edges.py)."""
    bad = np.flatnonzero((v.flag != 0) & (v.flag != 1))
    return [Problem("reserved-dtypes", f"'inner_node' holds values other than 0/1 at local IDs {first_values(bad)}",
                    v.part, v.file)] if bad.size else []


def repeats(values: np.ndarray, bound: int) -> np.ndarray:
    """Values that occur more than once (sorted, one entry per extra occurrence). A mark array proves the usual
    case (values in [0, bound), none repeated) without sorting when it is no larger than a sort's copies
    (`KEPT_BYTES` per value); over a graph-sized range a partition's values are sorted instead, so the memory
    follows the values, not the graph."""
    if values.size and KEPT_BYTES * values.size >= bound and values.min() >= 0 and values.max() < bound:
        mark = np.zeros(bound, dtype=bool)
        mark[values] = True
        if np.count_nonzero(mark) == values.size:
            return values[:0]
    srt = np.sort(values)
    return srt[1:][srt[1:] == srt[:-1]]


KEPT_BYTES = 16  # per value kept instead of marked: the value and its sort's copy


class Marks:
    """No value twice, every value in [0, bound): proved piece by piece (False when unsure: the caller then sorts
    all values with `repeats` to name what is wrong). The values are kept while they take less memory than a mark
    array over [0, bound) would, then marked: at most the smaller of the two, never a graph-sized array for a
    partition's few IDs."""

    def __init__(self, bound: int):
        self.bound, self.n, self.ok = max(bound, 0), 0, True
        self.mark: np.ndarray | None = None
        self.kept: list[np.ndarray] = []

    def add(self, values: np.ndarray) -> None:
        self.n += values.size
        if not self.ok or not values.size:
            return
        if values.min() < 0 or values.max() >= self.bound:
            self.ok, self.mark, self.kept = False, None, []
        elif self.mark is not None:
            self.mark[values] = True
        else:
            self.kept.append(np.array(values, dtype=np.int64))
            if KEPT_BYTES * self.n >= self.bound:
                self.mark = np.zeros(self.bound, dtype=bool)
                for kept in self.kept:
                    self.mark[kept] = True
                self.kept = []

    def clean(self) -> bool:
        if not self.ok:
            return False
        if self.mark is not None:
            return int(np.count_nonzero(self.mark)) == self.n
        return not repeats(np.concatenate(self.kept), self.bound).size if self.kept else True


class Exactly:
    """Values hold each ID of the disjoint (n, 2) half-open ranges exactly once and nothing else, proved piece by
    piece with a mark array over the ranges' span (False when unsure, e.g. overlapping ranges: compare sorted)."""

    def __init__(self, ranges: np.ndarray, bound: int):
        order = np.argsort(ranges[:, 0], kind="stable")
        self.starts, self.ends = ranges[order, 0], ranges[order, 1]
        self.total, self.n = int((self.ends - self.starts).sum()), 0
        self.ok = not (self.ends[:-1] > self.starts[1:]).any() and (self.ends >= self.starts).all()
        self.lo = int(self.starts.min()) if len(self.starts) else 0
        self.hi = int(self.ends.max()) if len(self.ends) else 0
        self.ok = self.ok and 0 <= self.lo and self.hi <= bound
        self.mark = np.zeros(self.hi - self.lo if self.ok else 0, dtype=bool)

    def add(self, values: np.ndarray) -> None:
        self.n += values.size
        if self.ok and values.size:
            if values.min() < self.lo or values.max() >= self.hi:
                self.ok = False
            else:
                self.mark[values - self.lo] = True

    def exact(self) -> bool:
        if not self.ok or self.n != self.total or int(np.count_nonzero(self.mark)) != self.n:
            return False
        return all(self.mark[a - self.lo:b - self.lo].all() for a, b in zip(self.starts, self.ends))


def is_exactly(values: np.ndarray, ranges: np.ndarray, bound: int) -> bool:
    """`Exactly` over one array of values."""
    check = Exactly(ranges, bound)
    check.add(values)
    return check.exact()


def expected_ids(ranges: np.ndarray, part: int) -> tuple[np.ndarray, np.ndarray]:
    """The partition's IDs in range order (type-minor) and their type ids."""
    ids = [np.arange(s, e, dtype=np.int64) for s, e in ranges[:, part]]
    types = [np.full(e - s, t, dtype=np.int64) for t, (s, e) in enumerate(ranges[:, part])]
    return np.concatenate(ids), np.concatenate(types)


def check_inner_nodes(v: NodeView, layout: Layout) -> list[Problem]:
    """Inner nodes first (local IDs 0..n-1), their _ID exactly the node_map ranges in order, right type (§5.3)."""
    problems = []
    n = v.n_inner
    if not v.inner[:n].all():
        problems.append(Problem("inner-nodes", f"inner nodes are not local IDs 0..{n - 1}: halo nodes at local IDs "
                                f"{first_values(np.flatnonzero(~v.inner[:n]))}", v.part, v.file))
    ids, types = expected_ids(layout.node_ranges, v.part)
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


def check_halo_nodes(v: NodeView, layout: Layout) -> list[Problem]:
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


def split_feature_key(key: str, types: tuple[str, ...], default: str) -> tuple[str, str] | None:
    """('type', 'feat') of a feature key 'type/feat' (old DGL files omit 'type/' for homogeneous graphs)."""
    if "/" not in key:
        return (default, key) if default in types else None
    typ, feat = key.rsplit("/", 1)
    return (typ, feat) if typ in types else None


def _types_and_ranges(layout: Layout, nodes: bool) -> tuple[list[str], np.ndarray]:
    """The type names and (types, partitions, 2) ID ranges of nodes or of edges."""
    return (layout.ntypes, layout.node_ranges) if nodes else (layout.etypes, layout.edge_ranges)


def check_features(feats: dict[str, Column] | None, layout: Layout, part: int, file: str,
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


def check_orig_ids(orig: dict[str, Column] | None, layout: Layout, part: int, file: str,
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
        col = orig.get(name)
        rows = int(ranges[t, part, 1] - ranges[t, part, 0])
        if col is None:
            if rows:
                problems.append(Problem("orig-ids", f"type '{name}' is missing", part, file))
            continue
        if col.dtype != np.int64:
            problems.append(Problem("orig-ids", f"'{name}' has dtype {col.dtype}, expected int64", part, file))
        if col.shape != (rows,):
            problems.append(Problem("orig-ids", f"'{name}' has shape {col.shape}, expected ({rows},)", part, file))
            continue
        outside, marks = Hits(), Marks(int(totals[t]))
        for a, b in pieces(rows):
            arr = col.read(a, b)
            outside.add(a + np.flatnonzero((arr < 0) | (arr >= totals[t])))
            marks.add(arr)
        if outside:
            problems.append(Problem("orig-ids", f"'{name}' values outside [0, {totals[t]}) at rows "
                                    f"{outside.text()}", part, file))
        clean, marks = marks.clean(), None  # free the mark array before a sort reads every value
        dup = np.zeros(0) if clean else repeats(col.read(), int(totals[t]))
        if dup.size:
            problems.append(Problem("orig-ids", f"'{name}' is not a permutation: original IDs "
                                    f"{first_values(dup)} appear twice", part, file))
    return problems

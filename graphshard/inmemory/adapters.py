"""In-memory graphs of several libraries seen as one shape: per-type node counts, edge arrays and features, in numpy.

Every input is read through its public API and duck-typed, so graphshard never imports DGL, PyG or torch:
- a DGLGraph or heterograph (`ntypes`, `canonical_etypes`, `num_nodes(nt)`, `edges(etype=, order='eid')`,
  `nodes[nt].data`, `edges[et].data`);
- a PyG `Data` (`edge_index`, `num_nodes`, node/edge attributes) or `HeteroData` (`node_types`, `edge_types`);
- a scipy sparse matrix (square; entry (i, j) is an edge i -> j, in the matrix's COO order);
- plain dicts: `{(src_type, rel, dst_type): (src, dst)}` with `num_nodes` and feature dicts given alongside.
Tensors become numpy views (`.numpy()` on CPU tensors shares memory), so no second copy of the graph is made here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.readers import VALID_KINDS, unloadable_dtype

HOMO_NTYPE = "_N"
HOMO_ETYPE = (HOMO_NTYPE, "_E", HOMO_NTYPE)
Canonical = tuple[str, str, str]
DGL_SKIPPED_NODE_DATA = ("_ID", "inner_node")  # DGL's partition_graph writes no feature of these names (dgl.NID, ...)
DGL_SKIPPED_EDGE_DATA = ("_ID", "inner_edge")


@dataclass
class InMemoryGraph:
    """A graph as numpy arrays by type; `style` says how to return ID mappings (DGL's conventions)."""

    num_nodes: dict[str, int]
    edges: dict[Canonical, tuple[np.ndarray, np.ndarray]]
    node_feats: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    edge_feats: dict[Canonical, dict[str, np.ndarray]] = field(default_factory=dict)
    homogeneous: bool = False  # mappings as plain arrays (True) or dicts keyed by type (False)
    to_output: Callable[[np.ndarray], Any] = staticmethod(lambda a: a)  # numpy -> the caller's tensor kind

    @property
    def ntypes(self) -> list[str]:
        return list(self.num_nodes)

    @property
    def etypes(self) -> list[Canonical]:
        return list(self.edges)


def as_numpy(x: Any, what: str) -> np.ndarray:
    """A numpy view of an array or a CPU tensor (a device tensor is copied to host memory)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "detach") and hasattr(x, "numpy"):
        x = x.detach()
        x = x.cpu() if hasattr(x, "cpu") else x
        try:
            return x.numpy()
        except (TypeError, RuntimeError) as err:
            raise GraphshardError(f"{what}: expected a tensor numpy can hold (int, float or bool; cast a bfloat16 "
                                  f"one to float16 or float32), found {getattr(x, 'dtype', type(x).__name__)} "
                                  f"({err})") from None
    try:
        return np.asarray(x)
    except Exception as err:  # noqa: BLE001 - re-raised naming the argument
        raise GraphshardError(f"{what}: expected an array or a tensor, found {type(x).__name__} ({err})") from None


def _tensor_maker(example: Any) -> Callable[[np.ndarray], Any]:
    """numpy -> a tensor of the same library as `example` (via its module's `from_numpy`); numpy if it has none."""
    if isinstance(example, np.ndarray):
        return lambda a: a
    module = importlib.import_module(type(example).__module__.split(".")[0])
    from_numpy = getattr(module, "from_numpy", None)
    return from_numpy if from_numpy is not None else (lambda a: a)


def _feats(data: Any, what: str, skip: tuple[str, ...] = ()) -> dict[str, np.ndarray]:
    """A {name: array} mapping (DGL's frame views, PyG storages, dicts) as numpy arrays."""
    return {str(k): as_numpy(v, f"{what} '{k}'") for k, v in dict(data).items() if k not in skip}


def from_dgl(g: Any) -> InMemoryGraph:
    """A DGLGraph or heterograph, read through its public API."""
    num_nodes = {nt: int(g.num_nodes(nt)) for nt in g.ntypes}
    allowed = sum(g.formats().values(), []) if callable(getattr(g, "formats", None)) else ["coo"]
    if "coo" not in allowed:  # a CSC/CSR-only graph lists no edges in ID order: allow COO (same features)
        g = g.formats(allowed + ["coo"])
    edges, example = {}, None
    for can in g.canonical_etypes:
        src, dst = g.edges(etype=can, order="eid")
        example = src
        edges[tuple(can)] = (as_numpy(src, f"edges {can}"), as_numpy(dst, f"edges {can}"))
    node_feats = {nt: _feats(g.nodes[nt].data, f"g.nodes['{nt}'].data", DGL_SKIPPED_NODE_DATA) for nt in g.ntypes}
    edge_feats = {tuple(can): _feats(g.edges[can].data, f"g.edges[{can}].data", DGL_SKIPPED_EDGE_DATA)
                  for can in g.canonical_etypes}
    homogeneous = bool(getattr(g, "is_homogeneous", len(num_nodes) == 1 and len(edges) == 1))
    return InMemoryGraph(num_nodes, edges, node_feats, edge_feats, homogeneous,
                         _tensor_maker(example) if example is not None else (lambda a: a))


def _pyg_split(store: Any, n_nodes: int | None, n_edges: int | None, skip: tuple[str, ...]
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Split a PyG storage's tensor attributes into node-level and edge-level ones (by PyG's own test)."""
    nodes, edges = {}, {}
    for key in list(store.keys()):
        value = store[key]
        if key in skip or not hasattr(value, "shape") or not len(value.shape):
            continue
        if n_edges is not None and store.is_edge_attr(key):
            edges[key] = as_numpy(value, f"edge attribute '{key}'")
        elif n_nodes is not None and store.is_node_attr(key):
            nodes[key] = as_numpy(value, f"node attribute '{key}'")
    return nodes, edges


def _pyg_count(store: Any, shown: str) -> int:
    """A PyG store's node count; one line when PyG cannot tell it (no `num_nodes`, no node attribute to infer it)."""
    count = store.num_nodes
    if count is None:
        raise GraphshardError(f"{shown}.num_nodes: expected a node count, found None (PyG infers it from a node "
                              f"attribute such as x); set {shown}.num_nodes")
    return int(count)


def _pyg_edges_present(stores: dict[Canonical, Any], shown: Callable[[Canonical], str]) -> None:
    """Every edge store holds `edge_index`: a sparse adjacency (T.ToSparseTensor's `adj_t`) is named, with the way
    back, before PyG's attribute tests trip over it."""
    for can, store in stores.items():
        if "edge_index" not in store.keys():
            held = [k for k in store.keys() if k in ("adj_t", "adj")]
            raise GraphshardError(f"{shown(can)}.edge_index: expected the edges as edge_index, found "
                                  f"{held[0] if held else 'none'}; partition before T.ToSparseTensor, or set "
                                  "edge_index from it (torch_geometric.utils.to_edge_index of adj_t.t())")


def from_pyg(data: Any) -> InMemoryGraph:
    """A PyG `Data` (one node and edge type) or `HeteroData`."""
    if hasattr(data, "node_types"):
        stores = {tuple(et): data[et] for et in data.edge_types}
        _pyg_edges_present(stores, lambda can: f"data[{can}]")
        missing = sorted({nt for can in stores for nt in (can[0], can[2])} - set(data.node_types))
        if missing:
            raise GraphshardError(f"data['{missing[0]}']: node type of an edge type, expected its node count, found "
                                  f"no node store; set data['{missing[0]}'].num_nodes")
        num_nodes = {nt: _pyg_count(data[nt], f"data['{nt}']") for nt in data.node_types}
        node_feats = {nt: _pyg_split(data[nt], num_nodes[nt], None, ("num_nodes",))[0] for nt in data.node_types}
        homogeneous = False
    else:
        stores = {HOMO_ETYPE: data}
        _pyg_edges_present(stores, lambda can: "data")
        num_nodes = {HOMO_NTYPE: _pyg_count(data, "data")}
        node_feats = {HOMO_NTYPE: _pyg_split(data, num_nodes[HOMO_NTYPE], None, ("edge_index", "num_nodes"))[0]}
        homogeneous = True
    edges, edge_feats, example = {}, {}, None
    for can, store in stores.items():
        example = store.edge_index
        index = as_numpy(store.edge_index, f"edge_index of {can}")
        if index.ndim != 2 or index.shape[0] != 2:
            raise GraphshardError(f"edge_index of {can}: expected shape (2, E), found {index.shape}")
        edges[can] = (index[0], index[1])
        edge_feats[can] = _pyg_split(store, None, index.shape[1], ("edge_index", "num_nodes"))[1]
    return InMemoryGraph(num_nodes, edges, node_feats, edge_feats, homogeneous,
                         _tensor_maker(example) if example is not None else (lambda a: a))


def from_scipy(m: Any) -> InMemoryGraph:
    """A square scipy sparse matrix: entry (i, j) is the edge i -> j (values are not features)."""
    if m.shape[0] != m.shape[1]:
        raise GraphshardError(f"scipy matrix: expected a square adjacency matrix (N x N), found shape {m.shape}; "
                              "pass a bipartite graph as a dict {(src_type, rel, dst_type): (src, dst)}")
    coo = m.tocoo()
    return InMemoryGraph({HOMO_NTYPE: int(m.shape[0])}, {HOMO_ETYPE: (coo.row, coo.col)}, homogeneous=True)


def from_dicts(edges: dict, num_nodes: Any) -> InMemoryGraph:
    """`{(src_type, rel, dst_type): (src, dst)}` plus `num_nodes` ({ntype: count}, or an int for one node type)."""
    cans = []
    for key in edges:
        if not (isinstance(key, tuple) and len(key) == 3 and all(isinstance(x, str) for x in key)):
            raise GraphshardError(f"edges: expected canonical edge type keys (src_type, relation, dst_type), "
                                  f"found {key!r}")
        cans.append(key)
    ends = list(dict.fromkeys(t for can in cans for t in (can[0], can[2])))
    if num_nodes is None:
        raise GraphshardError("num_nodes: a dict of edges needs num_nodes={ntype: count} (or an int for one node type)")
    if not isinstance(num_nodes, dict):
        if len(ends) != 1:
            raise GraphshardError(f"num_nodes: expected a dict {{ntype: count}} for node types {ends}, "
                                  f"found {num_nodes!r}")
        num_nodes = {ends[0]: num_nodes}
    missing = [t for t in ends if t not in num_nodes]
    if missing:
        raise GraphshardError(f"num_nodes: expected a count for every node type the edges use, missing {missing}")
    arrays = {}
    for can in cans:
        pair = edges[can]
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise GraphshardError(f"edges[{can}]: expected a pair (src, dst) of ID arrays, found {type(pair).__name__}")
        arrays[can] = (as_numpy(pair[0], f"edges[{can}] src"), as_numpy(pair[1], f"edges[{can}] dst"))
    example = edges[cans[0]][0] if cans else None  # the mapping comes back as the caller's tensors (torch, numpy)
    return InMemoryGraph({str(nt): int(n) for nt, n in num_nodes.items()}, arrays,
                         to_output=_tensor_maker(example) if example is not None else (lambda a: a))


def _typed_feats(feats: Any, types: list, what: str) -> dict:
    """Features given as {type: {name: array}}, or {name: array} when the graph has one type."""
    if not feats:
        return {}
    if not isinstance(feats, dict):
        raise GraphshardError(f"{what}: expected a dict, found {type(feats).__name__}")
    nested = [isinstance(v, dict) for v in feats.values()]
    if all(nested):
        unknown = [t for t in feats if t not in types]
        if unknown:
            raise GraphshardError(f"{what}: expected keys among the graph's types {types}, found {unknown}")
        return {t: _feats(v, f"{what}[{t!r}]") for t, v in feats.items()}
    if any(nested) or len(types) != 1:
        raise GraphshardError(f"{what}: expected {{type: {{name: array}}}} (or {{name: array}} for a graph with "
                              f"one type; this one has {types})")
    return {types[0]: _feats(feats, what)}


def from_input(g: Any, num_nodes: Any = None, node_feats: Any = None, edge_feats: Any = None) -> InMemoryGraph:
    """Recognise the kind of `g` and read it; `num_nodes`/`node_feats`/`edge_feats` add to dict and scipy inputs."""
    extra = num_nodes is not None or node_feats or edge_feats
    if hasattr(g, "canonical_etypes") and hasattr(g, "ntypes"):
        graph, kind = from_dgl(g), "a DGLGraph"
    elif hasattr(g, "edge_index") or (hasattr(g, "node_types") and hasattr(g, "edge_types")):
        graph, kind = from_pyg(g), "a PyG graph"
    elif hasattr(g, "tocoo") and hasattr(g, "shape"):
        graph, kind = from_scipy(g), None
        if num_nodes is not None:
            raise GraphshardError("num_nodes: a scipy matrix gives its own node count (its shape); drop num_nodes")
    elif isinstance(g, dict):
        graph, kind = from_dicts(g, num_nodes), None
    else:
        raise GraphshardError(f"g: expected a DGLGraph, a PyG Data/HeteroData, a scipy sparse matrix or a dict "
                              f"{{(src_type, rel, dst_type): (src, dst)}}, found {type(g).__module__}."
                              f"{type(g).__name__}")
    if kind and extra:
        raise GraphshardError(f"num_nodes/node_feats/edge_feats: {kind} carries its own node counts and features; "
                              "pass them only with a dict of edges or a scipy matrix")
    if kind is None:
        graph.node_feats = _typed_feats(node_feats, graph.ntypes, "node_feats")
        graph.edge_feats = _typed_feats(edge_feats, graph.etypes, "edge_feats")
    check(graph)
    return graph


def check(graph: InMemoryGraph) -> None:
    """Shapes and dtypes the steps need: 1-D integer edge arrays of equal length, one feature row per node/edge."""
    if not graph.edges:
        raise GraphshardError("g: expected at least one edge type, found none")
    _check_names(graph)
    for can, (src, dst) in graph.edges.items():
        if src.ndim != 1 or dst.ndim != 1 or len(src) != len(dst):
            raise GraphshardError(f"edges {can}: expected two 1-D ID arrays of equal length, found shapes "
                                  f"{src.shape} and {dst.shape}")
        if src.dtype.kind not in "iu" or dst.dtype.kind not in "iu":
            raise GraphshardError(f"edges {can}: expected integer node IDs, found {src.dtype} and {dst.dtype}")
    for kind, feats, counts in (("node", graph.node_feats, graph.num_nodes),
                                ("edge", graph.edge_feats, {c: len(e[0]) for c, e in graph.edges.items()})):
        for t, named in feats.items():
            for name, arr in named.items():
                if arr.ndim == 0 or arr.shape[0] != counts[t]:
                    raise GraphshardError(f"{kind} feature '{name}' of {t!r}: expected an array of {counts[t]} "
                                          f"rows, found shape {arr.shape}")
                if arr.dtype.kind == "c":  # DGL takes complex tensors; no chunk format holds them
                    raise GraphshardError(f"{kind} feature '{name}' of {t!r}: expected a real dtype, found "
                                          f"{arr.dtype}; pass its real and imaginary parts, e.g. "
                                          "np.stack([x.real, x.imag], axis=-1)")
                if arr.dtype.kind not in VALID_KINDS:
                    raise GraphshardError(f"{kind} feature '{name}' of {t!r}: expected a numeric or bool dtype, "
                                          f"found {arr.dtype}")
                if (wide := unloadable_dtype(arr.dtype)) is not None:
                    raise GraphshardError(f"{kind} feature '{name}' of {t!r}: expected {wide[0]}, found {wide[1]}")


def _check_names(graph: InMemoryGraph) -> None:
    """The names partition files can hold: node types and relations without ':' or '/' (DGL joins a canonical edge
    type with ':' and keys features '<type>/<name>'), feature names without '/'."""
    for nt in graph.ntypes:
        if not nt or ":" in nt or "/" in nt:
            raise GraphshardError(f"node type {nt!r}: expected a non-empty name without ':' or '/'")
    for can in graph.etypes:
        if not can[1] or ":" in can[1] or "/" in can[1]:
            raise GraphshardError(f"edge type {can}: expected a non-empty relation name without ':' or '/'")
    for kind, feats in (("node", graph.node_feats), ("edge", graph.edge_feats)):
        for t, named in feats.items():
            for name in named:
                if not name or "/" in name:
                    raise GraphshardError(f"{kind} feature {name!r} of {t!r}: expected a non-empty name without '/'")

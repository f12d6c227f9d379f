"""An in-memory graph written once as a chunked graph (the input format of every step), slice by slice.

`write_chunked` is what `graphshard.chunk_graph` and `graphshard.partition_graph` share; `add_features` writes a
second metadata file beside the first that lists extra per-node/per-edge arrays (balance classes for the assignment,
trainer ids for the partitions) without touching the chunks already written.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import chunk_bounds, load_metadata
from graphshard.formats.chunked_writer import (
    ChunkedGraphWriter,
    check_format,
    positive,
    spec_formats,
    write_edge_type,
    write_node_type,
)
from graphshard.formats.jsonfile import read_json_object
from graphshard.inmemory.adapters import InMemoryGraph, from_input

CHUNK_ROWS = 1 << 21  # rows per chunk when partition_graph picks the chunk count itself


def etype_name(can: tuple[str, str, str]) -> str:
    """The chunked format's name of a canonical edge type."""
    return ":".join(can)


def _bounds(rows: int, num_chunks: int | None) -> list[int]:
    return chunk_bounds(rows, num_chunks or max(1, math.ceil(rows / CHUNK_ROWS)))


def _check_ids(ids: np.ndarray, n: int, can: tuple, end: str, offset: int) -> None:
    """Every ID of an edge slice is a node of its type."""
    if len(ids) and (ids.min() < 0 or ids.max() >= n):
        bad = int(np.flatnonzero((ids < 0) | (ids >= n))[0])
        ntype = can[0] if end == "source" else can[2]
        raise GraphshardError(f"edges {can}: expected {end} IDs in [0, {n}) (the node count of "
                              f"'{ntype}'), found {int(ids[bad])} at edge {offset + bad}")


def write_chunked(graph: InMemoryGraph, out_dir: Path, graph_name: str, num_chunks: int | None = None,
                  fmt: str = "numpy", overwrite: bool = False) -> Path:
    """Write `graph` as a chunked graph (`num_chunks` per type, or ~2M rows each when None); returns metadata.json."""
    etypes = [etype_name(c) for c in graph.etypes]
    formats = spec_formats(fmt, etypes + list(_features(graph)))
    with ChunkedGraphWriter(out_dir, graph_name, graph.ntypes, etypes, overwrite=overwrite) as writer:
        for can, (src, dst) in graph.edges.items():
            write_edge_type(writer, etype_name(can), _bounds(len(src), num_chunks), _checked_ends(graph, can),
                            graph.edge_feats.get(can, {}), formats)
        for nt, n in graph.num_nodes.items():
            write_node_type(writer, nt, _bounds(n, num_chunks), graph.node_feats.get(nt, {}), formats)
        return writer.finish()


def _features(graph: InMemoryGraph) -> dict[str, np.ndarray]:
    """Every feature by its spec name (`<edge type>/<name>`, then `<node type>/<name>`), in the order written."""
    feats = {f"{etype_name(c)}/{f}": a for c, fs in graph.edge_feats.items() for f, a in fs.items()}
    return feats | {f"{nt}/{f}": a for nt, fs in graph.node_feats.items() for f, a in fs.items()}


def _checked_ends(graph: InMemoryGraph, can: tuple[str, str, str]):
    """Rows [lo, hi) of an edge type's (src, dst) arrays, every ID checked to be a node of its type."""
    src, dst = graph.edges[can]

    def ends(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
        _check_ids(src[lo:hi], graph.num_nodes[can[0]], can, "source", lo)
        _check_ids(dst[lo:hi], graph.num_nodes[can[2]], can, "destination", lo)
        return src[lo:hi], dst[lo:hi]

    return ends


def add_features(metadata: Path, name: str, node: dict[str, dict[str, np.ndarray]],
                 edge: dict[str, dict[str, np.ndarray]] | None = None) -> Path:
    """Write `<name>.json` beside `metadata`: the same graph plus these features (chunked as the graph is)."""
    graph = load_metadata(metadata)
    data = read_json_object(graph.metadata_path, "metadata.json file")
    folder = graph.metadata_path.parent
    for kind, feats, offsets in (("node_data", node, graph.node_chunk_offsets),
                                 ("edge_data", edge or {}, graph.edge_chunk_offsets)):
        for t, named in feats.items():
            bounds = offsets(t)
            for f, arr in named.items():
                files = []
                for i, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
                    rel = f"{name}/{kind}/{t.replace(':', '__')}-{f}-{i}.npy"
                    (folder / rel).parent.mkdir(parents=True, exist_ok=True)
                    np.save(folder / rel, np.ascontiguousarray(arr[lo:hi]), allow_pickle=False)
                    files.append(rel)
                data.setdefault(kind, {}).setdefault(t, {})[f] = {"format": {"name": "numpy"}, "data": files}
    out = folder / f"{name}.json"
    out.write_text(json.dumps(data, indent=2))
    load_metadata(out)  # the same checks as any input
    return out


def safe_graph_name(name: str) -> str:
    """The chunked format's graph name (letters, digits, '_') for a DGL graph name, which may hold e.g. '-'."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name) or "graph"


def chunk_graph(g: Any, out_dir: str | Path, num_chunks: int, fmt: str = "numpy", graph_name: str = "graph", *,
                num_nodes: Any = None, node_feats: Any = None, edge_feats: Any = None,
                overwrite: bool = False) -> Path:
    """Write an in-memory graph (DGL, PyG, scipy, dicts) in the chunked format, `num_chunks` chunks per type.

    Parameters
    ----------
    g : DGLGraph, PyG Data/HeteroData, scipy sparse matrix or dict
        The graph, as `partition_graph` takes it.
    out_dir : str or Path
        The chunked graph's folder (created complete, or not at all).
    num_chunks : int
        Chunks per node and edge type.
    fmt : str
        numpy, parquet, csv or mixed.
    graph_name : str
        Letters, digits and '_'.
    num_nodes, node_feats, edge_feats : optional
        As for `partition_graph`.
    overwrite : bool
        Replace an existing `out_dir`.

    Returns
    -------
    Path
        The `metadata.json`, ready for `graphshard run`/`assign`/`shuffle`.
    """
    check_format(fmt, "fmt")
    num_chunks = positive("num_chunks", num_chunks, prefix="")
    if not re.match(r"^[A-Za-z0-9_]+$", graph_name):
        raise GraphshardError(f"graph_name: expected letters, digits and '_' only, found {graph_name!r}")
    if Path(out_dir).exists() and not overwrite:
        raise GraphshardError(f"out_dir: {out_dir} exists; pass overwrite=True to replace it")
    graph = from_input(g, num_nodes, node_feats, edge_feats)
    _check_features(graph, fmt)
    return write_chunked(graph, Path(out_dir), graph_name, num_chunks, fmt, overwrite)


def _check_features(graph: InMemoryGraph, fmt: str) -> None:
    """Refuse a feature its file format cannot hold (parquet and csv columns are a row's values: rows of no values
    leave no rows; csv rows are one value or a list of them); warn where a csv chunk reads back otherwise than
    given: csv holds text, no dtype, so every reader (DGL's too) takes numbers as int64 or float64."""
    feats = _features(graph)
    formats = spec_formats(fmt, [etype_name(c) for c in graph.etypes] + list(feats))
    changed = []
    for name, arr in feats.items():
        form, wide = formats[name], np.dtype(np.float64 if arr.dtype.kind == "f" else np.int64)
        if form != "numpy" and (arr.ndim > 2 and form == "csv" or 0 in arr.shape[1:]):
            raise GraphshardError(f"{name}: rows of shape {arr.shape[1:]} cannot be written as {form}; use "
                                  "fmt='numpy' (or 'parquet' for rows of several dimensions)")
        if form == "csv" and len(arr) == 0:
            changed.append(f"{name}: a csv chunk of no rows keeps no dtype or width: reads back as (0, 0) int64")
        elif form == "csv" and arr.dtype.kind in "iuf" and arr.dtype != wide:
            changed.append(f"{name}: {arr.dtype} written as csv reads back as {wide}")
    for line in changed:
        warnings.warn(f"{line}; use fmt='numpy' or 'parquet' to keep it", stacklevel=3)

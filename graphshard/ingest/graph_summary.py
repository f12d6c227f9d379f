"""A chunked graph's summary for `graphshard inspect` and the ingest step: types, counts, chunks, features (dtype,
shape, format, files, bytes), from the files' headers only (a csv file up to CSV_SCAN_LIMIT: a scan of its bytes)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, as_graph
from graphshard.formats.readers import Header, common_dtype, edge_reader, reader_for
from graphshard.precheck import HEADER_READS
from graphshard.storage import Location, Storage
from graphshard.storage.overlap import each


def _spec_summary(graph: ChunkedGraph, spec: ChunkFileSpec, rows: int, headers: dict[int, list[Header]]) -> dict:
    """Format, file count, bytes, the dtype its rows are read as and their shape (`headers`: `_headers`), and whether
    that dtype is known for certain: false when a csv file over CSV_SCAN_LIMIT read as whole numbers from its first
    block may hold a float further on (the steps, which read every row, then use float64)."""
    found = headers[id(spec)]
    dtype = _read_dtype([head.dtype for head in found])
    return {
        "format": spec.format.name,
        "files": len(spec.data),
        "bytes": sum(f.size() for f in map(graph.file, spec.data) if f.exists()),
        "dtype": str(dtype),
        "dtype_known": not (dtype.kind in "iu" and any(head.rows is None for head in found)),
        "shape": [rows, *found[0].row_shape],
    }


def _read_dtype(dtypes: list[np.dtype]) -> np.dtype:
    """The dtype the steps read (and write) a feature's rows as, from its files' dtypes in order: their common one,
    as `RowIndex` casts to (a csv of whole numbers beside one of floats: float64), else the first file's."""
    common = common_dtype(set(dtypes))
    return dtypes[0] if common is None else common


def _headers(graph: ChunkedGraph, specs: list[ChunkFileSpec], first_only: list[ChunkFileSpec]) -> dict[int, list]:
    """By `id(spec)`, the header of every file of `specs` (a feature's files may infer different dtypes) and of the
    first file of `first_only` (edge structures: their IDs are read as int64 whatever the files hold). On a store all
    at once (a round trip each, ~50 ms on the local S3 server, where one after another they were most of the ingest
    step's bookkeeping)."""
    jobs = [(spec, p, reader_for(spec.format)) for spec in specs for p in spec.data] + \
        [(spec, spec.data[0], edge_reader(spec.format)) for spec in first_only]
    headers = each(lambda job: job[2].header(graph.file(job[1]), job[0].format), jobs, not graph.base.is_local,
                   HEADER_READS)
    out: dict[int, list] = {}
    for (spec, _, _), header in zip(jobs, headers):
        out.setdefault(id(spec), []).append(header)
    return out


def summary(graph: ChunkedGraph | str | Path | Location, storage: Storage | None = None) -> dict:
    """Types, counts, chunks, features (the dtype the steps write, shape, format, files, bytes) and total bytes, from
    headers only.

    Parameters
    ----------
    graph : ChunkedGraph, str, Path or Location
        The graph, or its metadata.json (or its folder): a path or a URL.
    storage : Storage, optional
        What a graph given by location is read through; None: credentials from the environment.

    Returns
    -------
    dict
        What `graphshard inspect` prints: `graph_name`, `metadata`, `num_nodes`, `num_edges`, `bytes`, `node_types`,
        `edge_types`.
    """
    graph = as_graph(graph, storage)
    heads = _headers(graph, [s for fs in [*graph.node_data.values(), *graph.edge_data.values()] for s in fs.values()],
                   list(graph.edges.values()))

    nodes = {}
    for i, nt in enumerate(graph.node_type):
        n = graph.num_nodes(nt)
        nodes[nt] = {"count": n, "chunks": list(graph.num_nodes_per_chunk[i]),
                     "features": {f: _spec_summary(graph, s, n, heads) for f, s in graph.node_data.get(nt, {}).items()}}
    edges = {}
    for i, et in enumerate(graph.edge_type):
        e = graph.num_edges(et)
        structure = _spec_summary(graph, graph.edges[et], e, heads)
        edges[et] = {"count": e, "chunks": list(graph.num_edges_per_chunk[i]), "format": structure["format"],
                     "bytes": structure["bytes"],
                     "features": {f: _spec_summary(graph, s, e, heads) for f, s in graph.edge_data.get(et, {}).items()}}
    total = sum(t["bytes"] for t in edges.values())
    total += sum(f["bytes"] for t in [*nodes.values(), *edges.values()] for f in t["features"].values())
    return {"graph_name": graph.graph_name, "metadata": str(graph.metadata_path), "num_nodes": graph.total_nodes,
            "num_edges": graph.total_edges, "bytes": total, "node_types": nodes, "edge_types": edges}

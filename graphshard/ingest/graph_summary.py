"""A chunked graph's summary for `graphshard inspect` and the ingest step: types, counts, chunks, features (dtype,
shape, format, files, bytes), from the files' headers only."""

from __future__ import annotations

from pathlib import Path

from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, as_graph
from graphshard.formats.readers import reader_for
from graphshard.precheck import HEADER_READS
from graphshard.storage import Location, Storage
from graphshard.storage.overlap import each


def _spec_summary(graph: ChunkedGraph, spec: ChunkFileSpec, rows: int, heads: dict[int, object]) -> dict:
    """Format, file count, bytes, and dtype/shape from the first file's head (`heads`: `_heads`)."""
    head = heads[id(spec)]
    return {
        "format": spec.format.name,
        "files": len(spec.data),
        "bytes": sum(f.size() for f in map(graph.file, spec.data) if f.exists()),
        "dtype": str(head.dtype),
        "shape": [rows, *head.shape[1:]],
    }


def _heads(graph: ChunkedGraph, specs: list[ChunkFileSpec]) -> dict[int, object]:
    """Each spec's first-file head, by `id(spec)`: on a store all at once (a round trip each, ~50 ms on the local S3
    server, where one after another they were most of the ingest step's bookkeeping)."""
    heads = each(lambda spec: reader_for(spec.format).head(graph.file(spec.data[0]), spec.format), specs,
                 not graph.base.is_local, HEADER_READS)
    return {id(spec): head for spec, head in zip(specs, heads)}


def summary(graph: ChunkedGraph | str | Path | Location, storage: Storage | None = None) -> dict:
    """Types, counts, chunks, features (dtype, shape, format, files, bytes) and total bytes, from headers only.

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
    heads = _heads(graph, [*(s for fs in graph.node_data.values() for s in fs.values()),
                           *graph.edges.values(), *(s for fs in graph.edge_data.values() for s in fs.values())])

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

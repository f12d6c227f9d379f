"""A chunked graph's fingerprint: every file's path, size and blake2b hash, the counts, and a digest over all of it
(the ingest step's `fingerprint.json`; two graphs with the same digest have the same bytes, wherever they lie)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from graphshard.digests import INPUT, hash_file
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import ChunkedGraph, as_graph
from graphshard.storage import Location, Storage
from graphshard.storage.locations import beside_link


def _display_path(graph: ChunkedGraph, p: str) -> str:
    """A file's path relative to the metadata folder when it lies inside it, else absolute (a URL on a store)."""
    if not graph.is_local:
        loc = graph.location(p)
        try:
            return loc.relative_to(graph.base)
        except GraphshardError:
            return loc.url
    path = beside_link(graph.path(p))
    try:
        return path.relative_to(Path(graph.base_dir).resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def fingerprint(graph: ChunkedGraph | str | Path | Location, storage: Storage | None = None) -> dict:
    """A manifest of the graph's content: every file's path, size and blake2b hash, the counts, and a digest of all.

    Two graphs with the same manifest digest have the same bytes, wherever they lie: use it as a cache key.

    Parameters
    ----------
    graph : ChunkedGraph, str, Path or Location
        The graph, or its metadata.json (or its folder): a path or a URL.
    storage : Storage, optional
        What a graph given by location is read through; None: credentials from the environment.

    Returns
    -------
    dict
        `graph_name`, `metadata_blake2b`, node and edge counts per type, `files` (path relative to the metadata folder
        when inside it, size, blake2b) and `digest`.
    """
    graph = as_graph(graph, storage)
    files = []
    for p in sorted(set(graph.data_files()), key=lambda q: _display_path(graph, q)):
        f = graph.file(p)
        if not f.exists():
            raise InputError(f.shown, "data", "an existing chunk file", "no such file")
        files.append({"path": _display_path(graph, p), "size": f.size(), INPUT: hash_file(f, INPUT)})
    metadata = json.dumps(graph.to_json_dict(), sort_keys=True)
    body = {
        "graph_name": graph.graph_name,
        "metadata_blake2b": hashlib.blake2b(metadata.encode(), digest_size=16).hexdigest(),
        "num_nodes_per_type": dict(zip(graph.node_type, map(int, graph.num_nodes_per_type))),
        "num_edges_per_type": dict(zip(graph.edge_type, map(int, graph.num_edges_per_type))),
        "files": files,
    }
    digest = hashlib.blake2b(json.dumps(body, sort_keys=True).encode(), digest_size=16).hexdigest()
    return {**body, "digest": digest}



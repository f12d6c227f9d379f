"""Ingest: check a chunked graph file by file, fingerprint it (a content manifest), summarize it for `inspect`.

The check opens every chunk file; each file is one unit of work (a Dask task when a client is given), so memory is
bounded by one chunk. It collects every problem instead of stopping at the first.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.dasktasks import run_tasks
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, load_metadata
from graphshard.formats.readers import read_edge_chunk, reader_for
from graphshard.fsutil import hash_file

VALID_KINDS = "biuf"  # bool, signed, unsigned, float: what DGL's NDArray can hold


def _graph(graph: ChunkedGraph | str | Path) -> ChunkedGraph:
    return graph if isinstance(graph, ChunkedGraph) else load_metadata(graph)


def _with_field(err: InputError, field: str) -> InputError:
    """A reader's error (which knows the file) completed with the metadata field that names the file."""
    return err if err.field else InputError(err.file, field, err.expected, err.found)


# ---- per-file checks (run on workers) ---------------------------------------------------------------------------

def check_edge_chunk(graph: ChunkedGraph, etype: str, chunk: int) -> list[GraphshardError]:
    """One edge file: readable, 2 integer columns, the row count of num_edges_per_chunk, src/dst within their types."""
    field = f"edges['{etype}'].data[{chunk}]"
    path = graph.path(graph.edges[etype].data[chunk])
    try:
        src, dst = read_edge_chunk(graph, etype, chunk)
    except InputError as err:
        return [_with_field(err, field)]
    problems: list[GraphshardError] = []
    expected = graph.num_edges_per_chunk[graph.etype_id(etype)][chunk]
    if len(src) != expected:
        problems.append(InputError(path, field, f"{expected} rows (num_edges_per_chunk)", f"{len(src)} rows"))
    canonical = graph.canonical(etype)
    for end, ids, ntype in (("src", src, canonical.src), ("dst", dst, canonical.dst)):
        n = graph.num_nodes(ntype)
        bad = np.flatnonzero((ids < 0) | (ids >= n))
        if len(bad):
            problems.append(InputError(
                path, f"{field} {end}", f"{ntype} IDs in [0, {n})",
                f"{len(bad)} out of range, first {int(ids[bad[0]])} at row {int(bad[0])}"))
    return problems


@dataclass(frozen=True)
class FileStat:
    """What a feature file holds: its rows, the shape of one row, the dtype; or the problems found opening it."""

    rows: int
    row_shape: tuple[int, ...]
    dtype: str
    problems: tuple[GraphshardError, ...] = ()


def check_feature_file(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int, field: str) -> FileStat:
    """One feature file: readable, 1-D or 2-D, numeric or bool."""
    path = graph.path(spec.data[chunk])
    field = f"{field}.data[{chunk}]"
    try:
        arr = reader_for(spec.format).table(path, spec.format)
    except InputError as err:
        return FileStat(0, (), "", (_with_field(err, field),))
    problems = []
    if arr.ndim not in (1, 2):
        problems.append(InputError(path, field, "a 1-D or 2-D array", f"{arr.ndim}-D array of shape {arr.shape}"))
    if arr.dtype.kind not in VALID_KINDS:
        problems.append(InputError(path, field, "a numeric or bool dtype", f"dtype {arr.dtype}"))
    rows = int(arr.shape[0]) if arr.ndim else 0
    return FileStat(rows, tuple(int(x) for x in arr.shape[1:]), str(arr.dtype), tuple(problems))


def _feature_problems(graph: ChunkedGraph, field: str, spec: ChunkFileSpec, stats: list[FileStat],
                      expected_rows: int) -> list[GraphshardError]:
    """Problems across the files of one feature: total rows, the same row shape and dtype in every file."""
    problems = [p for s in stats for p in s.problems]
    if problems:
        return problems
    first = graph.path(spec.data[0])
    total = sum(s.rows for s in stats)
    if total != expected_rows:
        per_file = ", ".join(str(s.rows) for s in stats)
        problems.append(InputError(first, field, f"{expected_rows} rows in all (the type's count)",
                                   f"{total} rows ({per_file} per file)"))
    for i, s in enumerate(stats[1:], start=1):
        if (s.row_shape, s.dtype) != (stats[0].row_shape, stats[0].dtype):
            problems.append(InputError(graph.path(spec.data[i]), f"{field}.data[{i}]",
                                       f"rows of shape {stats[0].row_shape} and dtype {stats[0].dtype} as in file 0",
                                       f"shape {s.row_shape}, dtype {s.dtype}"))
    return problems


def _features(graph: ChunkedGraph) -> list[tuple[str, ChunkFileSpec, int]]:
    """Every feature spec as (field path, spec, expected total rows)."""
    out = [(f"node_data['{nt}']['{f}']", spec, graph.num_nodes(nt))
           for nt, feats in graph.node_data.items() for f, spec in feats.items()]
    out += [(f"edge_data['{et}']['{f}']", spec, graph.num_edges(et))
            for et, feats in graph.edge_data.items() for f, spec in feats.items()]
    return out


def check_graph(graph: ChunkedGraph | str | Path, client=None) -> list[GraphshardError]:
    """Open every file of a chunked graph and return every problem found (empty when the graph is sound).

    With a `distributed.Client`, each file is checked by one task on the cluster. A metadata.json that does not load
    is returned as the single problem.
    """
    try:
        graph = _graph(graph)
    except GraphshardError as err:
        return [err]
    edge_jobs = [(check_edge_chunk, et, i) for et in graph.edge_type for i in range(len(graph.edges[et].data))]
    feature_jobs = [(check_feature_file, spec, i, field)
                    for field, spec, _ in _features(graph) for i in range(len(spec.data))]
    results = _run(graph, edge_jobs + feature_jobs, client)
    problems = [p for r in results[:len(edge_jobs)] for p in r]
    stats = iter(results[len(edge_jobs):])
    for field, spec, expected in _features(graph):
        problems += _feature_problems(graph, field, spec, [next(stats) for _ in spec.data], expected)
    return problems


def _call(job: tuple, *, graph: ChunkedGraph):
    """One check job `(fn, *args)` as fn(graph, *args)."""
    fn, *args = job
    return fn(graph, *args)


def _run(graph: ChunkedGraph, jobs: list[tuple], client) -> list:
    """Every job `(fn, *args)` as fn(graph, *args): here, or one Dask task each named by its file (graph sent once)."""
    shared = client.scatter(graph, broadcast=True) if client is not None else graph
    return run_tasks(client, "ingest", "check-file", _call, jobs, label=lambda job: _job_file(graph, job),
                     graph=shared)


def _job_file(graph: ChunkedGraph, job: tuple) -> str:
    """The file a check job opens, relative to the graph's folder: the task's label."""
    fn, *args = job
    entry = graph.edges[args[0]].data[args[1]] if fn is check_edge_chunk else args[0].data[args[1]]
    return str(entry)


# ---- fingerprint --------------------------------------------------------------------------------------------------

def _spec_files(graph: ChunkedGraph) -> list[str]:
    files = [p for et in graph.edge_type for p in graph.edges[et].data]
    files += [p for _, spec, _ in _features(graph) for p in spec.data]
    return files


def _display_path(graph: ChunkedGraph, p: str) -> str:
    """A file's path relative to the metadata folder when it lies inside it, else absolute."""
    path = graph.path(p).resolve()
    try:
        return path.relative_to(Path(graph.base_dir).resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def fingerprint(graph: ChunkedGraph | str | Path) -> dict:
    """A manifest of the graph's content: every file's path, size and blake2b hash, the counts, and a digest of all.

    Two graphs with the same manifest digest have the same bytes, wherever they lie: use it as a cache key.
    """
    graph = _graph(graph)
    files = []
    for p in sorted(set(_spec_files(graph)), key=lambda q: _display_path(graph, q)):
        path = graph.path(p)
        if not path.exists():
            raise InputError(path, "data", "an existing chunk file", "no such file")
        files.append({"path": _display_path(graph, p), "size": path.stat().st_size, "blake2b": hash_file(path)})
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


# ---- summary ------------------------------------------------------------------------------------------------------

def _spec_summary(graph: ChunkedGraph, spec: ChunkFileSpec, rows: int) -> dict:
    """Format, file count, bytes, and dtype/shape read from the first file's head."""
    head = reader_for(spec.format).head(graph.path(spec.data[0]), spec.format)
    return {
        "format": spec.format.name,
        "files": len(spec.data),
        "bytes": sum(graph.path(p).stat().st_size for p in spec.data if graph.path(p).exists()),
        "dtype": str(head.dtype),
        "shape": [rows, *head.shape[1:]],
    }


def summary(graph: ChunkedGraph | str | Path) -> dict:
    """Types, counts, chunks, features (dtype, shape, format, files, bytes) and total bytes, from headers only."""
    graph = _graph(graph)
    nodes = {}
    for i, nt in enumerate(graph.node_type):
        n = graph.num_nodes(nt)
        nodes[nt] = {"count": n, "chunks": list(graph.num_nodes_per_chunk[i]),
                     "features": {f: _spec_summary(graph, s, n) for f, s in graph.node_data.get(nt, {}).items()}}
    edges = {}
    for i, et in enumerate(graph.edge_type):
        e = graph.num_edges(et)
        structure = _spec_summary(graph, graph.edges[et], e)
        edges[et] = {"count": e, "chunks": list(graph.num_edges_per_chunk[i]), "format": structure["format"],
                     "bytes": structure["bytes"],
                     "features": {f: _spec_summary(graph, s, e) for f, s in graph.edge_data.get(et, {}).items()}}
    total = sum(t["bytes"] for t in edges.values())
    total += sum(f["bytes"] for t in [*nodes.values(), *edges.values()] for f in t["features"].values())
    return {"graph_name": graph.graph_name, "metadata": str(graph.metadata_path), "num_nodes": graph.total_nodes,
            "num_edges": graph.total_edges, "bytes": total, "node_types": nodes, "edge_types": edges}

"""The ingest step: check a chunked graph file by file (`check_graph`), hashing each file as it is read when asked
(`check_and_hash`).

The check opens every chunk file; each file is one unit of work (a Dask task when a client is given), so memory is
bounded by one chunk. It collects every problem instead of stopping at the first.
"""

from __future__ import annotations

from pathlib import Path

from graphshard.daskrun import run_tasks
from graphshard.digests import INPUT, FileDigest, hashed_bytes, hashed_read
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, as_graph
from graphshard.formats.readers import edge_field, id_problems, read_edge_chunk, reader_for
from graphshard.precheck import FileStat, edge_rows_problem, feature_problems, feature_specs, file_stat, with_field
from graphshard.storage import Location, Storage, StorageError, location

Graph = ChunkedGraph | str | Path | Location  # a loaded graph, or its metadata.json (or folder) as a path or URL

# ---- per-file checks (run on workers) ---------------------------------------------------------------------------

def check_edge_chunk(graph: ChunkedGraph, etype: str, chunk: int) -> list[GraphshardError]:
    """One edge file: readable, 2 integer columns with src/dst within their types, the row count of
    num_edges_per_chunk."""
    try:
        src, dst = read_edge_chunk(graph, etype, chunk, check_ids=False)
    except InputError as err:
        return [with_field(err, edge_field(etype, chunk))]
    rows_problem = edge_rows_problem(graph, etype, chunk, len(src))
    return ([rows_problem] if rows_problem is not None else []) + id_problems(graph, etype, chunk, src, dst)


def check_feature_file(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int, field: str) -> FileStat:
    """One feature file: readable, at least 1-D, numeric or bool."""
    path = graph.file(spec.data[chunk])
    field = f"{field}.data[{chunk}]"
    try:
        arr = reader_for(spec.format).table(path, spec.format)
    except InputError as err:
        return FileStat(0, (), "", (with_field(err, field),))
    if arr.ndim == 0:
        return FileStat(0, (), str(arr.dtype), (InputError(path.shown, field, "an array of rows (1-D or more)",
                                                           "a 0-D array"),))
    return file_stat(path, spec.format, field, int(arr.shape[0]), tuple(int(x) for x in arr.shape[1:]), arr.dtype)


def check_graph(graph: Graph, client=None, *, storage: Storage | None = None) -> list[GraphshardError]:
    """Open every file of a chunked graph and return every problem found (empty when the graph is sound).

    Parameters
    ----------
    graph : ChunkedGraph, str, Path or Location
        The graph, or its metadata.json (or its folder): a path or a URL.
    client : distributed.Client, optional
        One task per file on this cluster; None checks them here, one after another. Workers read the files
        themselves (from the store when the graph is at a URL).
    storage : Storage, optional
        What a graph given by location is read through; None: credentials from the environment.

    Returns
    -------
    list of GraphshardError
        Every problem, each naming its file and field; a metadata.json that does not load is the single problem.
    """
    return _check(graph, client, False, storage)[0]


def check_and_hash(graph: Graph, client=None, *, storage: Storage | None = None
                   ) -> tuple[list[GraphshardError], list[FileDigest]]:
    """`check_graph` plus each file's content digest, taken by the same task right after it read the file.

    One pass per file, the bytes in page cache (an object on a store: read once, hashed and checked from the same
    bytes); `digests.remember` the digests and `fingerprint` reads no file again.

    Parameters
    ----------
    graph : ChunkedGraph, str, Path or Location
        The graph, or its metadata.json (or its folder): a path or a URL.
    client : distributed.Client, optional
        One task per file on this cluster; None works here.
    storage : Storage, optional
        What a graph given by location is read through; None: credentials from the environment.

    Returns
    -------
    tuple of (list of GraphshardError, list of FileDigest)
        The problems, and the blake2b digest of every file that exists.
    """
    return _check(graph, client, True, storage)


def _check(graph: Graph, client, hash_files: bool, storage: Storage | None
           ) -> tuple[list[GraphshardError], list[FileDigest]]:
    try:
        graph = as_graph(graph, storage)
    except GraphshardError as err:
        return [err], []
    edge_jobs = [(check_edge_chunk, et, i) for et in graph.edge_type for i in range(len(graph.edges[et].data))]
    feature_jobs = [(check_feature_file, spec, i, field)
                    for field, spec, _ in feature_specs(graph) for i in range(len(spec.data))]
    results = _run(graph, edge_jobs + feature_jobs, client, hash_files)
    found = [d for _, d in results if d is not None]
    problems = [p for r, _ in results[:len(edge_jobs)] for p in r]
    stats = iter(r for r, _ in results[len(edge_jobs):])
    for field, spec, expected in feature_specs(graph):
        problems += feature_problems(graph, field, spec, [next(stats) for _ in spec.data], expected)
    return _unshared(problems) or problems, found


def _unshared(problems: list[GraphshardError]) -> list[GraphshardError]:
    """The workers found no file that this host has: not bad input but a cluster without this host's filesystem.
    One problem saying so (the first such file, how many more), or none when every missing file is missing here."""
    unseen = [p.file for p in problems if isinstance(p, InputError) and p.found == "no such file" and p.file
              and location(p.file).is_local and Path(p.file).is_file()]
    if not unseen or len(unseen) < len(problems):
        return []
    more = f" (and {len(unseen) - 1} more input files)" if len(unseen) > 1 else ""
    return [GraphshardError(f"ingest: {unseen[0]}{more} exists on this host but the Dask workers found no such file: "
                            "the workers do not share this host's filesystem; put the input where every worker "
                            "reads it (a shared folder or s3://)")]


def _call(job: tuple, *, graph: ChunkedGraph, hash_files: bool) -> tuple[object, FileDigest | None]:
    """One check job `(fn, *args)` as fn(graph, *args), and the digest of the file it read (when asked and it
    exists: a missing file is a problem the check reports). An object is read once, in one GET whose response also
    gives its identity (no HEAD: `Storage.read_identified`), hashed, then checked from the same bytes."""
    fn, *args = job
    f = graph.file(_job_file(graph, job))
    if not hash_files or (f.is_local and not f.exists()):
        return fn(graph, *args), None
    if f.is_local:
        return fn(graph, *args), hashed_read(f.loc.path, INPUT)
    try:
        digest, data = hashed_bytes(f, INPUT)
    except StorageError:  # missing or unreadable: the check reports it in its own words
        return fn(graph, *args), None
    return fn(graph.holding({f.loc: data}), *args), digest


def _run(graph: ChunkedGraph, jobs: list[tuple], client, hash_files: bool) -> list:
    """Every job `(fn, *args)` as fn(graph, *args): here, or one Dask task each named by its file (the graph sent once
    to each worker, under a key of this task group's own, released when it ends: no cached listing outlives it)."""
    return run_tasks(client, "ingest", "check-file", _call, jobs, label=lambda job: _job_file(graph, job),
                     share=("graph",), graph=graph, hash_files=hash_files)


def _job_file(graph: ChunkedGraph, job: tuple) -> str:
    """The file a check job opens, relative to the graph's folder: the task's label."""
    fn, *args = job
    entry = graph.edges[args[0]].data[args[1]] if fn is check_edge_chunk else args[0].data[args[1]]
    return str(entry)

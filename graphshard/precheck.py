"""Cheap checks of a step's input before any work is submitted: file headers and footers, never the data.

Per chunk file: it exists, its header reads (npy header and size, parquet footer and first row, csv first block),
its row count matches the metadata, edge chunks hold exactly two integer ID columns, features are 1-D or 2-D of a
dtype DGL files can hold, and a feature's files agree on row shape and dtype. Milliseconds per file whatever the
graph's size; what needs the data itself (ID ranges, row counts of csv files above CSV_SCAN_LIMIT) is checked by
`graphshard.ingest.check_graph` and by the steps' own readers.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.digests import identity_of
from graphshard.errors import GraphshardError, InputError, ProblemList
from graphshard.formats.assignment import META_FILE, read_meta
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, FileFormat, as_graph
from graphshard.formats.readers import (
    CSV_SCAN_LIMIT,
    READERS,
    VALID_KINDS,
    Header,
    common_dtype,
    edge_field,
    edge_ids_problem,
    edge_reader,
    not_numeric_problem,
    reader_for,
    unloadable_dtype,
)
from graphshard.storage import Location, Storage, StoredFile, location
from graphshard.storage.overlap import each

log = logging.getLogger(__name__)
HEADER_READS = 16  # headers read at a time from a store
_PASSED: set[tuple] = set()  # `input_state`s whose headers passed `precheck` in this process


@dataclass(frozen=True)
class FileStat:
    """What a feature file holds: its rows (None: not counted), the shape of one row, the dtype; or its problems."""

    rows: int | None
    row_shape: tuple[int, ...]
    dtype: str
    problems: tuple[GraphshardError, ...] = ()


def with_field(err: InputError, field: str) -> InputError:
    """A reader's error (which knows the file) completed with the metadata field that names the file."""
    return err if err.field else InputError(err.file, field, err.expected, err.found)


def file_stat(path: StoredFile, fmt: FileFormat, field: str, rows: int | None, row_shape: tuple[int, ...],
              dtype: np.dtype) -> FileStat:
    """A feature file's stat with its problems: numeric or bool, no uint16/32/64 nor float128 (`unloadable_dtype`);
    rows of any shape (a 3-D array's rows are matrices, as DGL partitions them)."""
    problems = []
    if dtype.kind not in VALID_KINDS:
        problems.append(not_numeric_problem(path, fmt, field, dtype))
    elif (wide := unloadable_dtype(dtype)) is not None:
        problems.append(InputError(path, field, *wide))
    return FileStat(rows, row_shape, str(dtype), tuple(problems))


def feature_specs(graph: ChunkedGraph) -> list[tuple[str, ChunkFileSpec, int]]:
    """Every feature spec as (field path, spec, expected total rows)."""
    out = [(f"node_data['{nt}']['{f}']", spec, graph.num_nodes(nt))
           for nt, feats in graph.node_data.items() for f, spec in feats.items()]
    out += [(f"edge_data['{et}']['{f}']", spec, graph.num_edges(et))
            for et, feats in graph.edge_data.items() for f, spec in feats.items()]
    return out


def feature_problems(graph: ChunkedGraph, field: str, spec: ChunkFileSpec, stats: list[FileStat],
                     expected_rows: int) -> list[GraphshardError]:
    """Problems across the files of one feature: total rows (when counted), the same row shape and dtype in every
    file with rows (an empty chunk file, e.g. an empty csv, has neither to compare)."""
    problems = [p for s in stats for p in s.problems]
    if problems:
        return problems
    rows = [s.rows for s in stats]
    if None not in rows and sum(rows) != expected_rows:
        problems.append(InputError(graph.path(spec.data[0]), field, f"{expected_rows} rows in all (the type's count)",
                                   f"{sum(rows)} rows ({', '.join(map(str, rows))} per file)"))
    filled = [(i, s) for i, s in enumerate(stats) if s.rows != 0]  # an empty file has no rows to disagree with
    if not filled:
        return problems
    (first, ref), shared = filled[0], common_dtype({np.dtype(s.dtype) for _, s in filled}) is not None
    for i, s in filled[1:]:  # shared: e.g. a csv of whole numbers beside one of floats
        if s.row_shape != ref.row_shape or (s.dtype != ref.dtype and not shared):
            problems.append(InputError(graph.path(spec.data[i]), f"{field}.data[{i}]",
                                       f"rows of shape {ref.row_shape} and dtype {ref.dtype} as in file {first}",
                                       f"shape {s.row_shape}, dtype {s.dtype}"))
    return problems


def _header(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int, field: str, edges: bool = False) -> Header:
    """One file's header (`edges`: of an edge file, a parquet one's first two columns), its errors naming the
    metadata field."""
    try:
        reader = edge_reader(spec.format) if edges else reader_for(spec.format)
        return reader.header(graph.file(spec.data[chunk]), spec.format)
    except InputError as err:
        raise with_field(err, field) from None


def edge_rows_problem(graph: ChunkedGraph, etype: str, chunk: int, rows: int | None) -> InputError | None:
    """An edge chunk's row count against the metadata's num_edges_per_chunk; None when equal or not counted."""
    expected = graph.num_edges_per_chunk[graph.etype_id(etype)][chunk]
    if rows is None or rows == expected:
        return None
    return InputError(graph.path(graph.edges[etype].data[chunk]), edge_field(etype, chunk),
                      f"{expected} rows (num_edges_per_chunk)", f"{rows} rows")


def _edge_file(graph: ChunkedGraph, etype: str, chunk: int) -> GraphshardError | None:
    """One edge chunk from its header: the metadata's row count, exactly two integer ID columns."""
    spec, field = graph.edges[etype], edge_field(etype, chunk)
    try:
        head = _header(graph, spec, chunk, field, edges=True)
    except InputError as err:
        return err
    if head.rows == 0:  # an empty file has no columns to check: its row count is what is wrong, if anything
        return edge_rows_problem(graph, etype, chunk, 0)
    problem = edge_ids_problem(graph.file(spec.data[chunk]), field, spec.format, head.row_shape, head.dtype)
    return problem if problem is not None else edge_rows_problem(graph, etype, chunk, head.rows)


def _feature_stat(graph: ChunkedGraph, spec: ChunkFileSpec, chunk: int, field: str) -> FileStat:
    field = f"{field}.data[{chunk}]"
    try:
        head = _header(graph, spec, chunk, field)
    except InputError as err:
        return FileStat(0, (), "", (err,))
    return file_stat(graph.file(spec.data[chunk]), spec.format, field, head.rows, head.row_shape, head.dtype)


def precheck(graph: ChunkedGraph | str | Path, storage: Storage | None = None) -> list[GraphshardError]:
    """Every problem the chunk files' headers show (ms per file at any size): run before any work is submitted.

    Parameters
    ----------
    graph : ChunkedGraph, str or Path
        The graph, or its metadata.json (or its folder): a path or a URL.
    storage : Storage, optional
        What a graph given by location is read through; None: credentials from the environment.

    Returns
    -------
    list of GraphshardError
        Empty when the headers look sound; a metadata.json that does not load is the single problem.
    """
    try:
        graph = as_graph(graph, storage)
    except GraphshardError as err:
        return [err]
    edges = _each(graph, _edge_file, [(et, c) for et in graph.edge_type for c in range(len(graph.edges[et].data))])
    problems = [p for p in edges if p is not None]
    for et in graph.edge_type:
        _warn_repeated(f"edges['{et}']", graph.edges[et], graph.num_edges_per_chunk[graph.etype_id(et)])
    for field, spec, expected in feature_specs(graph):
        stats = _each(graph, _feature_stat, [(spec, c, field) for c in range(len(spec.data))])
        problems += feature_problems(graph, field, spec, stats, expected)
        _warn_repeated(field, spec, [st.rows for st in stats])
    return problems


def _warn_repeated(field: str, spec: ChunkFileSpec, rows: list[int | None]) -> None:
    """A warning for a file listed again in the same `data` list with rows in it: its rows are read twice (as DGL
    reads them), most likely a copy-paste slip that loses another chunk's rows; one empty file standing for several
    empty chunks is fine."""
    first: dict[str, int] = {}
    for i, (path, n) in enumerate(zip(spec.data, rows)):
        if path in first and n != 0:
            log.warning("%s.data[%d] is the same file as data[%d] (%s): its %srows are read twice; list each "
                        "chunk's own file", field, i, first[path], path, "" if n is None else f"{n} ")
        first.setdefault(path, i)


def precheck_once(graph: ChunkedGraph) -> list[GraphshardError]:
    """`precheck`, answered without reading a header when the same input passed it before in this process: the same
    metadata and every chunk file in the same state (`input_state`). `graphshard run` checks in the command and
    again in the flow it calls (a deployment run calls the flow alone, which then checks in full); on a store the
    second check's headers were 20-40 more round trips."""
    state = input_state(graph)
    if state is not None and state in _PASSED:
        return []
    problems = precheck(graph)
    if state is not None and not problems:
        _PASSED.add(state)
    return problems


def input_state(graph: ChunkedGraph) -> tuple | None:
    """What the headers' verdict depends on: the metadata (as parsed, and where it is) and every chunk file's
    identity (a local file's stat; an object's URL, ETag and size, from the listing `load_metadata` took: no
    request). None when a file cannot be identified (missing: `precheck` says so)."""
    try:
        files = tuple(identity_of(graph.file(p)) for p in graph.data_files())
    except (OSError, GraphshardError):
        return None
    metadata = json.dumps(graph.to_json_dict(), sort_keys=True)
    return str(graph.metadata_path), hashlib.blake2b(metadata.encode(), digest_size=16).hexdigest(), files


def _each(graph: ChunkedGraph, check, items: list[tuple]) -> list:
    """`check(graph, *item)` per item, in order; a graph on a store's `HEADER_READS` at a time (each header is a
    request's round trip: 40 input files took 2 s one after the other at 50 ms each on the local S3 server)."""
    return each(lambda it: check(graph, *it), items, not graph.base.is_local, HEADER_READS)


def precheck_assignment(graph: ChunkedGraph, folder: str | Path | Location) -> list[GraphshardError]:
    """An assignment folder (a path or a URL, read with the graph's storage) before use: partition_meta.json reads,
    every `<ntype>.txt` exists with a line per node."""
    loc = location(folder)
    shown = Path(loc.path) if loc.is_local else loc
    found = Path(loc.path).is_dir() if loc.is_local else graph.storage.exists(loc.join(META_FILE))
    if not found:
        return [InputError(shown, None, f"an assignment folder (<ntype>.txt files + {META_FILE})", "no such folder")]
    try:
        read_meta(loc, graph.storage)
    except GraphshardError as err:
        return [err]
    problems: list[GraphshardError] = []
    for nt in graph.node_type:
        f, n = StoredFile(loc.join(f"{nt}.txt"), graph.storage), graph.num_nodes(nt)
        if not f.exists():
            problems.append(InputError(f.shown, f"node type '{nt}'", f"an assignment file with {n} lines",
                                       "no such file"))
        elif f.size() <= CSV_SCAN_LIMIT:
            lines = READERS["csv"].num_rows(f, FileFormat(name="csv"))
            if lines != n:
                problems.append(InputError(f.shown, "line count", f"{n} lines (one per '{nt}' node)",
                                           f"{lines} lines"))
    return problems


def refuse(problems: list[GraphshardError]) -> None:
    """Raise the problems found: the one problem itself, or all of them together."""
    if len(problems) == 1:
        raise problems[0]
    if problems:
        raise ProblemList(problems)


def checked_graph(metadata: str | Path | ChunkedGraph, storage: Storage | None = None) -> ChunkedGraph:
    """The parsed metadata.json (a path or URL) once its chunk files' headers passed `precheck`; raises the problems
    otherwise."""
    graph = as_graph(metadata, storage)
    refuse(precheck(graph))
    return graph

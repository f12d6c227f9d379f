"""Comparison with the input chunked graph (§5.5-6) through the original-ID files.

Edges are compared in new IDs: a partition holds, per inner edge, (original edge ID, new src, new dst); the input
edge with that original ID, its ends mapped original -> new (the `node_new_<t>` arrays of phase one), must be equal.
Features: the row of each original ID. Partition side (scan.py): a checksum over every row plus sampled rows.
Input side (`input_chunk_sums`, one task per chunk file): the same checksums over the input rows, split by the
partition that owns each row (the owner of an edge's destination). `compare` checks rows one by one (the sample, or
every row with --full), reading the input rows from the chunk files. sampling.py says what this proves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, load_metadata
from graphshard.formats.readers import RowIndex, read_edge_chunk, read_rows, reader_for
from graphshard.validate import hashing
from graphshard.validate.layout import Layout
from graphshard.validate.problems import Problem
from graphshard.validate.scratch import Scratch


def gather_rows(graph: ChunkedGraph, spec: ChunkFileSpec, ids: np.ndarray, index: RowIndex) -> np.ndarray:
    """Input rows at global row positions `ids`, reading one chunk file at a time (numpy chunks are memory-mapped)."""
    reader = reader_for(spec.format)
    chunk = np.searchsorted(index.offsets, ids, side="right") - 1
    out = None
    for c in np.unique(chunk):
        table = reader.table(graph.path(spec.data[c]), spec.format)
        sel = np.flatnonzero(chunk == c)
        rows = np.asarray(table[ids[sel] - index.offsets[c]])
        if out is None:
            out = np.empty((ids.shape[0],) + rows.shape[1:], dtype=rows.dtype)
        out[sel] = rows
    if out is None:
        out = np.asarray(reader.table(graph.path(spec.data[0]), spec.format)[:0])
    return out


def _lookup(scratch: Scratch, name: str, ids: np.ndarray) -> np.ndarray:
    """Entries of scratch array `name` at `ids` (-1 where an ID is out of range)."""
    arr = scratch.open(name)
    if ids.size and ids.min() >= 0 and ids.max() < arr.shape[0]:  # the usual case: one gather, no masks
        return np.asarray(arr[ids])
    ok = (ids >= 0) & (ids < arr.shape[0])
    return np.where(ok, np.asarray(arr[np.where(ok, ids, 0)]), -1)


def to_new(scratch: Scratch, layout: Layout, ntype: str, ids: np.ndarray) -> np.ndarray:
    """Original per-type node IDs -> new homogeneous IDs (-1 where no partition listed the ID)."""
    return _lookup(scratch, f"node_new_{layout.ntypes.index(ntype)}", ids)


def owner_of(scratch: Scratch, layout: Layout, ntype: str, ids: np.ndarray) -> np.ndarray:
    """Original per-type node IDs -> the partition that lists them (-1 where none does): direct indexing."""
    return _lookup(scratch, f"node_owner_{layout.ntypes.index(ntype)}", ids)


def new_ends(scratch: Scratch, layout: Layout, etype: str, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """(n, 2) new homogeneous IDs of edge ends given in original per-type IDs."""
    s, _, d = etype.split(":")
    return np.stack([to_new(scratch, layout, s, src), to_new(scratch, layout, d, dst)], axis=1)


def _spec(graph: ChunkedGraph, kind: str, key: str) -> ChunkFileSpec | None:
    if kind == "edges":
        return graph.edges.get(key)
    typ, feat = key.rsplit("/", 1)
    return (graph.node_data if kind == "node_feat" else graph.edge_data).get(typ, {}).get(feat)


def _row(values: np.ndarray, limit: int = 6) -> str:
    """A short rendering of one row for a message."""
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:limit].tolist())
    return f"[{shown}{', ...' if values.shape[0] > limit else ''}]"


def compare(layout: Layout, graph: ChunkedGraph, scratch: Scratch, part: int, kind: str, key: str,
            orig: np.ndarray, rows: np.ndarray, file: str) -> list[Problem]:
    """Rows one by one against the input rows of their original IDs; names the first differing one."""
    spec = _spec(graph, kind, key)
    check = "edge-identity" if kind == "edges" else "feature-values"
    if spec is None:  # trainer_id is added by the assignment (§5.8), anything else must come from the input
        extra = kind != "edges" and key.rsplit("/", 1)[-1] != "trainer_id"
        return [Problem("features", f"'{key}' is not in the input graph", part, file)] if extra else []
    if orig.shape[0] == 0:
        return []
    want = gather_rows(graph, spec, orig, RowIndex.of(graph, spec))
    if kind == "edges":
        want = new_ends(scratch, layout, key, want[:, 0].astype(np.int64), want[:, 1].astype(np.int64))
    want = hashing.canonical(want)
    if want.dtype != rows.dtype:
        return [Problem("features", f"'{key}' has dtype {rows.dtype}, the input has {want.dtype}", part, file)]
    got2 = rows.reshape(rows.shape[0], -1) if rows.size else rows.reshape(rows.shape[0], 0)
    want2 = want.reshape(want.shape[0], -1) if want.size else want.reshape(want.shape[0], 0)
    if got2.shape != want2.shape:
        return [Problem(check, f"'{key}' rows have {got2.shape[1]} values, input rows {want2.shape[1]}", part, file)]
    bad = np.flatnonzero((hashing.row_words(got2) != hashing.row_words(want2)).any(axis=1))
    if not bad.size:
        return []
    i = int(bad[0])
    what = "new src, dst" if kind == "edges" else "row"
    return [Problem(check, f"'{key}': {bad.size} of {rows.shape[0]} compared rows differ from the input (first: "
                    f"original ID {int(orig[i])}: {what} {_row(got2[i])} here, {_row(want2[i])} from the input)",
                    part, file)]


def input_jobs(graph: ChunkedGraph) -> list[tuple[str, str, str, int]]:
    """(kind, type, feature, chunk) of every input chunk file the checksums read."""
    jobs = [("edges", et, "", i) for et in graph.edge_type for i in range(len(graph.edges[et].data))]
    for kind, data in (("node_feat", graph.node_data), ("edge_feat", graph.edge_data)):
        for typ, feats in data.items():
            jobs += [(kind, typ, f, i) for f, spec in feats.items() for i in range(len(spec.data))]
    return jobs


def input_chunk_sums(layout: Layout, metadata: Path, scratch: Scratch, job: tuple[str, str, str, int]) -> dict:
    """Checksums of one input chunk file's rows, per owning partition: {(kind, key): [sum per partition]}."""
    graph = load_metadata(metadata)
    kind, typ, feat, chunk = job
    if kind == "edges":
        if typ not in layout.etypes:
            return {}
        start = int(graph.edge_chunk_offsets(typ)[chunk])
        src, dst = read_edge_chunk(graph, typ, chunk)
        rows = new_ends(scratch, layout, typ, src, dst)
        owner, key = owner_of(scratch, layout, typ.split(":")[2], dst), typ  # an edge belongs to its dst's owner
    else:
        types = layout.ntypes if kind == "node_feat" else layout.etypes
        if typ not in types:
            return {}
        spec = _spec(graph, kind, f"{typ}/{feat}")
        start = int(RowIndex.of(graph, spec).offsets[chunk])
        rows = np.asarray(reader_for(spec.format).table(graph.path(spec.data[chunk]), spec.format))
        stop = start + rows.shape[0]
        if kind == "node_feat":
            owner = owner_of(scratch, layout, typ, np.arange(start, stop, dtype=np.int64))
        else:  # an edge row belongs to the owner of the edge's destination
            ends = read_rows(graph, graph.edges[typ], start, stop)
            owner = owner_of(scratch, layout, typ.split(":")[2], np.asarray(ends[:, 1], dtype=np.int64))
        key = f"{typ}/{feat}"
    ids = np.arange(start, start + rows.shape[0], dtype=np.int64)
    return {(kind, key): hashing.hash_sums_by_owner(ids, rows, owner, layout.num_parts)}

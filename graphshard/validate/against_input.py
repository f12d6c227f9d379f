"""Comparison with the input chunked graph (§5.5-6) through the original-ID files.

Edges are compared in new IDs: a partition holds, per inner edge, (original edge ID, new src, new dst); the input
edge with that original ID, its ends mapped original -> new (the `node_new_<t>` arrays of phase one), must be equal.
Features: the row of each original ID. Partition side (per_partition.py): a checksum over every row plus sampled rows.
Input side (`input_chunk_sums`, one task per chunk file): the same checksums over the input rows, split by the
partition that owns each row (the owner of an edge's destination). `compare` checks rows one by one (the sample, or
every row with --full), reading the input rows from the chunk files. sampling.py says what this proves.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.formats.assignment import TRAINER_FEAT
from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, load_metadata
from graphshard.formats.readers import (
    ChunkReader,
    RowIndex,
    edge_reader,
    edge_table,
    id_problems,
    read_chunk,
    read_edge_chunk,
    reader_for,
)
from graphshard.storage import Location
from graphshard.storage.windowed import take
from graphshard.validate import hashing
from graphshard.validate.layout import Layout
from graphshard.validate.piecewise import byte_pieces
from graphshard.validate.problems import Problem
from graphshard.validate.scratch import SharedArrays


def spec_reader(kind: str, spec: ChunkFileSpec) -> ChunkReader:
    """How the rows of a spec of `kind` are read: an edge file's as `edge_reader` (a parquet file's first two
    columns, src and dst, whatever follows them), a feature file's as its format's reader."""
    return edge_reader(spec.format) if kind == "edges" else reader_for(spec.format)


def gather_rows(graph: ChunkedGraph, spec: ChunkFileSpec, ids: np.ndarray, index: RowIndex,
                reader: ChunkReader | None = None) -> np.ndarray:
    """Input rows at global row positions `ids`, one chunk file at a time (numpy chunks: memory-mapped, or on a
    store only the runs of rows asked for, by ranged reads), as `reader` reads them (default: the format's)."""
    chunk = np.searchsorted(index.offsets, ids, side="right") - 1
    reader = reader or reader_for(spec.format)
    out = None
    for c in np.unique(chunk):
        sel = np.flatnonzero(chunk == c)
        rows = index.cast(reader.take(graph.file(spec.data[c]), spec.format, ids[sel] - index.offsets[c]))
        if out is None:
            out = np.empty((ids.shape[0],) + rows.shape[1:], dtype=rows.dtype)
        out[sel] = rows
    if out is None:
        out = index.cast(np.asarray(reader.rows(graph.file(spec.data[0]), spec.format, 0, 0))[:0])
    return out


def _lookup(scratch: SharedArrays, name: str, ids: np.ndarray) -> np.ndarray:
    """Entries of scratch array `name` at `ids` (-1 where an ID is out of range)."""
    arr = scratch.open(name)
    if ids.size and ids.min() >= 0 and ids.max() < arr.shape[0]:  # the usual case: one gather, no masks
        return take(arr, ids)
    ok = (ids >= 0) & (ids < arr.shape[0])
    return np.where(ok, take(arr, np.where(ok, ids, 0)), -1)


def to_new(scratch: SharedArrays, layout: Layout, ntype: str, ids: np.ndarray) -> np.ndarray:
    """Original per-type node IDs -> new homogeneous IDs (-1 where no partition listed the ID)."""
    return _lookup(scratch, f"node_new_{layout.ntypes.index(ntype)}", ids)


def owner_of(scratch: SharedArrays, layout: Layout, ntype: str, ids: np.ndarray) -> np.ndarray:
    """Original per-type node IDs -> the partition that lists them (-1 where none does): direct indexing."""
    return _lookup(scratch, f"node_owner_{layout.ntypes.index(ntype)}", ids)


def new_ends(scratch: SharedArrays, layout: Layout, etype: str, src: np.ndarray, dst: np.ndarray) -> np.ndarray:
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


@dataclass
class Tally:
    """What comparing rows one by one found: how many differ of how many, the first that differs (by its position
    among the compared rows, so that tallies of parts of the rows merge into the tally of all of them), or the
    problem that stopped the comparison (dtype or row width) as (check, message)."""

    bad: int = 0
    compared: int = 0
    first_at: int = -1
    first: str = ""
    fatal: tuple[str, str] | None = None

    def add(self, kind: str, key: str, orig: np.ndarray, rows: np.ndarray, want: np.ndarray,
            at: np.ndarray) -> None:
        """Rows against the input rows `want` of their original IDs `orig`; `at`: their positions."""
        if self.fatal is not None:
            return
        want = hashing.canonical(want)
        if want.dtype != rows.dtype:
            self.fatal = ("features", f"'{key}' has dtype {rows.dtype}, the input has {want.dtype}")
            return
        got2 = rows.reshape(rows.shape[0], -1) if rows.size else rows.reshape(rows.shape[0], 0)
        want2 = want.reshape(want.shape[0], -1) if want.size else want.reshape(want.shape[0], 0)
        if got2.shape != want2.shape:
            self.fatal = (_check(kind), f"'{key}' rows have {got2.shape[1]} values, input rows {want2.shape[1]}")
            return
        bad = np.flatnonzero((hashing.row_words(got2) != hashing.row_words(want2)).any(axis=1))
        if bad.size and (self.first_at < 0 or int(at[bad[0]]) < self.first_at):
            i = int(bad[0])
            what = "new src, dst" if kind == "edges" else "row"
            self.first_at = int(at[i])
            self.first = f"original ID {int(orig[i])}: {what} {_row(got2[i])} here, {_row(want2[i])} from the input"
        self.bad += int(bad.size)
        self.compared += rows.shape[0]

    def merged(self, other: Tally) -> Tally:
        """Both tallies' rows (the earlier fatal problem and first differing row)."""
        firsts = [t for t in (self, other) if t.first_at >= 0]
        first = min(firsts, key=lambda t: t.first_at) if firsts else self
        return Tally(self.bad + other.bad, self.compared + other.compared, first.first_at, first.first,
                     self.fatal or other.fatal)

    def problems(self, kind: str, key: str, part: int, file: str) -> list[Problem]:
        if self.fatal is not None:
            return [Problem(self.fatal[0], self.fatal[1], part, file)]
        if not self.bad:
            return []
        return [Problem(_check(kind), f"'{key}': {self.bad} of {self.compared} compared rows differ from the input "
                        f"(first: {self.first})", part, file)]


def _check(kind: str) -> str:
    return "edge-identity" if kind == "edges" else "feature-values"


def missing_key(graph: ChunkedGraph, kind: str, key: str, part: int, file: str) -> Problem | None:
    """A feature the partition holds that the input lacks (trainer_id is added by the assignment, §5.8)."""
    if _spec(graph, kind, key) is None and kind != "edges" and key.rsplit("/", 1)[-1] != TRAINER_FEAT:
        return Problem("features", f"'{key}' is not in the input graph", part, file)
    return None


class Comparison:
    """--full: rows one by one against the input rows of their original IDs, piece by piece (each piece's input rows
    gathered from the chunk files); names the first differing one."""

    def __init__(self, layout: Layout, graph: ChunkedGraph, scratch: SharedArrays, part: int, kind: str, key: str,
                 file: str, index: RowIndex | None = None):
        self.layout, self.graph, self.scratch, self.part, self.kind, self.key, self.file = (
            layout, graph, scratch, part, kind, key, file)
        self.spec, self.index = _spec(graph, kind, key), index
        self.fatal = missing_key(graph, kind, key, part, file)
        self.tally = Tally()

    def add(self, orig: np.ndarray, rows: np.ndarray) -> None:
        if self.fatal is not None or self.spec is None or orig.shape[0] == 0:
            return
        reader = spec_reader(self.kind, self.spec)
        self.index = self.index or RowIndex.of(self.graph, self.spec, reader)
        want = input_rows(self.scratch, self.layout, self.kind, self.key,
                          gather_rows(self.graph, self.spec, orig, self.index, reader))
        at = np.arange(self.tally.compared, self.tally.compared + orig.shape[0])
        self.tally.add(self.kind, self.key, orig, rows, want, at)

    def problems(self) -> list[Problem]:
        if self.fatal is not None:
            return [self.fatal]
        return self.tally.problems(self.kind, self.key, self.part, self.file)


def input_rows(scratch: SharedArrays, layout: Layout, kind: str, key: str, rows: np.ndarray) -> np.ndarray:
    """Input rows as a partition holds them: an edge's ends in new IDs, a feature row as it is."""
    if kind != "edges":
        return rows
    return new_ends(scratch, layout, key, rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64))


def sampled_tallies(layout: Layout, scratch: SharedArrays, kind: str, key: str, table, start: int,
                    samples: dict[int, tuple[np.ndarray, np.ndarray]]) -> dict[int, Tally]:
    """Per partition, its sampled rows whose original IDs lie in this chunk (rows `start` on, `table`) against the
    chunk's rows: every partition's samples of a chunk compared in the one read of it that the checksums make."""
    found = {}
    for part, (orig, rows) in sorted(samples.items()):
        at = np.flatnonzero((orig >= start) & (orig < start + table.shape[0]))
        if at.size:
            want = input_rows(scratch, layout, kind, key, np.asarray(table[orig[at] - start]))
            found[part] = Tally()
            found[part].add(kind, key, orig[at], rows[at], want, at)
    return found


def row_indexes(graph: ChunkedGraph) -> dict[tuple[str, str], RowIndex]:
    """Where the rows of every edge and feature spec live, from each input file's header, read once (the driver
    ships them to the tasks, which would otherwise read every header again per partition and per chunk)."""
    found = {("edges", et): RowIndex.of(graph, spec, edge_reader(spec.format)) for et, spec in graph.edges.items()}
    for kind, data in (("node_feat", graph.node_data), ("edge_feat", graph.edge_data)):
        found.update({(kind, f"{t}/{f}"): RowIndex.of(graph, spec) for t, feats in data.items()
                      for f, spec in feats.items()})
    return found


def input_jobs(graph: ChunkedGraph, edge_features: bool = True) -> list[tuple[str, str, str, int]]:
    """(kind, type, feature, chunk) of every input chunk file the checksums read; the edge features' only with
    `edge_features` (without orig_eids.dgl the partitions key no edge feature rows and no edge owners exist)."""
    jobs = [("edges", et, "", i) for et in graph.edge_type for i in range(len(graph.edges[et].data))]
    for kind, data in (("node_feat", graph.node_data), ("edge_feat", graph.edge_data if edge_features else {})):
        for typ, feats in data.items():
            jobs += [(kind, typ, f, i) for f, spec in feats.items() for i in range(len(spec.data))]
    return jobs


def input_chunk_sums(layout: Layout, metadata: Path | Location | ChunkedGraph, scratch: SharedArrays,
                     job: tuple[str, str, str, int], indexes: dict[tuple[str, str], RowIndex] | None = None,
                     samples: dict[tuple[str, str], dict] | None = None) -> tuple[dict, dict]:
    """One read of one input chunk file: its rows' checksums per owning partition, {(kind, key): [sum per
    partition]}, piece by piece (numpy chunks are memory-mapped; other formats are read whole by their reader), and
    every partition's sampled rows that lie in it compared one by one, {(part, kind, key): Tally}. `indexes`:
    `row_indexes(graph)` when the caller has them (else the headers needed are read here); `samples`: per (kind,
    key), the phase-one samples {part: (original IDs, rows)}. An edge feature row belongs to the partition that
    claimed its edge ID (`edge_owner_<t>`, phase one): the edge files are not read again for their destinations."""
    graph = metadata if isinstance(metadata, ChunkedGraph) else load_metadata(metadata, layout.storage)
    kind, typ, feat, chunk = job
    if typ not in (layout.etypes if kind != "node_feat" else layout.ntypes):
        return {}, {}
    key = typ if kind == "edges" else f"{typ}/{feat}"
    owners = f"edge_owner_{layout.etypes.index(typ)}" if kind == "edge_feat" else ""
    spec = graph.edges[typ] if kind == "edges" else _spec(graph, kind, key)
    if kind == "edges":
        start, table = int(graph.edge_chunk_offsets(typ)[chunk]), edge_table(graph, typ, chunk)
    else:  # a file of another dtype than its feature's common one is compared as that dtype, as it was written
        index = (indexes or {}).get((kind, key)) or RowIndex.of(graph, spec)
        start, table = int(index.offsets[chunk]), read_chunk(graph, spec, chunk)
        table = table if index.dtype is None else index.cast(np.asarray(table))
    sums = [0] * layout.num_parts
    for a, b in byte_pieces(table, scale=2):
        rows, ids = np.asarray(table[a:b]), np.arange(start + a, start + b, dtype=np.int64)
        if kind == "edges":
            found = _edge_sums(layout, graph, scratch, (typ, chunk), ids, rows)
        else:
            owner = _lookup(scratch, owners, ids) if owners else owner_of(scratch, layout, typ, ids)
            found = hashing.row_sums(ids, rows, owner, layout.num_parts)
        sums = [hashing.add(x, y) for x, y in zip(sums, found)]
    tallies = sampled_tallies(layout, scratch, kind, key, table, start, (samples or {}).get((kind, key), {}))
    return {(kind, key): sums}, {(part, kind, key): t for part, t in tallies.items()}


def _edge_sums(layout: Layout, graph: ChunkedGraph, scratch: SharedArrays, where: tuple[str, int], ids: np.ndarray,
               rows: np.ndarray) -> list[int]:
    """Checksums of a piece of input edges (new src, new dst) per partition owning the destination."""
    typ, chunk = where
    src, dst = rows[:, 0].astype(np.int64), rows[:, 1].astype(np.int64)
    if id_problems(graph, typ, chunk, src, dst):
        read_edge_chunk(graph, typ, chunk)  # raises the InputError naming the chunk's first bad row
    s, _, d = typ.split(":")
    owner = owner_of(scratch, layout, d, dst)
    return hashing.pair_sums(ids, to_new(scratch, layout, s, src), to_new(scratch, layout, d, dst), owner,
                             layout.num_parts)  # the rows (new src, new dst), not stacked

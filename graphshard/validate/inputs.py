"""Comparison with the input chunked graph (§5.5-6), by original IDs (orig_nids.dgl / orig_eids.dgl).

Partition side (`compare_partition`, one task per partition): per edge type, the original (src, dst) of every inner
edge; per feature, every row. Each enters a checksum (hashing.py), and the sampled rows (all with --full) are
compared one by one with the input rows gathered from the chunk files. Input side (`input_chunk_sums`, one task per
chunk file): the same checksums over the input rows, split by the partition that owns each row (from the phase-one
owner arrays). The client compares the two per (partition, key): see sampling.py for what this proves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.chunked import ChunkedGraph, ChunkFileSpec, load_metadata
from graphshard.formats.readers import RowIndex, read_edge_chunk, reader_for
from graphshard.validate import checks, hashing
from graphshard.validate.layout import Layout
from graphshard.validate.part_files import ORIG_EIDS, PartData
from graphshard.validate.problems import Problem
from graphshard.validate.sampling import sample_rows
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
        probe = reader.table(graph.path(spec.data[0]), spec.format)
        out = np.asarray(probe[:0])
    return out


def _compare(check: str, key: str, part: int, file: str, orig: np.ndarray, got: np.ndarray, want: np.ndarray
             ) -> list[Problem]:
    """Row-by-row comparison of sampled rows; names the first differing rows by original ID."""
    if got.shape[0] == 0:
        return []
    want = hashing.canonical(want)
    got2 = got.reshape(got.shape[0], int(np.prod(got.shape[1:], dtype=np.int64)))
    want2 = want.reshape(want.shape[0], int(np.prod(want.shape[1:], dtype=np.int64)))
    if got2.shape != want2.shape:
        return [Problem(check, f"'{key}' rows have {got2.shape[1]} values, input rows {want2.shape[1]}", part, file)]
    bad = np.flatnonzero((got2.view(np.uint8) != want2.view(np.uint8)).reshape(got2.shape[0], -1).any(axis=1)) \
        if got2.dtype.itemsize == want2.dtype.itemsize and got2.size else np.zeros(0, np.int64)
    if not bad.size:
        return []
    i = int(bad[0])
    return [Problem(check, f"'{key}': {bad.size} of {got.shape[0]} compared rows differ from the input (first: "
                    f"original ID {int(orig[i])}: {_row(got2[i])} here, {_row(want2[i])} in the input)", part, file)]


def _row(values: np.ndarray, limit: int = 6) -> str:
    """A short rendering of one row for a message."""
    shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values[:limit].tolist())
    return f"[{shown}{', ...' if values.shape[0] > limit else ''}]"


def _edge_rows(v: checks.PartView, layout: Layout, t: int, node_orig: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Local indices of inner edges of type t in new-ID order, and their original (src, dst) per-type IDs."""
    mask = v.inner_edge & (v.etype == t)
    idx = np.flatnonzero(mask)
    idx = idx[np.argsort(v.eid[idx], kind="stable")]
    ends = np.stack([np.asarray(node_orig[v.nid[v.src[idx]]]), np.asarray(node_orig[v.nid[v.dst[idx]]])], axis=1)
    return idx, ends


def _feature_problems(data: PartData, layout: Layout, graph: ChunkedGraph, nodes: bool, full: bool, seed: int,
                      size: int, sums: dict) -> list[Problem]:
    feats, orig = (data.node_feats, data.orig_nids) if nodes else (data.edge_feats, data.orig_eids)
    types = layout.ntypes if nodes else layout.etypes
    specs = graph.node_data if nodes else graph.edge_data
    file = layout.rel(data.part, "node_feats" if nodes else "edge_feats")
    kind = "node_feat" if nodes else "edge_feat"
    problems = []
    if feats is None or orig is None:
        return problems
    for typ in types:
        for feat, spec in specs.get(typ, {}).items():
            key = f"{typ}/{feat}"
            arr = feats.get(key)
            if arr is None and len(types) == 1:
                arr = feats.get(feat)
            ids = orig.get(typ)
            if arr is None:
                problems.append(Problem("features", f"input feature '{key}' is missing", data.part, file))
                continue
            if ids is None or ids.shape[0] != arr.shape[0]:
                continue
            index = RowIndex.of(graph, spec)
            rows = sample_rows(arr.shape[0], full, seed, data.part, key, size)
            want = gather_rows(graph, spec, ids[rows], index)
            if hashing.canonical(want).dtype != arr.dtype:
                problems.append(Problem("features", f"'{key}' has dtype {arr.dtype}, the input has {want.dtype}",
                                        data.part, file))
                continue
            problems += _compare("feature-values", key, data.part, file, ids[rows], arr[rows], want)
            sums[(kind, key)] = hashing.hash_sum(ids, arr)
    return problems


def compare_partition(layout: Layout, data: PartData, v: checks.PartView, metadata: Path, scratch: Scratch,
                      full: bool, seed: int, size: int) -> tuple[list[Problem], dict]:
    """Partition side of edge identity and feature values; returns problems and {(kind, key): checksum}."""
    graph = load_metadata(metadata)
    problems: list[Problem] = []
    sums: dict[tuple[str, str], int] = {}
    if data.orig_eids is not None and scratch.exists("node_orig"):
        node_orig = scratch.open("node_orig")
        file = layout.extra_rel(data.part, ORIG_EIDS)
        for t, et in enumerate(layout.etypes):
            orig = data.orig_eids.get(et)
            idx, ends = _edge_rows(v, layout, t, node_orig)
            if orig is None or orig.shape[0] != idx.shape[0] or et not in graph.edges:
                continue
            index = RowIndex.of(graph, graph.edges[et])
            rows = sample_rows(idx.shape[0], full, seed, data.part, et, size)
            want = gather_rows(graph, graph.edges[et], orig[rows], index)[:, :2].astype(np.int64)
            problems += _compare("edge-identity", et, data.part, f"{v.file}, {file}", orig[rows], ends[rows], want)
            sums[("edges", et)] = hashing.hash_sum(orig, ends)
    problems += _feature_problems(data, layout, graph, True, full, seed, size, sums)
    problems += _feature_problems(data, layout, graph, False, full, seed, size, sums)
    return problems, sums


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
        if typ not in layout.etypes or not scratch.exists(f"edge_owner_{layout.etypes.index(typ)}"):
            return {}
        start = int(graph.edge_chunk_offsets(typ)[chunk])
        src, dst = read_edge_chunk(graph, typ, chunk)
        owner_map, key, rows = scratch.open(f"edge_owner_{layout.etypes.index(typ)}"), typ, np.stack([src, dst], 1)
    else:
        types = layout.ntypes if kind == "node_feat" else layout.etypes
        prefix = "node" if kind == "node_feat" else "edge"
        if typ not in types or not scratch.exists(f"{prefix}_owner_{types.index(typ)}"):
            return {}
        spec = (graph.node_data if kind == "node_feat" else graph.edge_data)[typ][feat]
        start = int(RowIndex.of(graph, spec).offsets[chunk])
        rows = reader_for(spec.format).table(graph.path(spec.data[chunk]), spec.format)
        owner_map, key = scratch.open(f"{prefix}_owner_{types.index(typ)}"), f"{typ}/{feat}"
    ids = np.arange(start, start + rows.shape[0], dtype=np.int64)
    owner = np.asarray(owner_map[ids[ids < owner_map.shape[0]]], dtype=np.int64)
    ids, rows = ids[:owner.shape[0]], np.asarray(rows)[:owner.shape[0]]
    return {(kind, key): hashing.hash_sums_by_owner(ids, rows, owner, layout.num_parts)}

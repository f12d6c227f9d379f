"""The homogeneous graph that METIS-like partitioners see, built from the edge chunks with numpy only.

As DGL's `partition_graph` does: every edge type merged into one homogeneous graph with type-major node IDs
(all nodes of type 0, then type 1, ...), symmetrized, self-loops and duplicate edges dropped. The CSR comes from one
sort of packed int64 keys `u * N + v` (no Python loop over nodes or edges).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.formats.readers import read_edge_chunk


@dataclass(frozen=True)
class HomGraph:
    """Symmetric CSR over type-major homogeneous IDs; `in_degrees` are of the input's directed edges."""

    indptr: np.ndarray
    indices: np.ndarray
    in_degrees: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.indptr) - 1

    @property
    def num_edges(self) -> int:
        """Directed entries (twice the undirected edge count)."""
        return int(self.indptr[-1])


def edge_chunks(graph: ChunkedGraph) -> list[tuple[str, int]]:
    """Every (edge type, chunk index) of the graph, in metadata order."""
    return [(et, i) for et in graph.edge_type for i in range(len(graph.edges[et].data))]


def homogeneous_chunk(graph: ChunkedGraph, etype: str, chunk: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of one edge chunk in type-major homogeneous IDs; range-checked against the type's node count."""
    src, dst = read_edge_chunk(graph, etype, chunk)
    canon = graph.canonical(etype)
    for ids, nt, end in ((src, canon.src, "src"), (dst, canon.dst, "dst")):
        n = graph.num_nodes(nt)
        if len(ids) and (ids.min() < 0 or ids.max() >= n):
            bad = ids[(ids < 0) | (ids >= n)][0]
            raise InputError(graph.path(graph.edges[etype].data[chunk]), f"edges['{etype}'] {end}",
                             f"node IDs of '{nt}' in [0, {n})", int(bad))
    off = graph.type_node_offsets
    src += off[graph.ntype_id(canon.src)]
    dst += off[graph.ntype_id(canon.dst)]
    return src, dst


def symmetric_keys(src: np.ndarray, dst: np.ndarray, n: int) -> np.ndarray:
    """Packed keys `u * n + v` of both directions of every non-loop edge."""
    keep = src != dst
    u, v = src[keep], dst[keep]
    keys = np.empty(2 * len(u), dtype=np.int64)
    np.multiply(u, n, out=keys[:len(u)])
    keys[:len(u)] += v
    np.multiply(v, n, out=keys[len(u):])
    keys[len(u):] += u
    return keys


def csr_from_keys(keys: np.ndarray, n: int, row_offset: int = 0, rows: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) from unsorted packed keys, sorting `keys` in place and dropping duplicates.

    Rows are `key // n - row_offset` (a rank's local rows when `row_offset` is the first row it owns).
    """
    keys.sort()
    if len(keys):
        uniq = np.empty(len(keys), dtype=bool)
        uniq[0] = True
        np.not_equal(keys[1:], keys[:-1], out=uniq[1:])
        keys = keys[uniq]
    row = keys // n
    indices = keys - row * n
    row -= row_offset
    counts = np.bincount(row, minlength=rows if rows is not None else n)
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, indices


def build_csr(graph: ChunkedGraph, threads: int = 2) -> HomGraph:
    """The whole graph as a symmetric, deduplicated, loop-free CSR (chunks read by a small thread pool)."""
    n = graph.total_nodes
    in_deg = np.zeros(n, dtype=np.int64)
    pieces: list[np.ndarray] = []

    def load(job: tuple[str, int]) -> tuple[np.ndarray, np.ndarray]:
        src, dst = homogeneous_chunk(graph, *job)
        return symmetric_keys(src, dst, n), np.bincount(dst, minlength=n)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        for keys, deg in pool.map(load, edge_chunks(graph)):
            pieces.append(keys)
            in_deg += deg
    keys = np.concatenate(pieces) if pieces else np.empty(0, dtype=np.int64)
    del pieces
    indptr, indices = csr_from_keys(keys, n)
    return HomGraph(indptr=indptr, indices=indices, in_degrees=in_deg)

"""The homogeneous graph that METIS-like partitioners see, built from the edge chunks with numpy only.

As DGL's `partition_graph` does: every edge type merged into one homogeneous graph with type-major node IDs
(all nodes of type 0, then type 1, ...), symmetrized, self-loops and duplicate edges dropped. `build_csr` (the whole
graph, in one process) counts and scatters (`csr_sort`, O(nodes + edges)); the per-rank and per-block builders sort
packed int64 keys `(u << bits) | v` (`symmetric_keys`, `csr_from_keys`). Both give the same CSR: rows ascending,
each row's neighbours ascending.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from graphshard.assign.csr_sort import count_ends, scatter_ends, sorted_unique_rows
from graphshard.errors import GraphshardError, InputError
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
    """(src, dst) of one edge chunk in type-major homogeneous IDs (read_edge_chunk checks their ranges)."""
    src, dst = read_edge_chunk(graph, etype, chunk)
    canon = graph.canonical(etype)
    off = graph.type_node_offsets
    src += off[graph.ntype_id(canon.src)]
    dst += off[graph.ntype_id(canon.dst)]
    return src, dst


def key_bits(n: int) -> int:
    """Bits per node id in a packed key `(u << bits) | v`; the graph must have fewer than 2^31 nodes."""
    bits = max(1, (n - 1).bit_length())
    if 2 * bits > 62:
        raise GraphshardError(f"{n} nodes: packed edge keys need fewer than 2^31 nodes")
    return bits


def symmetric_keys(src: np.ndarray, dst: np.ndarray, bits: int, out: np.ndarray | None = None) -> np.ndarray:
    """Packed keys of both directions of every edge, `(u << bits) | v` (self-loops are dropped later, by
    `csr_from_keys`, which is cheaper than filtering here); written into `out` when given (2 * len(src) slots)."""
    m = len(src)
    keys = np.empty(2 * m, dtype=np.int64) if out is None else out
    np.left_shift(src, bits, out=keys[:m])
    keys[:m] |= dst
    np.left_shift(dst, bits, out=keys[m:])
    keys[m:] |= src
    return keys


def csr_from_keys(keys: np.ndarray, bits: int, row_offset: int = 0, rows: int | None = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(indptr, indices) from unsorted packed keys: sorts `keys` in place, drops duplicates and self-loops.

    Rows are `(key >> bits) - row_offset` (a rank's local rows when `row_offset` is the first row it owns).
    """
    keys.sort()
    mask = (1 << bits) - 1
    row = keys >> bits
    col = keys & mask
    keep = row != col
    if len(keys):
        keep[1:] &= keys[1:] != keys[:-1]
    row, col = row[keep], col[keep]
    row -= row_offset
    counts = np.bincount(row, minlength=rows if rows is not None else (int(row.max()) + 1 if len(row) else 0))
    indptr = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=indptr[1:])
    return indptr, col


def build_csr(graph: ChunkedGraph, threads: int = 2) -> HomGraph:
    """The whole graph as a symmetric, deduplicated, loop-free CSR, by counting (`csr_sort`): chunks read and counted
    by a small thread pool, then scattered by row in metadata order."""
    n = graph.total_nodes
    key_bits(n)  # the same node limit as the packed-key builders
    jobs = edge_chunks(graph)

    def load(j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        src, dst = homogeneous_chunk(graph, *jobs[j])
        expected = graph.num_edges_per_chunk[graph.etype_id(jobs[j][0])][jobs[j][1]]
        if len(src) != expected:
            raise InputError(graph.path(graph.edges[jobs[j][0]].data[jobs[j][1]]), "rows",
                             f"{expected} edges (num_edges_per_chunk)", len(src))
        return (src, dst, *count_ends(src, dst, n))

    rows = np.zeros(n, dtype=np.int64)
    in_deg = np.zeros(n, dtype=np.int64)
    chunks = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for src, dst, row_counts, in_counts in pool.map(load, range(len(jobs))):
            rows += row_counts
            in_deg += in_counts
            chunks.append((src, dst))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(rows, out=indptr[1:])
    del rows
    fill = indptr[:-1].copy()
    cols = np.empty(int(indptr[-1]), dtype=np.int32)  # node IDs < 2^31 (key_bits)
    while chunks:
        scatter_ends(*chunks.pop(0), fill, cols)
    del fill
    indptr, indices = sorted_unique_rows(indptr, cols)
    return HomGraph(indptr=indptr, indices=indices, in_degrees=in_deg)

"""Barabasi-Albert preferential attachment: after a seed clique of m + 1 nodes, each node links to m earlier nodes
picked in proportion to their degree. Degrees follow a power law (exponent 3) and every node has at least m edges:
a power-law graph without communities and without the low-degree fringe that Chung-Lu's has.

A pick is a uniform position in the list of the earlier edges' ends (Bollobas-Riordan): an edge's first end is its
node, known from the edge's index alone; its second end is that edge's own pick, drawn afresh from the same rule at
that edge's time. So each pick has BA's distribution, and every chunk is made without the others."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import chunk_bounds
from graphshard.generate.common import chunk_rng, scatter_ids
from graphshard.generate.homogeneous import check_sizes, write_homogeneous


def _clique(m: int) -> int:
    """Edges of the seed clique of m + 1 nodes: the first edges, in `np.triu_indices(m + 1, 1)` order."""
    return m * (m + 1) // 2


def ba_edges(nodes: int, m: int) -> int:
    """Edge count of a BA graph: the seed clique's, then m per later node."""
    return _clique(m) + (nodes - m - 1) * m


def _node_of(edge: np.ndarray, m: int) -> np.ndarray:
    """The node that added each edge beyond the seed clique (its first end)."""
    return m + 1 + (edge - _clique(m)) // m


def _picks(first: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """For edges whose node's first edge is at `first`, a node drawn in proportion to degree among the edges before
    it: a uniform end of those edges; a second end beyond the clique is redrawn at its own edge's time."""
    clique = _clique(m)
    rows, cols = np.triu_indices(m + 1, 1)
    out = np.empty(len(first), dtype=np.int64)
    todo, bound = np.arange(len(first)), first
    while len(todo):
        pos = (rng.random(len(todo)) * (2 * bound)).astype(np.int64)
        edge, second = pos // 2, pos % 2 == 1
        seed_edge = edge < clique
        out[todo[~second & seed_edge]] = rows[edge[~second & seed_edge]]
        out[todo[~second & ~seed_edge]] = _node_of(edge[~second & ~seed_edge], m)
        out[todo[second & seed_edge]] = cols[edge[second & seed_edge]]
        again = second & ~seed_edge
        todo, bound = todo[again], clique + (_node_of(edge[again], m) - m - 1) * m
    return out


def ba_chunk(chunk: int, *, seed: int, lo: int, hi: int, nodes: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges [lo, hi) in edge order: the seed clique's, then each node's m picks; IDs scattered."""
    clique = _clique(m)
    rows, cols = np.triu_indices(m + 1, 1)
    edge = np.arange(max(lo, clique), hi, dtype=np.int64)
    src = _node_of(edge, m)
    dst = _picks(clique + (src - m - 1) * m, m, chunk_rng(seed, "ba:edges", chunk))
    src = np.concatenate([rows[lo:min(hi, clique)], src])
    dst = np.concatenate([cols[lo:min(hi, clique)], dst])
    return scatter_ids(src, nodes, seed, "ba"), scatter_ids(dst, nodes, seed, "ba")


def generate_ba(out_dir: str | Path, nodes: int = 1 << 14, edges: int = 1 << 18, chunks: int = 4,
                fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                graph_name: str = "ba") -> Path:
    """Write a BA graph of m = edges / nodes (rounded, at least 1) edges per node; its edge count is
    `ba_edges(nodes, m)`. Returns the metadata.json path."""
    nodes, edges, chunks, feat_dim = check_sizes(nodes, edges, chunks, feat_dim, fmt)
    m = max(1, round(edges / nodes))
    if nodes < m + 2 or ba_edges(nodes, m) < chunks:
        raise GraphshardError(f"--nodes: a BA graph of {m} edges per node needs more than {m + 1} nodes and at "
                              f"least one edge per chunk; found {nodes} nodes, {chunks} chunks")
    bounds = chunk_bounds(ba_edges(nodes, m), chunks)

    def chunk_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        return ba_chunk(i, seed=seed, lo=int(bounds[i]), hi=int(bounds[i + 1]), nodes=nodes, m=m)

    return write_homogeneous(out_dir, graph_name, nodes, chunks, chunk_of, fmt, seed, overwrite, feat_dim)

"""Chung-Lu: a power-law graph without communities. Both ends of every edge are drawn independently with
probability proportional to a node's expected degree (i + 1)^(-1 / (EXPONENT - 1)), so hubs exist but no group of
nodes is denser among itself than chance: the hard case for a partitioner, unlike R-MAT's nested structure."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.chunked import chunk_bounds
from graphshard.generate.common import chunk_rng, scatter_ids
from graphshard.generate.homogeneous import check_sizes, write_homogeneous

EXPONENT = 2.5  # degree distribution P(d) ~ d^-EXPONENT
_BATCH = 1 << 20


def degree_cdf(nodes: int) -> np.ndarray:
    """Cumulative share of the expected degrees, node 0 the largest (float64, `nodes` entries, last 1.0)."""
    w = np.arange(1, nodes + 1, dtype=np.float64) ** (-1.0 / (EXPONENT - 1.0))
    cdf = np.cumsum(w)
    return cdf / cdf[-1]


def draw_ranks(cdf: np.ndarray, rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` ranks drawn by the weights whose cumulative share is `cdf` (rank 0 the heaviest)."""
    return np.minimum(np.searchsorted(cdf, rng.random(count), side="right"), len(cdf) - 1)


def chunglu_chunk(chunk: int, *, seed: int, count: int, cdf: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Edge chunk `chunk`: `count` (src, dst) pairs drawn by the degree weights, self-loops redrawn, IDs scattered."""
    rng = chunk_rng(seed, "chunglu:edges", chunk)
    nodes = len(cdf)
    src = np.empty(count, dtype=np.int64)
    dst = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        want = min(_BATCH, count - filled) + 16
        s, d = draw_ranks(cdf, rng, want), draw_ranks(cdf, rng, want)
        keep = s != d
        s, d = s[keep][:count - filled], d[keep][:count - filled]
        src[filled:filled + len(s)], dst[filled:filled + len(d)] = s, d
        filled += len(s)
    return scatter_ids(src, nodes, seed, "chunglu"), scatter_ids(dst, nodes, seed, "chunglu")


def generate_chunglu(out_dir: str | Path, nodes: int = 1 << 14, edges: int = 1 << 18, chunks: int = 4,
                     fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                     graph_name: str = "chunglu") -> Path:
    """Write a Chung-Lu power-law graph; returns the metadata.json path."""
    nodes, edges, chunks, feat_dim = check_sizes(nodes, edges, chunks, feat_dim, fmt)
    cdf = degree_cdf(nodes)
    edge_bounds = chunk_bounds(edges, chunks)

    def chunk_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        return chunglu_chunk(i, seed=seed, count=edge_bounds[i + 1] - edge_bounds[i], cdf=cdf)

    return write_homogeneous(out_dir, graph_name, nodes, chunks, chunk_of, fmt, seed, overwrite, feat_dim)

"""Planted communities (stochastic-block-model-like): most edges fall inside one of `communities` groups of
varied sizes, the rest join uniform random pairs. A good partition follows the groups; the IDs hide them."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.generate.common import chunk_bounds, chunk_rng, positive, scatter_ids
from graphshard.generate.homogeneous import check_sizes, write_homogeneous

MIXING = 0.2  # default share of edges between communities
SIZE_SPREAD = 0.5  # community sizes ~ lognormal(0, SIZE_SPREAD) before normalising


def community_bounds(nodes: int, communities: int, seed: int) -> np.ndarray:
    """Offsets [0, ..., nodes] of the communities in the unscattered ID order: seeded sizes, each at least 2."""
    rng = chunk_rng(seed, "planted:sizes")
    share = rng.lognormal(0.0, SIZE_SPREAD, communities)
    sizes = 2 + np.floor(share / share.sum() * (nodes - 2 * communities)).astype(np.int64)
    sizes[-1] += nodes - sizes.sum()
    return np.concatenate([[0], np.cumsum(sizes)])


def planted_chunk(chunk: int, *, seed: int, count: int, bounds: np.ndarray, mixing: float) -> tuple[np.ndarray, np.ndarray]:
    """Edge chunk `chunk`: a uniform source, then a destination in its community (share 1 - mixing) or anywhere;
    a drawn self-loop moves to the next node of the same range. IDs scattered."""
    rng = chunk_rng(seed, "planted:edges", chunk)
    nodes = int(bounds[-1])
    src = rng.integers(0, nodes, count, dtype=np.int64)
    comm = np.searchsorted(bounds, src, side="right") - 1
    inside = rng.random(count) >= mixing
    lo = np.where(inside, bounds[comm], 0)
    size = np.where(inside, bounds[comm + 1] - bounds[comm], nodes)
    dst = lo + np.floor(rng.random(count) * size).astype(np.int64)
    loop = dst == src
    dst[loop] = lo[loop] + (dst[loop] - lo[loop] + 1) % size[loop]
    return scatter_ids(src, nodes, seed, "planted"), scatter_ids(dst, nodes, seed, "planted")


def generate_planted(out_dir: str | Path, nodes: int = 1 << 14, edges: int = 1 << 18, chunks: int = 4,
                     fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                     communities: int | None = None, mixing: float = MIXING, graph_name: str = "planted") -> Path:
    """Write a planted-community graph (default nodes // 1000 communities, at least 2); returns metadata.json."""
    nodes, edges, chunks, feat_dim = check_sizes(nodes, edges, chunks, feat_dim, fmt)
    communities = positive("communities", communities if communities is not None else max(2, nodes // 1000))
    if communities * 2 > nodes:
        raise GraphshardError(f"--communities: expected at most nodes / 2 = {nodes // 2}, found {communities}")
    if not 0.0 <= mixing <= 1.0:
        raise GraphshardError(f"--mixing: expected a share of edges in [0, 1], found {mixing}")
    bounds = community_bounds(nodes, communities, seed)
    edge_bounds = chunk_bounds(edges, chunks)

    def chunk_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        return planted_chunk(i, seed=seed, count=edge_bounds[i + 1] - edge_bounds[i], bounds=bounds, mixing=mixing)

    return write_homogeneous(out_dir, graph_name, nodes, chunks, chunk_of, fmt, seed, overwrite, feat_dim)

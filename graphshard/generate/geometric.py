"""A random geometric graph, road-like: points uniform in the unit square, an edge between every two points closer
than a radius chosen for the asked edge count. Planar-ish and low degree like a road network, with no grid
regularity; node IDs are scattered, so the ID order gives no hint of the geometry."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from graphshard.generate.common import chunk_bounds, chunk_rng, scatter_ids
from graphshard.generate.homogeneous import check_sizes, write_homogeneous


def radius_for(nodes: int, edges: int) -> float:
    """Radius whose expected pair count n^2/2 * pi r^2 (ignoring the border) equals `edges`."""
    return float(np.sqrt(2.0 * edges / (np.pi * nodes * nodes)))


def sorted_points(nodes: int, seed: int, side: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded points ordered by cell of a side x side grid (row-major, stable), and each cell's first point."""
    xy = chunk_rng(seed, "geometric:points").random((nodes, 2))
    cx = np.minimum((xy[:, 0] * side).astype(np.int64), side - 1)
    cy = np.minimum((xy[:, 1] * side).astype(np.int64), side - 1)
    cell = cx * side + cy
    order = np.argsort(cell, kind="stable")
    starts = np.searchsorted(cell[order], np.arange(side * side + 1))
    return np.ascontiguousarray(xy[order]), starts


@njit(cache=True)
def _scan(xy, starts, side, lo, hi, r2, src, dst, fill):
    """Pairs (i, j), lo <= i < hi, j > i, closer than sqrt(r2), from the 3 x 3 cells around i (cell >= radius);
    counts them, and writes them into src/dst when `fill`."""
    count = 0
    for i in range(lo, hi):
        x, y = xy[i, 0], xy[i, 1]
        cx = min(int(x * side), side - 1)
        cy = min(int(y * side), side - 1)
        for a in range(max(cx - 1, 0), min(cx + 2, side)):
            for b in range(max(cy - 1, 0), min(cy + 2, side)):
                c = a * side + b
                for j in range(max(starts[c], i + 1), starts[c + 1]):
                    dx, dy = xy[j, 0] - x, xy[j, 1] - y
                    if dx * dx + dy * dy < r2:
                        if fill:
                            src[count], dst[count] = i, j
                        count += 1
    return count


def geometric_chunk(chunk: int, *, seed: int, xy: np.ndarray, starts: np.ndarray, side: int, radius: float,
                    node_bounds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Edge chunk `chunk`: the pairs whose lower point (in cell order) is in the chunk's share of the points."""
    lo, hi = node_bounds[chunk], node_bounds[chunk + 1]
    none = np.empty(0, dtype=np.int64)
    count = _scan(xy, starts, side, lo, hi, radius * radius, none, none, False)
    src, dst = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.int64)
    _scan(xy, starts, side, lo, hi, radius * radius, src, dst, True)
    n = len(xy)
    return scatter_ids(src, n, seed, "geometric"), scatter_ids(dst, n, seed, "geometric")


def generate_geometric(out_dir: str | Path, nodes: int = 1 << 14, edges: int | None = None, chunks: int = 4,
                       fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                       graph_name: str = "geometric") -> Path:
    """Write a random geometric graph of about `edges` edges (default 3 per node: average degree 6, above the
    threshold where one component spans the square); returns the metadata.json path."""
    nodes, edges, chunks, feat_dim = check_sizes(nodes, 3 * nodes if edges is None else edges, chunks, feat_dim, fmt)
    radius = min(radius_for(nodes, edges), 1.0)
    side = max(1, int(1.0 / radius))
    xy, starts = sorted_points(nodes, seed, side)
    node_bounds = chunk_bounds(nodes, chunks)

    def chunk_of(i: int) -> tuple[np.ndarray, np.ndarray]:
        return geometric_chunk(i, seed=seed, xy=xy, starts=starts, side=side, radius=radius, node_bounds=node_bounds)

    return write_homogeneous(out_dir, graph_name, nodes, chunks, chunk_of, fmt, seed, overwrite, feat_dim)

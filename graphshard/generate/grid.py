"""A 2-D or 3-D grid mesh with scattered node IDs: the mesh-like counterpart of R-MAT (planar-ish, low degree, a
good partition cuts few edges, and the ID order gives no hint of it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import chunk_bounds
from graphshard.formats.chunked_writer import ChunkedGraphWriter, check_format, positive, spec_formats
from graphshard.generate.common import chunk_rng, scatter_ids
from graphshard.generate.rmat import ETYPE, NTYPE, add_node_features


def grid_side(nodes: int, dims: int) -> int:
    """Side length of a `dims`-dimensional grid with about `nodes` nodes (at least 2)."""
    return max(2, round(nodes ** (1.0 / dims)))


def grid_edges(side: int, dims: int) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every mesh edge (one per neighbouring pair, towards the higher coordinate), in grid order."""
    ids = np.arange(side ** dims, dtype=np.int64).reshape((side,) * dims)
    src, dst = [], []
    for d in range(dims):
        lower = [slice(None)] * dims
        upper = [slice(None)] * dims
        lower[d], upper[d] = slice(0, side - 1), slice(1, side)
        src.append(ids[tuple(lower)].ravel())
        dst.append(ids[tuple(upper)].ravel())
    return np.concatenate(src), np.concatenate(dst)


def generate_grid(out_dir: str | Path, nodes: int = 1 << 14, dims: int = 2, chunks: int = 4, fmt: str = "numpy",
                  seed: int = 0, overwrite: bool = False, feat_dim: int = 16, graph_name: str = "grid") -> Path:
    """Write a grid mesh of about `nodes` nodes (side = round(nodes^(1/dims))), edges in a seeded random order and
    node IDs scattered by a seeded bijection; the same node features as R-MAT.

    Parameters
    ----------
    out_dir : str or Path
        The chunked graph's folder.
    nodes : int
        About this many nodes (side = round(nodes^(1/dims)), at least 2).
    dims : int
        Dimensions of the mesh (2: a square grid, 3: a cube).
    chunks : int
        Edge and node chunks per type.
    fmt : str
        numpy, parquet, csv or mixed (the formats in turn, spec by spec).
    seed : int
        Every random choice derives from it: the same arguments give the same bytes.
    overwrite : bool
        Replace an existing `out_dir`.
    feat_dim : int
        Width of the float32 node feature `feat`.
    graph_name : str
        The chunked graph's name.

    Returns
    -------
    Path
        The written metadata.json.
    """
    check_format(fmt)
    if dims not in (2, 3):
        raise GraphshardError(f"--dims: expected 2 or 3, found {dims}")
    chunks = positive("chunks", chunks)
    feat_dim = positive("feat-dim", feat_dim)
    side = grid_side(positive("nodes", nodes, 4), dims)
    n = side ** dims
    src, dst = grid_edges(side, dims)
    order = chunk_rng(seed, "grid:order").permutation(len(src))
    src, dst = scatter_ids(src[order], n, seed, "grid"), scatter_ids(dst[order], n, seed, "grid")
    edge_bounds, node_bounds = chunk_bounds(len(src), chunks), chunk_bounds(n, chunks)
    formats = spec_formats(fmt, ["edges", "feat", "label", "train_mask"])
    with ChunkedGraphWriter(out_dir, graph_name, [NTYPE], [ETYPE], overwrite=overwrite) as writer:
        for i in range(chunks):
            lo, hi = edge_bounds[i], edge_bounds[i + 1]
            writer.add_edges(ETYPE, src[lo:hi], dst[lo:hi], formats["edges"])
        add_node_features(writer, node_bounds, seed, "grid:nodes", feat_dim, formats)
        return writer.finish()

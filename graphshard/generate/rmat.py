"""R-MAT: a homogeneous power-law graph written chunk by chunk (memory bounded by one chunk)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import chunk_bounds
from graphshard.formats.chunked_writer import ChunkedGraphWriter, check_format, positive, spec_formats
from graphshard.generate.common import chunk_rng, scatter_ids

PROBS = (0.57, 0.19, 0.19, 0.05)  # a, b, c, d: quadrant probabilities per recursion level
NTYPE, ETYPE = "_N", "_N:_E:_N"
NUM_CLASSES = 10
TRAIN_FRACTION = 0.6
_BATCH = 1 << 20  # edges drawn per vectorized step


def _rmat_raw(rng: np.random.Generator, count: int, scale: int,
              probs: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """`count` R-MAT (src, dst) pairs over [0, 2**scale): one quadrant choice per bit."""
    a, b, c, _ = probs
    t1, t2, t3 = np.float32(a), np.float32(a + b), np.float32(a + b + c)
    src = np.zeros(count, dtype=np.int64)
    dst = np.zeros(count, dtype=np.int64)
    for _ in range(scale):
        r = rng.random(count, dtype=np.float32)
        lower = r >= t2  # quadrants c, d: source bit set
        right = (r >= t1) ^ lower ^ (r >= t3)  # quadrants b, d: destination bit set
        np.left_shift(src, 1, out=src)
        src |= lower
        np.left_shift(dst, 1, out=dst)
        dst |= right
    return src, dst


def rmat_edges(rng: np.random.Generator, count: int, nodes: int,
               probs: tuple[float, ...] = PROBS) -> tuple[np.ndarray, np.ndarray]:
    """`count` R-MAT edges over [0, nodes) without self-loops; IDs beyond `nodes` are redrawn, not folded."""
    scale = max(1, int(np.ceil(np.log2(nodes))))
    src = np.empty(count, dtype=np.int64)
    dst = np.empty(count, dtype=np.int64)
    filled = 0
    while filled < count:
        want = min(_BATCH, count - filled)
        s, d = _rmat_raw(rng, want + want // 4 + 16, scale, probs)
        keep = (s < nodes) & (d < nodes) & (s != d)
        s, d = s[keep][:want], d[keep][:want]
        src[filled:filled + len(s)] = s
        dst[filled:filled + len(d)] = d
        filled += len(s)
    return src, dst


def node_features(rng: np.random.Generator, count: int, feat_dim: int,
                  train_share: float = TRAIN_FRACTION) -> dict[str, np.ndarray]:
    """The node features of one chunk: `feat` float32 (count, feat_dim), `label` int64, `train_mask` bool (each node
    with probability `train_share`; the draws do not depend on it, so a smaller share marks a subset)."""
    return {
        "feat": rng.standard_normal((count, feat_dim), dtype=np.float32),
        "label": rng.integers(0, NUM_CLASSES, count, dtype=np.int64),
        "train_mask": rng.random(count) < train_share,
    }


def add_node_features(writer: ChunkedGraphWriter, node_bounds: list[int], seed: int, stream: str, feat_dim: int,
                      formats: dict[str, str], train_share: float = TRAIN_FRACTION) -> None:
    """Node chunks and their seeded features (`node_features`, one generator per chunk of `stream`)."""
    writer.set_node_chunks(NTYPE, np.diff(node_bounds).tolist())
    for i in range(len(node_bounds) - 1):
        feats = node_features(chunk_rng(seed, stream, i), node_bounds[i + 1] - node_bounds[i], feat_dim, train_share)
        for name, arr in feats.items():
            writer.add_node_feature(NTYPE, name, arr, formats[name])


def edge_chunk(seed: int, chunk: int, count: int, nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Edge chunk `chunk`: (src, dst) with hubs scattered over the ID range, and the float32 `weight` feature."""
    rng = chunk_rng(seed, "rmat:edges", chunk)
    src, dst = rmat_edges(rng, count, nodes)
    src = scatter_ids(src, nodes, seed, "rmat")
    dst = scatter_ids(dst, nodes, seed, "rmat")
    weight = rng.random(count, dtype=np.float32)
    return src, dst, weight


def generate_rmat(out_dir: str | Path, nodes: int = 1 << 14, edges: int = 1 << 18, chunks: int = 4,
                  fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                  graph_name: str = "rmat", train_share: float = TRAIN_FRACTION) -> Path:
    """Write an R-MAT chunked graph (homogeneous, power-law degrees), chunk by chunk (memory bounded by one chunk).

    Parameters
    ----------
    out_dir : str or Path
        The chunked graph's folder.
    nodes, edges : int
        Node and edge counts.
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
    train_share : float
        Share of nodes the `train_mask` feature marks, in [0, 1] (the mini-batch seeds of `objtype: fetch`).

    Returns
    -------
    Path
        The written metadata.json.
    """
    check_format(fmt)
    nodes = positive("nodes", nodes, 2)
    chunks = positive("chunks", chunks)
    edges = positive("edges", edges, chunks)
    feat_dim = positive("feat-dim", feat_dim)
    if not 0.0 <= train_share <= 1.0:
        raise GraphshardError(f"--train-share: expected a share in [0, 1], found {train_share}")
    nodes = max(nodes, chunks)
    node_bounds, edge_bounds = chunk_bounds(nodes, chunks), chunk_bounds(edges, chunks)
    formats = spec_formats(fmt, ["edges", "feat", "label", "train_mask", "weight"])
    with ChunkedGraphWriter(out_dir, graph_name, [NTYPE], [ETYPE], overwrite=overwrite) as writer:
        for i in range(chunks):
            src, dst, weight = edge_chunk(seed, i, edge_bounds[i + 1] - edge_bounds[i], nodes)
            writer.add_edges(ETYPE, src, dst, formats["edges"])
            writer.add_edge_feature(ETYPE, "weight", weight, formats["weight"])
            del src, dst, weight
        add_node_features(writer, node_bounds, seed, "rmat:nodes", feat_dim, formats, train_share)
        return writer.finish()

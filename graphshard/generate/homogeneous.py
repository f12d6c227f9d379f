"""Writing a homogeneous synthetic graph chunk by chunk: the shared tail of the planted-community, geometric and
Chung-Lu generators (one node and one edge type, R-MAT's node features, edges made one chunk at a time)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from graphshard.formats.chunked_writer import ChunkedGraphWriter
from graphshard.generate.common import check_format, chunk_bounds, positive, spec_format
from graphshard.generate.rmat import ETYPE, NTYPE, add_node_features

EdgeChunk = Callable[[int], tuple[np.ndarray, np.ndarray]]


def check_sizes(nodes: int, edges: int, chunks: int, feat_dim: int, fmt: str) -> tuple[int, int, int, int]:
    """Validated (nodes, edges, chunks, feat_dim): at least one node and one edge per chunk."""
    check_format(fmt)
    chunks = positive("chunks", chunks)
    return (max(positive("nodes", nodes, 2), chunks), positive("edges", edges, chunks), chunks,
            positive("feat-dim", feat_dim))


def write_homogeneous(out_dir: str | Path, graph_name: str, nodes: int, chunks: int, edge_chunk: EdgeChunk,
                      fmt: str, seed: int, overwrite: bool, feat_dim: int) -> Path:
    """Write `chunks` edge chunks (`edge_chunk(i)` -> (src, dst)) and `chunks` node chunks with R-MAT's seeded
    features (`feat`, `label`, `train_mask`); returns the metadata.json path."""
    formats = {name: spec_format(fmt, i) for i, name in enumerate(["edges", "feat", "label", "train_mask"])}
    with ChunkedGraphWriter(out_dir, graph_name, [NTYPE], [ETYPE], overwrite=overwrite) as writer:
        for i in range(chunks):
            src, dst = edge_chunk(i)
            writer.add_edges(ETYPE, src, dst, formats["edges"])
            del src, dst
        add_node_features(writer, chunk_bounds(nodes, chunks), seed, f"{graph_name}:nodes", feat_dim, formats)
        return writer.finish()

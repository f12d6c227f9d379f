"""A heterogeneous academic graph shaped like ogbn-mag / MAG240M, written chunk by chunk."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.formats.chunked import chunk_bounds
from graphshard.formats.chunked_writer import ChunkedGraphWriter, check_format, positive, spec_formats
from graphshard.generate.common import chunk_rng, scatter_ids

# Node counts relative to papers and the split of forward edges, after ogbn-mag (736k papers, 21.1M forward edges).
NODE_RATIO = {"paper": 1.0, "author": 1.54, "institution": 0.012, "field_of_study": 0.081}
RELATIONS = (  # (src, rel, dst, share of forward edges, which end is skewed towards popular nodes)
    ("author", "writes", "paper", 0.3385, "src"),
    ("paper", "cites", "paper", 0.2566, "dst"),
    ("author", "affiliated_with", "institution", 0.0495, "dst"),
    ("paper", "has_topic", "field_of_study", 0.3554, "dst"),
)
EDGES_PER_PAPER = 28.7
NUM_CLASSES = 349
YEARS = (2010, 2020)  # papers of [2010, 2018) train, 2018 validate, 2019 test, as in ogbn-mag
SKEW = 2.5  # popularity exponent: id = n * u**SKEW puts most endpoints on few nodes
WRITES_FEAT_DIM = 4


def forward_etype(src: str, rel: str, dst: str) -> str:
    return f"{src}:{rel}:{dst}"


def reverse_etype(src: str, rel: str, dst: str) -> str:
    return f"{dst}:rev_{rel}:{src}"


def node_counts(papers: int, chunks: int) -> dict[str, int]:
    """Per-type node counts for a given number of papers (at least one node per chunk)."""
    return {nt: max(chunks, round(papers * r)) for nt, r in NODE_RATIO.items()}


def edge_counts(edges: int, chunks: int) -> dict[str, int]:
    """Per forward edge type edge counts splitting `edges` by the ogbn-mag shares (at least one edge per chunk)."""
    return {forward_etype(s, r, d): max(chunks, round(edges * share)) for s, r, d, share, _ in RELATIONS}


def _endpoints(rng: np.random.Generator, count: int, n: int, skewed: bool) -> np.ndarray:
    u = rng.random(count)
    return np.minimum((n * (u ** SKEW if skewed else u)).astype(np.int64), n - 1)


def edge_chunk(seed: int, relation: tuple, chunk: int, count: int,
               counts: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """One chunk of a forward edge type: a uniform end and a popularity-skewed end, scattered over the ID range."""
    src_t, rel, dst_t, _, skewed_end = relation
    rng = chunk_rng(seed, f"mag:{rel}", chunk)
    src = _endpoints(rng, count, counts[src_t], skewed_end == "src")
    dst = _endpoints(rng, count, counts[dst_t], skewed_end == "dst")
    return scatter_ids(src, counts[src_t], seed, f"mag:{src_t}"), scatter_ids(dst, counts[dst_t], seed, f"mag:{dst_t}")


def paper_columns(rng: np.random.Generator, count: int) -> dict[str, np.ndarray]:
    """Paper label, year and the year-based train/val/test masks for one node chunk."""
    year = rng.integers(YEARS[0], YEARS[1], count).astype(np.int16)
    return {
        "label": rng.integers(0, NUM_CLASSES, count, dtype=np.int64),
        "year": year,
        "train_mask": year < 2018,
        "val_mask": year == 2018,
        "test_mask": year == 2019,
    }


def generate_mag(out_dir: str | Path, papers: int = 1000, edges: int | None = None, chunks: int = 2,
                 fmt: str = "numpy", seed: int = 0, overwrite: bool = False, feat_dim: int = 16,
                 graph_name: str = "mag") -> Path:
    """Write a MAG-like heterogeneous chunked graph (papers, authors, institutions, fields of study).

    Node features: paper feat (float32, written in chunks + 1 files, unlike the node chunking), label, year, masks;
    author h_index (float32 1-D); institution and field_of_study have none. Edge feature: writes `feat` (float32 2-D).

    Parameters
    ----------
    out_dir : str or Path
        The chunked graph's folder.
    papers : int
        Paper count; the other node types scale with it.
    edges : int, optional
        Forward edges (reverse types double it); default in ogbn-mag's proportion to papers.
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
    papers = positive("nodes", papers)
    chunks = positive("chunks", chunks)
    feat_dim = positive("feat-dim", feat_dim)
    edges = positive("edges", round(papers * EDGES_PER_PAPER) if edges is None else edges)
    counts = node_counts(papers, chunks)
    ecounts = edge_counts(edges, chunks)
    fwd = [forward_etype(s, r, d) for s, r, d, _, _ in RELATIONS]
    rev = [reverse_etype(s, r, d) for s, r, d, _, _ in RELATIONS]
    spec_names = [*fwd, *rev, "writes:feat", "paper:feat", "paper:label", "paper:year", "paper:train_mask",
                  "paper:val_mask", "paper:test_mask", "author:h_index"]
    formats = spec_formats(fmt, spec_names)
    with ChunkedGraphWriter(out_dir, graph_name, list(NODE_RATIO), fwd + rev, overwrite=overwrite) as writer:
        for relation, f_et, r_et in zip(RELATIONS, fwd, rev):
            bounds = chunk_bounds(ecounts[f_et], chunks)
            for i in range(chunks):
                n = bounds[i + 1] - bounds[i]
                src, dst = edge_chunk(seed, relation, i, n, counts)
                writer.add_edges(f_et, src, dst, formats[f_et])
                writer.add_edges(r_et, dst, src, formats[r_et])
                if relation[1] == "writes":
                    feat = chunk_rng(seed, "mag:writes:feat", i).random((n, WRITES_FEAT_DIM), dtype=np.float32)
                    writer.add_edge_feature(f_et, "feat", feat, formats["writes:feat"])
        for nt, n in counts.items():
            writer.set_node_chunks(nt, np.diff(chunk_bounds(n, chunks)).tolist())
        feat_bounds = chunk_bounds(counts["paper"], chunks + 1)
        for i in range(chunks + 1):
            rng = chunk_rng(seed, "mag:paper:feat", i)
            feat = rng.standard_normal((feat_bounds[i + 1] - feat_bounds[i], feat_dim), dtype=np.float32)
            writer.add_node_feature("paper", "feat", feat, formats["paper:feat"])
        paper_bounds = chunk_bounds(counts["paper"], chunks)
        for i in range(chunks):
            columns = paper_columns(chunk_rng(seed, "mag:paper", i), paper_bounds[i + 1] - paper_bounds[i])
            for name, arr in columns.items():
                writer.add_node_feature("paper", name, arr, formats[f"paper:{name}"])
        author_bounds = chunk_bounds(counts["author"], chunks)
        for i in range(chunks):
            rng = chunk_rng(seed, "mag:author", i)
            h_index = rng.gamma(2.0, 5.0, author_bounds[i + 1] - author_bounds[i]).astype(np.float32)
            writer.add_node_feature("author", "h_index", h_index, formats["author:h_index"])
        return writer.finish()

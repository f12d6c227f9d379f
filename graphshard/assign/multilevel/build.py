"""Level 0: the input as blocks of the symmetric, loop- and duplicate-free homogeneous graph (graph_build's rules),
built by an exchange: each edge-chunk task sends the packed keys of both directions of its edges to the block owning
the row (one bucket per block), and each block task turns its buckets into its CSR and its node weights.

With `balance_edges` or `objtype: fetch` a key carries a flag bit on the entry (v, u) made from an input edge u -> v,
so the block owning v counts v's in-degree (duplicates and self-loops included, as in the input) before dropping
them; with `fetch` the edges get the sampled-fetch weights (sampled.py computes the gains first).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.assign.constraints import class_codes, graph_constraints, parse_entries
from graphshard.assign.fetch import weighted_csr
from graphshard.assign.graph_build import csr_from_keys, edge_chunks, homogeneous_chunk, key_bits, symmetric_keys
from graphshard.assign.multilevel.sampled import block_keys, in_degrees
from graphshard.assign.multilevel.store import Level, open_ro, write_range
from graphshard.assign.options import AssignOptions
from graphshard.formats.buckets import write_bucket, write_buckets
from graphshard.formats.chunked import ChunkedGraph


def route_chunk(job: int, *, graph: ChunkedGraph, level: Level, flagged: bool) -> int:
    """Keys of one edge chunk (both directions) into one bucket per block; returns the chunk's edge count."""
    etype, chunk = edge_chunks(graph)[job]
    src, dst = homogeneous_chunk(graph, etype, chunk)
    bits = key_bits(graph.total_nodes)
    keys = symmetric_keys(src, dst, bits)
    if flagged:
        keys <<= 1
        keys[len(src):] |= 1
    keys.sort()  # by source, so by block (a sort of the keys themselves is several times faster than an argsort)
    cuts = np.searchsorted(keys, np.asarray(level.bounds, dtype=np.int64) << (bits + flagged))
    write_buckets([(level.root / "in" / str(job) / f"{b}.bkt", [keys[cuts[b]:cuts[b + 1]]]) for b in level.blocks])
    return len(src)


def block_classes(b: int, *, graph: ChunkedGraph, level: Level, balance_ntypes: list[str]) -> np.ndarray:
    """Balance class codes present in one block (the union over blocks gives every constraint column)."""
    lo, hi = level.span(b)
    return np.unique(class_codes(graph, parse_entries(graph, balance_ntypes), lo, hi))


def build_block(b: int, *, graph: ChunkedGraph, level: Level, jobs: int, options: AssignOptions,
                classes: np.ndarray | None, gains: tuple[Path, Path] | None = None) -> dict:
    """CSR of block b from its buckets, its node weights (count, then constraint columns) into `vwgt`, and with
    `gains` (the fetch gain and source factor maps: sampled.py) its edge weights."""
    lo, hi = level.span(b)
    bits = key_bits(graph.total_nodes)
    keys = block_keys(b, level=level, jobs=jobs)
    in_deg = in_degrees(keys, bits, lo, hi) if options.balance_edges else None
    if gains is not None:
        indptr, indices, ew = weighted_csr(keys, bits, open_ro(gains[0]), open_ro(gains[1]), lo, hi - lo)
    else:
        if options.balance_edges:
            keys >>= 1
        indptr, indices = csr_from_keys(keys, bits, row_offset=lo, rows=hi - lo)
        ew = np.zeros(0, dtype=np.int64)
    del keys
    cons = graph_constraints(graph, options.balance_ntypes, in_deg, lo, hi, classes)
    vw = np.ones((hi - lo, level.columns), dtype=np.int64)
    if cons.weights is not None:
        vw[:, 1:] = cons.weights
    write_range(level.vwgt, lo, vw)
    write_bucket(level.block(b), [indptr, indices, ew])
    return {"entries": int(indptr[-1]), "sums": vw.sum(axis=0)}


def input_paths(level: Level) -> Path:
    """The folder of the routed key buckets (removed once the blocks are built)."""
    return level.root / "in"

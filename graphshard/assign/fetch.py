"""`objtype: fetch`: edge weights under which a min-cut partitioner minimises what neighbour-sampled training fetches.

DGL's `NeighborSampler(fanouts)` starts at the seeds and, layer by layer from the last fanout to the first, takes
each in-edge u -> v of a frontier node v with probability min(1, fanout / in-degree(v)); the next frontier is the
old one plus the sampled sources. A node is in a batch's frontier, and fetched, once however many sampled edges
lead to it, so expected visits v over an epoch count as B * (1 - exp(-v / B)) batches (`saturate`; B = one trainer's
batches per epoch). With F_0 = seed indicator, `F_{l+1}(u) = saturate(F_l(u) + sum_{u -> v} F_l(v) p_l(v))` and
p_l(v) = min(1, f_l / indeg(v)), an in-edge of v is taken `g(v) = sum_l F_l(v) p_l(v)` times, and a directed edge
u -> v weighs g(v) * s(u), s(u) = saturate(T) / T with T = sum_{u -> v} g(v) (the takes out of u that cost a fetch).
The symmetric graph's edge {u, v} sums its input edges, so its cut weight estimates the remote fetches it causes.
Weights are integers: round(SCALE * w), at least 1. Levers measured: BENCHMARKS.md, issue 18.
"""

from __future__ import annotations

import numpy as np

from graphshard.assign.constraints import class_codes, parse_entries
from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk, key_bits, symmetric_keys
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import ChunkedGraph

SCALE = 64  # integer weight units per expected sampled traversal
MAX_WEIGHT = 1 << 24


def seed_entry(options: AssignOptions) -> str | None:
    """The `<ntype>/<feat>` whose non-zero nodes seed mini-batches: `sample_seeds`, else the first feature entry of
    `balance_ntypes`, else None (every node)."""
    if options.sample_seeds:
        return options.sample_seeds
    return next((e for e in options.balance_ntypes if "/" in e), None)


def seed_mask(graph: ChunkedGraph, entry: str | None, start: int, stop: int) -> np.ndarray:
    """Float 0/1 per homogeneous node in [start, stop): 1 where the node seeds mini-batches."""
    if entry is None:
        return np.ones(stop - start, dtype=np.float64)
    codes = class_codes(graph, parse_entries(graph, [entry]), start, stop)  # 0 other type, value + 1 otherwise
    return (codes >= 2).astype(np.float64)


def take_prob(in_deg: np.ndarray, fanout: int) -> np.ndarray:
    """Probability that sampling with `fanout` takes a given in-edge of a node of in-degree `in_deg`."""
    return np.minimum(1.0, fanout / np.maximum(np.asarray(in_deg, dtype=np.float64), 1.0))


def layer_step(frontier: np.ndarray, in_deg: np.ndarray, fanout: int) -> np.ndarray:
    """Expected takes per in-edge of each node in one layer: frontier visits times the take probability."""
    return frontier * take_prob(in_deg, fanout)


def saturate(visits: np.ndarray, batches: float) -> np.ndarray:
    """Expected batches (of `batches` per epoch) in which a node is present, from its expected visits: a node is
    fetched or sampled once per batch however many edges lead to it."""
    return batches * -np.expm1(-visits / batches)


def source_factor(visits: np.ndarray, batches: float) -> np.ndarray:
    """Per node, saturate(visits) / visits (1 when unvisited): the share of its expected takes that cost a fetch."""
    out = np.ones(len(visits))
    hit = visits > 0
    out[hit] = saturate(visits[hit], batches) / visits[hit]
    return out


def edge_gain(src: np.ndarray, dst: np.ndarray, seeds: np.ndarray, in_deg: np.ndarray,
              fanouts: list[int], batches: float) -> tuple[np.ndarray, np.ndarray]:
    """(g, s) for every node of a whole graph given as directed edges (see the module docstring)."""
    frontier, gain = seeds.astype(np.float64), np.zeros(len(seeds))
    for i, fanout in enumerate(reversed(fanouts)):
        step = layer_step(frontier, in_deg, fanout)
        gain += step
        if i < len(fanouts) - 1:
            frontier = saturate(frontier + np.bincount(src, weights=step[dst], minlength=len(seeds)), batches)
    return gain, source_factor(np.bincount(src, weights=gain[dst], minlength=len(seeds)), batches)


def quantise(weights: np.ndarray, scale: float = SCALE) -> np.ndarray:
    """Integer edge weights: round(scale * w), clipped to [1, MAX_WEIGHT]."""
    return np.clip(np.rint(weights * scale), 1, MAX_WEIGHT).astype(np.int64)


def weighted_csr(keys: np.ndarray, bits: int, gain, factor, row_offset: int, rows: int,
                 scale: float = SCALE) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, indices, weights) from flagged packed keys `((u << bits) | v) << 1 | f` (f = 1: the entry stands for
    an input edge v -> u, else u -> v); sorts `keys` in place, drops self-loops, sums the gain of the duplicates.
    `gain` is indexable by global node ID (an array or a memory map)."""
    keys.sort()
    flag = (keys & 1).astype(bool)
    row = keys >> (bits + 1)
    col = (keys >> 1) & ((1 << bits) - 1)
    keep = row != col
    row, col, flag = row[keep], col[keep], flag[keep]
    dst, src = np.where(flag, row, col), np.where(flag, col, row)  # the input edge this entry stands for
    value = np.asarray(gain[dst]) * np.asarray(factor[src])
    first = np.ones(len(row), dtype=bool)
    first[1:] = (row[1:] != row[:-1]) | (col[1:] != col[:-1])
    starts = np.flatnonzero(first)
    weights = np.add.reduceat(value, starts) if len(starts) else np.zeros(0)
    row, col = row[starts] - row_offset, col[starts]
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=rows), out=indptr[1:])
    return indptr, col, quantise(weights, scale)


def flagged_keys(src: np.ndarray, dst: np.ndarray, bits: int) -> np.ndarray:
    """Both directions of every edge as flagged keys (`weighted_csr`'s input): (src, dst, 0) and (dst, src, 1)."""
    keys = symmetric_keys(src, dst, bits) << 1
    keys[len(src):] |= 1
    return keys


def batches_per_part(seeds: float, options: AssignOptions, nparts: int) -> float:
    """Mini-batches per epoch of one trainer: a node is fetched by another partition's trainer at most this often."""
    return max(1.0, seeds / options.sample_batch_size / nparts)


def input_edges(graph: ChunkedGraph) -> tuple[np.ndarray, np.ndarray]:
    """(src, dst) of every input edge as homogeneous node IDs, the whole graph in memory."""
    pieces = [homogeneous_chunk(graph, et, i) for et, i in edge_chunks(graph)]
    if not pieces:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate([s for s, _ in pieces]), np.concatenate([d for _, d in pieces])


def fetch_graph(graph: ChunkedGraph, options: AssignOptions, nparts: int, idx_limit: int | None = None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The whole graph's symmetric CSR with fetch weights, and the input in-degrees: (indptr, indices, adjwgt,
    in_degrees). With `idx_limit` the weights are scaled down until their total fits it (32-bit METIS)."""
    n = graph.total_nodes
    src, dst = input_edges(graph)
    in_deg = np.bincount(dst, minlength=n)
    seeds = seed_mask(graph, seed_entry(options), 0, n)
    gain, factor = edge_gain(src, dst, seeds, in_deg, options.sample_fanouts,
                             batches_per_part(seeds.sum(), options, nparts))
    scale = SCALE
    if idx_limit is not None:  # total weight <= sum over edges of (gain + 1/scale) per direction
        total = 2 * float(gain[dst].sum()) + 2 * len(dst)
        scale = min(SCALE, max(1.0, idx_limit / 2 / max(total, 1.0)))
    keys = flagged_keys(src, dst, key_bits(n))
    del src, dst
    indptr, indices, adjwgt = weighted_csr(keys, key_bits(n), gain, factor, 0, n, scale)
    return indptr, indices, adjwgt, in_deg

"""`objtype: fetch` on level 0: the sampled-fetch gains of graphshard/assign/fetch.py, computed block by block from
the routed key buckets (flagged: 1 on the entry (v, u) of an input edge u -> v) before the blocks are built.

Rounds of one task per block, each writing only its own range of node-sized `.npy` maps under `L0/fetch/`: in-degrees
and seeds (`start_block`), one round per fanout from the last (`layer_block`: gain so far, next frontier), then the
source factors (`factor_block`). A neighbour's values are read by random access, as every multilevel round does.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from graphshard.assign.fetch import batches_per_part, layer_step, saturate, seed_entry, seed_mask, source_factor
from graphshard.assign.graph_build import key_bits
from graphshard.assign.multilevel.store import Level, create, open_ro, write_range
from graphshard.formats.buckets import read_buckets
from graphshard.formats.chunked import ChunkedGraph


def block_keys(b: int, *, level: Level, jobs: int) -> np.ndarray:
    """Every routed key of block b (from all edge-chunk jobs)."""
    return np.concatenate([keys for keys, in read_buckets([level.root / "in" / str(j) / f"{b}.bkt"
                                                            for j in range(jobs)])])


def in_degrees(keys: np.ndarray, bits: int, lo: int, hi: int) -> np.ndarray:
    """Input in-degree of every node of [lo, hi) from its flagged keys (duplicates and self-loops counted)."""
    return np.bincount((keys[(keys & 1) == 1] >> (bits + 1)) - lo, minlength=hi - lo)


def out_entries(keys: np.ndarray, bits: int, lo: int) -> tuple[np.ndarray, np.ndarray]:
    """(local source row, global destination) of every input edge leaving the block's nodes."""
    fwd = keys[(keys & 1) == 0]
    return (fwd >> (bits + 1)) - lo, (fwd >> 1) & ((1 << bits) - 1)


def path(level: Level, name: str) -> Path:
    return level.root / "fetch" / f"{name}.npy"


def prepare(level: Level, layers: int) -> None:
    """The node-sized maps every round writes into."""
    (level.root / "fetch").mkdir(parents=True, exist_ok=True)
    names = ["indeg", "factor", *[f"frontier-{i}" for i in range(layers)], *[f"gain-{i}" for i in range(layers + 1)]]
    for name in names:
        create(path(level, name), (level.nodes,), np.float64)


def start_block(b: int, *, graph: ChunkedGraph, level: Level, jobs: int, entry: str | None) -> float:
    """In-degrees, seeds (frontier 0) and a zero gain of block b; returns its seed count."""
    lo, hi = level.span(b)
    keys = block_keys(b, level=level, jobs=jobs)
    write_range(path(level, "indeg"), lo, in_degrees(keys, key_bits(graph.total_nodes), lo, hi).astype(np.float64))
    seeds = seed_mask(graph, entry, lo, hi)
    write_range(path(level, "frontier-0"), lo, seeds)
    write_range(path(level, "gain-0"), lo, np.zeros(hi - lo))
    return float(seeds.sum())


def layer_block(b: int, *, graph: ChunkedGraph, level: Level, jobs: int, layer: int, fanout: int, last: bool,
                batches: float) -> None:
    """One sampling layer for block b: gain += frontier * take probability; the next frontier unless `last`."""
    lo, hi = level.span(b)
    indeg, frontier = open_ro(path(level, "indeg")), open_ro(path(level, "frontier-" + str(layer)))
    own = layer_step(np.asarray(frontier[lo:hi]), np.asarray(indeg[lo:hi]), fanout)
    write_range(path(level, f"gain-{layer + 1}"), lo, np.asarray(open_ro(path(level, f"gain-{layer}"))[lo:hi]) + own)
    if last:
        return
    rows, dst = out_entries(block_keys(b, level=level, jobs=jobs), key_bits(graph.total_nodes), lo)
    taken = layer_step(np.asarray(frontier[dst]), np.asarray(indeg[dst]), fanout)
    visits = np.asarray(frontier[lo:hi]) + np.bincount(rows, weights=taken, minlength=hi - lo)
    write_range(path(level, f"frontier-{layer + 1}"), lo, saturate(visits, batches))


def factor_block(b: int, *, graph: ChunkedGraph, level: Level, jobs: int, layers: int, batches: float) -> None:
    """Source factors of block b from the takes of its out-edges."""
    lo, hi = level.span(b)
    rows, dst = out_entries(block_keys(b, level=level, jobs=jobs), key_bits(graph.total_nodes), lo)
    gain = open_ro(path(level, f"gain-{layers}"))
    takes = np.bincount(rows, weights=np.asarray(gain[dst]), minlength=hi - lo)
    write_range(path(level, "factor"), lo, source_factor(takes, batches))


def compute(graph: ChunkedGraph, level: Level, jobs: int, nparts: int, options, run) -> tuple[Path, Path]:
    """Every round in order (`run(what, fn, items, **constants)` runs one round of tasks); returns the paths of the
    gain and factor maps that `build.build_block` weighs the edges with."""
    fanouts = list(reversed(options.sample_fanouts))
    prepare(level, len(fanouts))
    seeds = sum(run("ml-fetch-start", start_block, list(level.blocks), graph=graph, level=level, jobs=jobs,
                    entry=seed_entry(options)))
    batches = batches_per_part(seeds, options, nparts)
    for layer, fanout in enumerate(fanouts):
        run(f"ml-fetch-layer{layer}", layer_block, list(level.blocks), graph=graph, level=level, jobs=jobs,
            layer=layer, fanout=fanout, last=layer == len(fanouts) - 1, batches=batches)
    run("ml-fetch-factor", factor_block, list(level.blocks), graph=graph, level=level, jobs=jobs,
        layers=len(fanouts), batches=batches)
    return path(level, f"gain-{len(fanouts)}"), path(level, "factor")

"""`objtype: fetch` levers one at a time, from a saved start (`bench/quality.py --remote --keep-parts`): the post-pass
(assign/fetch_refine.py) run again over the start with one thing changed, then the same estimate as quality.py's.

    nice -n 19 .venv/bin/python bench/fetch_levers.py --graph /work/data/quality18/rmat-50k/metadata.json \\
        --start parts/rmat-50k-metis-fetch-weights-k16.npy --k 16 --seeds _N/train_mask --levers base rounds60 free

Levers (each against `base`, the post-pass as `metis` + `objtype: fetch` runs it, 20 rounds, balanced per class of
`--balance` or by node count):
- `rounds60`: 60 rounds instead of 20 (and no early stop: does the search stall or run out of rounds?).
- `free`: nodes that no batch can fetch (not a seed, no sampled path to one) weigh 0 in the node-count column: they
  fill whichever partition has room, and the others' balance counts what matters.
- `fetched`: a non-seed node weighs its expected presence over all partitions' batches (how often it is fetched),
  seeds weigh 1 in their own column: balance of the fetch load, not of node counts (node counts unconstrained).
- `ceiling`: no post-pass; every non-seed node goes where the start's batches fetch it most, no balance for them
  (seeds stay): what placing the non-seeds could give at most if their balance did not bind.
Prints one JSON line per lever: expected share after each round, the estimate's share, imbalance per column.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from graphshard.assign import fetch_refine
from graphshard.assign.fetch import input_edges, seed_mask
from graphshard.formats.chunked import load_metadata
from graphshard.validate.remote_share import in_csr, remote_share

FANOUTS, BATCH = [10, 25], 1000


def presence(sampler: fetch_refine.Sampler, parts: np.ndarray, k: int) -> np.ndarray:
    """Per node, its expected presence summed over one batch of every partition (0: no batch can reach it)."""
    v0, _ = fetch_refine.seed_visits(sampler, parts, k, BATCH)
    return -np.expm1(-fetch_refine.forward(sampler, v0)[-1]).sum(axis=1)


def columns(lever: str, sampler: fetch_refine.Sampler, parts: np.ndarray, k: int, classes: bool) -> np.ndarray:
    """Balance columns (n x ncon): seeds and the rest (`classes`) or node counts, reweighted by the lever."""
    seeds = sampler.seeds.astype(np.float64)
    rest = 1.0 - seeds if classes else np.ones(len(parts))
    if lever == "free":
        rest = rest * ((presence(sampler, parts, k) > 0) | sampler.seeds)
    if lever == "fetched":
        rest = (1.0 - seeds) * presence(sampler, parts, k)
    return np.stack([seeds, rest], axis=1) if classes or lever == "fetched" else rest[:, None]


def ceiling(sampler: fetch_refine.Sampler, parts: np.ndarray, k: int) -> np.ndarray:
    """Every non-seed node in the partition whose one batch holds it with the highest probability (seeds stay)."""
    v0, _ = fetch_refine.seed_visits(sampler, parts, k, BATCH)
    best = fetch_refine.forward(sampler, v0)[-1].argmax(axis=1)
    return np.where(sampler.seeds, parts, best)


def imbalance(parts: np.ndarray, weights: np.ndarray, k: int) -> list[float]:
    """Largest partition load over the mean, per column."""
    load = fetch_refine.part_loads(parts, weights, k)
    return (load.max(axis=0) / np.maximum(load.mean(axis=0), 1e-12)).round(4).tolist()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, required=True)
    parser.add_argument("--start", type=Path, required=True, help=".npy of every node's part")
    parser.add_argument("--k", type=int, required=True)
    parser.add_argument("--seeds", default=None, help="<ntype>/<feat>: the training seeds (default every node)")
    parser.add_argument("--balance", choices=["nodes", "classes"], default="nodes",
                        help="nodes: node count only; classes: seeds and non-seeds each (balance_ntypes: [seeds])")
    parser.add_argument("--levers", nargs="+", default=["base"],
                        choices=["base", "rounds60", "free", "fetched", "ceiling"])
    parser.add_argument("--ufactor", type=int, default=30)
    parser.add_argument("--save-dir", type=Path, default=None,
                        help="keep each lever's parts as <start stem>-<lever>.npy here (for bench/dgl_share.py)")
    args = parser.parse_args()
    g = load_metadata(args.graph)
    src, dst = input_edges(g)
    seeds = seed_mask(g, args.seeds, 0, g.total_nodes) > 0
    sampler = fetch_refine.Sampler.build(src, dst, g.total_nodes, seeds, FANOUTS)
    indptr, sources = in_csr(src, dst, g.total_nodes)
    del src, dst
    start = np.load(args.start)
    plain = columns("base", sampler, start, args.k, True)  # seeds, non-seeds: what the report shows
    for lever in args.levers:
        weights = columns(lever, sampler, start, args.k, args.balance == "classes")
        t0 = time.perf_counter()
        longer = lever == "rounds60"
        if lever == "ceiling":
            parts, trace = ceiling(sampler, start, args.k), []
        else:
            parts, trace = fetch_refine.refine(sampler, start, args.k, weights, args.ufactor, BATCH,
                                               60 if longer else 20, 0.0 if longer else fetch_refine.MIN_ROUND_GAIN)
        seconds = time.perf_counter() - t0
        if args.save_dir:
            np.save(args.save_dir / f"{args.start.stem}-{lever}.npy", parts)
        est = remote_share(indptr, sources, parts, seeds, FANOUTS, seed=0, batch_size=BATCH)["overall"]
        print(json.dumps({"lever": lever, "balance": args.balance, "k": args.k, "start": args.start.name,
                          "remote_share": round(est, 4), "expected": [round(r, 4) for r in trace],
                          "seconds": round(seconds, 1), "imbalance_seeds_rest": imbalance(parts, plain, args.k),
                          "imbalance_nodes": imbalance(parts, np.ones((len(parts), 1)), args.k),
                          "imbalance_lever": imbalance(parts, weights, args.k)}), flush=True)


if __name__ == "__main__":
    main()

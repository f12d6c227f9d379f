"""The remote share of mini-batch input nodes as DGL's own DataLoader + NeighborSampler draw it, for saved
assignments (one `.npy` of every node's part each, type-major homogeneous order, as `bench/quality.py --keep-parts`
saves them): the check of graphshard's estimate on large graphs. Run in the DGL venv:

    flock /tmp/graphshard-heavy.lock env PYTHONPATH=. DGLBACKEND=pytorch /work/dgl-venv/bin/python \\
        bench/dgl_share.py --graph /work/data/quality18/rmat-300k-s2/metadata.json parts-a.npy parts-b.npy

Seeds: every node of the partition, or `--seeds <ntype>/<feat>`'s non-zero nodes; `--batches` batches of
`--batch-size` per partition, fanouts `--fanouts` (input layer first), DGL seeded with `--seed`. Prints one JSON line
per assignment: overall remote / input nodes and per partition.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import dgl
import numpy as np
import torch

from graphshard.assign.fetch import input_edges, seed_mask
from graphshard.formats.chunked import load_metadata


def dgl_share(graph, parts: np.ndarray, seeds: np.ndarray, fanouts: list[int], batch_size: int, batches: int,
              seed: int) -> dict:
    """Remote / input nodes per partition and overall over `batches` DGL mini-batches of each partition's seeds."""
    sampler = dgl.dataloading.NeighborSampler(fanouts)
    k = int(parts.max()) + 1
    remote, inputs = np.zeros(k), np.zeros(k)
    torch.manual_seed(seed)
    dgl.seed(seed)
    for p in range(k):
        own = torch.from_numpy(np.flatnonzero(seeds & (parts == p)))
        loader = dgl.dataloading.DataLoader(graph, own, sampler, batch_size=batch_size, shuffle=True)
        for i, (input_nodes, _, _) in enumerate(loader):
            if i == batches:
                break
            ids = input_nodes.numpy()
            inputs[p] += len(ids)
            remote[p] += np.count_nonzero(parts[ids] != p)
    share = remote / np.maximum(inputs, 1)
    return {"overall": float(remote.sum() / inputs.sum()), "per_part": share.round(4).tolist()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, required=True, help="the input's metadata.json")
    parser.add_argument("parts", nargs="+", type=Path, help=".npy files of every node's part")
    parser.add_argument("--seeds", default=None, help="<ntype>/<feat> whose non-zero nodes seed batches")
    parser.add_argument("--fanouts", default="10,25")
    parser.add_argument("--batch-size", type=int, default=1000)
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    g = load_metadata(args.graph)
    src, dst = input_edges(g)
    graph = dgl.graph((torch.from_numpy(src), torch.from_numpy(dst)), num_nodes=g.total_nodes)
    del src, dst
    seeds = seed_mask(g, args.seeds, 0, g.total_nodes) > 0
    fanouts = [int(f) for f in args.fanouts.split(",")]
    for path in args.parts:
        got = dgl_share(graph, np.load(path), seeds, fanouts, args.batch_size, args.batches, args.seed)
        print(json.dumps({"parts": str(path), **got}), flush=True)


if __name__ == "__main__":
    main()

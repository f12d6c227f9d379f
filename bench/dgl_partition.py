"""Partition a chunked graph with DGL's own in-memory `dgl.distributed.partition_graph` (run in the DGL venv).

Two uses: a baseline for `bench/dispatch.py` (time and peak memory of DGL's random / metis partitioning on the same
graph) and partition sets written by DGL itself for the validator. Prints one JSON line (also written to --json).

    /work/dgl-venv/bin/python bench/dgl_partition.py --in /work/data/rmat20m/metadata.json --out /tmp/dgl-rmat \\
        --parts 4 --method random --save-orig-ids --json /tmp/dgl-rmat.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("DGLBACKEND", "pytorch")

import dgl  # noqa: E402
import numpy as np  # noqa: E402
import torch  # noqa: E402
from measure import own_peak  # noqa: E402  (bench/measure.py)

from graphshard.atomic import staged_output  # noqa: E402
from graphshard.formats.chunked import ChunkedGraph, load_metadata  # noqa: E402
from graphshard.formats.dgl_binary import load_graph, save_tensor_dict  # noqa: E402
from graphshard.formats.partition_book import PartitionBook  # noqa: E402
from graphshard.formats.readers import read_chunk, read_edge_chunk  # noqa: E402

HOMO_ETYPE = "_N:_E:_N"


def _concat(parts: list[np.ndarray]) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(np.concatenate(parts)))


def load_dgl_graph(graph: ChunkedGraph) -> dgl.DGLGraph:
    """The whole chunked graph as one DGLGraph (homogeneous when it has the single type `_N`), with features."""
    edges = {}
    for etype in graph.edge_type:
        chunks = [read_edge_chunk(graph, etype, i) for i in range(len(graph.edges[etype].data))]
        edges[etype] = (_concat([s for s, _ in chunks]), _concat([d for _, d in chunks]))
    num_nodes = {nt: graph.num_nodes(nt) for nt in graph.node_type}
    if graph.edge_type == [HOMO_ETYPE]:
        g = dgl.graph(edges[HOMO_ETYPE], num_nodes=num_nodes["_N"])
    else:
        g = dgl.heterograph({tuple(et.split(":")): e for et, e in edges.items()}, num_nodes_dict=num_nodes)
    for ntype, feats in graph.node_data.items():
        for name, spec in feats.items():
            g.nodes[ntype].data[name] = _concat([read_chunk(graph, spec, i) for i in range(len(spec.data))])
    for etype, feats in graph.edge_data.items():
        for name, spec in feats.items():
            g.edges[tuple(etype.split(":"))].data[name] = _concat(
                [read_chunk(graph, spec, i) for i in range(len(spec.data))])
    return g


def save_orig_ids(config: Path, orig_nids, orig_eids) -> None:
    """Split DGL's returned new->original ID maps into per-partition `orig_nids.dgl`/`orig_eids.dgl` (as dispatch)."""
    book = PartitionBook.load(config)
    for kind, ranges, mapping, fname in (("node", book.nodes, orig_nids, "orig_nids.dgl"),
                                         ("edge", book.edges, orig_eids, "orig_eids.dgl")):
        maps = mapping if isinstance(mapping, dict) else {ranges.names[0]: mapping}
        maps = {":".join(k) if isinstance(k, tuple) else k: v.numpy() for k, v in maps.items()}
        for p in range(book.num_partitions()):
            out = {t: maps[t][ranges.typed_starts[i, p]:ranges.typed_ends[i, p]] for i, t in enumerate(ranges.names)}
            save_tensor_dict((config.parent / book.config.parts[p].part_graph).parent / fname, out)


def edge_cut(config: Path) -> int:
    """Owned edges whose source is owned by another partition, over all partitions."""
    book = PartitionBook.load(config)
    cut = 0
    for p in range(book.num_partitions()):
        g = load_graph(config.parent / book.config.parts[p].part_graph)
        inner_edge = g.edata["inner_edge"].astype(bool)
        cut += int((inner_edge & (g.ndata["inner_node"][g.src] == 0)).sum())
    return cut


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--in", dest="metadata", required=True, type=Path, help="chunked graph metadata.json")
    ap.add_argument("--out", required=True, type=Path, help="output folder of the partition set")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--method", choices=["random", "metis"], default="random")
    ap.add_argument("--hops", type=int, default=1, help="num_hops of the halo")
    ap.add_argument("--graph-formats", default="coo", help="comma-separated, e.g. coo,csc")
    ap.add_argument("--save-orig-ids", action="store_true", help="also write orig_nids.dgl / orig_eids.dgl per part")
    ap.add_argument("--cut", action="store_true", help="count the edge cut from the written partitions (untimed)")
    ap.add_argument("--json", type=Path, help="also write the result line here")
    ap.add_argument("--overwrite", action="store_true")
    args = ap.parse_args(argv)

    start = time.perf_counter()
    graph = load_metadata(args.metadata)
    g = load_dgl_graph(graph)
    loaded = time.perf_counter()
    with staged_output(args.out, args.overwrite) as stage:
        mapping = dgl.distributed.partition_graph(
            g, graph.graph_name, args.parts, str(stage), num_hops=args.hops, part_method=args.method,
            return_mapping=args.save_orig_ids, graph_formats=args.graph_formats.split(","))
        partitioned = time.perf_counter()
        if args.save_orig_ids:
            save_orig_ids(stage / f"{graph.graph_name}.json", *mapping)
    done = time.perf_counter()
    config = args.out / f"{graph.graph_name}.json"
    result = {
        "tool": "dgl.distributed.partition_graph", "dgl": dgl.__version__, "torch": torch.__version__,
        "graph": str(args.metadata), "num_nodes": g.num_nodes(), "num_edges": g.num_edges(),
        "method": args.method, "num_parts": args.parts, "hops": args.hops,
        "load_s": round(loaded - start, 2), "partition_s": round(partitioned - loaded, 2),
        "wall_s": round(done - start, 2), "peak_rss_bytes": own_peak(), "config": str(config),
    }
    if args.cut:
        result["edge_cut"] = edge_cut(config)
        result["edge_cut_share"] = round(result["edge_cut"] / max(g.num_edges(), 1), 4)
    line = json.dumps(result)
    print(line)
    if args.json:
        args.json.write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Quality of an assignment (`assignment_report.json`): edge cut, nodes and edges per partition, imbalance per balance
constraint, communication volume, time and peak memory.

Edges are the input's edges as listed in the chunks (all edge types); an edge counts for the partition that owns its
destination (DGL's rule) and is cut when its endpoints lie in different partitions. Communication volume is METIS's:
the sum over nodes of the number of other partitions holding one of its neighbours (edges taken as undirected).
Edge chunks are read one at a time (as Dask tasks when a client is given); parts are memory-mapped `.npy` files.
The volume needs a mark array of N x num_parts bytes per chunk task (returned as a bitmap of an eighth of that).
"""

from __future__ import annotations

import resource
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.constraints import graph_constraints
from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
from graphshard.assign.options import AssignOptions
from graphshard.dasktasks import run_tasks
from graphshard.formats.assignment import convert_parts
from graphshard.formats.chunked import ChunkedGraph


def load_parts(graph: ChunkedGraph, folder: Path, nparts: int, scratch: Path) -> dict[str, Path]:
    """Check each `<ntype>.txt` (line count, id range) and convert it to an int32 `.npy` in `scratch`."""
    scratch.mkdir(parents=True, exist_ok=True)
    return {nt: convert_parts(folder, nt, graph.num_nodes(nt), nparts, scratch / f"{nt}.npy")
            for nt in graph.node_type}


def homogeneous_parts(graph: ChunkedGraph, part_files: dict[str, Path]) -> np.ndarray:
    """Parts of all nodes in type-major homogeneous order."""
    return np.concatenate([np.load(part_files[nt]) for nt in graph.node_type]).astype(np.int64)


def chunk_stats(graph: ChunkedGraph, etype: str, chunk: int, part_files: dict[str, Path], nparts: int,
                want_degrees: bool) -> dict:
    """Cut count, edges per destination partition and the (node, foreign part) pairs of one edge chunk, the latter
    as a bitmap of N x nparts bits (a scatter into a mark array: far cheaper than np.unique on the pairs)."""
    canon = graph.canonical(etype)
    src, dst = homogeneous_chunk(graph, etype, chunk)
    off = graph.type_node_offsets
    ps = np.load(part_files[canon.src], mmap_mode="r")[src - off[graph.ntype_id(canon.src)]].astype(np.int64)
    pd = np.load(part_files[canon.dst], mmap_mode="r")[dst - off[graph.ntype_id(canon.dst)]].astype(np.int64)
    cross = ps != pd
    marks = np.zeros(graph.total_nodes * nparts, dtype=bool)
    marks[src[cross] * nparts + pd[cross]] = True
    marks[dst[cross] * nparts + ps[cross]] = True
    return {
        "cut": int(cross.sum()),
        "edges": np.bincount(pd, minlength=nparts),
        "vol_bits": np.packbits(marks),
        "in_degrees": np.bincount(dst, minlength=graph.total_nodes) if want_degrees else None,
    }


def imbalance(parts: np.ndarray, weights: np.ndarray | None, nparts: int) -> float:
    """max / mean of the per-partition weight sums (1.0 is perfect balance)."""
    sums = np.bincount(parts, weights=weights, minlength=nparts)
    mean = sums.sum() / nparts
    return float(sums.max() / mean) if mean > 0 else 1.0


# Set bits per byte value (np.bitwise_count needs numpy 2; the DGL venv runs numpy 1.26).
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def peak_memory() -> dict:
    """Peak resident set sizes (bytes) of this process and of its finished children (MPI ranks)."""
    return {"driver_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "children_peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}


def build_report(graph: ChunkedGraph, part_files: dict[str, Path], nparts: int, options: AssignOptions,
                 client: Client | None = None) -> dict:
    """Everything `assignment_report.json` says about the partition quality."""
    jobs = edge_chunks(graph)
    args = (part_files, nparts, options.balance_edges)
    stats = run_tasks(client, "assign", "report-cut", chunk_stats, [(graph, et, i, *args) for et, i in jobs],
                      label=lambda job: f"{job[1]}/chunk{job[2]}", star=True)
    parts = homogeneous_parts(graph, part_files)
    n = graph.total_nodes
    vol_bits = np.zeros((n * nparts + 7) // 8, dtype=np.uint8)
    for s in stats:
        vol_bits |= s["vol_bits"]
    edges_total = graph.total_edges
    cut = sum(s["cut"] for s in stats)
    in_deg = sum(s["in_degrees"] for s in stats) if options.balance_edges and stats else None
    balance = {"nodes": imbalance(parts, None, nparts)}
    if options.has_constraints:
        cons = graph_constraints(graph, options.balance_ntypes, None if in_deg is None else np.asarray(in_deg))
        for c, label in enumerate(cons.labels):
            balance[label] = imbalance(parts, cons.weights[:, c], nparts)
    off = graph.type_node_offsets
    return {
        "num_parts": nparts,
        "num_nodes": n,
        "num_edges": edges_total,
        "edge_cut": {"count": cut, "fraction": cut / edges_total if edges_total else 0.0},
        "nodes_per_part": {nt: np.bincount(parts[off[t]:off[t + 1]], minlength=nparts).tolist()
                           for t, nt in enumerate(graph.node_type)},
        "edges_per_part": (sum(s["edges"] for s in stats) if stats else np.zeros(nparts, np.int64)).tolist(),
        "imbalance": balance,
        "communication_volume": int(_POPCOUNT[vol_bits].sum(dtype=np.int64)),
    }

"""Quality of an assignment (`assignment_report.json`): edge cut, nodes and edges per partition, imbalance per balance
constraint, communication volume, time and peak memory.

Edges are the input's edges as listed in the chunks (all edge types); an edge counts for the partition that owns its
destination (DGL's rule) and is cut when its endpoints lie in different partitions. Communication volume is METIS's:
the sum over nodes of the number of other partitions holding one of its neighbours (edges taken as undirected).
Edge chunks are read one at a time (as Dask tasks when a client is given); parts are memory-mapped `.npy` files,
which the tasks reach through the report's scratch (graphshard.storage.scratch): the driver's own files when it is a
local folder, arrays on the store (each worker memory-mapping its local copy) when it is a store prefix.
The volume needs the distinct (node, foreign part) pairs. When N x num_parts marks fit `VOL_MARK_BYTES` (and the
chunks' bitmaps of an eighth of that fit the driver), each chunk task marks them in memory; otherwise the chunk tasks
write their pairs per block of nodes to scratch files and one task per block counts them, so that memory follows the
chunk and the block, not the graph.
"""

from __future__ import annotations

import resource
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from graphshard.assign.constraints import class_columns
from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
from graphshard.assign.options import AssignOptions
from graphshard.daskrun import run_tasks
from graphshard.formats.assignment import convert_parts
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage.scratch import (
    ScratchPath,
    create_array,
    is_store,
    load_array,
    open_array,
    save_array,
    upload_range,
)

if TYPE_CHECKING:
    from distributed import Client  # type hints only: the plan imports this module's constants without Dask


def load_parts(graph: ChunkedGraph, folder: Path, nparts: int, scratch: Path) -> dict[str, Path]:
    """Check each `<ntype>.txt` (line count, id range) and convert it to an int32 `.npy` in `scratch`."""
    scratch.mkdir(parents=True, exist_ok=True)
    return {nt: convert_parts(folder, nt, graph.num_nodes(nt), nparts, scratch / f"{nt}.npy")
            for nt in graph.node_type}


def shared_parts(part_files: dict[str, Path], scratch: ScratchPath) -> dict[str, ScratchPath]:
    """The parts files as the edge pass's tasks read them: the driver's own (a local scratch: the same host) or
    copies uploaded as scratch arrays under a store prefix (workers on other hosts)."""
    if not is_store(scratch):
        return part_files
    shared = {}
    for nt, path in part_files.items():
        shared[nt] = scratch / nt
        create_array(shared[nt], np.load(path, mmap_mode="r").shape, np.int32)
        upload_range(shared[nt], 0, path, keep=True)
    return shared


def degree_columns(column: np.ndarray | None, ncols: int, part_files: dict[str, Path],
                   scratch: ScratchPath) -> tuple[int, ScratchPath | None]:
    """What the chunk tasks need to sum in-degrees per (constraint column, partition): the column count and, with
    classes, each node's column as an int32 array they can read (beside the parts, shared like them)."""
    if column is None:
        return 1, None
    local = next(iter(part_files.values())).parent / ".columns.npy"
    np.save(local, column)
    return ncols, shared_parts({"columns": local}, scratch / "columns")["columns"]


VOL_MARK_BYTES = 1 << 28  # node x part marks (a byte each) that one task, or the driver's bitmaps, may hold


def _chunk_task(etype: str, chunk: int, *, args: tuple) -> dict:
    """One report-cut task: `chunk_stats` of one edge chunk, the graph and the rest as one task constant."""
    graph, *rest = args
    return chunk_stats(graph, etype, chunk, *rest)


def chunk_stats(graph: ChunkedGraph, etype: str, chunk: int, part_files: dict[str, ScratchPath], nparts: int,
                degrees: tuple[int, ScratchPath | None] | None, volume: bool, vol_dir: ScratchPath | None,
                vol_span: int) -> dict:
    """Cut count, edges per destination partition, (`degrees`: column count, node -> column file) the in-degrees
    its edges add per (column, partition), and (`volume`) the (node, foreign part) pairs of one edge chunk: a
    bitmap of N x nparts bits (a scatter into a mark array, far cheaper than np.unique), or with `vol_dir`, files of
    pair ids per volume block of `vol_span` pair ids (`_write_vol_pieces`). Nothing it returns grows with the graph
    but the bitmap, which the flow's budget bounds."""
    canon = graph.canonical(etype)
    src, dst = homogeneous_chunk(graph, etype, chunk)
    off = graph.type_node_offsets
    ps = open_array(part_files[canon.src])[src - off[graph.ntype_id(canon.src)]].astype(np.int64)
    pd = open_array(part_files[canon.dst])[dst - off[graph.ntype_id(canon.dst)]].astype(np.int64)
    cross = ps != pd
    pairs = (ends[cross] * nparts + other[cross] for ends, other in ((src, pd), (dst, ps)))  # one half at a time
    stats = {"cut": int(cross.sum()), "edges": np.bincount(pd, minlength=nparts),
             "degree_sums": None if degrees is None else _degree_sums(dst, pd, nparts, *degrees), "vol_bits": None,
             "vol_pieces": []}
    if not volume:
        return stats
    if vol_dir is None:
        marks = np.zeros(graph.total_nodes * nparts, dtype=bool)
        for half in pairs:
            marks[half] = True
        stats["vol_bits"] = np.packbits(marks)
    else:
        stats["vol_pieces"] = _write_vol_pieces(np.concatenate(list(pairs)), vol_span, vol_dir,
                                                f"{graph.edge_type.index(etype):04d}-{chunk:06d}.npy")
    return stats


def _degree_sums(dst: np.ndarray, pd: np.ndarray, nparts: int, ncols: int, columns: ScratchPath | None) -> np.ndarray:
    """(ncols, nparts) in-degrees a chunk's edges add to each constraint column of each partition (a node's in-degree
    counts in its own column and partition: each edge adds one at its destination's)."""
    col = np.zeros(1, np.int64) if columns is None else open_array(columns)[dst].astype(np.int64)
    return np.bincount(col * nparts + pd, minlength=ncols * nparts).reshape(ncols, nparts)


def _write_vol_pieces(pairs: np.ndarray, span: int, vol_dir: ScratchPath, name: str) -> list[tuple[int, ScratchPath]]:
    """Split pair ids by volume block (`span` ids each) and write each block's share, block-local, as uint32;
    returns (block, piece) of each piece written."""
    block = pairs // span
    order = np.argsort(block, kind="stable")
    blocks, starts = np.unique(block[order], return_index=True)
    written = []
    for b, piece in zip(blocks.tolist(), np.split(pairs[order], starts[1:])):
        path = vol_dir / f"{b:06d}" / name
        if not is_store(path):
            path.parent.mkdir(parents=True, exist_ok=True)
        save_array(path, (piece - b * span).astype(np.uint32))
        written.append((b, path))
    return written


def block_volume(block: int, pieces: list[ScratchPath], span: int) -> int:
    """Distinct (node, foreign part) pairs of one volume block, from every chunk's piece."""
    marks = np.zeros(span, dtype=bool)
    for piece in pieces:
        marks[load_array(piece)] = True
    return int(np.count_nonzero(marks))


def communication_volume(stats: list[dict], vol_dir: ScratchPath | None, vol_span: int,
                         client: Client | None) -> int:
    """METIS's communication volume: the chunk tasks' bitmaps OR-ed, or their pieces (as the tasks reported them)
    counted, a task per block."""
    if vol_dir is None:
        bits = np.zeros_like(stats[0]["vol_bits"]) if stats else np.zeros(0, np.uint8)
        for s in stats:
            bits |= s["vol_bits"]
        return int(_POPCOUNT[bits].sum(dtype=np.int64))
    blocks: dict[int, list[ScratchPath]] = {}
    for s in stats:
        for b, piece in s["vol_pieces"]:
            blocks.setdefault(b, []).append(piece)
    return sum(run_tasks(client, "assign", "report-volume", block_volume, sorted(blocks.items()),
                         label=lambda job: f"block{job[0]:06d}", star=True, span=vol_span))


def spread(sums: np.ndarray) -> float:
    """max / mean of per-partition sums (1.0 is perfect balance)."""
    mean = sums.sum() / len(sums)
    return float(sums.max() / mean) if mean > 0 else 1.0


# Set bits per byte value (np.bitwise_count needs numpy 2; the DGL venv runs numpy 1.26).
_POPCOUNT = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)


def peak_memory() -> dict:
    """Peak resident set sizes (bytes) of this process and of its finished children (MPI ranks)."""
    return {"driver_peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "children_peak_rss_bytes": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}


def class_sums(graph: ChunkedGraph, part_files: dict[str, Path], nparts: int, column: np.ndarray | None) -> np.ndarray:
    """(columns, nparts) nodes of each constraint column per partition, one node type's parts at a time."""
    ncols = 0 if column is None else int(column.max(initial=-1)) + 1
    sums = np.zeros(ncols * nparts, np.int64)
    off = graph.type_node_offsets
    for t, nt in enumerate(graph.node_type if ncols else []):
        col = column[off[t]:off[t + 1]].astype(np.int64)
        sums += np.bincount(col * nparts + np.load(part_files[nt]), minlength=ncols * nparts)
    return sums.reshape(ncols, nparts)


def nodes_per_part(graph: ChunkedGraph, part_files: dict[str, Path], nparts: int,
                   rows: int = 1 << 24) -> dict[str, list[int]]:
    """Nodes of each type per partition, read from the memory-mapped parts `rows` at a time."""
    counts = {}
    for nt in graph.node_type:
        parts = np.load(part_files[nt], mmap_mode="r")
        total = np.zeros(nparts, np.int64)
        for lo in range(0, len(parts), rows):
            total += np.bincount(parts[lo:lo + rows], minlength=nparts)
        counts[nt] = total.tolist()
    return counts


def edge_figures(graph: ChunkedGraph, stats: list[dict], nparts: int, vol_dir: ScratchPath | None, vol_budget: int,
                 client: Client | None) -> dict:
    """The report's figures that need the pass over every edge: cut, edges per part, communication volume."""
    cut = sum(s["cut"] for s in stats)
    return {"edge_cut": {"count": cut, "fraction": cut / graph.total_edges if graph.total_edges else 0.0},
            "edges_per_part": (sum(s["edges"] for s in stats) if stats else np.zeros(nparts, np.int64)).tolist(),
            "communication_volume": communication_volume(stats, vol_dir, vol_budget, client)}


def build_report(graph: ChunkedGraph, part_files: dict[str, Path], nparts: int, options: AssignOptions,
                 scratch: ScratchPath, client: Client | None = None, vol_budget: int = VOL_MARK_BYTES,
                 edges: bool = True) -> dict:
    """Everything `assignment_report.json` says about the partition quality. Memory is bounded by the edge chunk
    and `vol_budget`, except with balance constraints (their weights span the graph, as for the partitioner).
    `edges=False`: no pass over the edges (unless `balance_edges` needs the degrees); their figures are null.
    `scratch`: where the pass's tasks find the parts and leave their volume pieces (a local folder or a store
    prefix, `graphshard.storage.scratch`)."""
    jobs = edge_chunks(graph) if edges or options.balance_edges else []
    n = graph.total_nodes
    in_memory = n * nparts * max(8, len(jobs)) <= 8 * vol_budget  # a task's marks and the driver's bitmaps fit
    vol_dir = None if in_memory else scratch / "volume"
    shared = shared_parts(part_files, scratch / "parts") if jobs else part_files
    column, labels = class_columns(graph, options.balance_ntypes) if options.has_constraints else (None, [])
    degrees = degree_columns(column, len(labels), part_files, scratch) if options.balance_edges and jobs else None
    args = (graph, shared, nparts, degrees, edges, vol_dir, vol_budget)  # one constant: its Storage pickled once
    on_store = not graph.is_local or is_store(scratch)  # then it carries a Storage: one copy per worker
    stats = run_tasks(client, "assign", "report-cut", _chunk_task, jobs, label=lambda job: f"{job[0]}/chunk{job[1]}",
                      star=True, share=("args",) if on_store else (), args=args) if jobs else []
    per_part = nodes_per_part(graph, part_files, nparts)
    balance = {"nodes": spread(np.sum(list(per_part.values()), axis=0))}
    if labels:
        balance.update(zip(labels, map(spread, class_sums(graph, part_files, nparts, column).astype(np.float64))))
    if degrees:
        names = [f"{label}*in_degree" for label in labels] or ["in_degree"]
        balance.update(zip(names, map(spread, sum(s["degree_sums"] for s in stats).astype(np.float64))))
    figures = (edge_figures(graph, stats, nparts, vol_dir, vol_budget, client) if edges else
               {"edge_cut": None, "edges_per_part": None, "communication_volume": None})
    return {"num_parts": nparts, "num_nodes": n, "num_edges": graph.total_edges, "nodes_per_part": per_part,
            "imbalance": balance, **figures}

"""KaMinPar (PyPI `kaminpar`) over the whole homogeneous graph: a fast shared-memory alternative to METIS.

Its Python binding reads graphs only from files, so the CSR is written in the ParHiP binary format with numpy
(header: version bits, n, m; then byte offsets into the file per node; then 32-bit neighbour ids).
KaMinPar balances node counts only: no multi-constraint balance, no volume objective; `objtype: fetch` writes the
fetch edge weights (graphshard/assign/fetch.py) into a weighted file.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.base import Partitioner, write_homogeneous
from graphshard.assign.fetch import fetch_graph
from graphshard.assign.fetch_refine import refine_assignment
from graphshard.assign.graph_build import build_csr
from graphshard.assign.options import AssignOptions
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph

# ParHiP version bits, least significant first: no edge weights, no vertex weights, 32-bit edge ids, 32-bit vertex ids
PARHIP_UNWEIGHTED_32BIT_VIDS = 0b1011
PARHIP_WEIGHTED_64BIT = 0b0000  # node and edge weights, every field 64 bits wide
HEADER_BYTES = 24


def write_parhip(path: Path, indptr: np.ndarray, indices: np.ndarray) -> Path:
    """Write an unweighted symmetric CSR as a ParHiP binary graph (64-bit offsets, 32-bit vertex ids)."""
    n, m = len(indptr) - 1, int(indptr[-1])
    if n >= 2 ** 32:
        raise GraphshardError(f"KaMinPar input: {n} nodes exceed 32-bit vertex ids")
    with open(path, "wb") as fh:
        np.array([PARHIP_UNWEIGHTED_32BIT_VIDS, n, m], dtype=np.uint64).tofile(fh)
        first = HEADER_BYTES + 8 * (n + 1)
        (first + 4 * indptr.astype(np.uint64)).astype(np.uint64).tofile(fh)
        indices.astype(np.uint32).tofile(fh)
    return path


def write_parhip_weighted(path: Path, indptr: np.ndarray, indices: np.ndarray, vwgt: np.ndarray,
                          adjwgt: np.ndarray) -> Path:
    """Write a symmetric CSR with node and edge weights as a ParHiP binary graph, every field 64 bits wide
    (header, byte offsets of the neighbour lists, neighbours, node weights, edge weights)."""
    n, m = len(indptr) - 1, int(indptr[-1])
    with open(path, "wb") as fh:
        np.array([PARHIP_WEIGHTED_64BIT, n, m], dtype=np.uint64).tofile(fh)
        (HEADER_BYTES + 8 * (n + 1) + 8 * indptr.astype(np.uint64)).astype(np.uint64).tofile(fh)
        for arr in (indices, vwgt, adjwgt):
            np.asarray(arr, dtype=np.int64).tofile(fh)
    return path


def _write_input(graph: ChunkedGraph, options: AssignOptions, nparts: int, path: Path) -> Path:
    """The whole graph as KaMinPar's input file: unweighted, or with fetch edge weights (`objtype: fetch`)."""
    if options.objtype == "fetch":
        indptr, indices, adjwgt, _ = fetch_graph(graph, options, nparts)
        return write_parhip_weighted(path, indptr, indices, np.ones(len(indptr) - 1, dtype=np.int64), adjwgt)
    hom = build_csr(graph)
    return write_parhip(path, hom.indptr, hom.indices)


class KaminparPartitioner(Partitioner):
    name = "kaminpar"

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        import kaminpar

        if options.kaminpar_preset not in kaminpar.context_names():
            raise GraphshardError(f"kaminpar_preset: expected one of {sorted(kaminpar.context_names())}, "
                                  f"found '{options.kaminpar_preset}'")
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(dir=out) as tmp:
            path = _write_input(graph, options, nparts, Path(tmp) / "graph.parhip")
            kgraph = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.PARHIP)
        t1 = time.perf_counter()
        if nparts == 1:
            parts = np.zeros(kgraph.n(), dtype=np.int64)
        else:
            kaminpar.reseed(options.seed)
            solver = kaminpar.KaMinPar(options.kaminpar_threads, kaminpar.context_by_name(options.kaminpar_preset))
            parts = np.asarray(solver.compute_partition(kgraph, nparts, options.ufactor / 1000.0), dtype=np.int64)
        t2 = time.perf_counter()
        refined = None
        if options.objtype == "fetch" and options.fetch_refine_rounds and nparts > 1:
            parts, refined = refine_assignment(graph, options, parts, nparts, None)
        t3 = time.perf_counter()
        write_homogeneous(graph, parts, out)
        return {
            "preset": options.kaminpar_preset,
            "threads": options.kaminpar_threads,
            "objective": options.objtype,
            **({"fetch_refine": refined} if refined else {}),
            "seconds": {"build_graph": round(t1 - t0, 3), "partition_call": round(t2 - t1, 3),
                        **({"fetch_refine": round(t3 - t2, 3)} if refined else {}),
                        "write": round(time.perf_counter() - t3, 3)},
        }

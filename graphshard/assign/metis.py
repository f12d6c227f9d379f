"""Single-machine METIS k-way over the whole homogeneous graph, through METIS's C API (multi-constraint, `vol`,
and `fetch` as edge weights: graphshard/assign/fetch.py)."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.base import Partitioner, write_homogeneous
from graphshard.assign.constraints import Attainable, Constraints, attainable, graph_constraints
from graphshard.assign.fetch import fetch_graph
from graphshard.assign.fetch_refine import refine_assignment
from graphshard.assign.graph_build import build_csr
from graphshard.assign.metis_capi import load_metis
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import ChunkedGraph

log = logging.getLogger(__name__)


class MetisPartitioner(Partitioner):
    name = "metis"

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        lib = load_metis(options.metis_lib)
        t0 = time.perf_counter()
        adjwgt = None
        if options.objtype == "fetch":
            indptr, indices, adjwgt, in_deg = fetch_graph(graph, options, nparts, int(np.iinfo(lib.idx).max))
        else:
            hom = build_csr(graph)
            indptr, indices, in_deg = hom.indptr, hom.indices, hom.in_degrees
            del hom
        constraints = graph_constraints(graph, options.balance_ntypes, in_deg if options.balance_edges else None)
        vwgt = constraints.weights
        bounds = _bounds(constraints, nparts, options.ufactor)
        t1 = time.perf_counter()
        objval, parts = lib.part_kway(indptr, indices, nparts, bounds.columns(vwgt) if bounds else None,
                                      seed=options.seed, ufactor=options.ufactor,
                                      objtype="cut" if adjwgt is not None else options.objtype, adjwgt=adjwgt,
                                      niter=options.metis_niter, ubvec=bounds.ubvec if bounds else None)
        t2 = time.perf_counter()
        del indptr, indices, adjwgt
        refined = None
        if options.objtype == "fetch" and options.fetch_refine_rounds and nparts > 1:
            parts, refined = refine_assignment(graph, options, parts, nparts, vwgt)
        t3 = time.perf_counter()
        write_homogeneous(graph, parts, out)
        return {
            "library": lib.path,
            "idx_bits": lib.idx(0).itemsize * 8,
            "constraints": 1 if vwgt is None else int(vwgt.shape[1]),
            **(bounds.info(constraints.labels) if bounds else {}),
            "niter": options.metis_niter,
            "objective": {"type": options.objtype, "value": objval},
            **({"fetch_refine": refined} if refined else {}),
            "seconds": {"build_graph": round(t1 - t0, 3), "partition_call": round(t2 - t1, 3),
                        **({"fetch_refine": round(t3 - t2, 3)} if refined else {}),
                        "write": round(time.perf_counter() - t3, 3)},
        }


def _bounds(constraints: Constraints, nparts: int, ufactor: int) -> Attainable | None:
    """What METIS can balance of the constraint columns (None: unit weights); a column it cannot spread is named in
    a warning."""
    weights = constraints.weights
    if weights is None:
        return None
    bounds = attainable(weights.sum(axis=0), weights.max(axis=0, initial=0), nparts, ufactor)
    for column in bounds.dropped:
        log.warning(f"balance column '{constraints.labels[column]}' totals {int(weights[:, column].sum())} for "
                    f"{nparts} partitions, less than one each: it cannot be spread, so METIS leaves it out of its "
                    "constraints")
    return bounds

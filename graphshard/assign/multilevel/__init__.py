"""`multilevel`: a distributed multilevel partitioner that runs as Dask tasks on the run's cluster (no MPI).

Coarsen by size-constrained label propagation over blocks of nodes, contract through bucket files, partition the
coarsest level (at most `multilevel_coarse_nodes` nodes) with KaMinPar's strong preset or METIS in one task, then
project back and refine with size-constrained label propagation and boundary FM plus an overweight fix per level.
Design and memory: docs/DESIGN.md "Assignment: multilevel".
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from distributed import Client

from graphshard.assign.base import Partitioner, write_homogeneous
from graphshard.assign.multilevel import coarsen, hierarchy
from graphshard.assign.multilevel.store import open_ro, remove
from graphshard.assign.options import AssignOptions
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage import location
from graphshard.storage.scratch import ScratchPath, scratch_space


class MultilevelPartitioner(Partitioner):
    name = "multilevel"

    def check(self, graph: ChunkedGraph, nparts: int, options: AssignOptions) -> None:
        if nparts > graph.total_nodes:
            raise GraphshardError(f"multilevel: {nparts} parts (num_parts x num_trainers_per_machine) exceed the "
                                  f"graph's {graph.total_nodes} nodes; use fewer parts or trainers")

    def assign(self, graph: ChunkedGraph, nparts: int, options: AssignOptions, out: Path,
               client: Client | None = None) -> dict:
        if nparts == 1:
            write_homogeneous(graph, np.zeros(graph.total_nodes, dtype=np.int64), out)
            return {"levels": [], "seconds": {}}
        where = self.scratch.join("multilevel") if self.scratch is not None else location(out).join(".multilevel")
        with scratch_space(where, self.storage, client) as scratch:
            return run(graph, nparts, options, scratch, out, client)


def run(graph: ChunkedGraph, nparts: int, options: AssignOptions, scratch: ScratchPath, out: Path,
        client: Client | None) -> dict:
    """Every phase in order; returns the facts for the report (levels, time per phase, moves, METIS's cut)."""
    plan = hierarchy.Plan(nparts, options)
    seconds: dict[str, float] = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        seconds[name] = round(seconds.get(name, 0.0) + now - t, 3)
        t = now

    levels = [hierarchy.build_input(graph, plan, scratch, client)]
    rounds: list[int] = []
    hub_cluster = coarsen.HUB_CLUSTER  # hubs' clusters grow (x HUB_RELAX) each time they stall the coarsening
    lap("build")
    while not hierarchy.coarse_enough(levels[-1], options) and len(levels) < hierarchy.MAX_LEVELS:
        fine = levels[-1]
        coarse, done, grown = hierarchy.coarsen_level(fine, plan, client, hub_cluster)
        if coarse.nodes < fine.nodes:
            levels.append(coarse)
            rounds.append(done)
        hub_cluster = max(hub_cluster, grown)
        if coarse.nodes > hierarchy.STALL * fine.nodes:
            if not grown or hub_cluster >= hierarchy.hub_cap(plan):
                break
            hub_cluster *= coarsen.HUB_RELAX
    lap("coarsen")
    cut, load = hierarchy.initial(levels[-1], plan, client)
    lap("initial")
    load, rnd, moved = hierarchy.refine_level(levels[-1], plan, load, client)
    facts = [{"level": len(levels) - 1, **moved}]
    for i in range(len(levels) - 2, -1, -1):
        hierarchy.project(levels[i], levels[i + 1], rnd, client)
        remove(levels[i + 1].root)
        load, rnd, moved = hierarchy.refine_level(levels[i], plan, load, client)
        facts.append({"level": i, **moved})
    lap("refine")
    write_homogeneous(graph, open_ro(levels[0].parts(rnd)), out)
    lap("write")
    return {
        "levels": [{"nodes": lv.nodes, "edges": lv.entries // 2, "blocks": len(lv.blocks), "lp_rounds": r}
                   for lv, r in zip(levels, [*rounds, 0])],
        "coarsest_cut": int(cut),
        "constraints": len(plan.balance),
        "part_weights": load.tolist(),
        "part_bound": plan.bound.tolist(),
        "refinement": facts[::-1],
        "seconds": seconds,
    }

"""`multilevel`: a distributed multilevel partitioner that runs as Dask tasks on the run's cluster (no MPI).

Coarsen by size-constrained label propagation over blocks of nodes, contract through bucket files, partition the
coarsest level (at most `multilevel_coarse_nodes` nodes) with KaMinPar's strong preset or METIS in one task, then
project back and refine with size-constrained label propagation and boundary FM plus an overweight fix per level.
Design and memory: docs/DESIGN.md "Assignment: multilevel".
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np
from distributed import Client

from graphshard.assign.base import Partitioner, write_homogeneous
from graphshard.assign.multilevel import hierarchy, regions
from graphshard.assign.multilevel.store import Level, open_ro, remove
from graphshard.assign.options import MAX_LEVELS, AssignOptions
from graphshard.daskrun import cancel_tasks, gather_tasks
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage import location
from graphshard.storage.scratch import ScratchPath, scratch_space

First = tuple[list[Level], list[int], tuple[int, np.ndarray, str]]  # a cycle's levels, LP rounds, coarsest partition


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
    """Every phase in order (`cycles`), and beside them, on a graph one task holds whole that still coarsens, METIS's
    partition of it as a candidate for the result (`hierarchy.submit_metis_input`); returns the facts for the report
    (levels, time per phase, moves, the candidate's cuts)."""
    plan = hierarchy.Plan(nparts, options)
    seconds: dict[str, float] = {}
    t = time.perf_counter()

    def lap(name: str) -> None:
        nonlocal t
        now = time.perf_counter()
        seconds[name] = round(seconds.get(name, 0.0) + now - t, 3)
        t = now

    fine = hierarchy.build_input(graph, plan, scratch, client)
    lap("build")
    candidate = hierarchy.submit_metis_input(fine, plan, client)
    lap("metis")  # in-process only: a cluster runs it beside the cycles
    try:
        first = coarsen_all(fine, plan, client, None)
        lap("coarsen")
        mapped, ordered, first, found = in_regions(first, plan, client, keep=candidate is not None)
        lap("initial" if first else "regions")
        parts, load, cycles = run_cycles(ordered, plan, client, lap, first)
        if ordered is not fine:  # back to the input's IDs
            hierarchy.project(mapped, parts, client)
            parts = mapped.parts(0)
            remove(ordered.root)
            lap("regions")
    except BaseException:
        if candidate is not None:
            cancel_tasks(client, candidate[1])
        raise
    metis = None
    if candidate is not None:
        parts, load, metis = hierarchy.metis_candidate(candidate, plan, parts, load, client)
        lap("metis")
    write_homogeneous(graph, open_ro(parts), out)
    lap("write")
    return {
        **cycles[0],
        "constraints": len(plan.balance),
        "part_weights": load.tolist(),
        "part_bound": plan.bound.tolist(),
        "vcycles": cycles[1:],
        "regions": found,
        "metis_input": metis,
        "seconds": seconds,
    }


def regions_cycle(plan: hierarchy.Plan) -> int:
    """The cycle number of the regions map (regions.py; the next one: the renumbering's maps), apart from the
    V-cycles' and METIS's candidate's."""
    return plan.options.multilevel_vcycles + 2


def in_regions(first: tuple[list[Level], list[int]], plan: hierarchy.Plan, client: Client | None, keep: bool
               ) -> tuple[Level, Level, First | None, dict | None]:
    """The partition of the first coarsening's coarsest level, and beside it, when the input level has several
    blocks (and `multilevel_regions`), regions of that level (regions.py); when few edges run between them, the
    input level renumbered into blocks that are those regions (its blocks then removed unless `keep`: METIS's
    candidate refines on them). Returns (the input level whose fine -> coarse maps lead to the level to partition,
    that level, its first cycle's coarsening and partition or None when it must start afresh, facts)."""
    levels, rounds = first
    fine = levels[0]
    if not plan.options.multilevel_regions or len(fine.blocks) == 1 or len(levels) == 1:
        return fine, fine, (levels, rounds, hierarchy.initial(levels[-1], plan, client)), None
    opts = plan.options
    group, found = regions.submit(levels, regions_cycle(plan), opts.seed, opts.metis_lib, client)
    try:
        start = hierarchy.initial(levels[-1], plan, client)
    except BaseException:
        cancel_tasks(client, group)
        raise
    cut = int(gather_tasks(client, group)[0][0][0])
    facts = {"cut": cut, "share": round(cut / max(1, fine.entries // 2), 6), "used": False}
    if facts["share"] > regions.SHARE:
        remove(found.parent)
        return fine, fine, (levels, rounds, start), facts
    mapped, ordered = regions.renumber(levels, found, regions_cycle(plan) + 1, client, keep)
    return mapped, ordered, None, {**facts, "used": True}


def run_cycles(fine: Level, plan: hierarchy.Plan, client: Client | None, lap: Callable[[str], None],
               first: First | None) -> tuple[ScratchPath, np.ndarray, list[dict]]:
    """Coarsen and partition the coarsest level (unless `first` holds the first cycle's), refine back, then
    `multilevel_vcycles` more cycles from the partition found (each coarsens within its parts and refines again);
    returns (the last parts map of level 0, the part weights, facts per cycle)."""
    parts, cycles = None, []
    for cycle in range(1 + plan.options.multilevel_vcycles):
        fine = replace(fine, cycle=cycle).make()
        if cycle == 0 and first:
            levels, rounds, (cut, load, by) = first
        else:
            levels, rounds = coarsen_all(fine, plan, client, parts)
            lap("coarsen")
            if parts is not None:
                if len(levels) == 1:  # nothing coarser than the refined level: nothing to gain
                    break
                remove(parts.parent)  # the previous cycle's working files of level 0
            cut, load, by = hierarchy.initial(levels[-1], plan, client, inherited=parts is not None)
            lap("initial")
        load, rnd, facts = uncoarsen(levels, plan, load, client)
        parts = fine.parts(rnd)
        lap("refine")
        cycles.append({"levels": [{"nodes": lv.nodes, "edges": lv.entries // 2, "blocks": len(lv.blocks),
                                   "lp_rounds": r} for lv, r in zip(levels, [*rounds, 0])],
                       "coarsest_cut": int(cut), "coarsest_by": by, "refinement": facts})
    return parts, load, cycles


def coarsen_all(fine: Level, plan: hierarchy.Plan, client: Client | None, parts: ScratchPath | None
                ) -> tuple[list[Level], list[int]]:
    """The levels from `fine` until one is coarse enough or the coarsening stalls, and the LP rounds of each (with
    `parts`, a V-cycle's: clusters within the parts of that parts map of `fine`)."""
    levels, rounds = [fine], []
    while not hierarchy.coarse_enough(levels[-1], plan.options) and len(levels) < MAX_LEVELS:
        level = levels[-1]
        within = None if parts is None else parts if level is fine else level.inherited
        coarse, done = hierarchy.coarsen_level(level, plan, client, within)
        if coarse.nodes < level.nodes:
            levels.append(coarse)
            rounds.append(done)
        if coarse.nodes > hierarchy.STALL * level.nodes:
            break
    return levels, rounds


def uncoarsen(levels: list[Level], plan: hierarchy.Plan, load: np.ndarray, client: Client | None
              ) -> tuple[np.ndarray, int, list[dict]]:
    """Refine the coarsest level's parts map 0, then project and refine level by level up to the first (removing
    each coarser level once projected); returns (load, the first level's last parts round, facts per level)."""
    load, rnd, moved = hierarchy.refine_level(levels[-1], plan, load, client)
    facts = [{"level": len(levels) - 1, **moved}]
    for i in range(len(levels) - 2, -1, -1):
        hierarchy.project(levels[i], levels[i + 1].parts(rnd), client)
        remove(levels[i + 1].root)
        load, rnd, moved = hierarchy.refine_level(levels[i], plan, load, client)
        facts.append({"level": i, **moved})
    return load, rnd, facts[::-1]

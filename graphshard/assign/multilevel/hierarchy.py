"""The multilevel scheme as Dask task rounds: build level 0, coarsen until small, partition the coarsest level with
METIS, then project back and refine level by level. Only small arrays (per-part loads, counts) pass through the
driver; every graph array lives in the scratch folder (see store.py)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from distributed import Client

from graphshard.assign.graph_build import edge_chunks
from graphshard.assign.multilevel import build, coarsen, refine, sampled
from graphshard.assign.multilevel.initial import partition_coarsest
from graphshard.assign.multilevel.kernels import index_dtype
from graphshard.assign.multilevel.store import Level, create, even_bounds, remove
from graphshard.assign.options import SAMPLED_INPUT, AssignOptions, multilevel_blocks
from graphshard.daskrun import TaskGroup, gather_tasks, run_tasks, submit_tasks
from graphshard.formats.chunked import ChunkedGraph
from graphshard.storage.scratch import ScratchPath

log = logging.getLogger(__name__)
STEP = "assign"
STALL = 0.95  # a round of coarsening that keeps more than this share of the nodes ends the coarsening
FIX_ROUNDS = 4  # overweight-fixing rounds per level at most
UNLIMITED = np.iinfo(np.int64).max // 4
# Largest cluster = CLUSTER_SLACK * ufactor/1000 * (column total) / k. Measured on R-MAT 100k nodes / 2M edges,
# k = 4: 0.5 -> cut 50.7%, 1 -> 46.9%, 2 -> 41.5%, 4 -> 44.2% (METIS 42.8%); k = 16: 82-83% for 1 to 16 (METIS 66%).
CLUSTER_SLACK = 2.0
# METIS partitions the coarsest level with a third of the slack when that slack still holds 10 average coarse nodes
# per part, so that refinement on the finer levels has room to move nodes (parts at their bound take no node).
# R-MAT 1M / 20M: k=16 cut 78.1% -> 74.8%, k=4 38.2% -> 39.0% (a sixth: 75.1%, 39.4%); on the small test graphs,
# whose coarsest nodes are heavy, it cost 10-20%, hence the condition.
INITIAL_SLACK = 3
# Refinement rounds that run a Jet pass on a level of one block (refine.py; a pass runs until it stops gaining); a
# level of several blocks runs one in each of its first `multilevel_jet_rounds` (default 2: since a level projects
# from one about 20x smaller, the second round's pass cuts 1-4% less at 1.1-1.3x the step's time, and keeps Chung-Lu
# 500k k=64 below METIS; BENCHMARKS.md, issue 18, "the hub rule removed").
JET_ROUNDS = 1
# A level of several blocks refines each round in PHASES phases, blocks b % PHASES == i in phase i, every node of a
# block free to move: a phase's blocks see the parts the phases before it left (the blocks of one phase see each
# other's as of the phase's start), and each phase's blocks still split evenly over 2 or 4 threads (blocks are a
# multiple of BLOCK_MULTIPLE, 4). Before, all blocks moved at once, a seeded half of the nodes each: the 18 larger
# cells 0.911 -> 0.905x METIS, 5 -> 1 above; R-MAT 20M k=4 / 16 cut 8.27 / 38.8% -> 6.38 / 30.7%, wall 0.98-1.08x
# / 0.67-0.74x METIS's (BENCHMARKS.md, issue 18, "refinement in phases").
PHASES = 2
# A level's refinement ends after a round that gains under this share of the level's cut (R-MAT 20M, level 0: rounds
# 4-8 gained 0.35% to 0.11% each, 1.1% in all, for 40% of the refinement's time; the small quality matrix: mean
# 0.874 -> 0.877 x METIS; BENCHMARKS.md, issue 18, "cheaper rounds"). On a level of several blocks the gain its
# blocks see overstates what a round gains (blocks of one phase move against each other's start), so the level's cut
# at a round's start also ends it when the round before gained too little by it (R-MAT 100M, level 0 from 217k
# nodes: rounds 2-8 saw 0.5-0.7% each, and the cut fell by 0.12% in all).
REFINE_GAIN = 0.005


@dataclass
class Plan:
    """What every level shares: sizes, bounds and the options."""

    nparts: int
    options: AssignOptions
    balance: list[int] = field(default_factory=list)  # weight columns that are balanced
    maxw: np.ndarray | None = None  # largest cluster weight per column
    bound: np.ndarray | None = None  # largest part weight per balanced column

    def limits(self, sums: np.ndarray) -> None:
        """Cluster and part bounds from the column totals. A node heavier than a cluster may be stays alone: with
        `balance_edges`, clusters as heavy as the heaviest hub's in-degree made coarse nodes that no refinement could
        balance (R-MAT 50k / 800k, k=19: in-degree imbalance 1.60 against 1.03)."""
        eps, k = self.options.ufactor / 1000.0, self.nparts
        self.balance = list(range(1, len(sums))) if len(sums) > 1 else [0]
        self.maxw = np.full(len(sums), UNLIMITED, dtype=np.int64)
        for c in self.balance:
            self.maxw[c] = max(int(CLUSTER_SLACK * eps * sums[c] / k), 1)
        tot = sums[self.balance]
        self.bound = np.maximum(np.floor((1 + eps) * tot / k), np.ceil(tot / k)).astype(np.int64)


def build_input(graph: ChunkedGraph, plan: Plan, scratch, client: Client | None) -> Level:
    """Level 0 from the edge chunks (see build.py); sets the plan's bounds."""
    opts = plan.options
    n = graph.total_nodes
    blocks = multilevel_blocks(graph.total_edges, opts.multilevel_block_edges)
    shape = Level(scratch / "L0", 0, n, 0, even_bounds(n, blocks), 1, False)
    classes = None
    if opts.balance_ntypes:
        found = run_tasks(client, STEP, "ml-classes", build.block_classes, list(shape.blocks), graph=graph,
                          level=shape, balance_ntypes=opts.balance_ntypes)
        classes = np.unique(np.concatenate(found))
    per_class = 1 + int(opts.balance_edges)  # a count column per class, and an in-degree one (constraints.py)
    columns = 1 + (len(classes) * per_class if classes is not None else int(opts.balance_edges))
    fetch = opts.objtype == "fetch"
    level = Level(shape.root, 0, n, 0, shape.bounds, columns, fetch).make()
    create(level.vwgt, (n, columns), np.int64)
    jobs = len(edge_chunks(graph))
    run_tasks(client, STEP, "ml-route", build.route_chunk, list(range(jobs)), graph=graph, level=level,
              flagged=opts.balance_edges or fetch)

    def run(what: str, fn, items: list, **constants) -> list:
        return run_tasks(client, STEP, what, fn, items, **constants)

    gains = sampled.compute(graph, level, jobs, plan.nparts, opts, run) if fetch else None
    made = run_tasks(client, STEP, "ml-block", build.build_block, list(level.blocks), graph=graph, level=level,
                     jobs=jobs, options=opts, classes=classes, gains=gains)
    remove(build.input_paths(level), level.root / "fetch")
    plan.limits(sum(m["sums"] for m in made))
    return Level(level.root, 0, n, sum(m["entries"] for m in made), level.bounds, columns, fetch)


def coarse_enough(level: Level, opts: AssignOptions) -> bool:
    """Whether `level` may be the coarsest: at most `multilevel_coarse_nodes` nodes and `multilevel_coarse_edges`
    edges (the one task partitioning it holds it whole: the edge cap bounds that task's memory, whatever the graph)."""
    return level.nodes <= opts.multilevel_coarse_nodes and whole_fits(level, opts)


def whole_fits(level: Level, opts: AssignOptions) -> bool:
    """Whether one task may hold the level whole: at most `multilevel_coarse_edges` edges (as the coarsest level)."""
    return level.entries // 2 <= opts.multilevel_coarse_edges


def node_target(level: Level, opts: AssignOptions) -> int:
    """The node count the next level aims at: `multilevel_coarse_nodes`, or, for a level already within it whose
    edges exceed the cap (`multilevel_coarse_edges`), its nodes shrunk in the proportion of the excess (a coarser
    level keeps more edges per node, so coarsening goes on while `coarse_enough` says no)."""
    edges, cap = level.entries // 2, opts.multilevel_coarse_edges
    if level.nodes > opts.multilevel_coarse_nodes or edges <= cap:
        return opts.multilevel_coarse_nodes
    return max(1, level.nodes * cap // edges)


def coarsen_level(level: Level, plan: Plan, client: Client | None, parts: ScratchPath | None = None
                  ) -> tuple[Level, int]:
    """The configured LP rounds on `level` (every one, as KaMinPar's clustering: a level cut short once its clusters
    met the next level's `node_target` kept the first rounds' clusters of ~3 nodes, which later rounds re-sort; the
    last round groups leftover singletons towards that target: `lone_weight`), then the contraction into the next
    level; returns it and the rounds run. With `parts` (a V-cycle), clusters stay within the parts of that parts
    map, which the next level inherits."""
    opts = plan.options
    rounds, clusters, target = opts.multilevel_lp_rounds, level.nodes, node_target(level, opts)
    lone = coarsen.lone_weight(level.nodes > opts.multilevel_coarse_nodes)
    if parts is not None:
        run_tasks(client, STEP, f"ml-within-L{level.index}", coarsen.within_block, list(level.blocks), level=level,
                  parts=parts)
    for rnd in range(rounds):
        create(level.labels(rnd + 1), (level.nodes,), index_dtype(level.nodes))
        create(level.cluster_weights(rnd + 1), (level.nodes, level.columns), np.int64)
        quotas = [group_quota(level, b, clusters, target) if rnd == rounds - 1 else -1 for b in level.blocks]
        run_tasks(client, STEP, f"ml-cluster-L{level.index}", coarsen.cluster_block, list(zip(level.blocks, quotas)),
                  star=True, label=lambda item: f"b{item[0]}", level=level, rnd=rnd, seed=opts.seed, maxw=plan.maxw,
                  lone=lone, within=parts is not None)
        counts = run_tasks(client, STEP, f"ml-weights-L{level.index}", coarsen.update_weights, list(level.blocks),
                           level=level, rnd=rnd)
        remove(level.labels(rnd), level.cluster_weights(rnd), level.work / f"delta-{rnd}")
        clusters = sum(counts)
        log.info("multilevel level %d round %d: %d clusters", level.index, rnd + 1, clusters)
    return contract(level, plan, counts, rounds, client, parts), rounds


def group_quota(level: Level, b: int, clusters: int, target: int) -> int:
    """Leftover singletons block b may group in the last round: its share of the clusters above `target`, so that
    the level lands near the coarsest level's size instead of far below it (a larger coarsest level keeps more of
    the structure for the initial partitioner; R-MAT 1M / 20M: 468k clusters -> 58.5k without a quota)."""
    lo, hi = level.span(b)
    return -(-max(0, clusters - target) * (hi - lo) // max(1, level.nodes))


def contract(level: Level, plan: Plan, counts: list[int], rnd: int, client: Client | None,
             parts: ScratchPath | None = None) -> Level:
    """The next level from the clusters after round `rnd` (`counts`: non-empty clusters per block range; with
    `parts`, clusters within the parts of that parts map, which the next level inherits)."""
    nodes = int(sum(counts))
    blocks = multilevel_blocks(level.entries // 2, plan.options.multilevel_block_edges, len(level.blocks))
    coarse = Level(level.root.parent / f"L{level.index + 1}-c{level.cycle}", level.index + 1, nodes, 0,
                   even_bounds(nodes, blocks), level.columns, True, level.cycle).make()
    create(coarse.vwgt, (nodes, level.columns), np.int64)
    create(level.cmap, (level.nodes,), index_dtype(nodes))
    if parts is not None:
        create(coarse.inherited, (nodes,), np.int32)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    run_tasks(client, STEP, f"ml-number-L{level.index}", coarsen.number_clusters,
              [(d, int(offsets[d])) for d in level.blocks], star=True, level=level, rnd=rnd, coarse=coarse,
              parts=parts)
    run_tasks(client, STEP, f"ml-contract-L{level.index}", coarsen.contract_block, list(level.blocks), level=level,
              rnd=rnd, coarse=coarse)
    entries = run_tasks(client, STEP, f"ml-coarse-L{coarse.index}", coarsen.coarse_block, list(coarse.blocks),
                        level=level, coarse=coarse)
    remove(level.labels(rnd), level.cluster_weights(rnd), level.cmap, level.work / "contract",
           level.work / "within")
    return replace(coarse, entries=int(sum(entries)))


def _sum_results(results: list[tuple[np.ndarray, int, int, int]], load: np.ndarray
                 ) -> tuple[np.ndarray, int, int, int]:
    """A refinement phase's (load after it, moves, gain as its blocks saw it, its blocks' cut at its start: the
    level's cut, exactly, when the phase is every block)."""
    return (load + sum(r[0] for r in results), sum(r[1] for r in results), sum(r[2] for r in results),
            sum(r[3] for r in results) // 2)


def fix_overweight(level: Level, plan: Plan, load: np.ndarray, rnd: int, client: Client | None
                   ) -> tuple[np.ndarray, int, int]:
    """Rounds moving the cheapest nodes out of parts above their bound (candidates per block, chosen together so
    that a heavy node may use a target's whole room; when no node fits anywhere, one may take a target past its
    bound by less than the largest excess, so the largest excess still shrinks); returns (load, last round,
    moves)."""
    moves = 0
    for _ in range(FIX_ROUNDS):
        excess = np.clip(load - plan.bound, 0, None)
        if not excess.any():
            break
        room = np.clip(plan.bound - load, 0, None)
        chosen, delta = _overweight_moves(level, plan, load, excess, room, rnd, client)
        if not len(chosen):  # nothing fits: let a target pass its bound by less than the largest excess
            over = np.clip(plan.bound + np.maximum(excess.max(axis=0) - 1, 0) - load, 0, None)
            chosen, delta = _overweight_moves(level, plan, load, excess, over, rnd, client)
        if not len(chosen):
            break
        create(level.parts(rnd + 1), (level.nodes,), np.int32)
        owner = np.searchsorted(np.asarray(level.bounds), chosen[:, 0], side="right") - 1
        per_block = [(b, chosen[owner == b]) for b in level.blocks]  # items, not one big constant for every task
        run_tasks(client, STEP, f"ml-rebalance-L{level.index}", refine.apply_moves, per_block, star=True,
                  label=lambda item: f"b{item[0]}", level=level, rnd=rnd)
        load = load + delta
        remove(level.parts(rnd))
        rnd, moves = rnd + 1, moves + len(chosen)
    return load, rnd, moves


def _overweight_moves(level: Level, plan: Plan, load: np.ndarray, excess: np.ndarray, room: np.ndarray, rnd: int,
                      client: Client | None) -> tuple[np.ndarray, np.ndarray]:
    """The cheapest moves out of overweight parts into parts with `room` (refine.py: candidates per block, chosen
    together); ((node, target) rows, net weight change per part)."""
    found = run_tasks(client, STEP, f"ml-overweight-L{level.index}", refine.rebalance_candidates_block,
                      list(level.blocks), level=level, rnd=rnd, seed=plan.options.seed, nparts=plan.nparts,
                      balance=plan.balance, excess=excess, room=room, load=load)
    return refine.choose_moves(found, excess, room)


def refine_level(level: Level, plan: Plan, load: np.ndarray, client: Client | None) -> tuple[np.ndarray, int, dict]:
    """Fix overweight parts, then refinement rounds (each in `phases`) until one gains under REFINE_GAIN of the
    level's cut, as its blocks saw it or (the round before) by the cut at the round's start, or the last two moved
    few nodes; returns (load, last parts map, facts: moves, and per round the cut
    at its start and the gain its blocks saw)."""
    load, rnd, fixed = fix_overweight(level, plan, load, 0, client)
    moves, gains, cuts = [], [], []
    jet_rounds = JET_ROUNDS if len(level.blocks) == 1 else plan.options.multilevel_jet_rounds
    for i in range(plan.options.multilevel_refine_rounds):
        moved = gain = cut = 0
        for blocks, copies in phases(level):
            load, m, g, c = _refine_phase(level, plan, load, rnd, blocks, copies, i < jet_rounds, client)
            rnd, moved, gain, cut = rnd + 1, moved + m, gain + g, cut + c
        moves.append(moved)
        gains.append(gain)
        cuts.append(cut)
        if gain < REFINE_GAIN * cut or (len(cuts) >= 2 and cuts[-2] - cut < REFINE_GAIN * cut):
            break
        if len(moves) >= 2 and moves[-1] + moves[-2] <= level.nodes // 1000:
            break
    return load, rnd, {"rebalance_moves": fixed, "refine_moves": moves, "round_cuts": cuts, "round_gains": gains}


def phases(level: Level) -> list[tuple[list[int], list[list[int]]]]:
    """A refinement round's phases, PHASES of them on a level of several blocks: (the blocks that move, for each the
    ranges of the other blocks it copies into the phase's parts map unchanged)."""
    blocks = list(level.blocks)
    count = min(len(blocks), PHASES)
    out = []
    for i in range(count):
        moving, still = blocks[i::count], [b for b in blocks if b % count != i]
        out.append((moving, [still[j::len(moving)] for j in range(len(moving))]))
    return out


def _refine_phase(level: Level, plan: Plan, load: np.ndarray, rnd: int, blocks: list[int], copies: list[list[int]],
                  jet: bool, client: Client | None) -> tuple[np.ndarray, int, int, int]:
    """One phase: its blocks refine from parts map rnd into map rnd+1 (each with its share of the parts' room), the
    others' ranges copied; returns (load, moves, gain, the phase's blocks' cut at its start)."""
    opts = plan.options
    create(level.parts(rnd + 1), (level.nodes,), np.int32)
    results = run_tasks(client, STEP, f"ml-refine-L{level.index}", refine.refine_block, list(zip(blocks, copies)),
                        star=True, label=lambda item: f"b{item[0]}", level=level, rnd=rnd, seed=opts.seed,
                        nparts=plan.nparts, balance=plan.balance, budget=(plan.bound - load) // len(blocks),
                        fm=opts.multilevel_fm, jet=opts.multilevel_jet and jet)
    remove(level.parts(rnd))
    return _sum_results(results, load)


def project(fine: Level, parts: ScratchPath, client: Client | None) -> None:
    """Parts map 0 of `fine` from `parts`, a parts map of the level its fine -> coarse maps lead to."""
    create(fine.parts(0), (fine.nodes,), np.int32)
    run_tasks(client, STEP, f"ml-project-L{fine.index}", refine.project_block, list(fine.blocks), fine=fine,
              parts=parts)


def initial(level: Level, plan: Plan, client: Client | None, inherited: bool = False
            ) -> tuple[int, np.ndarray, str]:
    """The coarsest level's partition, in one task (with a tighter balance when the level is fine enough and finer
    levels follow; the input level itself gets the whole slack); with `inherited` (a V-cycle), the parts its
    clusters were kept within unless the new partition cuts less."""
    opts = plan.options
    tight = max(1, opts.ufactor // INITIAL_SLACK)
    fine_enough = level.nodes * tight >= 10 * plan.nparts * 1000 and level.index > 0
    ufactor = tight if fine_enough else opts.ufactor
    return run_tasks(client, STEP, "ml-initial", partition_coarsest, [level], label=lambda lv: f"L{lv.index}",
                     nparts=plan.nparts, balance=plan.balance, seed=opts.seed, ufactor=ufactor,
                     method=opts.multilevel_initial, tries=opts.multilevel_initial_tries, metis_lib=opts.metis_lib,
                     inherited=inherited)[0]


def submit_metis_input(fine: Level, plan: Plan, client: Client | None) -> tuple[Level, TaskGroup] | None:
    """METIS's partition of the input level `fine`, submitted to run beside the hierarchy (at a lower priority than
    its tasks, so in a thread they leave idle), into a cycle of its own: for graphs that coarsen (more than
    `multilevel_coarse_nodes` nodes or `multilevel_coarse_edges` edges), whose coarsening may lose structure that
    METIS's keeps (Barabasi-Albert 300k, kNN 10-D 260k: 1.01-1.04x METIS's cut without it; BENCHMARKS.md, issue 18,
    "METIS's partition of a graph that coarsens"). Over the edge cap (up to `SAMPLED_INPUT` times it), METIS sees a
    sample of the cap's size, so the task is no larger than the coarsest level's. None for other graphs."""
    opts = plan.options
    if coarse_enough(fine, opts) or fine.entries // 2 > SAMPLED_INPUT * opts.multilevel_coarse_edges:
        return None
    level = replace(fine, cycle=opts.multilevel_vcycles + 1).make()
    return level, submit_tasks(client, STEP, "ml-metis-input", partition_coarsest, [level], label=lambda lv: "L0",
                               priority=-1, nparts=plan.nparts, balance=plan.balance, seed=opts.seed,
                               ufactor=opts.ufactor, method="metis", tries=1, metis_lib=opts.metis_lib,
                               budget=opts.multilevel_coarse_edges)


def metis_candidate(submitted: tuple[Level, TaskGroup], plan: Plan, parts: ScratchPath, load: np.ndarray,
                    client: Client | None) -> tuple[ScratchPath, np.ndarray, dict]:
    """METIS's partition of the input level (`submit_metis_input`), refined as the hierarchy's level 0 is, in place
    of the hierarchy's parts map `parts` when it leaves less weight over the bounds, or as little and cuts less;
    returns (parts map, load, facts for the report)."""
    fine, group = submitted
    start, theirs, _ = gather_tasks(client, group)[0][0]
    theirs, rnd, facts = refine_level(fine, plan, theirs, client)
    found = [(parts, load), (fine.parts(rnd), theirs)]
    cuts = level_cuts(fine, [p for p, _ in found], client)
    over = [int(np.clip(w - plan.bound, 0, None).sum()) for _, w in found]
    kept = int((over[1], cuts[1]) < (over[0], cuts[0]))
    remove(found[1 - kept][0].parent)
    return *found[kept], {"metis_cut": int(start), "sampled": not whole_fits(fine, plan.options),
                          "refined_cut": cuts[1], "hierarchy_cut": cuts[0], "kept": ["hierarchy", "metis"][kept],
                          "refinement": facts}


def level_cuts(level: Level, maps: Sequence[ScratchPath], client: Client | None) -> list[int]:
    """The level's edge cut under each parts map of `maps`, in one pass over its blocks."""
    shares = run_tasks(client, STEP, f"ml-cut-L{level.index}", refine.cut_block, list(level.blocks), level=level,
                       maps=list(maps))
    return [sum(block) // 2 for block in zip(*shares)]

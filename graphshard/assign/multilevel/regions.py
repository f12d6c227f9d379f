"""Blocks that are regions: the input level renumbered so that each block holds one region of the graph.

Level 0's blocks are ID ranges, so with scattered IDs each is a random subset of the graph. A block's refinement
task moves only its own nodes, so a bump in a part boundary, whose nodes lie in every block, stays (3-D mesh 8M
nodes: 1.11-1.18x METIS's cut; one block per level: 0.95-0.98x). Here the coarsest level of the first coarsening
is partitioned into one region per block (METIS). When few edges run between the regions (`SHARE`), the regions are
projected down to level 0, which is renumbered region by region (in ID order within one) by a contraction whose
clusters are the nodes themselves; the hierarchy then runs on the renumbered level from the start, and its parts
map is mapped back by one projection. Otherwise the first coarsening serves as it is.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from distributed import Client

from graphshard.assign.multilevel import coarsen
from graphshard.assign.multilevel.hierarchy import project
from graphshard.assign.multilevel.initial import partition_coarsest
from graphshard.assign.multilevel.kernels import index_dtype
from graphshard.assign.multilevel.store import Level, create, even_bounds, open_ro, remove, write_range
from graphshard.daskrun import TaskGroup, run_tasks, submit_tasks
from graphshard.formats.buckets import read_buckets, write_buckets
from graphshard.storage.scratch import ScratchPath

STEP = "assign"
UFACTOR = 30  # the regions' balance (node counts): blocks stay within 3% of an even split
# Regions replace the blocks only when at most this share of the level's edges runs between them. Meshes and
# geometric graphs: under 2% (x the scattered blocks' cut: 3-D mesh 8M 0.83-0.90, 2-D mesh 0.95-0.97, geometric
# 0.99-1.06, at 1.3-1.9x the wall); a 3-D mesh of 40k nodes in 16 regions, 10.5%: 0.80. Renumbered all the same,
# planted communities (19-23%), Barabasi-Albert (59%), Chung-Lu (77%) gained under 1% for 1.6-2x the wall, and
# R-MAT 20M (64%) cut 1.17x (BENCHMARKS.md, issue 18, "Blocks that are regions").
SHARE = 0.15


def submit(levels: list[Level], cycle: int, seed: int, metis_lib: str | None, client: Client | None
           ) -> tuple[TaskGroup, ScratchPath]:
    """One region per block of `levels[0]`, on the coarsest level of its coarsening `levels` (METIS), into a parts
    map of a cycle of its own (the hierarchy's own partition of that level, which it runs beside, goes to cycle 0's
    name); returns (the task, whose result is (the edges between regions, counted on `levels[0]`: a coarse edge
    weighs the fine edges it stands for; the part weights), the map)."""
    coarsest = replace(levels[-1], cycle=cycle).make()
    return submit_tasks(client, STEP, "ml-regions", partition_coarsest, [coarsest], label=lambda lv: f"L{lv.index}",
                        nparts=len(levels[0].blocks), balance=[0], seed=seed, ufactor=UFACTOR, method="metis",
                        tries=1, metis_lib=metis_lib), coarsest.parts(0)


def renumber(levels: list[Level], regions: ScratchPath, cycle: int, client: Client | None, keep: bool
             ) -> tuple[Level, Level]:
    """`levels[0]` renumbered by the regions map `regions` of the coarsest of `levels` (`submit`, projected down,
    each coarser level removed once projected): region by region, ID order within one, one block per region, in a
    folder of its own (`levels[0]`'s blocks and weights removed once sent, unless `keep`). Returns (`levels[0]` in
    cycle `cycle`, whose fine -> coarse maps lead to the new IDs: new names, as a worker's copy of a store-backed
    array is keyed by its name; the renumbered level)."""
    for fine, coarse in zip(levels[-2::-1], levels[:0:-1]):
        project(fine, regions, client)
        remove(coarse.root)
        regions = fine.parts(0)
    level = levels[0]
    counts = np.stack(run_tasks(client, STEP, "ml-region-counts", _region_counts, list(level.blocks), level=level))
    totals = counts.sum(axis=0)
    starts = np.concatenate([[0], np.cumsum(totals)[:-1]]) + np.cumsum(counts, axis=0) - counts
    bounds = tuple(np.concatenate([[0], np.cumsum(totals)]).tolist()) if totals.all() else \
        even_bounds(level.nodes, len(level.blocks))
    out = Level(level.root.parent / "regions" / level.root.name, 0, level.nodes, 0, bounds, level.columns,
                level.weighted).make()
    mapped = replace(level, cycle=cycle).make()
    create(out.vwgt, (level.nodes, level.columns), np.int64)
    create(mapped.cmap, (level.nodes,), index_dtype(level.nodes))
    run_tasks(client, STEP, "ml-region-ids", _number_block, list(level.blocks), level=level, mapped=mapped,
              starts=starts, out=out)
    remove(level.work)
    run_tasks(client, STEP, "ml-region-weights", _weights_block, list(out.blocks), level=mapped, out=out)
    run_tasks(client, STEP, "ml-region-edges", coarsen.contract_block, list(level.blocks), level=mapped, rnd=0,
              coarse=out)
    if not keep:
        remove(level.root / "blocks", level.vwgt)
    entries = run_tasks(client, STEP, "ml-region-blocks", coarsen.coarse_block, list(out.blocks), level=mapped,
                        coarse=out)
    remove(mapped.cmap, mapped.work / "contract", mapped.work / "weights")
    return mapped, replace(out, entries=int(sum(entries)))


def _region_counts(b: int, *, level: Level) -> np.ndarray:
    """Nodes of block b per region (a region per block)."""
    lo, hi = level.span(b)
    return np.bincount(np.asarray(open_ro(level.parts(0))[lo:hi]), minlength=len(level.blocks))


def _number_block(b: int, *, level: Level, mapped: Level, starts: np.ndarray, out: Level) -> None:
    """New IDs of block b's nodes (region r's from `starts[b, r]`, in ID order) into `mapped`'s cluster map, and
    their node weights sent to the new blocks holding them."""
    lo, hi = level.span(b)
    region = np.asarray(open_ro(level.parts(0))[lo:hi])
    order = np.argsort(region, kind="stable")
    first = np.searchsorted(region[order], np.arange(len(starts[b])))  # each region's first place in `order`
    new = starts[b][region[order]] + np.arange(hi - lo) - first[region[order]]  # ascending
    ids = np.empty(hi - lo, dtype=np.int64)
    ids[order] = new
    write_range(mapped.cmap, lo, ids.astype(index_dtype(level.nodes)))
    vw = np.asarray(open_ro(level.vwgt)[lo:hi])[order]
    cuts = np.searchsorted(new, np.asarray(out.bounds))
    write_buckets([(_weights(mapped, b, d), [new[cuts[d]:cuts[d + 1]], vw[cuts[d]:cuts[d + 1]]]) for d in out.blocks])


def _weights_block(d: int, *, level: Level, out: Level) -> None:
    """New block d's node weights from the pieces every old block sent."""
    lo, hi = out.span(d)
    pieces = list(read_buckets([_weights(level, b, d) for b in level.blocks]))
    ids = np.concatenate([p[0] for p in pieces])
    vw = np.empty((hi - lo, level.columns), dtype=np.int64)
    vw[ids - lo] = np.concatenate([p[1] for p in pieces])
    write_range(out.vwgt, lo, vw)


def _weights(level: Level, src: int, dst: int) -> ScratchPath:
    """Node weights of old block `src` for new block `dst`."""
    return level.work / "weights" / str(src) / f"{dst}.bkt"

"""A run's plan from its config: the graph's sizes (headers only), the steps' predictions, the limits, the misfits."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from graphshard.cluster import workers_of
from graphshard.plan.fit import Limits, Misfit, host_memory, locations, misfits, tight, worker_limit
from graphshard.plan.model import Settings, StepPlan, plan_steps
from graphshard.plan.sizes import GraphSizes

if TYPE_CHECKING:
    from graphshard.formats.chunked import ChunkedGraph
    from graphshard.pipeline.config import PipelineConfig


@dataclass(frozen=True)
class RunPlan:
    """Everything `graphshard plan` prints."""

    sizes: GraphSizes
    settings: Settings
    steps: list[StepPlan]
    limits: Limits
    misfits: list[Misfit]

    @property
    def fits(self) -> bool:
        return not self.misfits

    @property
    def tight(self) -> list[str]:
        """Steps that fit with less than the run-to-run margin (`fit.tight`)."""
        return tight(self.steps, self.limits)

    def to_json(self) -> dict:
        """The plan as data (`graphshard plan --json`)."""
        return {"graph": asdict(self.sizes), "settings": asdict(self.settings),
                "steps": [asdict(s) for s in self.steps],
                "limits": {"worker_memory": self.limits.worker_memory, "host_memory": self.limits.host_memory,
                           "external": self.limits.external,
                           "locations": [{**asdict(loc), "path": str(loc.path)} for loc in self.limits.locations]},
                "fits": self.fits, "tight": self.tight,
                "misfits": [{**asdict(m), "line": m.line()} for m in self.misfits]}


def settings_of(cfg: PipelineConfig) -> Settings:
    """The figures of a config the model uses."""
    a, sh, cl = cfg.assign, cfg.shuffle, cfg.cluster
    return Settings(
        num_parts=cfg.num_parts, method=a.method, trainers=a.num_trainers_per_machine, balance_edges=a.balance_edges,
        balance_columns=len(a.balance_ntypes) + a.balance_edges, ufactor=a.ufactor,
        block_edges=a.multilevel_block_edges,
        coarse_nodes=a.multilevel_coarse_nodes, coarse_edges=a.multilevel_coarse_edges,
        lp_rounds=a.multilevel_lp_rounds, refine_rounds=a.multilevel_refine_rounds, vcycles=a.multilevel_vcycles,
        regions=a.multilevel_regions,
        halo_hops=sh.halo_hops,
        halo_mode=sh.halo_mode,
        orig_nids=sh.save_orig_nids, orig_eids=sh.save_orig_eids, formats=tuple(sh.graph_formats),
        node_block_rows=sh.node_block_rows, validate=cfg.validate_.enabled, full=cfg.validate_.full,
        remote_share=cfg.validate_.remote_share, fanouts=tuple(a.sample_fanouts), batch_size=a.sample_batch_size,
        workers=cl.workers, threads=cl.threads_per_worker,
        cores=(os.cpu_count() or 1) if cl.address is None else cl.workers * cl.threads_per_worker)


def disk_needs(cfg: PipelineConfig, steps: list[StepPlan]) -> dict[str, tuple[Path, int]]:
    """Bytes each location must hold at its fullest: the cached artifacts of earlier steps plus the live step's
    scratch and output (the work folder), the shuffle's buckets (`shuffle.scratch_dir`, else the work folder), and
    the published set when output.dir is on another filesystem than the work folder (else publishing links)."""
    by = {s.step: s for s in steps}
    bucket_dir, work, out = cfg.shuffle.scratch_dir, cfg.work, cfg.output.dir
    needs = {}  # local disks only: a location on an object store (a Location) has no size limit to check
    if isinstance(work, Path):
        needs["work_dir"] = (work, max(0, work_bytes(steps, bool(bucket_dir)) - _cached_bytes(work)))
    if isinstance(bucket_dir, Path):
        needs["shuffle.scratch_dir"] = (bucket_dir, by["shuffle"].scratch)
    if isinstance(out, Path) and not (isinstance(work, Path) and _device(out) == _device(work)):
        needs["output.dir"] = (out, by["shuffle"].output)
    return needs


def work_bytes(steps: list[StepPlan], buckets_elsewhere: bool = False) -> int:
    """The work folder at its fullest: the assignment, then the partitions beside the shuffle's buckets (unless
    `shuffle.scratch_dir` puts them elsewhere) or the validation's scratch."""
    by = {s.step: s for s in steps}
    text, parts = by["assign"].output, by["shuffle"].output
    return max(by["assign"].scratch + text, text + parts + (0 if buckets_elsewhere else by["shuffle"].scratch),
               text + parts + (by["validate"].scratch + by["validate"].output if "validate" in by else 0))


def _cached_bytes(work: Path) -> int:
    """Bytes of the assignment and partition artifacts already in the work folder: a re-run whose steps are cached
    writes nothing there, so a disk they filled must not refuse it (a changed config may need them anew: then the
    disk-full line, not the plan, reports it)."""
    total = 0
    for step in ("assign", "shuffle"):
        for root, _, files in os.walk(work / step):
            for name in files:
                try:
                    total += os.lstat(os.path.join(root, name)).st_blocks * 512
                except OSError:  # removed meanwhile (another run's cleanup)
                    pass
    return total


def _device(path: Path) -> int:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path.stat().st_dev


def plan_run(cfg: PipelineConfig, graph: ChunkedGraph) -> RunPlan:
    """The plan of a checked config (`check_config` returned `graph`). With `cluster.address`, the scheduler's
    workers as they are now (count, threads, memory limit); unknown when it has none yet."""
    sizes = GraphSizes.of(graph)
    settings = settings_of(cfg)
    cl = cfg.cluster
    if cl.address:
        found = workers_of(cl.address, cl.connect_timeout)
        if found is not None:
            settings = replace(settings, workers=found.count, threads=found.threads, cores=found.count * found.threads)
        memory, external = (found.memory_limit, False) if found is not None else (None, True)
    else:
        memory, external = worker_limit(cl.memory_limit, cl.workers, cl.threads_per_worker), False
    steps = plan_steps(sizes, settings)
    limits = Limits(memory, host_memory(), locations(disk_needs(cfg, steps)), external=external)
    return RunPlan(sizes, settings, steps, limits, misfits(sizes, settings, steps, limits))

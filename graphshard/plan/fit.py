"""A config's plan against its cluster and disks: what fits, what does not, and what to change.

Limits: each worker's memory limit as Dask will set it (`cluster.memory_limit`, "auto" resolved as LocalCluster
does) up to the nanny's kill threshold; the flow host's memory for what runs in the flow process (metis, kaminpar,
parmetis's ranks); the free space of each local filesystem the run writes to (work_dir: artifacts, scratch and the
staged partition set; `shuffle.scratch_dir`; output.dir when it is another filesystem, where publishing copies).
An external scheduler's workers are the ones it has when the plan is made (`cluster.workers_of`); none yet: their
memory is not checked.
"""

from __future__ import annotations

import math
import os
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path

from graphshard.assign.options import HONOURS
from graphshard.plan import coefficients
from graphshard.plan.model import Settings, StepPlan, gb, plan_steps
from graphshard.plan.sizes import GraphSizes


@dataclass(frozen=True)
class Location:
    """A folder the run writes to, the filesystem it is on, its free bytes and what the plan puts there."""

    key: str  # config key(s) naming it
    path: Path
    device: int
    free: int
    need: int


@dataclass(frozen=True)
class Limits:
    """Per-worker memory limit (None: unknown or unlimited), the flow host's memory and the run's locations."""

    worker_memory: int | None
    host_memory: int
    locations: tuple[Location, ...] = ()
    external: bool = False  # an existing scheduler with no workers yet: their limit is not known


@dataclass(frozen=True)
class Misfit:
    """One thing that does not fit: which step, what is predicted, the limit, and what to change."""

    step: str
    what: str  # "worker memory" | "flow host memory" | "disk"
    predicted: int
    limit: int
    where: str
    advice: tuple[str, ...] = field(default_factory=tuple)
    unit: str = "bytes"  # or "count"

    def line(self) -> str:
        """The one line `graphshard run` refuses with."""
        show = gb if self.unit == "bytes" else (lambda n: f"{n:,}")
        return (f"plan: {self.step}: predicted {self.what} {show(self.predicted)} ({self.where}) above the limit "
                f"{show(self.limit)}: {'; '.join(self.advice)}")


def kill_threshold() -> float:
    """The share of its memory limit at which a worker's nanny kills it (`distributed.worker.memory.terminate`: the
    user's Dask config, else distributed's default 0.95, read without importing distributed)."""
    import dask.config

    return float(dask.config.get("distributed.worker.memory.terminate", default=0.95) or 1.0)


def worker_limit(memory_limit: int | str | None, workers: int, threads: int) -> int | None:
    """A local worker's memory limit in bytes as LocalCluster resolves it (None: no limit): "auto" is the host's
    memory times the worker's share of the cluster's threads (distributed's `parse_memory_limit`, without importing
    distributed: a cached run never does)."""
    if memory_limit is None:
        return None
    if memory_limit == "auto":
        return int(host_memory() * min(1.0, threads / (workers * threads)))
    from dask.utils import parse_bytes

    limit = int(parse_bytes(memory_limit))
    return min(limit, host_memory()) if limit else None  # 0: no limit, as Dask takes it


def start_problem(key: str, memory_limit: int | str | None, workers: int, threads: int) -> str | None:
    """Why local workers with this memory limit cannot start at all, else None: an idle worker with graphshard
    loaded holds `worker_base`, and its nanny restarts it above `kill_threshold()` of its limit, for ever (no
    --force-plan helps)."""
    if memory_limit in (None, "auto"):  # a share of the host's memory: no floor to check (and no dask import)
        return None
    limit = worker_limit(memory_limit, workers, threads)
    base = coefficients.load()["worker_base"]
    if limit is None or limit * kill_threshold() >= base:
        return None
    need = math.ceil(base / kill_threshold() / 1e7) / 100
    return (f"{key}: {gb(limit)} per worker is below what an idle Dask worker with graphshard loaded holds "
            f"({gb(base)}; its nanny restarts a worker above {kill_threshold():.0%} of its limit): give at least "
            f"{need:g}GB, or 'auto'")


def host_memory() -> int:
    """The flow host's physical memory."""
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def locations(needs: dict[str, tuple[Path, int]]) -> tuple[Location, ...]:
    """One Location per filesystem: the needs of folders on the same device add up."""
    by_device: dict[int, Location] = {}
    for key, (path, need) in needs.items():
        probe = _existing(Path(path))
        dev = probe.stat().st_dev
        if dev in by_device:
            old = by_device[dev]
            by_device[dev] = replace(old, key=f"{old.key}, {key}", need=old.need + need)
        else:
            by_device[dev] = Location(key, Path(path), dev, shutil.disk_usage(probe).free, need)
    return tuple(by_device.values())


def misfits(sizes: GraphSizes, settings: Settings, steps: list[StepPlan], limits: Limits) -> list[Misfit]:
    """Every step whose worker or flow-process peak exceeds its limit, and every filesystem short of space."""
    found = []
    if limits.worker_memory is not None:
        cap = int(limits.worker_memory * kill_threshold())
        for st in steps:
            if st.worker_peak > cap:
                found.append(Misfit(st.step, "peak per worker", st.worker_peak, cap, st.peak_task,
                                    tuple(worker_advice(sizes, settings, st, cap))))
    flow_cap = limits.host_memory
    for st in steps:
        if st.flow_peak > flow_cap:
            found.append(Misfit(st.step, "peak of the flow process", st.flow_peak, flow_cap,
                                f"{st.peak_task}; the flow host's memory",
                                tuple(flow_advice(sizes, settings, limits, st))))
    found += width_misfits(sizes, settings)
    for loc in limits.locations:
        if loc.need > loc.free:
            found.append(Misfit("disk", "space needed", loc.need, loc.free, f"{loc.key} {loc.path}; free there now",
                                (f"free {gb(loc.need - loc.free)} there or set {loc.key.split(',')[0]} to a "
                                 f"filesystem with {gb(loc.need)} free",)))
    return found


def width_misfits(sizes: GraphSizes, settings: Settings) -> list[Misfit]:
    """Methods that pack both endpoints of an edge into one int64 key (`graph_build.key_bits`: metis, kaminpar,
    parmetis, multilevel) take fewer than 2^31 nodes; random and file assignments and the shuffle have no such bound
    (64-bit IDs past `shuffle.plan.NARROW_LIMIT`)."""
    from graphshard.assign.graph_build import key_bits
    from graphshard.errors import GraphshardError

    if settings.method in ("random", "file"):
        return []
    try:
        key_bits(sizes.nodes)
    except GraphshardError:
        return [Misfit("assign", "node count", sizes.nodes, 2**31 - 1, f"{settings.method} packs edge keys in int64",
                       ("assign.method: random, or file with an assignment computed elsewhere",), unit="count")]
    return []


def _peak_of(sizes: GraphSizes, settings: Settings, step: str) -> int:
    return next(st.worker_peak for st in plan_steps(sizes, settings) if st.step == step)


def headroom(cap: int) -> int:
    """What the advice and `fitting_parts` aim at: the kill threshold less `peak_margin`, because a worker's peak
    varies between identical runs by about that much (the shuffle's write task of one partition: 1.76 / 1.79 / 1.89
    GB in three runs, R-MAT 100M k=8), so a setting the plan proposes does not sit on the threshold. The refusal
    itself stays at the threshold."""
    return int(cap / (1 + coefficients.load()["peak_margin"]))


def tight(steps: list[StepPlan], limits: Limits) -> list[str]:
    """Steps that fit but whose worker peak is within `peak_margin` of the kill threshold: one line each."""
    if limits.worker_memory is None:
        return []
    cap = int(limits.worker_memory * kill_threshold())
    margin = coefficients.load()["peak_margin"]
    return [f"{st.step}: {gb(st.worker_peak)} per worker is within {margin:.1%} of the kill threshold {gb(cap)} "
            f"(identical runs vary by that much)" for st in steps if headroom(cap) < st.worker_peak <= cap]


def worker_advice(sizes: GraphSizes, settings: Settings, st: StepPlan, cap: int) -> list[str]:
    """What brings a step's worker peak under the cap with `headroom`: the memory limit, then what the peak grows
    with."""
    aim = headroom(cap)
    out = balance_advice(sizes, settings, st, aim)
    need = st.worker_peak * (1 + coefficients.load()["peak_margin"])  # a limit whose headroom holds the peak
    out.append(f"cluster.memory_limit >= {math.ceil(need / kill_threshold() / 1e8) / 10:.1f}GB")
    if settings.threads > 1:
        one = _peak_of(sizes, replace(settings, threads=1), st.step)
        if one <= aim:
            out.append(f"more workers with one thread each (cluster.threads_per_worker: 1 -> {gb(one)})")
    if st.driver == "chunk":
        fits = _largest_fitting_chunk(sizes, settings, st.step, aim)
        if fits:
            out.append(f"smaller edge chunks (at most {fits:,} edges; the largest has {sizes.largest_chunk:,})")
    if st.driver == "partition":
        parts = parts_that_fit(sizes, settings, st.step, aim)
        if parts:
            out.append(f"num_parts >= {parts}")
    if st.driver == "block" and st.step == "assign":
        out.append("a smaller assign.multilevel_block_edges")
    return out


def balance_advice(sizes: GraphSizes, settings: Settings, st: StepPlan, cap: int) -> list[str]:
    """A shuffle partition over the cap because the method balances nodes and the largest partition holds several
    times the mean edges: balancing in-degrees too (DGL's `balance_edges`) comes first, alone if it fits, else with
    the partition count it fits at."""
    if st.step != "shuffle" or settings.balance_edges or "balance_edges" not in HONOURS.get(settings.method, ()):
        return []
    balanced = replace(settings, balance_edges=True, balance_columns=settings.balance_columns + 1)
    peak = _peak_of(sizes, balanced, st.step)
    if peak >= st.worker_peak:
        return []
    if peak <= cap:
        return [f"assign.balance_edges: true ({gb(peak)} per worker)"]
    parts = parts_that_fit(sizes, balanced, st.step, cap) if st.driver == "partition" else None
    return [f"assign.balance_edges: true with num_parts >= {parts}"] if parts else []


def _largest_fitting_chunk(sizes: GraphSizes, settings: Settings, step: str, cap: int) -> int:
    lo, hi = 0, sizes.largest_chunk
    while lo < hi:  # the peak grows with the largest chunk: bisect it
        mid = (lo + hi + 1) // 2
        if _peak_of(replace(sizes, largest_chunk=mid, largest_file=mid * 16), settings, step) <= cap:
            lo = mid
        else:
            hi = mid - 1
    return lo


def parts_that_fit(sizes: GraphSizes, settings: Settings, step: str, cap: int) -> int | None:
    """The smallest partition count above `settings.num_parts` that brings `step`'s worker peak under `cap`
    (None: none below 2^16 or the node count does)."""
    k = settings.num_parts
    while k < min(sizes.nodes, 1 << 16):
        k *= 2
        if _peak_of(sizes, replace(settings, num_parts=k), step) <= cap:
            lo = k // 2  # bisect between the last misfit and the first fit
            while lo + 1 < k:
                mid = (lo + k) // 2
                lo, k = (lo, mid) if _peak_of(sizes, replace(settings, num_parts=mid), step) <= cap else (mid, k)
            return k
    return None


def fitting_parts(sizes: GraphSizes, settings: Settings, cap: int) -> int | None:
    """The smallest partition count, at least `settings.num_parts`, with every step's worker peak within the
    `headroom` of the kill threshold `cap` (None: a step whose peak does not shrink with the partition count stays
    above it)."""
    cap = headroom(cap)
    k = settings.num_parts
    for st in plan_steps(sizes, settings):
        if st.worker_peak > cap:
            more = parts_that_fit(sizes, settings, st.step, cap) if st.driver == "partition" else None
            if more is None:
                return None
            k = max(k, more)
    fits = all(st.worker_peak <= cap for st in plan_steps(sizes, replace(settings, num_parts=k)))
    return k if fits else None


def flow_advice(sizes: GraphSizes, settings: Settings, limits: Limits, st: StepPlan) -> list[str]:
    """A method that holds the whole graph in one host: a distributed one instead, with its predicted worker peak."""
    peak = _peak_of(sizes, replace(settings, method="multilevel"), "assign")
    fits = limits.worker_memory is None or peak <= limits.worker_memory * kill_threshold()
    return [f"assign.method: multilevel (Dask tasks, {gb(peak)} per worker{'' if fits else ', above the limit too'})",
            f"a flow host with more than {gb(st.flow_peak)} of memory"]

"""The plan check `graphshard run` does after the config check and before the cluster starts."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from graphshard import diskfull
from graphshard.errors import GraphshardError
from graphshard.plan.build import RunPlan, plan_run
from graphshard.plan.fit import start_problem

if TYPE_CHECKING:
    from graphshard.formats.chunked import ChunkedGraph
    from graphshard.pipeline.config import PipelineConfig

log = logging.getLogger(__name__)
_LOGGED: set[str] = set()  # the misfit lines this process logged


class PlanRefused(GraphshardError):
    """The config's plan does not fit its cluster or disks (exit 2 before any work)."""


def check(cfg: PipelineConfig, graph: ChunkedGraph, force: bool = False) -> RunPlan:
    """Plan the run; refuse it with the first misfit's one line unless `force` (then log the misfits; a memory limit
    no worker can start under is refused whatever `force`). Also tells
    the disk-full wording which locations this run writes to."""
    if not cfg.cluster.address and (line := start_problem("cluster.memory_limit", cfg.cluster.memory_limit,
                                                           cfg.cluster.workers, cfg.cluster.threads_per_worker)):
        raise PlanRefused(f"plan: {line}")
    plan = plan_run(cfg, graph)
    diskfull.watch({loc.key: loc.path for loc in plan.limits.locations})
    for misfit in plan.misfits:  # the terminal shows warnings: only when the run goes on, else the one line below
        line = f"{misfit.line()}{' (--force-plan: running anyway)' if force else ''}"
        if line not in _LOGGED:  # `graphshard run` checks, then its flow again (as a deployment's run): once
            _LOGGED.add(line)
            log.log(logging.WARNING if force else logging.INFO, "%s", line)
    if plan.misfits and not force:
        more = f" (and {len(plan.misfits) - 1} more: graphshard plan {cfg.source})" if len(plan.misfits) > 1 else ""
        worst = max(plan.misfits, key=lambda m: m.predicted / max(m.limit, 1))
        raise PlanRefused(f"{worst.line()}{more}; --force-plan runs anyway")
    return plan

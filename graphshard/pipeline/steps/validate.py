"""The validation step as a Prefect task: re-read the written partitions, check them, write the quality report.

Key: the digests of the input content and of the partition set, and the `validate` config section.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphshard import assign
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.pipeline.cache import PRODUCT, StepResult, StepStore, step_key
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import write_report_to
from graphshard.pipeline.ondemand import ClusterOnDemand
from graphshard.pipeline.steps.common import input_unchanged, run_step, scratch_dir, step_task
from graphshard.storage import Location

if TYPE_CHECKING:
    from distributed import Client

OUTPUT = PRODUCT["validate"]


def build(cfg: PipelineConfig, store: StepStore, partition_config: Path | Location,
          assignment_report: Path | Location, step_times: dict[str, float], client: Client,
          stage: Path | Location) -> dict:
    """Validate against the input and write report.json / report.html into `stage/report`.

    Validation's scratch arrays go in this step's staging folder (not beside the shuffle artifact it reads), or with
    the work folder on a store `common.scratch_dir` (a local folder for the run's own local cluster).
    A partition set that fails a check is not published: its report goes to `<work>/validate/failed/` instead.
    """
    from graphshard import validate  # imported here: a cached run skips the validator's imports

    report = validate.validate(partition_config, input_metadata=cfg.input.metadata, full=cfg.validate_.full,
                               client=client, seed=cfg.validate_.seed, step_times=step_times,
                               assignment_report=assignment_report,
                               scratch_dir=stage if isinstance(stage, Path) else scratch_dir(cfg, stage),
                               storage=cfg.storage,
                               remote_share=cfg.validate_.remote_share)
    if not report["ok"]:
        html = write_report_to(store.root / "validate" / "failed", report, cfg.storage)
        first = validate.problem_lines(report)[0]
        raise GraphshardError(f"validation failed: {report['num_problems']} problem(s), first: {first} "
                              f"(report: {html})")
    write_report_to(stage / OUTPUT, report, cfg.storage)
    return {"ok": True, "checks": {c["name"]: c["status"] for c in report["checks"]}}


@step_task("validate")
def validate_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, ingested: StepResult,
                  assigned: StepResult, shuffled: StepResult, cluster: ClusterOnDemand, force: bool = False
                  ) -> StepResult:
    """Prove the partitions right (every invariant of formats.md §5) once per distinct partition set.

    Parameters
    ----------
    cfg : PipelineConfig
        The run's config.
    graph : ChunkedGraph
        The input's metadata.
    store : StepStore
        The work folder's step artifacts.
    ingested, assigned, shuffled : StepResult
        The artifacts of the steps before.
    cluster : ClusterOnDemand
        The run's cluster.
    force : bool
        Build even when cached.

    Returns
    -------
    StepResult
        The artifact holding report.json and report.html (a failed check raises, nothing is published).
    """
    inputs = {"graph": ingested.digest, "partitions": shuffled.digest}
    key = step_key("validate", inputs, cfg.section("validate"))
    config = shuffled.path(shuffled.summary["config"])
    assignment_report = assigned.path(f"{PRODUCT['assign']}/{assign.REPORT_FILE}")
    times = {r.step: r.summary["seconds"] for r in (ingested, assigned, shuffled)}
    make = input_unchanged(cfg, graph, store,
                           lambda stage, client: build(cfg, store, config, assignment_report, times, client, stage))
    return run_step(store, "validate", key, inputs, make, cluster, force)

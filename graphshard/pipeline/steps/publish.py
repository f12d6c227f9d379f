"""Publishing as a Prefect task: the partition set and the report, linked from the work folder into `output.dir`."""

from __future__ import annotations

from pathlib import Path

from prefect import get_run_logger, task
from prefect.states import Completed, State

from graphshard.pipeline.cache import PRODUCT, StepResult, StepStore
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.publish import is_current, publish_output
from graphshard.pipeline.steps.common import TASK_OPTIONS
from graphshard.validate.report_html import REPORT_FILES, retarget_report


@task(name="publish", **TASK_OPTIONS)
def publish_task(cfg: PipelineConfig, store: StepStore, shuffled: StepResult,
                 validated: StepResult | None) -> str | State:
    """Swap the finished output into place atomically; Cached when it already holds exactly these artifacts.

    Parameters
    ----------
    cfg : PipelineConfig
        The run's config.
    store : StepStore
        The work folder's step artifacts.
    shuffled : StepResult
        The partition set's artifact.
    validated : StepResult or None
        The report's artifact (None when the run does not validate).

    Returns
    -------
    str or State
        The output folder, or a Cached state when it was already up to date.
    """
    sources = [shuffled.path(PRODUCT["shuffle"])] + ([validated.path(PRODUCT["validate"])] if validated else [])
    digests = {"partitions": shuffled.digest, "report": validated.digest if validated else None}
    out = cfg.output.dir
    if is_current(store.root, out, digests, sources, REPORT_FILES):
        return Completed(data=str(out), name="Cached", message=f"{out} already up to date")
    config = out / Path(shuffled.summary["config"]).name  # the report names the published set, not the cache
    publish_output(store.root, out, sources, digests,
                   finish=(lambda stage: retarget_report(stage, config)) if validated else None)
    get_run_logger().info("published %s", out)
    return str(out)

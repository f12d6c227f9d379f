"""Publishing as a Prefect task: the partition set and the report, linked from the work folder into a local
`output.dir`, or copied under a run-unique prefix of one on a store with the partition config written last."""

from __future__ import annotations

import json
from pathlib import Path

from prefect import get_run_logger
from prefect.states import Completed, State

from graphshard.errors import GraphshardError
from graphshard.pipeline.cache import PRODUCT, StepResult, StepStore
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import read_text
from graphshard.pipeline.preflight import check_output_free
from graphshard.pipeline.publish import (
    artifact_digests,
    is_current,
    publish_output,
    publish_to_store,
    published_by,
    publishing,
    run_of,
)
from graphshard.pipeline.steps.common import step_task, tell
from graphshard.storage import Location
from graphshard.validate.report_html import REPORT_FILES, retarget_report


@step_task("publish")
def publish_task(cfg: PipelineConfig, store: StepStore, shuffled: StepResult, validated: StepResult | None,
                 holder: str | None = None) -> str | State:
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
    holder : str, optional
        The run's lease in an output store's `.runs/` (`atomic.publish_on_store`).

    Returns
    -------
    str or State
        The output folder, or a Cached state when it was already up to date.
    """
    out, logger = cfg.output.dir, get_run_logger()
    with publishing(store.root, out, cfg.storage,
                    lambda who: tell(logger, f"publish: waiting for another run publishing to {out} ({who})")):
        return _publish(cfg, store, shuffled, validated, holder)


def _publish(cfg: PipelineConfig, store: StepStore, shuffled: StepResult, validated: StepResult | None,
             holder: str | None) -> str | State:
    """`publish_task`'s work, with this work folder's publishing at the output held."""
    sources = [shuffled.path(PRODUCT["shuffle"])] + ([validated.path(PRODUCT["validate"])] if validated else [])
    digests, run = artifact_digests(shuffled, validated), run_of(shuffled, validated)
    out, name = cfg.output.dir, Path(shuffled.summary["config"]).name
    if is_current(store.root, out, digests, sources, REPORT_FILES, cfg.storage, name, run):
        return Completed(data=str(out), name="Cached", message=f"{out} already up to date")
    ours = published_by(store.root, out, cfg.storage)
    try:  # another run may have published there since this one's pre-flight
        check_output_free(cfg, ours)
    except GraphshardError as err:
        raise GraphshardError(f"publish: {err}; it appeared while this run worked (another run published there), "
                              "nothing was replaced") from None
    overwrite = cfg.output.overwrite or ours  # else the set goes only where none is, even one published just now
    if isinstance(out, Location):
        report = json.loads(read_text(sources[1] / REPORT_FILES[0], cfg.storage)) if validated else None
        publish_to_store(store.root, out, sources, digests, name, cfg.storage, report, run, overwrite, holder)
    else:
        config = out / name  # the report names the published set, not the cache
        publish_output(store.root, out, sources, digests,
                       finish=(lambda stage: retarget_report(stage, config)) if validated else None,
                       storage=cfg.storage, overwrite=overwrite)
    get_run_logger().info("published %s", out)
    return str(out)

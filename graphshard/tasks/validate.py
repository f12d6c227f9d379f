"""The validation step as a Prefect task: re-read the written partitions, check them, write the quality report.

Key: the digests of the input content and of the partition set, and the `validate` config section.
"""

from __future__ import annotations

from pathlib import Path

from distributed import Client
from prefect import task

from graphshard import validate
from graphshard.config import PipelineConfig
from graphshard.flows.cache import PRODUCT, StepResult, StepStore, step_key
from graphshard.tasks.common import TASK_OPTIONS, run_step

OUTPUT = PRODUCT["validate"]


def build(cfg: PipelineConfig, partition_config: Path, client: Client, stage: Path) -> dict:
    """Validate against the input and write report.json / report.html into `stage/report`."""
    report = validate.validate(partition_config, input_metadata=cfg.input.metadata, full=cfg.validate_.full,
                               client=client, seed=cfg.validate_.seed)
    (stage / OUTPUT).mkdir()
    validate.write_report(stage / OUTPUT, report)
    return {"ok": True}


@task(name="validate", **TASK_OPTIONS)
def validate_task(cfg: PipelineConfig, store: StepStore, ingested: StepResult, shuffled: StepResult,
                  client: Client, force: bool = False) -> StepResult:
    """Prove the partitions right (every invariant of formats.md §5) once per distinct partition set."""
    inputs = {"graph": ingested.digest, "partitions": shuffled.digest}
    key = step_key("validate", inputs, cfg.section("validate"))
    config = shuffled.path(shuffled.summary["config"])
    return run_step(store, "validate", key, inputs, lambda stage: build(cfg, config, client, stage), client, force)

"""The shuffle + write step as a Prefect task: DGL partitions from the graph and the assignment (shuffle.dispatch).

Key: the digests of the input content and of the assignment folder, and the `shuffle` config section without
`scratch_dir` (where temporary buckets go does not change the partitions), plus the GraphBolt choices when
`output.graphbolt` is on. The GraphBolt conversion runs here, right after the files are written: it rewrites the
partition config and adds a file per partition, so it belongs to the step whose artifact is the partition set
(validate then checks, and publish swaps in, the converted set).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from prefect import task

from graphshard import shuffle
from graphshard.config import PipelineConfig
from graphshard.flows.cache import PRODUCT, StepResult, StepStore, step_key
from graphshard.flows.ondemand import ClusterOnDemand
from graphshard.formats.chunked import ChunkedGraph
from graphshard.graphbolt import to_graphbolt
from graphshard.tasks.common import TASK_OPTIONS, run_step

if TYPE_CHECKING:
    from distributed import Client

OUTPUT = PRODUCT["shuffle"]


def build(cfg: PipelineConfig, graph: ChunkedGraph, assignment: Path, client: Client, stage: Path) -> dict:
    """Write the partition set into `stage/partitions`; summary = the partition config's name inside the artifact."""
    config = shuffle.dispatch(graph.metadata_path, assignment, stage / OUTPUT, cfg.shuffle, client)
    if (graphbolt := cfg.output.graphbolt_options()) is not None:
        to_graphbolt(config, graphbolt, client)
    return {"config": Path(config).relative_to(stage).as_posix(), "num_parts": cfg.num_parts}


@task(name="shuffle", **TASK_OPTIONS)
def shuffle_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, ingested: StepResult,
                 assigned: StepResult, cluster: ClusterOnDemand, force: bool = False) -> StepResult:
    """Route edges and features to their owners and write DGL's partition files, once per distinct input."""
    inputs = {"graph": ingested.digest, "assignment": assigned.digest}
    section = {**cfg.section("shuffle"), "scratch_dir": None}
    if (graphbolt := cfg.output.graphbolt_options()) is not None:  # absent otherwise: earlier keys stay valid
        section["graphbolt"] = graphbolt.model_dump()
    key = step_key("shuffle", inputs, section)
    assignment = assigned.path(PRODUCT["assign"])
    return run_step(store, "shuffle", key, inputs, lambda stage, client: build(cfg, graph, assignment, client, stage),
                    cluster, force)

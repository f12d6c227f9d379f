"""The shuffle + write step as a Prefect task: DGL partitions from the graph and the assignment (shuffle.shuffle).

Key: the digests of the input content and of the assignment folder, and the `shuffle` config section without
`scratch_dir` (where temporary buckets go does not change the partitions), plus the GraphBolt choices when
`output.graphbolt` is on. The GraphBolt conversion runs here, right after the files are written: it rewrites the
partition config and adds a file per partition, so it belongs to the step whose artifact is the partition set
(validate then checks, and publish swaps in, the converted set).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from graphshard import shuffle
from graphshard.atomic import run_prefix
from graphshard.formats.chunked import ChunkedGraph, load_metadata
from graphshard.pipeline.cache import PRODUCT, StepResult, StepStore, step_key
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.ondemand import ClusterOnDemand
from graphshard.pipeline.publish import run_name
from graphshard.pipeline.steps.common import input_unchanged, run_step, scratch_dir, step_task
from graphshard.shuffle.graphbolt import to_graphbolt
from graphshard.shuffle.step import write_set
from graphshard.storage import Location, location

if TYPE_CHECKING:
    from distributed import Client

OUTPUT = PRODUCT["shuffle"]


def build(cfg: PipelineConfig, graph: ChunkedGraph, assignment: Path | Location, client: Client,
          stage: Path | Location, key: str) -> dict:
    """Write the partition set into `stage/partitions`; summary = the partition config's name inside the artifact.

    With the work folder and the output on stores (no GraphBolt conversion), the set is written straight under the
    output's run prefix `<out>/.runs/<key[:16]>/` (summary `product`: the artifact lists those files as its
    `partitions/`), which publishing then only names in the config it writes last: no copy of the set within the
    store. Nothing there is readable as a set until then (a reader opens the config at `<out>`); a re-build of the
    same key writes the same objects under the same names, never deleting first, so a set published from this
    prefix stays whole while it is rebuilt."""
    options = cfg.shuffle.model_copy(update={"scratch_dir": scratch_dir(cfg, stage)})
    graphbolt = cfg.output.graphbolt_options()
    out = cfg.output.dir
    if isinstance(stage, Location) and isinstance(out, Location) and not out.is_local and graphbolt is None:
        product = run_prefix(out, run_name(key))
        written = load_metadata(graph.metadata_path, cfg.storage)  # read with the config's storage options
        config, _ = write_set(written, location(assignment), product, options, client)
        return {"config": f"{OUTPUT}/{location(config).name}", "num_parts": cfg.num_parts, "product": product.url}
    config = shuffle.shuffle(graph.metadata_path, assignment, stage / OUTPUT, options, client, storage=cfg.storage)
    if graphbolt is not None:
        to_graphbolt(config, graphbolt, client)
    return {"config": location(config).relative_to(location(stage)), "num_parts": cfg.num_parts}


@step_task("shuffle")
def shuffle_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, ingested: StepResult,
                 assigned: StepResult, cluster: ClusterOnDemand, force: bool = False) -> StepResult:
    """Route edges and features to their owners and write DGL's partition files, once per distinct input.

    Parameters
    ----------
    cfg : PipelineConfig
        The run's config.
    store : StepStore
        The work folder's step artifacts.
    graph : ChunkedGraph
        The input's metadata.
    ingested, assigned : StepResult
        The ingest and assign artifacts.
    cluster : ClusterOnDemand
        The run's cluster.
    force : bool
        Build even when cached.

    Returns
    -------
    StepResult
        The artifact holding the partition set (its summary names the partition config).
    """
    inputs = {"graph": ingested.digest, "assignment": assigned.digest}
    section = {**cfg.section("shuffle"), "scratch_dir": None}
    if (graphbolt := cfg.output.graphbolt_options()) is not None:  # absent otherwise: earlier keys stay valid
        section["graphbolt"] = graphbolt.model_dump()
    key = step_key("shuffle", inputs, section)
    assignment = assigned.path(PRODUCT["assign"])
    make = input_unchanged(cfg, graph, store, lambda stage, client: build(cfg, graph, assignment, client, stage, key))
    return run_step(store, "shuffle", key, inputs, make, cluster, force)

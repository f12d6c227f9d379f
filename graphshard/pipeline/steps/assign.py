"""The assignment step as a Prefect task: which partition owns each node (graphshard.assign.assign).

Key: the ingest artifact's digest (input content), `num_parts`, the `assign` config section, whether the report
measures the edges and, for the `file` method, the content manifest of the user's folder (its path is left out).
`assignment_report.json` holds timings, so it is left out of the digest: re-running an assignment that comes out the
same keeps the shuffle cached. When the run validates, the report skips its pass over every edge (cut, edges per part,
communication volume): validation measures the cut and the halos on the written partitions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from graphshard import assign
from graphshard.formats.chunked import ChunkedGraph
from graphshard.pipeline.cache import PRODUCT, StepResult, StepStore, step_key
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import read_text
from graphshard.pipeline.manifest import folder_manifest
from graphshard.pipeline.ondemand import ClusterOnDemand
from graphshard.pipeline.steps.common import input_unchanged, run_step, step_task
from graphshard.storage import Location, location

if TYPE_CHECKING:
    from distributed import Client

OUTPUT = PRODUCT["assign"]


def build(cfg: PipelineConfig, graph: ChunkedGraph, client: Client | None, stage: Path | Location) -> dict:
    """Write the assignment folder into `stage/assignment`; summary = the report's headline figures."""
    folder = assign.assign(graph.metadata_path, stage / OUTPUT, cfg.num_parts, cfg.assign, client=client,
                           edge_report=edge_report(cfg), storage=cfg.storage)
    report = json.loads(read_text(location(folder) / assign.REPORT_FILE, cfg.storage))
    return {"method": cfg.assign.method, "num_parts": cfg.num_parts, "edge_cut": report["edge_cut"],
            "imbalance": report["imbalance"]}


def edge_report(cfg: PipelineConfig) -> bool:
    """Whether the assignment report makes its own pass over the edges (only when nothing validates the output)."""
    return not cfg.validate_.enabled


@step_task("assign")
def assign_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, ingested: StepResult,
                cluster: ClusterOnDemand | None, force: bool = False) -> StepResult:
    """Assign nodes to partitions once per (input content, num_parts, assign options).

    Parameters
    ----------
    cfg : PipelineConfig
        The run's config.
    store : StepStore
        The work folder's step artifacts.
    graph : ChunkedGraph
        The input's metadata.
    ingested : StepResult
        The ingest artifact (its digest is the input's content).
    cluster : ClusterOnDemand or None
        The run's cluster.
    force : bool
        Build even when cached.

    Returns
    -------
    StepResult
        The artifact holding the assignment folder.
    """
    inputs = {"graph": ingested.digest}
    if cfg.assign.method == "file":
        inputs["assign_dir"] = folder_manifest(cfg.assign.dir, storage=cfg.storage).digest
    section = {"num_parts": cfg.num_parts, **cfg.section("assign"), "dir": None, "edge_report": edge_report(cfg)}
    key = step_key("assign", inputs, section)
    make = input_unchanged(cfg, graph, store, lambda stage, client: build(cfg, graph, client, stage))
    return run_step(store, "assign", key, inputs, make, cluster, force, volatile=(f"{OUTPUT}/{assign.REPORT_FILE}",))

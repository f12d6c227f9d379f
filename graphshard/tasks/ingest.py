"""The ingest step as a Prefect task: open and check every input file, record the graph's fingerprint.

Key: the content manifest of the input files (sizes + blake2b, remembered per stat in `<work>/input-hashes.json`).
Artifact: `fingerprint.json` (graphshard.ingest.fingerprint) and `summary.json` (types, counts, features).
"""

from __future__ import annotations

import json
from pathlib import Path

from distributed import Client
from prefect import task
from prefect.states import State

from graphshard import ingest
from graphshard.config import PipelineConfig
from graphshard.flows.cache import StepResult, StepStore, step_key
from graphshard.flows.manifest import HashCache, graph_files
from graphshard.flows.ondemand import ClusterOnDemand
from graphshard.formats.chunked import ChunkedGraph
from graphshard.precheck import refuse
from graphshard.tasks.common import TASK_OPTIONS, run_step


def build(graph: ChunkedGraph, client: Client | None, stage: Path) -> dict:
    """Check the graph (all problems at once) and write its fingerprint and summary into `stage`."""
    refuse(ingest.check_graph(graph, client))
    fp = ingest.fingerprint(graph)
    (stage / "fingerprint.json").write_text(json.dumps(fp, indent=1, sort_keys=True))
    info = ingest.summary(graph)
    info.pop("metadata", None)  # an absolute path: the artifact depends on content only
    (stage / "summary.json").write_text(json.dumps(info, indent=1, sort_keys=True))
    return {"graph_name": graph.graph_name, "num_nodes": graph.total_nodes, "num_edges": graph.total_edges,
            "input_bytes": info["bytes"]}


@task(name="ingest", **TASK_OPTIONS)
def ingest_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, cluster: ClusterOnDemand | None,
                force: bool = False) -> StepResult | State:
    """Check the input graph once per distinct content (Cached when the input files are unchanged)."""
    manifest = HashCache(store.root / "input-hashes.json").manifest(graph_files(graph))
    inputs = {"graph_files": manifest.digest}
    key = step_key("ingest", inputs)
    return run_step(store, "ingest", key, inputs, lambda stage, client: build(graph, client, stage), cluster,
                    force)

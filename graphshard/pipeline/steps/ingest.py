"""The ingest step as a Prefect task: open and check every input file, record the graph's fingerprint.

Key: the content manifest of the input files (sizes + blake2b, remembered per stat in `<work>/input-hashes.json`).
A new or changed input file means one Dask task per file that checks it and hashes it (the bytes just read, in page
cache) before the key is known: one read per file, in parallel, instead of a hash pass in this process, a check pass
on the workers and the fingerprint's hash pass.
Artifact: `fingerprint.json` (graphshard.ingest.fingerprint) and `summary.json` (types, counts, features).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from prefect.states import State

from graphshard import digests, ingest
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.pipeline.cache import StepResult, StepStore, step_key
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import write_text
from graphshard.pipeline.manifest import HashCache, graph_files
from graphshard.pipeline.ondemand import ClusterOnDemand
from graphshard.pipeline.steps.common import input_hashes, run_step, step_progress, step_task
from graphshard.precheck import refuse
from graphshard.storage import Location, Storage

if TYPE_CHECKING:
    from distributed import Client


def build(graph: ChunkedGraph, client: Client | None, stage: Path | Location, storage: Storage,
          problems: list[GraphshardError] | None = None) -> dict:
    """Check the graph (all problems at once; `problems`: already checked) and write its fingerprint and summary
    into `stage`."""
    refuse(ingest.check_graph(graph, client) if problems is None else problems)
    fp = ingest.fingerprint(graph)
    write_text(stage / "fingerprint.json", json.dumps(fp, indent=1, sort_keys=True), storage)
    info = ingest.summary(graph)
    info.pop("metadata", None)  # an absolute path: the artifact depends on content only
    write_text(stage / "summary.json", json.dumps(info, indent=1, sort_keys=True), storage)
    return {"graph_name": graph.graph_name, "num_nodes": graph.total_nodes, "num_edges": graph.total_edges,
            "input_bytes": info["bytes"]}


def check_new_files(graph: ChunkedGraph, files: dict[str, Path | Location], hashes: HashCache,
                    cluster: ClusterOnDemand | None) -> list[GraphshardError] | None:
    """When an input file is new or changed (its hash unknown), check every file and hash it in the same Dask task
    (one pass per file, in parallel) before the key is known: the problems, and the digests remembered for the
    manifest and the fingerprint. None when every file is unchanged (a build, if any, checks then)."""
    if not hashes.unknown(files):
        return None
    client = cluster.get() if cluster is not None else None
    with step_progress("ingest", client):
        problems, found = ingest.check_and_hash(graph, client)
    digests.remember(found)
    return problems


@step_task("ingest")
def ingest_task(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, cluster: ClusterOnDemand | None,
                force: bool = False) -> StepResult | State:
    """Check the input graph once per distinct content (Cached when the input files are unchanged).

    Parameters
    ----------
    cfg : PipelineConfig
        The run's config.
    store : StepStore
        The work folder's step artifacts.
    graph : ChunkedGraph
        The input's metadata (from the config's pre-flight check).
    cluster : ClusterOnDemand or None
        The run's cluster, started only if the step builds.
    force : bool
        Build even when cached.

    Returns
    -------
    StepResult or State
        The artifact (`fingerprint.json`, `summary.json`), or a Cached state holding it.
    """
    files = graph_files(graph)
    hashes = input_hashes(cfg, store)
    problems = check_new_files(graph, files, hashes, cluster)
    inputs = {"graph_files": hashes.manifest(files).digest}
    key = step_key("ingest", inputs)
    return run_step(store, "ingest", key, inputs,
                    lambda stage, client: build(graph, client, stage, cfg.storage, problems),
                    cluster, force, progress=problems is None)

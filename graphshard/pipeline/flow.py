"""The graphshard pipeline as one Prefect flow: ingest -> assign -> shuffle -> validate -> publish.

Each step is a Prefect task that runs in the flow process and hands its data-parallel work to one
`distributed.Client` opened per flow run (a LocalCluster, or the scheduler at `cluster.address`).

Why not prefect-dask's `DaskTaskRunner`: the steps depend on each other's files, so there is nothing for a task
runner to run side by side, while the parallel work inside each step is already many Dask tasks submitted by the
library. DaskTaskRunner would instead run each whole Prefect task inside a Dask worker, which then needs Prefect
installed and its own API connection: with no server, every worker process started a temporary Prefect API server
(measured here: 45 / 19 / 27 s for three small flows against 12.7 / 7.0 / 9.4 s with a running server). Keeping
Prefect in the flow process means Dask workers need only graphshard's library.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import httpx
from prefect import flow, get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact
from prefect.exceptions import UnfinishedRun
from prefect.runtime import flow_run
from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, load_current_profile, temporary_settings
from prefect.states import Cancelled, State
from prefect.utilities.urls import url_for

from graphshard import diskfull, logs
from graphshard.errors import GraphshardError
from graphshard.pipeline import orphans
from graphshard.pipeline.cache import StepStore
from graphshard.pipeline.cancel import RunCancelled, stop_if_cancelled
from graphshard.pipeline.config import STEPS, PipelineConfig, load_config
from graphshard.pipeline.ondemand import ClusterOnDemand, wait_closed
from graphshard.pipeline.preflight import check_config
from graphshard.pipeline.publish import published_record
from graphshard.pipeline.steps.assign import assign_task
from graphshard.pipeline.steps.common import one_line_failure
from graphshard.pipeline.steps.ingest import ingest_task
from graphshard.pipeline.steps.publish import publish_task
from graphshard.pipeline.steps.shuffle import shuffle_task
from graphshard.pipeline.steps.validate import validate_task
from graphshard.pipeline.summary import markdown, summarize, summary_line
from graphshard.plan import gate
from graphshard.runprefix import RUNS
from graphshard.storage import Location, Storage, lease, redact

FLOW_NAME = "graphshard"
DEPLOYMENT_NAME = "partition"
logs.quiet_on_terminal("prefect")  # a failed run is graphshard's one line; Prefect's own failure logs go to the file
logs.adopt("prefect._internal")  # its services' failures (an API gone mid-run): to the file, not a screenful each
logging.raiseExceptions = False  # else Prefect's API log handler writes each failed batch straight to stderr


def forced_steps(from_step: str | None, force: list[str] | None) -> set[str]:
    """The steps to re-run regardless of their cache: `from_step` and every later step, plus each `force` step."""
    for name in [from_step, *(force or [])]:
        if name is not None and name not in STEPS:
            raise GraphshardError(f"unknown step '{name}': expected one of {', '.join(STEPS)}")
    forced = set(STEPS[STEPS.index(from_step):]) if from_step else set()
    return forced | set(force or [])


def _cluster_started(client) -> None:
    """Log (and keep as a link artifact) the dashboard of the cluster the run just started; count its tasks."""
    from graphshard.pipeline import progress  # imports distributed: only once a cluster runs

    progress.install(client)
    link = client.dashboard_link
    get_run_logger().info("Dask dashboard: %s", link)
    print(f"Dask dashboard: {link}", file=sys.stderr)  # on the terminal too, beside the steps' progress bars
    if link:
        create_link_artifact(link, link_text="Dask dashboard", key="graphshard-dask-dashboard",
                             description="Dask dashboard of this run's cluster")


def _publish_report_artifacts(summary: dict, tables: dict[str, list[dict]]) -> None:
    create_markdown_artifact(markdown(summary), key="graphshard-summary",
                             description="graphshard run: output, headline figures, step states")
    for name, rows in tables.items():
        if rows:
            create_table_artifact(rows, key=f"graphshard-{name}", description=f"graphshard {name}")


# `--set storage_options...=` overrides of the run this process drives (`run_pipeline`): the flow applies them
# without taking them as parameters, which Prefect stores and its UI shows (they may hold a secret)
_PRIVATE_OVERRIDES: list[str] = []


def _is_private(override: str) -> bool:
    return override.strip().startswith("storage_options")


def _run_name() -> str:
    """A flow run's name in Prefect's UI: its config's name, the start time and 4 random hex digits (two runs in one
    second; Prefect's default is two random words), e.g. `example-1130-041209-3f2a`."""
    config = str(flow_run.parameters.get("config", "run"))
    stem = config.rstrip("/").rsplit("/", 1)[-1].rsplit(".", 1)[0] or "run"
    return f"{stem}-{time.strftime('%m%d-%H%M%S')}-{os.urandom(2).hex()}"


@flow(name=FLOW_NAME, persist_result=False, log_prints=False, flow_run_name=_run_name)
def partition(config: str, overrides: list[str] | None = None, from_step: str | None = None,
              force: list[str] | None = None, force_plan: bool = False) -> dict | State:
    """The `graphshard` flow: partition the graph a YAML config describes (ingest, assign, shuffle, validate, publish).

    Parameters
    ----------
    config : str
        The YAML config's path.
    overrides : list of str, optional
        `key.path=value` strings (the value parsed as YAML), as `--set` takes them.
    from_step : str, optional
        Re-run this step and every later one, whatever the cache holds.
    force : list of str, optional
        Re-run these steps.
    force_plan : bool, optional
        Run even if the plan says the cluster's memory or the disks are too small (else refused before any work).

    Returns
    -------
    dict or State
        The run summary: output paths, headline figures, each step's state; or, when a step or a check fails with
        graphshard's one line, a Failed state holding it (logged as that line, without Prefect's traceback).
    """
    orphans.tag_run()
    link = ui_link(flow_run.get_id())
    if link:  # a deployment's run has no terminal: its log says where the run is shown
        get_run_logger().info("Prefect UI: %s", link)
    outcome = one_line_failure(_partition)(config, overrides, from_step, force, force_plan)
    if isinstance(outcome, State) and isinstance(outcome.data, RunCancelled):
        get_run_logger().warning("%s", outcome.message)
        return Cancelled(message=outcome.message)
    if isinstance(outcome, State):
        get_run_logger().error("%s", outcome.message)
    return outcome


def _partition(config: str, overrides: list[str] | None, from_step: str | None, force: list[str] | None,
               force_plan: bool) -> dict:
    """The flow's work (`partition`'s parameters); raises the failing check's or step's GraphshardError."""
    start = time.perf_counter()
    cfg: PipelineConfig = load_config(config, [*(overrides or []), *_PRIVATE_OVERRIDES])
    store = StepStore(cfg.work, cfg.storage)
    graph = check_config(cfg, published_by_us=published_record(cfg),
                         warn=get_run_logger().warning)
    gate.check(cfg, graph, force=force_plan)  # a deployment calling the flow gets `graphshard run`'s plan check too
    forced = forced_steps(from_step, force)
    store.clean_stale(cfg.output.dir)
    states: dict[str, State] = {}

    def worked() -> bool:  # the last step did work: time for a cancel to have come (a cached run asks nothing)
        return bool(states) and list(states.values())[-1].name != "Cached"

    def step(name: str, task, *args):
        if worked():
            stop_if_cancelled(name)
        state = task(*args, force=name in forced, return_state=True)
        states[name] = state
        return state.result()

    # no cluster if every step is cached
    cluster = ClusterOnDemand(cfg.cluster.spec(), on_start=_cluster_started)
    with _at_work_on(cfg.output.dir, cfg.storage) as holder:
        try:
            ingested = step("ingest", ingest_task, cfg, graph, store, cluster)
            assigned = step("assign", assign_task, cfg, graph, store, ingested, cluster)
            shuffled = step("shuffle", shuffle_task, cfg, graph, store, ingested, assigned, cluster)
            validated = (step("validate", validate_task, cfg, graph, store, ingested, assigned, shuffled, cluster)
                         if cfg.validate_.enabled else None)
        finally:
            cluster.close_in_background()  # overlaps publishing, the report and Prefect's end; run_pipeline waits
        if worked():
            stop_if_cancelled("publish")
        states["publish"] = publish_task(cfg, store, shuffled, validated, holder, return_state=True)
        states["publish"].result()  # a publish that failed fails the run (it was reported as published)
    out = cfg.output.dir
    summary, tables = summarize(cfg, out, ingested, assigned, shuffled, validated,
                                {k: s.name for k, s in states.items()}, time.perf_counter() - start)
    _publish_report_artifacts(summary, tables)
    get_run_logger().info(summary_line(summary))
    return summary


def _at_work_on(out: Path | Location, storage: Storage) -> AbstractContextManager[str | None]:
    """An output on a store: a lease in its `.runs/` for the whole run (the shuffle writes the set under the run's
    prefix there long before publishing names it), so that another run's publish leaves that prefix alone; yields
    the lease's name. A local output: nothing (its set is staged and renamed)."""
    return lease.holding(storage, out / RUNS, "run") if isinstance(out, Location) else nullcontext(None)


def _heartbeats_as_configured():
    """No flow-run heartbeats unless the user configured them (PREFECT_FLOWS_HEARTBEAT_FREQUENCY in the environment or
    the active profile). Prefect's default (one every 180 s, for crash-detection automations) costs every run up to
    1 s at its end, joining a thread that sleeps in 1-s steps; a run in the user's terminal reports its own crash.
    Deployments (`prefect.yaml`) do not come through here and keep Prefect's default."""
    if PREFECT_FLOWS_HEARTBEAT_FREQUENCY.name in os.environ or PREFECT_FLOWS_HEARTBEAT_FREQUENCY in \
            load_current_profile().settings:
        return nullcontext()
    return temporary_settings(updates={PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})


def ui_link(flow_run_id: str | None) -> str | None:
    """The page of a flow run in the Prefect UI of the API this process talks to (None in ephemeral mode)."""
    link = url_for("flow-run", obj_id=flow_run_id) if flow_run_id else None
    return redact(link) if link else None


def run_pipeline(config: str | Path, overrides: list[str] | None = None, from_step: str | None = None,
                 force: list[str] | None = None, force_plan: bool = False) -> dict:
    """Run the flow in this process (what `graphshard run` does after its checks).

    Parameters
    ----------
    config : str or Path
        The YAML config's path.
    overrides, from_step, force, force_plan
        As for `partition`.

    Returns
    -------
    dict
        The run summary and its Prefect `flow_run_id`.

    Raises
    ------
    GraphshardError
        The failing step's one-line message.
    """
    overrides = overrides or []
    _PRIVATE_OVERRIDES[:] = [o for o in overrides if _is_private(o)]
    orphans.mark_crashed()  # runs of this host's killed processes, left Running in Prefect
    try:
        with _heartbeats_as_configured():
            state = partition(str(config), [o for o in overrides if not _is_private(o)], from_step, force or [],
                              force_plan, return_state=True)
    except httpx.TransportError as err:  # the Prefect server went away (`graphshard server stop --force`, a crash)
        raise GraphshardError(f"the Prefect API ({redact(os.environ.get('PREFECT_API_URL', ''))}) stopped answering "
                              f"during the run ({type(err).__name__}); the finished steps are cached: run again once "
                              "it answers (`graphshard server start` for graphshard's own)") from err
    except UnfinishedRun as err:  # cancelled after the last check: the run's work is done, its state is not
        raise GraphshardError(f"flow run cancelled from Prefect as it finished ({err}): what the summary would name "
                              "may be published; run it again to see") from err
    finally:
        _PRIVATE_OVERRIDES.clear()
        wait_closed()
    if state.is_cancelled() or state.is_cancelling():
        raise GraphshardError(state.message or "flow run cancelled from Prefect")
    if state.is_completed():
        run_id = str(state.state_details.flow_run_id)
        return {**state.result(), "flow_run_id": run_id, "prefect_url": ui_link(run_id)}
    err = state.result(raise_on_failure=False)
    if isinstance(err, GraphshardError):
        raise err
    if diskfull.is_full(err):  # a write of the flow process itself (an artifact, a manifest, publishing)
        raise GraphshardError(diskfull.line(f"flow run {state.name.lower()}", err)) from err
    if isinstance(err, BaseException):
        raise err  # a bug: the command's "internal error" line, its traceback in the log file
    raise GraphshardError(f"flow run {state.name.lower()}: {state.message}")

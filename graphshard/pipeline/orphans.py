"""Flow runs of `graphshard run` processes that were killed (SIGKILL, a lost host) stay Running in Prefect for good:
nothing is left to report their end. Each such run carries a tag naming its host and process; the next run on that
host marks the Running ones whose process is gone as Crashed."""

from __future__ import annotations

import logging
import socket

import psutil
from prefect.client.schemas.filters import (
    FlowRunFilter,
    FlowRunFilterState,
    FlowRunFilterStateType,
    FlowRunFilterTags,
)
from prefect.client.schemas.objects import StateType
from prefect.runtime import flow_run
from prefect.states import Crashed

from graphshard.pipeline.cancel import api_client

TAG = "graphshard-process"
CRASHED = "its graphshard run process ({pid} on {host}) ended without reporting: killed, or its host lost"
log = logging.getLogger(__name__)


def process_tag() -> str:
    """This process's tag: host, pid and start time (a recycled pid is not taken for it)."""
    me = psutil.Process()
    return f"{TAG}:{socket.gethostname()}:{me.pid}:{int(me.create_time())}"


def tag_run() -> None:
    """Tag this flow run with its process (one API call for the flow run: a `tags()` context tagged every task run
    too, and Prefect then asked for each task's tag concurrency slots, ~25 ms a task)."""
    run_id = flow_run.get_id()
    if run_id is None:
        return
    try:
        api_client().update_flow_run(run_id, tags=[*flow_run.tags, TAG, process_tag()])
    except Exception as err:  # noqa: BLE001 - bookkeeping only
        log.debug("could not tag the flow run: %s", err)


def _alive(pid: int, started: int) -> bool:
    try:
        return int(psutil.Process(pid).create_time()) == started
    except psutil.Error:
        return False


def mark_crashed() -> int:
    """Set Crashed the Running flow runs tagged by processes of this host that are gone; how many (the API not
    answering: none, as this is bookkeeping only)."""
    host, marked = socket.gethostname(), 0
    try:
        client = api_client()
        running = client.read_flow_runs(flow_run_filter=FlowRunFilter(
            state=FlowRunFilterState(type=FlowRunFilterStateType(any_=[StateType.RUNNING])),
            tags=FlowRunFilterTags(all_=[TAG])))
        for run in running:
            for tag in (t for t in run.tags if t.startswith(f"{TAG}:")):
                parts = tag.split(":")[1:]
                if len(parts) != 3 or parts[0] != host or _alive(int(parts[1]), int(parts[2])):
                    continue
                client.set_flow_run_state(run.id, Crashed(message=CRASHED.format(pid=parts[1], host=host)),
                                          force=True)
                marked += 1
    except Exception as err:  # noqa: BLE001 - a bookkeeping nicety: never fails the run
        log.debug("could not look for crashed runs: %s", err)
    return marked

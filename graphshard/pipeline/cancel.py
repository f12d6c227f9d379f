"""A cancel from Prefect (its UI or API) honoured between steps.

A `graphshard run` process is no worker's: Prefect marks its flow run Cancelling and can stop nothing, so the run
went on, published, and then failed to set its final state ("UnfinishedRun"). The flow asks for its own state
before each step and before publishing, and stops there: the finished steps stay cached, nothing is published.
"""

from __future__ import annotations

import atexit

from prefect.client.orchestration import SyncPrefectClient, get_client
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run
from prefect.settings import PREFECT_API_URL

from graphshard.errors import GraphshardError

STOPPED = ("flow run cancelled from Prefect (its state was Cancelling): stopped before the {step} step; nothing was "
           "published, the finished steps are cached")


class RunCancelled(GraphshardError):
    """The flow run was cancelled from Prefect while it ran (the flow ends Cancelled, not Failed)."""


_CLIENTS: dict[str, SyncPrefectClient] = {}


def api_client() -> SyncPrefectClient:
    """One synchronous API client per API URL for the process (a new client per read cost ~35 ms each: a cached
    run's five checks were 0.18 s), closed at exit."""
    url = str(PREFECT_API_URL.value())
    if url not in _CLIENTS:
        client = get_client(sync_client=True)
        client.__enter__()
        atexit.register(client.__exit__, None, None, None)
        _CLIENTS[url] = client
    return _CLIENTS[url]


def stop_if_cancelled(step: str) -> None:
    """Raise RunCancelled when this flow run's state is Cancelling (no flow run, e.g. a task test: nothing)."""
    run_id = flow_run.get_id()
    if run_id is None:
        return
    try:
        state = api_client().read_flow_run(run_id).state
    except ObjectNotFound:
        return
    if state is not None and state.is_cancelling():
        raise RunCancelled(STOPPED.format(step=step))

"""A cancel from Prefect (its UI or API) honoured between steps.

A `graphshard run` process is no worker's: Prefect marks its flow run Cancelling and can stop nothing, so the run
went on, published, and then failed to set its final state ("UnfinishedRun"). The flow asks for its own state
before each step and before publishing, and stops there: the finished steps stay cached, nothing is published.
"""

from __future__ import annotations

from prefect.client.orchestration import get_client
from prefect.exceptions import ObjectNotFound
from prefect.runtime import flow_run

from graphshard.errors import GraphshardError

STOPPED = ("flow run cancelled from Prefect (its state was Cancelling): stopped before the {step} step; nothing was "
           "published, the finished steps are cached")


class RunCancelled(GraphshardError):
    """The flow run was cancelled from Prefect while it ran (the flow ends Cancelled, not Failed)."""


def stop_if_cancelled(step: str) -> None:
    """Raise RunCancelled when this flow run's state is Cancelling (no flow run, e.g. a task test: nothing)."""
    run_id = flow_run.get_id()
    if run_id is None:
        return
    try:
        with get_client(sync_client=True) as client:
            state = client.read_flow_run(run_id).state
    except ObjectNotFound:
        return
    if state is not None and state.is_cancelling():
        raise RunCancelled(STOPPED.format(step=step))

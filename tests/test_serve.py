"""`graphshard serve` keeps watching for runs cancelled from the UI while its Prefect server is away for a while
(restarted, a network blip); end to end with a real server and a served run: tests/test_deploy.py (slow)."""

from __future__ import annotations

import asyncio
import uuid

import flow_helpers  # noqa: F401 - Prefect's environment, set before Prefect is imported
import httpx

from graphshard.commands.serve_flow import _keep_watching_for_cancellations


class ServerAway:
    """A Prefect client whose server does not answer the first `failures` requests, then lists `run` as Cancelling."""

    def __init__(self, run, failures: int):
        self.run, self.failures = run, failures

    async def read_flow_runs(self, flow_run_filter=None):
        if self.failures > 0:
            self.failures -= 1
            raise httpx.ConnectError("All connection attempts failed")
        return [self.run] if self.run.id in flow_run_filter.id.any_ else []


def _watch(failures: int) -> list[uuid.UUID]:
    """The runs the watch saw cancelled within a second, polling as Prefect's runner does."""
    from prefect._internal.observers import FlowRunCancellingObserver
    from prefect.client.schemas.objects import FlowRun
    from prefect.utilities.services import critical_service_loop

    run = FlowRun(flow_id=uuid.uuid4())
    cancelled: list[uuid.UUID] = []
    observer = FlowRunCancellingObserver(on_cancelling=cancelled.append, polling_interval=0.01)
    observer.add_in_flight_flow_run_id(run.id)
    observer._client = ServerAway(run, failures)

    async def watch() -> None:
        loop = asyncio.ensure_future(critical_service_loop(observer._check_for_cancelled_flow_runs, interval=0.01,
                                                           printer=lambda *_: None))
        for _ in range(100):
            if cancelled or loop.done():
                break
            await asyncio.sleep(0.01)
        loop.cancel()

    asyncio.run(watch())
    return cancelled


def test_cancellations_are_seen_after_the_server_comes_back():
    _keep_watching_for_cancellations()
    assert _watch(failures=6)  # Prefect alone gave up after 3 unanswered polls: never cancelled

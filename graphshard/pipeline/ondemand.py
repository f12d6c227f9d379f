"""The run's Dask client, started when a step first needs it: a run whose steps are all cached starts no cluster.

Starting a LocalCluster costs 1-2 s on 2 cores, most of a fully cached run. When a run will most likely build
something (nothing published yet, `--from`/`--force`), `prestart` opens the cluster in a background thread before
Prefect is imported, so that the workers start while this process imports; the run's `ClusterOnDemand` of the same
spec adopts it. This module does not import Prefect.
"""

from __future__ import annotations

import contextvars
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from typing import TYPE_CHECKING, Callable

from graphshard.cluster import ClusterSpec, dask_client

if TYPE_CHECKING:
    from distributed import Client

_prestarted: dict[ClusterSpec, Future] = {}
_closing: list[Future] = []


def _open(spec: ClusterSpec) -> tuple[Callable[[], None], "Client"]:
    """A client for `spec` and the function that closes it. The client is entered (and later exited) in a context of
    its own: it sets a context variable whose reset must happen in the same context, whichever thread closes it."""
    ctx, stack = contextvars.copy_context(), ExitStack()
    client = ctx.run(stack.enter_context, dask_client(spec))
    return (lambda: ctx.run(stack.close)), client


def prestart(spec: ClusterSpec) -> None:
    """Begin opening a cluster for `spec` in a background thread, for the run about to start in this process."""
    if spec not in _prestarted:
        pool = ThreadPoolExecutor(1, thread_name_prefix="graphshard-prestart")
        _prestarted[spec] = pool.submit(_open, spec)
        pool.shutdown(wait=False)


class ClusterOnDemand:
    """`get()` opens the client (and calls `on_start(client)` once); `close()` shuts it and its local cluster."""

    def __init__(self, spec: ClusterSpec, on_start: Callable[["Client"], None] | None = None):
        self.spec, self.on_start = spec, on_start
        self._stack = ExitStack()
        self._client: Client | None = None
        self._pending = _prestarted.pop(spec, None)

    @property
    def started(self) -> bool:
        return self._client is not None

    def _adopt(self) -> "Client":
        """The prestarted cluster (waiting for it to be up), or a new one."""
        pending, self._pending = self._pending, None
        close, client = pending.result() if pending is not None else _open(self.spec)
        self._stack.callback(close)
        return client

    def get(self) -> "Client":
        if self._client is None:
            self._client = self._adopt()
            if self.on_start is not None:
                self.on_start(self._client)
        return self._client

    def close(self) -> None:
        if self._pending is not None:  # prestarted but never needed: shut it down too
            try:
                self._adopt()
            except Exception:  # noqa: BLE001 - a cluster that failed to start has nothing to close
                pass
        self._client = None
        self._stack.close()

    def close_in_background(self) -> None:
        """`close()` in a thread: the workers shut down while the run publishes and reports; `wait_closed` joins."""
        pool = ThreadPoolExecutor(1, thread_name_prefix="graphshard-close")
        _closing.append(pool.submit(self.close))
        pool.shutdown(wait=False)

    def __enter__(self) -> "ClusterOnDemand":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def wait_closed() -> None:
    """Wait until every cluster closed in the background by this process is shut down (its errors raised here)."""
    while _closing:
        _closing.pop().result()

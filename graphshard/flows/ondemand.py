"""The run's Dask client, started when a step first needs it: a run whose steps are all cached starts no cluster.

Starting a LocalCluster costs 1-2 s on 2 cores, most of a fully cached run. This module does not import Prefect.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Callable

from distributed import Client

from graphshard.cluster import ClusterSpec, dask_client


class ClusterOnDemand:
    """`get()` opens the client (and calls `on_start(client)` once); `close()` shuts it and its local cluster."""

    def __init__(self, spec: ClusterSpec, on_start: Callable[[Client], None] | None = None):
        self.spec, self.on_start = spec, on_start
        self._stack = ExitStack()
        self._client: Client | None = None

    @property
    def started(self) -> bool:
        return self._client is not None

    def get(self) -> Client:
        if self._client is None:
            self._client = self._stack.enter_context(dask_client(self.spec))
            if self.on_start is not None:
                self.on_start(self._client)
        return self._client

    def close(self) -> None:
        self._client = None
        self._stack.close()

    def __enter__(self) -> "ClusterOnDemand":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

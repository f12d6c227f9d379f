"""Dask cluster access: an existing scheduler by address, or a LocalCluster with the given size."""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from distributed import Client, LocalCluster

from graphshard import logs
from graphshard.errors import GraphshardError


@dataclass(frozen=True)
class ClusterSpec:
    """Where the Dask work runs: `address` of a scheduler, else a local cluster of this size."""

    address: str | None = None
    workers: int = 2
    threads_per_worker: int = 1
    memory_limit: str | None = "auto"
    connect_timeout: float = 10.0
    dashboard_address: str | None = ":0"


@contextmanager
def dask_client(spec: ClusterSpec | None = None) -> Iterator[Client]:
    """A Client for the duration of a step or a run; a local cluster it starts is closed afterwards."""
    spec = spec or ClusterSpec()
    if spec.address:
        try:
            client = Client(spec.address, timeout=spec.connect_timeout)
        except (OSError, TimeoutError) as err:
            raise GraphshardError(
                f"cluster.address: cannot reach Dask scheduler {spec.address} within {spec.connect_timeout:g} s "
                f"({type(err).__name__})"
            ) from None
        with client:
            yield client
        return
    with LocalCluster(
        n_workers=spec.workers,
        threads_per_worker=spec.threads_per_worker,
        memory_limit=spec.memory_limit,
        dashboard_address=spec.dashboard_address,
        processes=True,
        # workers' "Compute Failed" blocks and the nanny's restarts stay off the terminal: the failing task
        # reaches the user as graphshard's one line, its traceback in the log file (--debug shows them)
        silence_logs=logging.WARNING if logs.debug_enabled() else logging.CRITICAL,
    ) as cluster, Client(cluster) as client:
        yield client

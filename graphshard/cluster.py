"""Dask cluster access: an existing scheduler by address, or a LocalCluster with the given size."""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from distributed import Client, LocalCluster

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
    subprocess: bool = False  # local workers in fresh interpreters (never re-import the caller's __main__ script)


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
    if spec.subprocess:
        with _subprocess_cluster(spec) as cluster, Client(cluster) as client:
            client.wait_for_workers(spec.workers)
            yield client
        return
    with LocalCluster(
        n_workers=spec.workers,
        threads_per_worker=spec.threads_per_worker,
        memory_limit=spec.memory_limit,
        dashboard_address=spec.dashboard_address,
        processes=True,
    ) as cluster, Client(cluster) as client:
        yield client


def _subprocess_cluster(spec: ClusterSpec):
    """A scheduler and workers started as `python -m` subprocesses: safe from a script without a `__main__` guard
    (spawned LocalCluster workers re-import the caller's script, and with it e.g. torch, in every worker)."""
    from distributed.deploy.subprocess import SubprocessCluster

    return SubprocessCluster(n_workers=spec.workers, threads_per_worker=spec.threads_per_worker,
                             dashboard_address=spec.dashboard_address,
                             worker_kwargs={"memory_limit": spec.memory_limit})

"""Dask cluster access: an existing scheduler by address, or a LocalCluster with the given size.

`distributed` is imported when a cluster is opened, not with this module: the config imports ClusterSpec in every
command, and a run whose steps are all cached never opens one (~0.3 s of import saved).
"""

from __future__ import annotations

import logging
import os
import signal
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator

from graphshard import logs
from graphshard.errors import GraphshardError

if TYPE_CHECKING:
    from distributed import Client, SpecCluster


# graphshard's tasks keep no data in worker memory for later (results are small, data goes to files), so a worker
# near its limit has nothing to spill and pausing it would only hang the step: the nanny's restart at 95% of the
# limit stays, and its task fails with graphshard's one line.
WORKER_CONFIG = {"distributed.worker.memory.target": False, "distributed.worker.memory.spill": False,
                 "distributed.worker.memory.pause": False}
# A local worker runs `dask_setup` below as it starts (Dask's preload: restarted workers too).
PRELOAD = [__name__]


def dask_setup(worker: object) -> None:
    """Dask's preload hook, in each local worker process: ignore SIGINT. Ctrl-C reaches the terminal's whole process
    group; the flow process then closes the cluster, and workers that took it too printed their tracebacks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@dataclass(frozen=True)
class ClusterSpec:
    """Where the Dask work runs: `address` of a scheduler, else a local cluster of this size."""

    address: str | None = None
    workers: int = 2
    threads_per_worker: int = 1
    memory_limit: int | str | None = "auto"
    connect_timeout: float = 10.0
    dashboard_address: str | None = ":0"
    subprocess: bool = False  # local workers in fresh interpreters (never re-import the caller's __main__ script)


@contextmanager
def dask_client(spec: ClusterSpec | None = None) -> Iterator[Client]:
    """A Client for the duration of a step or a run; a local cluster it starts is closed afterwards.

    Parameters
    ----------
    spec : ClusterSpec, optional
        A scheduler address, or the size of a local cluster (default: `ClusterSpec()`).

    Yields
    ------
    distributed.Client
        The connected client.
    """
    spec = spec or ClusterSpec()
    check_spec(spec)
    from distributed import Client, LocalCluster

    if spec.address:
        try:
            client = Client(spec.address, timeout=spec.connect_timeout)
        except (OSError, TimeoutError) as err:
            raise GraphshardError(
                f"cluster.address: cannot reach Dask scheduler {spec.address} within {spec.connect_timeout:g} s "
                f"({type(err).__name__})"
            ) from None
        with client:
            _wait_for_a_worker(client, spec)
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
        preload=PRELOAD,
        # workers' "Compute Failed" blocks and the nanny's restarts stay off the terminal: the failing task
        # reaches the user as graphshard's one line, its traceback in the log file (--debug shows them)
        silence_logs=logging.WARNING if logs.debug_enabled() else logging.CRITICAL,
        config=WORKER_CONFIG,
    ) as cluster, Client(cluster) as client:
        yield client


def _wait_for_a_worker(client: Client, spec: ClusterSpec) -> None:
    """A scheduler without workers would take every task and run none: one line after `connect_timeout` seconds."""
    try:
        client.wait_for_workers(1, timeout=spec.connect_timeout)
    except TimeoutError:
        raise GraphshardError(f"cluster.address (--scheduler): the Dask scheduler {spec.address} has no workers "
                              f"(waited {spec.connect_timeout:g} s); start `dask worker {spec.address}` on the worker "
                              "hosts first (a run may wait longer for them: cluster.connect_timeout)") from None


@dataclass(frozen=True)
class Workers:
    """What a running scheduler's workers are: how many, threads each (the most), memory limit each (the least;
    None when any has none)."""

    count: int
    threads: int
    memory_limit: int | None


def workers_of(address: str, timeout: float) -> Workers | None:
    """The workers a scheduler has now (None when it cannot be reached or has none yet): what a plan checks."""
    from distributed import Client

    try:
        with Client(address, timeout=timeout) as client:
            found = list(client.scheduler_info(n_workers=-1)["workers"].values())
    except (OSError, TimeoutError, ValueError):
        return None
    if not found:
        return None
    limits = [w.get("memory_limit") or 0 for w in found]
    return Workers(len(found), max(w.get("nthreads", 1) for w in found), min(limits) if all(limits) else None)


def check_spec(spec: ClusterSpec) -> None:
    """One GraphshardError line for a spec no cluster can be reached or started with (a local cluster of no workers
    waits for ever; a malformed address or memory limit was Dask's ValueError), before anything starts."""
    if spec.address:
        from distributed.comm.addressing import parse_address, parse_host_port

        try:
            parse_host_port(parse_address(spec.address)[1])
        except ValueError:
            raise GraphshardError(f"cluster.address (--scheduler): expected a scheduler address like "
                                  f"tcp://host:8786, found {spec.address!r}") from None
        return
    if spec.workers < 1:
        raise GraphshardError(f"cluster.workers (--workers): expected at least 1 worker, found {spec.workers}")
    if spec.memory_limit not in (None, "auto"):
        from dask.utils import parse_bytes

        try:
            size = parse_bytes(spec.memory_limit)
        except (ValueError, TypeError):
            size = -1
        if size < 0:
            raise GraphshardError(f"cluster.memory_limit (--memory-limit): expected a size like '4GB' or 'auto', "
                                  f"found {spec.memory_limit!r}")


class _ClosedCommInfo(logging.Filter):
    """Dask's INFO 'Batched Comm Closed' of a cluster this process started and closed: logged by the scheduler's
    loop after the cluster's `silence_logs` level is restored, so it reached a `partition_graph` caller's stderr in
    about one call in four. Dropped by Dask's own stderr handler only (other handlers, a Prefect run's log, keep the
    line); warnings and errors pass."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.WARNING or not record.getMessage().startswith("Batched Comm Closed")


def _subprocess_cluster(spec: ClusterSpec) -> SpecCluster:
    """The scheduler in this process, each worker (with its nanny) a `python -m` subprocess: safe from a script
    without a `__main__` guard (spawned LocalCluster workers re-import the caller's script, e.g. torch, in each)."""
    from distributed import Scheduler, SpecCluster
    from distributed.deploy.subprocess import SubprocessWorker

    for handler in logging.getLogger("distributed").handlers:  # Dask's own stderr handler, not other handlers
        if not any(isinstance(f, _ClosedCommInfo) for f in handler.filters):
            handler.addFilter(_ClosedCommInfo())

    options = {"nthreads": spec.threads_per_worker, "memory_limit": spec.memory_limit, "host": "127.0.0.1",
               "preload": PRELOAD}
    worker = {"cls": SubprocessWorker, "options": {"worker_class": "distributed.Nanny",
                                                   "worker_kwargs": {**options, "config": WORKER_CONFIG}}}
    with _quiet_subprocesses():
        return SpecCluster(scheduler={"cls": Scheduler, "options": {"dashboard_address": spec.dashboard_address,
                                                                      "dashboard": spec.dashboard_address is not None,
                                                                      "host": "127.0.0.1"}},
                           workers={i: worker for i in range(spec.workers)}, worker=worker,
                           silence_logs=logging.WARNING if logs.debug_enabled() else logging.CRITICAL)


@contextmanager
def _quiet_subprocesses() -> Iterator[None]:
    """Worker subprocesses started meanwhile log Dask's warnings only (unless --debug): each wrote ~17 INFO lines
    (nanny, preload, worker banner) on the caller's stderr, a `partition_graph` call's terminal."""
    if logs.debug_enabled() or "DASK_LOGGING__DISTRIBUTED" in os.environ:
        yield
        return
    os.environ["DASK_LOGGING__DISTRIBUTED"] = "warning"
    try:
        yield
    finally:
        os.environ.pop("DASK_LOGGING__DISTRIBUTED", None)

"""What every step task shares: reuse a finished artifact (reported as a Cached state) or build it with progress.

Prefect's own task caching is off (`NO_CACHE`): its default policy includes the flow run id, and its cache records
live in Prefect's database, not beside the artifacts. Here the artifact folder named by the step's key *is* the cache
record, so a hit survives a lost Prefect database and a miss happens whenever the folder is gone.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
import tempfile
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, TypeVar

from prefect import Task, get_run_logger, task
from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.cache_policies import NO_CACHE
from prefect.states import Completed, Failed, State

from graphshard.errors import GraphshardError
from graphshard.formats.chunked import ChunkedGraph
from graphshard.pipeline.cache import StepResult, StepStore
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.manifest import HashCache, graph_files
from graphshard.pipeline.ondemand import ClusterOnDemand
from graphshard.storage import Location

if TYPE_CHECKING:
    from distributed import Client

    from graphshard.pipeline.progress import StepProgress

T = TypeVar("T")
log = logging.getLogger(__name__)
TASK_OPTIONS = {"cache_policy": NO_CACHE, "persist_result": False}


def one_line_failure(fn: Callable[..., T]) -> Callable[..., T | State]:
    """`fn`, ending as a Failed state that holds its GraphshardError's line (message and data) instead of raising it:
    Prefect logs a raised exception with its traceback (the UI's log, `graphshard serve`'s terminal), while the line
    already says what to change. Other exceptions (a bug, a cancellation) still raise."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> T | State:
        try:
            return fn(*args, **kwargs)
        except GraphshardError as err:
            log.debug("%s failed", fn.__name__, exc_info=True)  # `graphshard run`'s log file keeps the traceback
            return Failed(message=str(err), data=err)

    return run


class _NoEmptyTraceback(logging.Filter):
    """Prefect logs a task that ended as a Failed state with `exc_info=True` outside any exception, which its handlers
    print as a line 'NoneType: None' below the message: dropped."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info == (None, None, None):
            record.exc_info = None
        return True


logging.getLogger("prefect.task_runs").addFilter(_NoEmptyTraceback())


class _LineLogged(logging.Filter):
    """Under a Prefect worker, the engine logs a flow run that ended Failed with graphshard's line again, as 'Engine
    execution exited with unexpected exception' and its traceback (the UI's log, the worker's terminal): dropped,
    the flow logged the line and its state message holds it."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and isinstance(record.exc_info[1], GraphshardError)
                    and record.getMessage().startswith("Engine execution"))


logging.getLogger("prefect.flow_runs").addFilter(_LineLogged())


def step_task(name: str) -> Callable[[Callable[..., T]], Task]:
    """The Prefect task of a step: no Prefect cache or result store (see the module doc), a GraphshardError as its
    one line (`one_line_failure`)."""
    return lambda fn: task(name=name, **TASK_OPTIONS)(one_line_failure(fn))


class ArtifactProgress:
    """A Prefect progress artifact per step, updated with the share of the step's Dask tasks that finished, at most
    every `every` seconds (each update is an API call, in the process that also runs the Dask scheduler)."""

    def __init__(self, step: str, every: float = 2.0):
        self.step, self.every = step, every
        self.id = create_progress_artifact(0.0, key=f"graphshard-{step}-progress",
                                           description=f"{step}: Dask tasks finished / submitted")
        self._shown = (-1.0, "")
        self._sent = time.monotonic()
        self._latest = (0.0, "")
        self._counts = (0, 0)

    def __call__(self, done: int, submitted: int, doing: str = "") -> None:
        self._counts = (done, submitted)
        self._latest = (self._share(), f"{self.step}: {done}/{submitted} Dask tasks finished"
                        + (f"; running {doing}" if doing and done < submitted else ""))
        if self._latest[0] != self._shown[0] and time.monotonic() - self._sent >= self.every:
            self._send()

    def _share(self) -> float:
        done, submitted = self._counts
        return round(100.0 * done / submitted, 1) if submitted else 0.0

    def _send(self) -> None:
        update_progress_artifact(self.id, self._latest[0], description=self._latest[1])
        self._shown, self._sent = self._latest, time.monotonic()

    def close(self, failed: bool = False) -> None:
        """The last counts, if not shown yet: 100% when the step finished; the share reached when it failed or was
        cancelled, said so (a step stopped midway never reads as complete in the UI)."""
        done, submitted = self._counts
        self._latest = ((self._share(), f"{self.step}: stopped (failed or cancelled) with {done}/{submitted} Dask "
                         "tasks finished") if failed else (100.0, self._latest[1]))
        if self._shown != self._latest:
            self._send()


def scratch_dir(cfg: PipelineConfig, stage: Path | Location) -> Path | Location | None:
    """Where a step's tasks hand each other buckets and arrays: `shuffle.scratch_dir` when set; else, with the work
    folder on a store and the run's own local cluster (every worker on this host, so one local folder is shared),
    this host's temporary folder (the steps make a fresh folder in it and delete it): the exchange then never goes
    through the store, as in a local run; else None (the step's default, beside its output). The temporary folder
    is this user's own (`graphshard-<uid>`), so no other user's runs hold lease records in it."""
    if cfg.shuffle.scratch_dir is not None:
        return cfg.shuffle.scratch_dir
    if isinstance(stage, Location) and cfg.cluster.address is None:
        return Path(tempfile.gettempdir()) / f"graphshard-{os.getuid()}"
    return None


def input_hashes(cfg: PipelineConfig, store: StepStore) -> HashCache:
    """The input files' remembered hashes, by their state (ingest's record, in the work folder)."""
    return HashCache(store.root / "input-hashes.json", cfg.storage)


Make = Callable[[Path | Location, "Client"], dict]


def input_unchanged(cfg: PipelineConfig, graph: ChunkedGraph, store: StepStore, make: Make) -> Make:
    """`make`, then a check that every input file is in the state ingest hashed it in: a step that read a file
    changed meanwhile (a checkout switched during the run) built from content no key names, so it fails and keeps
    nothing; its artifact would otherwise be reused once the file is back to the hashed content."""

    def checked(stage: Path | Location, client: Client) -> dict:
        summary = make(stage, client)
        files = graph_files(graph)
        if changed := input_hashes(cfg, store).unknown(files):
            raise GraphshardError(f"{files[changed[0]]}: changed while this run read it ({len(changed)} input "
                                  "file(s) changed since ingest hashed them); nothing was kept or published: run "
                                  "again once the input stays as it is")
        return summary

    return checked


def step_progress(step: str, client: Client | None) -> StepProgress | nullcontext:
    """The step's Dask tasks counted on the terminal and in a Prefect progress artifact while the block runs."""
    if client is None:
        return nullcontext()
    from graphshard.pipeline.progress import StepProgress, TerminalBar  # imports distributed: only with a cluster

    return StepProgress(client, [TerminalBar(step), ArtifactProgress(step)])


def tell(logger: logging.Logger, message: str) -> None:
    """Log a message and say it on the terminal too: a run that waits for another looks hung otherwise."""
    logger.info("%s", message)
    print(message, file=sys.stderr)


def _waiting(logger: logging.Logger, step: str, key: str, holder: str) -> None:
    """Say that another run builds this artifact."""
    tell(logger, f"{step}: waiting for another run building the same artifact (key {key[:12]}: {holder})")


def run_step(store: StepStore, step: str, key: str, inputs: dict[str, str],
             make: Make,
             cluster: ClusterOnDemand | None, force: bool, volatile: tuple[str, ...] = (),
             progress: bool = True) -> StepResult | State:
    """A step's artifact: reused when complete (a Cached state), else built.

    Parameters
    ----------
    store : StepStore
        The work folder's artifacts.
    step, key : str
        The step's name and cache key.
    inputs : dict
        The input digests the key was made of (recorded in the manifest).
    make : callable
        `make(stage, client) -> summary` writes the artifact's files into `stage` (a local folder, or a prefix on
        a store when the work folder is there).
    cluster : ClusterOnDemand or None
        The run's cluster, started here on the first step that builds.
    force : bool
        Build even when the artifact exists.
    volatile : tuple of str
        Files listed in the manifest but left out of its digest (timings).
    progress : bool
        Show the step's Dask tasks (False: the build submits none, its work was done while computing the key).

    Returns
    -------
    StepResult or State
        The built artifact, or a Cached state holding the reused one.
    """
    logger = get_run_logger()
    result = None if force else store.lookup(step, key)
    if result is None:
        logger.info("%s: building %s%s", step, store.folder(step, key), " (forced)" if force else "")
        client = cluster.get() if cluster is not None else None
        with step_progress(step, client if progress else None):
            result = store.build(step, key, lambda stage: make(stage, client), inputs, volatile, fresh=force,
                                 waiting=functools.partial(_waiting, logger, step, key))
    if result.reused:
        logger.info("%s: reusing %s (key %s)", step, result.folder, key[:12])
        return Completed(data=result, name="Cached", message=f"{step} artifact {key[:12]} reused")
    logger.info("%s: done in %.1f s", step, result.summary["seconds"])
    return result

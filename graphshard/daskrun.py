"""The one way graphshard runs data-parallel work on Dask: named tasks, ordered results, one-line failures.

Every step submits its tasks through `submit_tasks`/`gather_tasks` (or `run_tasks` for one group). Keys read
`<step>-<what>-<label>-<token>` (the dashboard groups tasks by `<step>-<what>` and shows the label: a chunk, a
partition), progress is counted by the scheduler plugin of graphshard.pipeline.progress, a failure becomes one
GraphshardError naming the step and the item (its traceback goes to the log, not the terminal), and a failed step's
other tasks are cancelled and waited for before the caller removes their folders. With `client=None` the same
functions run here, one after another, with the same error wording.
"""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from graphshard import logs
from graphshard.errors import GraphshardError, first_line

if TYPE_CHECKING:
    from distributed import Client, Future

log = logging.getLogger(__name__)
LARGE = 50_000  # bytes (dask.sizeof) above which a constant is scattered rather than embedded in the tasks
SETTLE_TIMEOUT = 60.0  # seconds to let a failed step's running tasks end before the caller cleans up
SCATTER_TRIES, SCATTER_PAUSE = 5, 0.5  # a constant's scatter tried again after 0.5, 1, 2, 4 s (`_scatter`)
SCATTER_WAIT = 2.0  # seconds the scheduler waits for a worker that is not running to take a constant (`_broadcast`)
LOST_TRIES = 3  # times a task is sent again after the cluster lost a constant it needed (`_resend_lost`)
_UNSAFE = re.compile(r"[^A-Za-z0-9_.:/=]+")
_SHOWN: dict[str, str] = {}  # a submitted task's key -> '<what> <label>' with the label as given (the key's is safe)
# `settle` and `everywhere` ask every worker, and one may have just died (the failure being reported): the
# scheduler's error about it is expected here, so it stays in the log file
logs.quiet_message("distributed", "broadcast to ")
# a cluster that closes while the scheduler still sends to a worker: logged at INFO, with a CommClosedError traceback
logs.untraced("distributed.batched", "Batched Comm Closed")


@dataclass
class TaskGroup:
    """Tasks of one kind submitted together: their futures (or local results) and each item's label."""

    step: str
    what: str
    labels: list[str]
    futures: list[Future] = field(default_factory=list)
    shared: list[Future] = field(default_factory=list)  # large constants scattered once, kept until gathered
    results: list[Any] | None = None  # client=None: computed at submit time
    send: Callable[[Sequence[int]], list[Future]] | None = None  # the items at these indices, sent (again)
    detail: Callable[[int], str] | None = None
    memory_limit: int | None = None  # the workers' largest memory limit (bytes) when the tasks were submitted
    started: float = field(default_factory=time.perf_counter)

    def describe(self, i: int) -> str:
        """'<what> <label>' plus the caller's detail (e.g. a partition's size) for error messages."""
        extra = f" ({self.detail(i)})" if self.detail else ""
        return f"{self.what} {self.labels[i]}{extra}"


def task_key(step: str, what: str, label: str, token: str) -> str:
    """A task key a person can read on the dashboard: step, what is done, to which chunk or partition. The label
    keeps only safe characters: Dask's `key_split` cuts the dashboard's task group at '-' (`describe_key` shows the
    label as given)."""
    return f"{step}-{what}-{_UNSAFE.sub('_', label)}-{token}"


def _key_labels(labels: Sequence[str]) -> list[str]:
    """The labels as a group's keys show them: safe characters only, and the item's index appended where two come
    out the same ('a-b' and 'a_b', or one file listed twice), since tasks under one key are one task to Dask."""
    safe = [_UNSAFE.sub("_", label) for label in labels]
    seen = Counter(safe)
    return [f"{s}.{i}" if seen[s] > 1 else s for i, s in enumerate(safe)]


def describe_key(key: object) -> str:
    """A task_key as '<what> <label>' (the step is the progress bar's own label), the label as given while its task
    is in flight from this process (a URL keeps its '-' and spaces); other keys as they are."""
    from dask.utils import key_split  # dask loads with the first task, not with every step module (cached runs)

    text = str(key)
    shown = _SHOWN.get(text)  # one lookup: the submitting thread may drop the key meanwhile
    if shown is not None:
        return shown
    step, sep, rest = text.partition("-")
    what_label, _, token = rest.rpartition("-")
    prefix = key_split(text)  # '<step>-<what>': the dashboard's task prefix
    if not sep or not token or not prefix.startswith(f"{step}-") or not what_label.startswith(prefix[len(step) + 1:]):
        return text
    what = prefix[len(step) + 1:]
    return f"{what} {what_label[len(what) + 1:]}".strip()


def _star(item: tuple, *, _fn: Callable, **constants) -> Any:
    """fn(*item, **constants): lets a task function take several positional arguments per item."""
    return _fn(*item, **constants)


def submit_tasks(client: Client | None, step: str, what: str, fn: Callable, items: Sequence, *,
                 label: Callable[[Any], str] | None = None, detail: Callable[[Any], str] | None = None,
                 star: bool = False, priority: int = 0, place: Callable[[Any], str | None] | None = None,
                 share: Sequence[str] = (), **constants) -> TaskGroup:
    """Submit fn(item, **constants) (fn(*item, ...) with `star`) per item as named Dask tasks; `gather_tasks` collects.

    With several groups in flight, a worker runs the ready task of the highest `priority` first (Dask's own order,
    submission order, only tells groups apart that were submitted more than 0.1 s apart).

    Parameters
    ----------
    client : distributed.Client or None
        The cluster; None: the items run here when gathered.
    step, what : str
        The key's prefix `<step>-<what>` (the dashboard's task group; named in errors).
    fn : callable
        The work for one item.
    items : sequence
        One task each.
    label, detail : callable, optional
        `label(item)` names the task in its key and in errors (default: its index); `detail(item)` adds a size to
        errors (e.g. owned edges).
    star : bool
        Call fn(*item) instead of fn(item).
    priority : int
        Higher runs first on a worker.
    place : callable, optional
        `place(item)`: the address of the worker that should run the item's task (`homes`: where its data was
        copied before), None: any. A preference only (Dask's loose restrictions): another worker may still run it,
        or steal it when idle.
    share : sequence of str
        Constants sent to every worker whatever their size (scattered with broadcast, so the scheduler sees them on
        every worker and places the tasks as before): each worker then holds one copy that all its tasks get,
        instead of one per task (for objects whose copies each set themselves up again: a `Storage` makes a new S3
        client per copy, 0.1-0.4 s on the first request).
    **constants
        Passed to every call (sent to the cluster once).

    Returns
    -------
    TaskGroup
        The submitted tasks.
    """
    items = list(items)
    if star:
        fn, constants = _star, {"_fn": fn, **constants}
    labels = [str(label(it)) if label else str(i) for i, it in enumerate(items)]
    group = TaskGroup(step, what, labels, detail=(lambda i: detail(items[i])) if detail else None)
    if client is None:
        group.results = []
        for i, item in enumerate(items):
            try:
                group.results.append(fn(item, **constants))
            except Exception as err:  # noqa: BLE001 - worded below, traceback kept in the log
                raise _one_line(group, i, err) from err
        return group
    group.memory_limit = _memory_limit(client)
    group.send = partial(_send, client, group, fn, items, constants, share, place, priority)
    group.futures = group.send(range(len(items)))
    return group


def _send(client: Client, group: TaskGroup, fn: Callable, items: list, constants: dict, share: Sequence[str],
          place: Callable[[Any], str | None] | None, priority: int, indices: Sequence[int]) -> list[Future]:
    """The tasks of the items at `indices`, under fresh keys, with their large and shared constants scattered anew
    (`submit_tasks`; called again for the tasks of a constant the cluster lost)."""
    token = uuid.uuid4().hex[:8]
    picked = [items[i] for i in indices]
    safe = _key_labels(group.labels)
    keys = [task_key(group.step, group.what, safe[i], token) for i in indices]
    if not picked:
        return []
    _SHOWN.update((key, f"{group.what} {group.labels[i]}") for key, i in zip(keys, indices))
    constants = _scatter_large(client, constants, group, share)
    if place is None:
        return client.map(fn, picked, key=keys, priority=priority, **constants)
    futures = []
    for item, key in zip(picked, keys):
        at = place(item)
        futures.append(client.submit(fn, item, key=key, priority=priority, workers=at,
                                     allow_other_workers=at is not None, **constants))
    return futures


def homes(client: Client | None, count: int) -> list[str | None]:
    """A worker address for each of `count` items, round robin over the workers sorted by address (None without a
    cluster): every task of one item preferring one worker (`submit_tasks(place=)`), which then holds what the
    item's first task copied, and the items spread evenly."""
    workers = sorted(client.scheduler_info()["workers"]) if client is not None else []
    return [workers[i % len(workers)] if workers else None for i in range(count)]


def _scatter_large(client: Client, constants: dict, group: TaskGroup, share: Sequence[str] = ()) -> dict:
    """Large constants, and those named in `share`, as scattered futures with unique keys: `Client.map` would key
    them by argument name alone, so two steps in flight with a large `plan` (say) would collide on the scheduler."""
    from dask.sizeof import sizeof
    from distributed import Future

    out = dict(constants)
    for name, value in constants.items():
        if not isinstance(value, Future) and (name in share or sizeof(value) > LARGE):
            out[name] = _scatter(client, value, name in share)
            group.shared.append(out[name])
    return out


def _scatter(client: Client, value: Any, broadcast: bool) -> Future:
    """`client.scatter` of one constant (with `broadcast`, `_broadcast`), sent again after a pause when a worker is
    lost on the way: the scheduler fails the whole scatter, closing the client's connection, when the worker it
    picked dies meanwhile (dask/distributed#3149); by the next try the scheduler has removed that worker. Each try has
    a new key, so a half-sent one is never mistaken for the constant."""
    send = partial(_broadcast, client) if broadcast else partial(client.scatter, hash=False)
    for attempt in range(SCATTER_TRIES - 1):
        try:
            return send(value)
        except OSError as err:  # CommClosedError and the like: the connection, not the value
            log.warning("scatter failed (%s: %s), a worker lost meanwhile: trying again", type(err).__name__, err)
            time.sleep(SCATTER_PAUSE * 2 ** attempt)
    return send(value)


def _broadcast(client: Client, value: Any) -> Future:
    """`value` on every running worker under one key, sent to each worker on its own (all at once); a worker that
    fails to take it (lost, paused, closing) is left out, and a task placed there later fetches it as any
    dependency. Not `scatter(broadcast=True)`: the scheduler's `replicate` behind it retries a worker that died
    during the copy for ever, holding the scheduler's replica lock (dask/distributed#5704): the step never ends."""
    key = f"{type(value).__name__}-{uuid.uuid4().hex}"
    workers = client.scheduler_info()["workers"]
    addresses = sorted(a for a, w in workers.items() if w.get("status", "running") == "running")

    async def every() -> list:  # a worker paused since: its scatter waits SCATTER_WAIT s for it, then is left out
        return await asyncio.gather(*(client.scatter({key: value}, workers=[a], hash=False, timeout=SCATTER_WAIT,
                                                     asynchronous=True) for a in addresses), return_exceptions=True)

    held = []
    for address, got in zip(addresses, client.sync(every)):
        if isinstance(got, BaseException):  # that worker is gone or going; the others carry the constant
            log.warning("scatter to %s failed (%s: %s): left out", address, type(got).__name__, first_line(got))
        else:
            held.append(got[key])
    if not held:
        raise OSError(f"no worker took the constant {key}: none of the cluster's {len(addresses)} running worker(s) "
                      "answered (lost, or restarting: see the workers' logs; the nanny restarts a worker above its "
                      "memory limit)")
    return held[-1]


def gather_tasks(client: Client | None, *groups: TaskGroup) -> list[list]:
    """Results of every group, in submission order; the first failure cancels everything and raises one line.

    Parameters
    ----------
    client : distributed.Client or None
        The cluster the groups were submitted to.
    *groups : TaskGroup
        What `submit_tasks` returned.

    Returns
    -------
    list of list
        Per group, the results in item order.

    Raises
    ------
    GraphshardError
        Naming the step, the task's label and what to change (a worker's memory limit, ...).
    """
    if client is None:
        return [g.results for g in groups]
    try:
        results = _collect(client, groups)
    except BaseException as err:
        failed = _failed(groups, err)
        worker = _worker_of(client, failed[0].futures[failed[1]]) if failed and _of_a_worker(err) else None
        cancel_tasks(client, *groups)
        if failed is None or not isinstance(err, Exception):  # Ctrl-C, Prefect's TerminationSignal (SIGTERM), exit
            raise
        raise _one_line(failed[0], failed[1], err, client, worker) from err
    _release(client, groups)
    for g in groups:
        log.info("%s %s: %d tasks in %.2f s", g.step, g.what, len(g.futures), time.perf_counter() - g.started)
    return results


def _collect(client: Client, groups: Sequence[TaskGroup]) -> list[list]:
    """Per group, its results in item order, fetched as their tasks end (in batches) and then released: a worker holds a
    result until the flow has it, not until every task of the step is done (`client.gather` waits for all first, so
    a worker held its share of every result: validation's sampled pairs at k=39, R-MAT 500M, about 0.3 GB).
    Tasks the scheduler cancels because a lost worker held the only copy of a constant they need are sent again."""
    from distributed import as_completed

    where: dict[Any, list[tuple[int, int]]] = {}  # a key's items (two items of one label share a task)
    for gi, g in enumerate(groups):
        for i, f in enumerate(g.futures):
            where.setdefault(f.key, []).append((gi, i))
    tries = [[0] * len(g.futures) for g in groups]
    out: list[list] = [[None] * len(g.futures) for g in groups]
    pending = as_completed(list({f.key: f for g in groups for f in g.futures}.values()))
    for batch in pending.batches():
        batch = [f for f in batch if f.key in where]  # a task sent again: its old future ends cancelled
        lost = [f for f in batch if f.cancelled()]
        done = [f for f in batch if not f.cancelled()]
        for future, result in zip(done, client.gather(done)):
            for gi, i in where.pop(future.key):
                out[gi][i] = result
            future.release()
        for future in _resend_lost(client, groups, lost, where, tries):
            pending.add(future)
    return out


def _resend_lost(client: Client, groups: Sequence[TaskGroup], lost: list[Future], where: dict,
                 tries: list[list[int]]) -> list[Future]:
    """Send again every cancelled task of the groups that `lost` belong to. A constant scattered to a worker that dies
    before another worker copied it is gone, and the scheduler cancels every task that needs it ("already
    forgotten"); the constants are ours, so they are scattered again. A task lost `LOST_TRIES` times raises."""
    sent = {}
    for gi in sorted({gi for f in lost for gi, _ in where[f.key]}):
        group = groups[gi]
        again = [i for i, f in enumerate(group.futures) if f.key in where and f.cancelled()]
        if max(tries[gi][i] for i in again) >= LOST_TRIES:
            client.gather([group.futures[again[0]]])  # raises its FutureCancelledError
        log.warning("%s %s: %d tasks cancelled by the cluster (a constant they need was lost with a worker): "
                    "sending them again", group.step, group.what, len(again))
        for old in {group.futures[i].key for i in again}:
            del where[old]
        _forget(group.futures[i].key for i in again)
        for i, future in zip(again, group.send(again)):
            group.futures[i] = sent[future.key] = future
            where.setdefault(future.key, []).append((gi, i))
            tries[gi][i] += 1
    return list(sent.values())


def _forget(keys: Iterable[Any]) -> None:
    """Drop the shown labels of tasks that are done with (`_SHOWN` holds only tasks in flight)."""
    for key in keys:
        _SHOWN.pop(str(key), None)


def run_tasks(client: Client | None, step: str, what: str, fn: Callable, items: Sequence, *,
              label: Callable[[Any], str] | None = None, detail: Callable[[Any], str] | None = None,
              star: bool = False, place: Callable[[Any], str | None] | None = None, share: Sequence[str] = (),
              **constants) -> list:
    """fn(item, **constants) for every item as Dask tasks (here when `client` is None); results in item order.

    Parameters
    ----------
    client, step, what, fn, items, label, detail, star, place, share, **constants
        As for `submit_tasks`.

    Returns
    -------
    list
        One result per item, in item order.
    """
    return gather_tasks(client, submit_tasks(client, step, what, fn, items, label=label, detail=detail, star=star,
                                             place=place, share=share, **constants))[0]


def _failed(groups: Sequence[TaskGroup], err: BaseException) -> tuple[TaskGroup, int] | None:
    """The group and item whose task failed: the first erred future (or the key a KilledWorker names)."""
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    key = err.task if isinstance(err, KilledWorker) else err.key if isinstance(err, FutureCancelledError) else None
    for g in groups:
        for i, f in enumerate(g.futures):
            if (key is not None and str(f.key) == str(key)) or (key is None and f.status == "error"):
                return g, i
    return (groups[0], 0) if groups and groups[0].futures else None


def _one_line(group: TaskGroup, i: int, err: BaseException, client: Client | None = None,
              worker: str | None = None) -> GraphshardError:
    """A task's failure as the one line a user reads; the traceback is logged (the log file keeps it). `worker`: the
    one the task failed on, named when the failure is of its own environment (`_of_a_worker`)."""
    from distributed.scheduler import KilledWorker

    where = f"{group.step}: {group.describe(i)}"
    log.debug("%s failed", where, exc_info=err)
    from graphshard.storage.failures import CREDENTIAL_KINDS, StorageError

    if isinstance(err, StorageError) and err.kind in CREDENTIAL_KINDS:  # the worker's environment, not this host's
        on = f" on worker {worker}" if worker else ""
        return GraphshardError(f"{where}{on}: {err} (Dask workers reach the store with their own credentials: set "
                               "them in the environment of every worker host, or in the config's storage_options)")
    if isinstance(err, GraphshardError):  # already names the file and the field
        return err
    if isinstance(err, (KilledWorker, MemoryError)):
        what = "Dask workers died repeatedly running this task" if isinstance(err, KilledWorker) else "out of memory"
        return GraphshardError(f"{where}: {what}{_memory_hint(group.memory_limit)}; nothing was published")
    from distributed.client import FutureCancelledError

    if isinstance(err, FutureCancelledError):
        return GraphshardError(f"{where}: cancelled by the cluster ({err.reason}) after {LOST_TRIES} tries: workers "
                               f"keep being lost, with the data the task needs{_memory_hint(group.memory_limit)}; "
                               "see the workers' logs. Nothing was published")
    from graphshard import diskfull

    if diskfull.is_full(err):
        return GraphshardError(diskfull.line(where, err) + _worker_disk(client, worker))
    return GraphshardError(f"{where} failed: {type(err).__name__}: {first_line(err)}")


WORKER_DISK_LOW = 1 << 30  # a worker's local directory with less free is named beside a full disk's line


def _of_a_worker(err: BaseException) -> bool:
    """A failure of the worker's own environment: the store refusing its credentials, its disk full."""
    from graphshard import diskfull
    from graphshard.storage.failures import CREDENTIAL_KINDS, StorageError

    return (isinstance(err, StorageError) and err.kind in CREDENTIAL_KINDS) or diskfull.is_full(err)


def _worker_of(client: Client, future: Future) -> str | None:
    """The address of the worker a failed task ran on (the scheduler's record of it, before the task is released)."""
    try:
        return client.run_on_scheduler(_erred_on, key=future.key)
    except Exception:  # noqa: BLE001 - informational only: the scheduler may be gone with the cluster
        return None


def _erred_on(key: Any, dask_scheduler=None) -> str | None:
    task = dask_scheduler.tasks.get(key)
    return min(task.erred_on) if task is not None and task.erred_on else None


def _worker_disk(client: Client | None, worker: str | None) -> str:
    """Where a full disk may be on the worker that ran the task: its local directory, when that is nearly full."""
    if client is None or worker is None:
        return ""
    try:
        folder, free = client.run(_local_room, workers=[worker])[worker]
    except Exception:  # noqa: BLE001 - that worker is gone
        return f" (the task ran on worker {worker})"
    if free >= WORKER_DISK_LOW:  # not what filled up: the line's location is
        return ""
    return (f" (the task ran on worker {worker}, whose local directory {folder} has {free / 1e6:,.1f} MB free: "
            "give that worker more disk there, or start it with `dask worker --local-directory` elsewhere)")


def _local_room(dask_worker=None) -> tuple[str, int]:
    return dask_worker.local_directory, shutil.disk_usage(dask_worker.local_directory).free


def _memory_limit(client: Client) -> int | None:
    """The largest memory limit among the cluster's workers, if they have one."""
    try:
        limits = [w.get("memory_limit") for w in client.scheduler_info().get("workers", {}).values()]
    except Exception:  # noqa: BLE001 - informational only
        return None
    return max((x for x in limits if x), default=None)


def _memory_hint(limit: int | None) -> str:
    """What the workers' memory limit is and what to change, when a task may have outgrown it."""
    if not limit:
        return (" (a worker above its memory limit, or a lost cluster): raise cluster.memory_limit or use more, "
                "smaller partitions (num_parts) or chunks")
    return (f" (likely above the workers' memory limit of {limit / 2**30:.2f} GiB): raise cluster.memory_limit "
            "or use more, smaller partitions (num_parts) or chunks")


def _executing(dask_worker) -> list[str]:
    """Keys a worker is still executing (cancelled tasks keep running until their function returns)."""
    return [str(ts.key) for ts in dask_worker.state.executing]


def settle(client: Client, futures: Sequence[Future]) -> None:
    """Cancel a failed step's tasks and wait until none still runs, so that removing their folders is final."""
    keys = {str(f.key) for f in futures}
    client.cancel(list(futures))
    deadline = time.monotonic() + SETTLE_TIMEOUT
    while time.monotonic() < deadline:
        try:
            running = {k for ks in client.run(_executing).values() for k in ks}
        except Exception:  # noqa: BLE001 - workers gone: nothing of ours can still run on them
            return
        if not running & keys:
            return
        time.sleep(0.1)


def cancel_tasks(client: Client | None, *groups: TaskGroup) -> None:
    """Drop groups whose results are no longer wanted (a failure elsewhere): cancel them and wait until none of their
    tasks still runs, so that removing their folders is final."""
    if client is None:
        return
    settle(client, [f for g in groups for f in g.futures])
    _release(client, groups)


def _release(client: Client, groups: Sequence[TaskGroup]) -> None:
    """Let the cluster drop the groups' results and shared constants, and forget their task labels."""
    client.cancel([f for g in groups for f in g.futures + g.shared])
    _forget(f.key for g in groups for f in g.futures)


def everywhere(client: Client | None, fn: Callable, *args: Any) -> None:
    """fn(*args) once in every worker process and here (housekeeping such as dropping a step's local scratch copies,
    not work: a worker gone meanwhile has nothing left to tidy)."""
    fn(*args)
    if client is None:
        return
    try:
        client.run(fn, *args)
    except Exception:  # noqa: BLE001 - a worker lost meanwhile took its local folder with it
        log.debug("everywhere(%s) did not reach every worker", getattr(fn, "__name__", fn), exc_info=True)

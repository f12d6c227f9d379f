"""graphshard.daskrun: readable task keys, ordered results, one-line failures, leftovers waited for."""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster

from graphshard.daskrun import cancel_tasks, gather_tasks, homes, run_tasks, submit_tasks, task_key
from graphshard.errors import GraphshardError, InputError


def _square(i: int, *, offset: int = 0) -> int:
    return i * i + offset


def _add(a: int, b: int) -> int:
    return a + b


def _fail_on(i: int, *, bad: int) -> int:
    if i == bad:
        raise ValueError(f"value {i} is bad")
    return i


def _refuse(i: int) -> int:
    raise InputError("edges-0.npy", "shape", "2 columns", "3")


def _keys_seen(dask_scheduler) -> list[str]:
    return [str(k) for k in dask_scheduler.tasks]


def test_results_in_item_order_with_readable_keys(dask_cluster_client):
    group = submit_tasks(dask_cluster_client, "assign", "count-blocks", _square, range(5),
                         label=lambda i: f"paper:cites:paper/chunk{i}", offset=1)
    keys = [str(f.key) for f in group.futures]
    assert gather_tasks(dask_cluster_client, group) == [[i * i + 1 for i in range(5)]]
    assert keys[2].startswith("assign-count-blocks-paper:cites:paper/chunk2-")
    assert run_tasks(dask_cluster_client, "shuffle", "add", _add, [(1, 2), (3, 4)], star=True) == [3, 7]


def _where(i: int) -> str:
    from distributed import get_worker

    return get_worker().address


def test_placed_tasks_prefer_their_home_worker(dask_cluster_client):
    """`place` names a worker per item (`homes`: round robin over the sorted addresses); a placed task runs there
    unless another worker takes it, and an item placed nowhere (None) runs anywhere."""
    at = homes(dask_cluster_client, 6)
    workers = sorted(dask_cluster_client.scheduler_info()["workers"])
    assert at == [workers[i % len(workers)] for i in range(6)] and homes(None, 2) == [None, None]
    ran = run_tasks(dask_cluster_client, "validate", "where", _where, range(8), place=lambda i: workers[-1])
    assert sum(r == workers[-1] for r in ran) >= 6  # a preference: an idle worker may steal one now and then
    assert set(run_tasks(dask_cluster_client, "validate", "where", _where, range(2), place=lambda i: None)) <= \
        set(workers)


def _results_held(i: int) -> int:
    """How many finished results this worker holds as the task starts (after a pause in which the flow may fetch)."""
    from distributed import get_worker

    time.sleep(0.2)
    return len(get_worker().data)


def test_a_worker_does_not_hold_every_result_until_the_step_ends(dask_cluster_client):
    """Results are fetched as their tasks end and released, so a worker's memory does not grow with the step's
    task count (with a plain gather, the last of 20 tasks on 2 workers found 9 results still held)."""
    held = run_tasks(dask_cluster_client, "validate", "held", _results_held, range(20), place=lambda i: None)
    assert max(held) <= 3, held


@dataclass(frozen=True)
class _Thing:
    small: int


def _copy_of(i: int, *, thing: _Thing) -> tuple[int, int]:
    return os.getpid(), id(thing)


def test_a_shared_constant_is_one_copy_per_worker(dask_cluster_client):
    """`share` scatters a small constant: every task on a worker gets that worker's one copy (a Storage in it sets
    up its S3 client once per worker, not once per task); unshared, each task unpickles its own."""
    thing = _Thing(1)
    shared = run_tasks(dask_cluster_client, "validate", "copy", _copy_of, range(8), share=("thing",), thing=thing)
    assert len(set(shared)) == len({pid for pid, _ in shared}) <= 2
    own = run_tasks(dask_cluster_client, "validate", "copy", _copy_of, range(8), thing=thing)
    assert len(set(own)) > len({pid for pid, _ in own})


def test_a_worker_that_fails_to_take_a_shared_constant_is_left_out(dask_cluster_client, monkeypatch):
    """A shared constant goes to one worker at a time: a worker whose copy fails (lost meanwhile, closing) is left out
    and the step goes on with the same results; when none takes it, it is sent again, and after the last try the
    error is raised."""
    from distributed.comm.core import CommClosedError

    from graphshard import daskrun

    real, calls = Client.scatter, []

    async def refused():
        raise CommClosedError("in <TCP (closed) ConnectionPool.scatter>: Stream is closed")

    def flaky(self, data, workers=None, **kwargs):
        calls.append(workers)
        return refused() if len(calls) == 1 else real(self, data, workers=workers, **kwargs)

    monkeypatch.setattr(Client, "scatter", flaky)
    monkeypatch.setattr(daskrun, "SCATTER_PAUSE", 0.01)
    thing = _Thing(1)
    shared = run_tasks(dask_cluster_client, "validate", "copy", _copy_of, range(4), share=("thing",), thing=thing)
    workers = sorted(dask_cluster_client.scheduler_info()["workers"])
    assert calls == [[w] for w in workers] and len(shared) == 4

    def closed(self, *args, **kwargs):
        calls.append(kwargs.get("workers"))
        return refused()

    calls.clear()
    monkeypatch.setattr(Client, "scatter", closed)
    monkeypatch.setattr(daskrun, "SCATTER_TRIES", 3)
    with pytest.raises(OSError, match="no worker took the constant"):  # the error after the last try
        run_tasks(dask_cluster_client, "validate", "copy", _copy_of, range(4), share=("thing",), thing=thing)
    assert calls == [[w] for w in workers] * 3


def _pause(paused: bool, dask_worker=None) -> None:
    """Pause the worker, its memory monitor kept from resuming it (it resumes a paused worker below the pause
    threshold), or resume it."""
    from distributed.core import Status

    memory = dask_worker.memory_manager
    if paused:
        dask_worker.pause_fraction, memory.memory_pause_fraction = memory.memory_pause_fraction, False
    else:
        memory.memory_pause_fraction = dask_worker.pause_fraction
    dask_worker.status = Status.paused if paused else Status.running


def test_a_paused_worker_is_not_waited_for(dask_cluster_client, caplog):
    """A paused worker (memory pressure) takes no scattered constant: the scheduler would wait for it to run again
    (the client's timeout) before failing that copy. It is left out from the start, and its tasks run elsewhere."""
    client = dask_cluster_client
    paused = sorted(client.scheduler_info()["workers"])[0]
    client.run(_pause, True, workers=[paused])
    try:
        deadline = time.monotonic() + 10
        while client.scheduler_info()["workers"][paused]["status"] != "paused" and time.monotonic() < deadline:
            time.sleep(0.05)
        with caplog.at_level("WARNING", logger="graphshard.daskrun"):
            shared = run_tasks(client, "validate", "copy", _copy_of, range(4), share=("thing",), thing=_Thing(2))
    finally:
        client.run(_pause, False, workers=[paused])
    assert len(shared) == 4 and len({pid for pid, _ in shared}) == 1
    assert not [r for r in caplog.records if "left out" in r.getMessage()]


class _DiesOnSecondCopy:
    """A constant whose second copy, made by unpickling on a worker, ends that worker's process (a host lost while the
    constant goes out); `marks`: a folder of marker files counting the copies made."""

    def __init__(self, marks: str):
        self.marks = marks

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        made = len(os.listdir(self.marks))
        Path(self.marks, f"copy-{made}-{os.getpid()}").touch()
        if made == 1:
            os._exit(1)


def _marks_of(i: int, *, thing: _DiesOnSecondCopy) -> int:
    return i + len(thing.marks)


@pytest.mark.timeout(120)
def test_a_worker_lost_while_a_shared_constant_goes_out_does_not_stall_the_step(tmp_path):
    """A worker that dies while a shared constant is copied to every worker (the multi-host rig killed a worker host
    mid-shuffle so): the step ends with every result. `scatter(broadcast=True)` stalled here for ever: the scheduler's
    `replicate` retries the dead worker's address every 30 s (dask/distributed#5704)."""
    marks = tmp_path / "marks"
    marks.mkdir()
    with LocalCluster(n_workers=3, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
            Client(cluster) as client:
        thing = _DiesOnSecondCopy(str(marks))
        out = run_tasks(client, "shuffle", "marks", _marks_of, range(6), share=("thing",), thing=thing)
    assert out == [i + len(str(marks)) for i in range(6)]
    assert len(list(marks.iterdir())) >= 2  # a worker did die on its copy


def _when_flagged(i: int, *, flag: str, blob: bytes) -> int:
    while not os.path.exists(flag):
        time.sleep(0.05)
    return i + len(blob)


@pytest.mark.parametrize("tries", [3, 0])
def test_tasks_whose_constant_was_lost_with_its_worker_are_sent_again(tmp_path, monkeypatch, tries):
    """A large constant is on the one worker it was scattered to until another worker copies it. When that worker
    dies, the scheduler forgets it and cancels every task that needs it ("already forgotten"; a CI run's multi-host
    rig lost a worker host so). Those tasks are sent again with the constant, and the step gives every result; out
    of tries, one line naming the step and the item."""
    from graphshard import daskrun

    monkeypatch.setattr(daskrun, "LOST_TRIES", tries)
    flag, blob = tmp_path / "go", bytes(100_000)
    with LocalCluster(n_workers=1, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
            Client(cluster) as client:
        group = submit_tasks(client, "shuffle", "wait", _when_flagged, range(4), flag=str(flag), blob=blob)
        (holder,) = client.who_has(group.shared)[group.shared[0].key]
        os.kill(client.run(os.getpid, workers=[holder])[holder], signal.SIGKILL)  # its nanny starts a new one
        deadline = time.monotonic() + 30
        while holder in client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        flag.touch()
        first = [f.key for f in group.futures]
        if not tries:
            # the scheduler's reason depends on timing: it forgot the constant, or cancelled its dependants first
            line = r"^shuffle: wait \d: cancelled by the cluster \((already forgotten|lost dependencies)\)"
            with pytest.raises(GraphshardError, match=line):
                gather_tasks(client, group)
            return
        assert gather_tasks(client, group) == [[i + len(blob) for i in range(4)]]
        assert not {f.key for f in group.futures} & set(first) and len(group.shared) == 2


def test_local_mode_runs_here_with_the_same_wording():
    assert run_tasks(None, "validate", "scan", _square, [1, 2], offset=0) == [1, 4]
    with pytest.raises(GraphshardError, match=r"^validate: scan part2 failed: ValueError: value 2 is bad$"):
        run_tasks(None, "validate", "scan", _fail_on, [0, 1, 2], label=lambda i: f"part{i}", bad=2)


def _fail_at_length(i: int) -> int:
    raise TypeError("reseed(): incompatible function arguments. The following argument types are supported:\n"
                    "    1. (arg0: int) -> None\n\nInvoked with: 4294967296")


def test_a_library_error_of_several_lines_is_quoted_by_its_first():
    """A failing task's error text of several lines (pybind11's TypeError lists every signature) is quoted up to its
    first line break: the step's message stays one line, the log keeps the rest."""
    with pytest.raises(GraphshardError) as info:
        run_tasks(None, "assign", "ml-initial", _fail_at_length, [0], label=lambda i: f"L{i}")
    assert str(info.value) == "assign: ml-initial L0 failed: TypeError: reseed(): incompatible function arguments. " \
        "The following argument types are supported:"


def test_task_error_is_one_line_naming_step_and_item(dask_cluster_client):
    with pytest.raises(GraphshardError) as info:
        run_tasks(dask_cluster_client, "ingest", "check-edges", _fail_on, [0, 1, 2, 3],
                  label=lambda i: f"chunk{i}", bad=3)
    assert str(info.value) == "ingest: check-edges chunk3 failed: ValueError: value 3 is bad"
    with pytest.raises(InputError, match=r"^edges-0.npy: field 'shape': expected 2 columns, found 3$"):
        run_tasks(dask_cluster_client, "ingest", "check-edges", _refuse, [0])


def test_failed_step_waits_for_its_running_tasks(dask_cluster_client, tmp_path):
    """When one task fails, the call returns only after the others still running ended (so the caller can delete
    their folders for good)."""

    def task(i: int, folder: str) -> int:
        if i == 0:
            time.sleep(0.2)
            raise GraphshardError("task 0 failed")
        time.sleep(1.5)
        (Path(folder) / f"done-{i}").write_text("x")
        return i

    with pytest.raises(GraphshardError, match="task 0 failed"):
        run_tasks(dask_cluster_client, "shuffle", "settle-test", task, [0, 1], folder=str(tmp_path))
    assert (tmp_path / "done-1").exists()


def test_cancelled_group_waits_for_its_running_task(dask_cluster_client, tmp_path):
    """A group dropped while in flight (another group failed) is cancelled, and the call returns only after its
    running task ended; a group not yet started never runs."""

    def task(i: int, folder: str) -> int:
        time.sleep(1.0)
        (Path(folder) / f"done-{i}").write_text("x")
        return i

    running = submit_tasks(dask_cluster_client, "assign", "cancel-test", task, [0], folder=str(tmp_path))
    queued = submit_tasks(dask_cluster_client, "assign", "cancel-later", task, [1, 2, 3], folder=str(tmp_path),
                          priority=-1)
    time.sleep(0.3)
    cancel_tasks(dask_cluster_client, running, queued)
    assert (tmp_path / "done-0").exists()
    assert all(f.cancelled() for f in running.futures + queued.futures)
    time.sleep(1.2)
    assert len(list(tmp_path.glob("done-*"))) <= 2  # at most the one the second worker had started
    cancel_tasks(None, running)  # in-process groups ran when submitted: nothing to drop


def _suicide(i: int) -> int:
    os._exit(1)


def test_killed_worker_names_the_item_and_the_memory_limit():
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="700MB", dashboard_address=":0",
                         processes=True) as cluster, Client(cluster) as client:
        with pytest.raises(GraphshardError) as info:
            run_tasks(client, "shuffle", "write-partitions", _suicide, [7], label=lambda p: f"part{p}",
                      detail=lambda p: "1,000 owned edges")
    msg = str(info.value)
    assert msg.startswith("shuffle: write-partitions part7 (1,000 owned edges): Dask workers died repeatedly")
    assert "memory limit of 0.65 GiB" in msg and "cluster.memory_limit" in msg and "\n" not in msg


def test_key_is_safe_for_any_label():
    assert task_key("validate", "scan", "a b/c\n", "0123abcd") == "validate-scan-a_b/c_-0123abcd"


def _slow(label: str) -> str:
    time.sleep(0.3)
    return label


def test_progress_shows_the_label_as_given(dask_cluster_client):
    """A key keeps only safe characters ('-' would split the dashboard's task group), but the progress line and the
    Prefect artifact show a running task's label as given: `s3://my-bucket`, not `s3://my_bucket`."""
    from dask.utils import key_split

    from graphshard import daskrun
    from graphshard.pipeline.progress import StepProgress, TerminalBar, install

    labels = [f"s3://my-bucket/feat chunk-{i}.npy" for i in range(4)]
    assert install(dask_cluster_client)
    seen: list[tuple[int, int, str]] = []
    lines: list[str] = []
    bar = TerminalBar("ingest", stream=_Lines(lines), every=0.0)
    with StepProgress(dask_cluster_client, [lambda *shown: seen.append(shown), bar], interval=0.1):
        group = submit_tasks(dask_cluster_client, "ingest", "check-file", _slow, labels, label=str)
        keys = [str(f.key) for f in group.futures]
        assert [daskrun.describe_key(k) for k in keys] == [f"check-file {lb}" for lb in labels]
        assert gather_tasks(dask_cluster_client, group) == [labels]
    assert all(key_split(k) == "ingest-check-file" and "my-bucket" not in k for k in keys), keys
    doing = {d for done, submitted, d in seen if d and done < submitted}  # what the sinks show
    assert doing and doing <= {f"check-file {lb}" for lb in labels}, seen
    assert any("dask tasks: check-file s3://my-bucket/feat chunk-" in line for line in lines), lines
    assert not [line for line in lines if "] 0/0 dask tasks" in line], lines  # no empty bar before the tasks
    assert not set(keys) & set(daskrun._SHOWN)  # forgotten once gathered


@dataclass
class _Lines:
    """A non-terminal stream collecting what a TerminalBar writes."""

    lines: list[str]

    def write(self, text: str) -> None:
        self.lines.append(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


def _sum_with(i: int, *, table) -> int:
    return int(table[i]) + int(table.sum())


def test_large_constants_of_the_same_name_do_not_collide(dask_cluster_client):
    """Client.map keys a large keyword argument by its name: two groups in flight with different large `table`s
    must still each see their own."""
    import numpy as np

    a, b = np.arange(100_000), np.arange(100_000) * 2
    ga = submit_tasks(dask_cluster_client, "t", "a", _sum_with, range(3), table=a)
    gb = submit_tasks(dask_cluster_client, "t", "b", _sum_with, range(3), table=b)
    ra, rb = gather_tasks(dask_cluster_client, ga, gb)
    assert ra == [i + int(a.sum()) for i in range(3)] and rb == [2 * i + int(b.sum()) for i in range(3)]


class _Terminated(BaseException):
    """Stands for Prefect's TerminationSignal: a BaseException raised in the flow process on SIGTERM."""


def test_a_termination_signal_is_not_worded_as_a_task_failure(dask_cluster_client, monkeypatch):
    """SIGTERM while a step waits (Prefect raises TerminationSignal there) ended the run as `shuffle: ... failed:
    TerminationSignal`, exit 2, as if a task had failed: it must reach Prefect and the CLI as it is."""
    from graphshard import daskrun

    def terminated(client, groups):
        raise _Terminated()

    monkeypatch.setattr(daskrun, "_collect", terminated)
    with pytest.raises(_Terminated):
        run_tasks(dask_cluster_client, "shuffle", "convert-assignment", _square, [0, 1])


def test_labels_that_read_alike_are_still_separate_tasks(dask_cluster_client):
    """Two items whose labels come out the same in a key ('a-b' and 'a_b'; one label twice) are two tasks with
    their own results: under one key Dask would run one of them and give both its result."""
    items = [(1, "a-b"), (2, "a_b"), (3, "x"), (4, "x")]
    group = submit_tasks(dask_cluster_client, "ingest", "sq", _square_first, items, label=lambda it: it[1])
    assert gather_tasks(dask_cluster_client, group) == [[1, 4, 9, 16]]
    assert len({str(f.key) for f in group.futures}) == 4


def _square_first(item: tuple) -> int:
    return item[0] ** 2


def _store_refuses(i: int) -> int:
    from graphshard.storage.failures import StorageError

    raise StorageError("s3://bucket/g/edges-0.npy: the store refused the credentials", "credentials")


def _disk_full(i: int) -> int:
    raise OSError(28, "No space left on device")


def test_a_workers_own_environment_is_named_with_the_worker(dask_cluster_client):
    """A store refusing a worker's credentials (the flow host's passed the pre-flight) or a full disk on a worker
    named no step nor worker, sending the user to check the wrong host."""
    workers = set(dask_cluster_client.scheduler_info()["workers"])
    with pytest.raises(GraphshardError) as err:
        run_tasks(dask_cluster_client, "ingest", "read", _store_refuses, [0], label=lambda i: f"chunk{i}")
    line = str(err.value)
    assert line.startswith("ingest: read chunk0 on worker tcp://") and line.split()[5].rstrip(":") in workers, line
    assert "the store refused the credentials" in line and "their own credentials" in line
    with pytest.raises(GraphshardError) as err:  # the worker's own disk has room: not named
        run_tasks(dask_cluster_client, "assign", "draw", _disk_full, [0], label=lambda i: f"block{i}")
    assert str(err.value).startswith("assign: draw block0: no space left on device") and "worker" not in str(err.value)


def test_a_worker_whose_local_directory_is_full_is_named(tiny_tmpfs):
    """A full disk on a worker host (its Dask local directory): the line named work_dir and the like, which were on
    a store; it now names the worker and its folder, with the free space there."""
    with LocalCluster(n_workers=1, threads_per_worker=1, local_directory=str(tiny_tmpfs), dashboard_address=":0",
                      processes=True) as cluster, Client(cluster) as client:
        with pytest.raises(GraphshardError) as err:
            run_tasks(client, "assign", "draw", _disk_full, [0], label=lambda i: f"block{i}")
    line = str(err.value)
    assert line.startswith("assign: draw block0: no space left on device") and "the task ran on worker tcp://" in line
    assert f"whose local directory {tiny_tmpfs}" in line and "MB free" in line and "--local-directory" in line

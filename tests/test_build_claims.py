"""A step's build holds its key alone (graphshard.storage.lease.claimed): a second build of the same key waits for
the first and reuses its artifact; a holder that died is taken over, at once on this host (its process is gone),
after a lease elsewhere (its record is no longer renewed)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from graphshard.pipeline.cache import StepStore
from graphshard.storage import Storage, lease, location


@pytest.fixture(params=["local", "s3"])
def work(request, tmp_path):
    """A work folder on this host's disk, and on a store."""
    return tmp_path / "work" if request.param == "local" else location(f"{request.getfixturevalue('s3_bucket')}/work")


def _maker(calls: list, started: threading.Event | None = None, seconds: float = 0.0):
    def make(stage):
        calls.append(threading.current_thread().name)
        if started is not None:
            started.set()
        time.sleep(seconds)
        Storage().write_bytes(location(str(stage / "a.bin")), b"data")
        return {"rows": 1}
    return make


def _claim(work, step: str, key: str):
    return lease._record(location(str(work / step)), key)


def test_a_second_build_of_the_same_key_waits_and_reuses_the_first(work):
    store, calls, started, told = StepStore(work), [], threading.Event(), []
    first = threading.Thread(target=lambda: store.build("assign", "k", _maker(calls, started, 3.0), {}), name="one")
    first.start()
    assert started.wait(30)
    second = store.build("assign", "k", _maker(calls), {}, waiting=told.append)
    first.join()
    assert calls == ["one"] and second.reused and second.summary["rows"] == 1  # built once, by the first
    assert len(told) == 1 and "on this host" in told[0]
    assert not Storage().exists(_claim(work, "assign", "k"))  # released
    assert not store.build("assign", "k", _maker(calls), {}, fresh=True).reused and len(calls) == 2


def test_an_artifact_finished_between_the_lookup_and_the_claim_is_reused(work):
    """Another run built the key and let go after this run's lookup found nothing (this run was starting its
    cluster): the claim is then free at once, and the build must still reuse that artifact, not build it again."""
    store, calls = StepStore(work), []
    assert store.lookup("shuffle", "k") is None  # the caller's lookup: not built yet
    store.build("shuffle", "k", _maker(calls), {})  # the other run builds it meanwhile, and releases the key
    again = store.build("shuffle", "k", _maker(calls), {}, waiting=lambda who: calls.append(f"waited for {who}"))
    assert again.reused and len(calls) == 1, calls


def test_a_claim_whose_process_is_gone_is_taken_over_at_once(work):
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    record = _claim(work, "assign", "k")
    Storage().write_bytes(record, json.dumps({"host": lease.socket.gethostname(), "pid": dead}).encode())
    calls, told = [], []
    start = time.perf_counter()
    result = StepStore(work).build("assign", "k", _maker(calls), {}, waiting=told.append)
    assert not result.reused and len(calls) == 1 and not told and time.perf_counter() - start < 10


def _dead_record(work) -> bytes:
    dead = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                              text=True).stdout)
    body = json.dumps({"host": lease.socket.gethostname(), "pid": dead}).encode()
    Storage().write_bytes(_claim(work, "assign", "k"), body)
    return body


def test_a_takeover_judged_on_a_stale_read_never_deletes_the_new_holders_record(work):
    """Two waiters find the same dead holder: the first takes over and holds the claim; the second, acting on its
    older read, must not delete the first's record (both would then build), during that claim or after it."""
    storage, where, dead = Storage(), location(str(work / "assign")), _dead_record(work)
    with lease.claimed(storage, where, "k") as waited:
        mine = storage.read_bytes(_claim(work, "assign", "k"))
        assert not waited and mine != dead
        assert not lease._take_over(storage, where, "k", dead, [])  # the first's marker stands
        assert storage.read_bytes(_claim(work, "assign", "k")) == mine
    assert not [n for n in storage.modified(where.join(lease.LEASES)) if ".gone-" in n]  # released with the claim
    with lease.claimed(storage, where, "k"):
        mine = storage.read_bytes(_claim(work, "assign", "k"))
        assert lease._take_over(storage, where, "k", dead, [])  # stale: the record is no longer the dead one's
        assert storage.read_bytes(_claim(work, "assign", "k")) == mine


def test_a_takeover_left_half_done_by_a_killed_waiter_is_taken_again_after_a_lease(work, monkeypatch):
    monkeypatch.setenv("GRAPHSHARD_LEASE", "1")
    monkeypatch.setattr(lease, "POLL_SECONDS", 0.2)
    storage, where, dead = Storage(), location(str(work / "assign")), _dead_record(work)
    assert lease._take_over(storage, where, "k", dead, [])  # its marker, then "killed" before the delete
    storage.write_bytes(_claim(work, "assign", "k"), dead)
    told = []
    with lease.claimed(storage, where, "k", waiting=told.append) as waited:
        assert waited and "another run taking over" in told[0]
    assert not storage.exists(_claim(work, "assign", "k"))


def test_a_holder_taken_over_while_paused_neither_renews_nor_deletes_the_new_record(work, monkeypatch):
    monkeypatch.setenv("GRAPHSHARD_LEASE", "0.4")  # renewed every 0.1 s
    storage, where = Storage(), location(str(work / "assign"))
    other = json.dumps({"host": "elsewhere", "pid": 1, "token": "new holder"}).encode()
    with lease.claimed(storage, where, "k"):
        storage.write_bytes(_claim(work, "assign", "k"), other)  # taken over while this one was paused
        time.sleep(0.5)
        assert storage.read_bytes(_claim(work, "assign", "k")) == other
    assert storage.read_bytes(_claim(work, "assign", "k")) == other


def test_another_hosts_claim_is_waited_for_until_its_lease_lapses(work, monkeypatch):
    monkeypatch.setenv("GRAPHSHARD_LEASE", "3")
    monkeypatch.setattr(lease, "POLL_SECONDS", 0.2)
    Storage().write_bytes(_claim(work, "assign", "k"), json.dumps({"host": "elsewhere", "pid": 1}).encode())
    calls, told = [], []
    start = time.perf_counter()
    result = StepStore(work).build("assign", "k", _maker(calls), {}, waiting=told.append)
    assert not result.reused and len(calls) == 1 and time.perf_counter() - start >= 2
    assert len(told) == 1 and "pid 1 on elsewhere, renewed" in told[0]


@pytest.mark.slow
def test_two_runs_of_one_config_at_once_build_each_step_once(tmp_path, make_graph):
    """`graphshard run job.yaml` started twice at once (a deployment triggered twice): whichever run reaches a step
    second waits for the other's build and reuses it, every step is built once between them, and both succeed.
    Both start together, so they meet at the first step whatever the machine's load (started during the first's
    shuffle, a slow second could arrive after the first had finished, with nothing left to wait for)."""
    from flow_helpers import subprocess_env, write_config

    config = write_config(tmp_path, make_graph("rmat", nodes=100_000, edges=1_500_000, chunks=6))
    cmd = [sys.executable, "-m", "graphshard.cli", "run", str(config)]
    logs = [tmp_path / "first.log", tmp_path / "second.log"]
    runs = [subprocess.Popen(cmd, stdout=open(log, "w"), stderr=subprocess.STDOUT, env=subprocess_env())
            for log in logs]
    assert [run.wait(timeout=600) for run in runs] == [0, 0], [p.read_text() for p in logs]
    text = [p.read_text() for p in logs]
    assert any(": waiting for another run building the same artifact" in t for t in text), text  # on a terminal
    cached = [set(t.split("; cached: ")[1].split("\n")[0].split(", ")) for t in text]
    for step in ("ingest", "assign", "shuffle", "validate"):  # built by one run, reused by the other
        assert (step in cached[0]) != (step in cached[1]), cached
    assert Path(tmp_path / "out" / "rmat.json").exists() and not list((tmp_path / "work").glob("*/.leases/*"))

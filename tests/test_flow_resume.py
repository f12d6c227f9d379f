"""A run SIGKILLed during the shuffle is resumed by the next run from its finished steps, and the result is byte for
byte what an uninterrupted run publishes (slow: three real runs as separate processes)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from flow_helpers import subprocess_env, tree_bytes, wait_for, write_config

pytestmark = pytest.mark.slow
GRAPHSHARD = [sys.executable, "-m", "graphshard.cli"]
REPORT = ("report.json", "report.html")


def _run(config: Path, log: Path, **kw) -> subprocess.Popen:
    return subprocess.Popen([*GRAPHSHARD, "run", str(config)], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                            env=subprocess_env(), start_new_session=True, **kw)


@pytest.fixture(scope="module")
def medium_graph(make_graph) -> Path:
    """Large enough that the shuffle takes a few seconds on 2 workers."""
    return make_graph("rmat", nodes=100_000, edges=1_500_000, chunks=6)


def test_sigkill_during_shuffle_resumes_to_identical_output(tmp_path, medium_graph):
    killed, clean = tmp_path / "killed", tmp_path / "clean"
    killed.mkdir(), clean.mkdir()
    cfg_killed = write_config(killed, medium_graph)
    cfg_clean = write_config(clean, medium_graph)

    proc = _run(cfg_killed, killed / "run1.log")
    shuffle_root = killed / "work" / "shuffle"
    wait_for(lambda: shuffle_root.is_dir() and any(".tmp-" in p.name for p in shuffle_root.iterdir()),
             300, "the shuffle step to start")
    time.sleep(0.2)  # inside the shuffle (a few seconds with the server outside this process)
    assert proc.poll() is None, (killed / "run1.log").read_text()
    os.killpg(proc.pid, signal.SIGKILL)  # the flow process and its local Dask cluster, as in a machine crash
    proc.wait()
    assert not [p for p in shuffle_root.iterdir() if not p.name.startswith(".")], "no shuffle artifact finished"
    assert not (killed / "out").exists()
    assert [p.name for p in (killed / "work" / "assign").iterdir() if not p.name.startswith(".")]

    resumed = _run(cfg_killed, killed / "run2.log")
    reference = _run(cfg_clean, clean / "run.log")
    assert resumed.wait(timeout=600) == 0, (killed / "run2.log").read_text()
    assert reference.wait(timeout=600) == 0, (clean / "run.log").read_text()
    log = (killed / "run2.log").read_text()
    assert "cached: ingest, assign;" in log or "cached: ingest, assign\n" in log, log
    _assert_marked_crashed(proc.pid)
    hidden = [p for p in shuffle_root.iterdir() if p.name.startswith(".") and p.name != ".leases"]
    assert not hidden and not list(shuffle_root.glob(".leases/*")), "stale staging folder or claim left"
    got, want = tree_bytes(killed / "out", REPORT), tree_bytes(clean / "out", REPORT)
    assert sorted(got) == sorted(want)
    assert got == want


def _assert_marked_crashed(pid: int) -> None:
    """The killed process's flow run (Running in Prefect for good: nothing reported its end) was set Crashed by the
    next run on this host."""
    from flow_helpers import http_json

    from graphshard.pipeline import prefect_server
    from graphshard.pipeline.orphans import TAG

    runs = http_json(f"{prefect_server.recorded().api_url}/flow_runs/filter",
                     {"flow_runs": {"tags": {"all_": [TAG]}}})
    mine = [r for r in runs if any(t.startswith(f"{TAG}:") and t.split(":")[2] == str(pid) for t in r["tags"])]
    assert len(mine) == 1 and mine[0]["state"]["type"] == "CRASHED", mine
    assert f"graphshard run process ({pid} on " in mine[0]["state"]["message"]


def test_ctrl_c_during_shuffle_ends_in_one_line_and_leaves_no_process(tmp_path, medium_graph):
    """Ctrl-C reaches the terminal's whole process group, the local Dask workers too: they ignore it (the flow
    process closes them), so the terminal shows no worker traceback, and nothing is published."""
    # a suite started in the background of a non-interactive shell ignores SIGINT, and an ignored signal is
    # inherited: a handler of the test's own is not, so the run starts with SIGINT's default, as in a terminal
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = _run(write_config(tmp_path, medium_graph), tmp_path / "run.log")
    finally:
        signal.signal(signal.SIGINT, previous)
    shuffle_root = tmp_path / "work" / "shuffle"
    wait_for(lambda: shuffle_root.is_dir() and any(".tmp-" in p.name for p in shuffle_root.iterdir()),
             300, "the shuffle step to start")
    os.killpg(proc.pid, signal.SIGINT)
    assert proc.wait(timeout=120) == 130
    out = (tmp_path / "run.log").read_text()
    assert "Traceback" not in out and out.splitlines()[-1] == "graphshard run: interrupted", out
    assert not (tmp_path / "out").exists()
    wait_for(lambda: not _in_group(proc.pid), 30, "the run's processes to end")


def _in_group(group: int) -> list[int]:
    """The processes of a process group still running."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and os.getpgid(int(entry.name)) == group:
                found.append(int(entry.name))
        except ProcessLookupError:
            pass
    return found


def test_a_cancel_from_prefect_stops_the_run_before_its_next_step(tmp_path, medium_graph):
    """A cancel from the UI (the flow run set Cancelling) could stop nothing: the run published, then ended in
    'internal error: UnfinishedRun'. It now stops before the next step, publishes nothing, and ends Cancelled."""
    from flow_helpers import flow_run_states, http_json

    from graphshard.pipeline import prefect_server

    proc = _run(write_config(tmp_path, medium_graph), tmp_path / "run.log")
    shuffle_root = tmp_path / "work" / "shuffle"
    wait_for(lambda: shuffle_root.is_dir() and any(".tmp-" in p.name for p in shuffle_root.iterdir()),
             300, "the shuffle step to start")
    api = prefect_server.recorded().api_url
    flow_run, _ = flow_run_states(api)
    assert re.fullmatch(r"run-\d{4}-\d{6}-[0-9a-f]{4}", flow_run["name"])  # after its config (run.yaml)
    http_json(f"{api}/flow_runs/{flow_run['id']}/set_state", {"state": {"type": "CANCELLING"}, "force": True})
    assert proc.wait(timeout=300) == 2
    out = (tmp_path / "run.log").read_text()
    assert "Traceback" not in out and out.splitlines()[-1].startswith(
        "graphshard run: error: flow run cancelled from Prefect (its state was Cancelling): stopped before the "), out
    assert not (tmp_path / "out").exists()
    assert flow_run_states(api, flow_run["id"])[0]["state"]["type"] == "CANCELLED"


def test_sigterm_during_shuffle_prints_no_warning_of_the_cluster_left_behind(tmp_path, medium_graph):
    """A run ended by SIGTERM (a scheduler's stop, `kill`): multiprocessing's tracker warned about the cluster's
    'leaked semaphore objects' on the terminal; nothing is published either way."""
    proc = _run(write_config(tmp_path, medium_graph), tmp_path / "run.log")
    shuffle_root = tmp_path / "work" / "shuffle"
    wait_for(lambda: shuffle_root.is_dir() and any(".tmp-" in p.name for p in shuffle_root.iterdir()),
             300, "the shuffle step to start")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=120) != 0
    wait_for(lambda: not _in_group(proc.pid), 30, "the run's processes to end")
    out = (tmp_path / "run.log").read_text()
    assert "resource_tracker" not in out and "Traceback" not in out, out
    assert not (tmp_path / "out").exists()

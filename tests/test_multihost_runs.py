"""`graphshard run` across the rig's hosts with every location on the S3 host (issue 22, item 3 (a)-(b)): the
published set, fetched back, equals a single-host run's byte for byte, with a worker host lost mid-step too."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from flow_helpers import REPO, run, tree_bytes, write_config
from test_storage_steps import upload_tree

from graphshard.fetch import fetch
from graphshard.storage import Storage

GRAPHSHARD = Path(sys.executable).parent / "graphshard"
# Several blocks and levels, few rounds: these tests compare bytes, not cuts; on a store a round is many requests.
SMALL = {"multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000, "multilevel_lp_rounds": 3,
         "multilevel_refine_rounds": 2}
REPORT = ("report.json", "report.html")
RUN_TIMEOUT = 420  # seconds, under pytest-timeout's 600 so that a stalled run's output is kept; a run takes 20-60 s


@pytest.fixture(scope="module")
def rig_graph(multihost_rig, make_graph):
    """A small R-MAT graph on the rig's S3 host: (local metadata, its URL, a Storage reaching the S3 host)."""
    storage = Storage({"s3://": multihost_rig.s3.options()})
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=3)
    url = upload_tree(storage, metadata.parent, f"{multihost_rig.s3.new_bucket()}/graph")
    return metadata, f"{url}/metadata.json", storage


def _assign(method: str) -> dict:
    return {"method": method, "seed": 0, **({"multilevel": SMALL} if method == "multilevel" else {})}


def _rig_config(tmp: Path, url: str, prefix: str, method: str, address: str, **changes) -> Path:
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data.update({"input": {"metadata": url}, "output": {"dir": f"{prefix}/out"}, "work_dir": f"{prefix}/work",
                 "num_parts": 2, "assign": _assign(method), "cluster": {"address": address}, **changes})
    tmp.mkdir(parents=True, exist_ok=True)
    (tmp / "run.yaml").write_text(yaml.safe_dump(data))
    return tmp / "run.yaml"


def _graphshard_run(rig, config: Path, logs: Path, during=None) -> subprocess.CompletedProcess:
    """`graphshard run CONFIG` on the flow's host (the root namespace) against the rig's scheduler; `during`, if
    given, runs in a thread while it does (a fault)."""
    env = {**rig.env(), "GRAPHSHARD_LOG_DIR": str(logs)}
    env.pop("DASK_DISTRIBUTED__DASHBOARD__LINK", None)
    proc = subprocess.Popen([str(GRAPHSHARD), "run", str(config)], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    fault = threading.Thread(target=during, args=(proc,), daemon=True) if during else None
    if fault:
        fault.start()
    try:
        out, _ = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:  # a stalled run: stopped, and its output kept in the failure
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"graphshard run still running after {RUN_TIMEOUT} s; its output ends:\n{out[-4000:]}")
    if fault:
        fault.join(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def _published(storage: Storage, prefix: str, dest: Path) -> dict[str, bytes]:
    config = [e.rel for e in storage.listing(f"{prefix}/out") if e.rel.endswith(".json") and "/" not in e.rel]
    assert len(config) == 1, config
    fetch(f"{prefix}/out/{config[0]}", dest, storage=storage)
    return tree_bytes(dest)


@pytest.fixture(scope="module")
def single_host(rig_graph, tmp_path_factory):
    """`single_host(method, **changes)`: the set a single-host run of the rig's graph publishes (run once per method
    and changes: several tests compare against the same one)."""
    made: dict[str, dict[str, bytes]] = {}

    def published(method: str, **changes) -> dict[str, bytes]:
        key = json.dumps([method, changes], sort_keys=True)
        if key not in made:
            tmp = tmp_path_factory.mktemp("single-host")
            summary = run(write_config(tmp, rig_graph[0], None, num_parts=2, assign=_assign(method), **changes))
            made[key] = tree_bytes(Path(summary["output"]), REPORT)
        return made[key]

    return published


@pytest.mark.slow
@pytest.mark.parametrize("method", ["random", "multilevel"])
def test_every_location_on_s3_equals_a_single_host_run(multihost_rig, rig_graph, single_host, tmp_path, method):
    _, url, storage = rig_graph
    prefix = f"{multihost_rig.s3.new_bucket()}/{method}"
    done = _graphshard_run(multihost_rig, _rig_config(tmp_path / "rig", url, prefix, method,
                                                      multihost_rig.scheduler_address), tmp_path / "logs")
    assert done.returncode == 0, done.stdout[-4000:]
    assert "Traceback" not in done.stdout
    assert _published(storage, prefix, tmp_path / "fetched") == single_host(method)


@pytest.mark.slow
def test_validation_off_on_s3(multihost_rig, rig_graph, single_host, tmp_path):
    """Validation off: the assignment report makes its own pass over the edges on the workers, which read the parts
    from the store (never the flow host's staging folder); the set equals a single-host run's."""
    _, url, storage = rig_graph
    prefix = f"{multihost_rig.s3.new_bucket()}/novalidate"
    off = {"validate": {"enabled": False}}
    done = _graphshard_run(multihost_rig, _rig_config(tmp_path / "rig", url, prefix, "random",
                                                      multihost_rig.scheduler_address, **off), tmp_path / "logs")
    assert done.returncode == 0, done.stdout[-4000:]
    assert "Traceback" not in done.stdout
    assert _published(storage, prefix, tmp_path / "fetched") == single_host("random", **off)


def _kill_when(rig, host: str, bucket: str, marker: str, log: Path):
    """A fault thread: once the S3 host's log shows a request to `bucket` naming `marker` (the step has begun writing
    its scratch), every process of `host` is killed, then its worker is started again (a replacement host)."""
    def fault(proc) -> None:
        s3_log = rig.logs / "s3.log"
        while proc.poll() is None:
            text = s3_log.read_text(errors="replace") if s3_log.exists() else ""
            if any(bucket in line and marker in line for line in text.splitlines()):
                rig.kill_host(host)
                log.write_text(f"killed {host}\n")
                time.sleep(2)
                rig.start_worker(host)
                return
            time.sleep(0.2)
    return fault


@pytest.mark.slow
@pytest.mark.parametrize("method,marker", [("random", "/idmap/"), ("multilevel", "/multilevel/"),
                                           ("random", ".validate/")])
def test_a_worker_host_lost_mid_step_gives_identical_bytes(multihost_rig, rig_graph, single_host, tmp_path, method,
                                                           marker):
    """(b) worker2 killed (every process of its namespace) once the shuffle's scratch (random), the multilevel
    partitioner's levels (multilevel) or validation's scratch appear on the store: the run completes with the bytes
    of an undisturbed run."""
    _, url, storage = rig_graph
    bucket = multihost_rig.s3.new_bucket()
    prefix = f"{bucket}/{method}-killed"
    note = tmp_path / "fault.txt"
    done = _graphshard_run(multihost_rig, _rig_config(tmp_path / "rig", url, prefix, method,
                                                      multihost_rig.scheduler_address), tmp_path / "logs",
                           during=_kill_when(multihost_rig, "worker2", bucket[len("s3://"):], marker, note))
    assert done.returncode == 0, done.stdout[-4000:]
    assert note.exists(), "the fault never fired"
    assert _published(storage, prefix, tmp_path / "fetched") == single_host(method)


def _cut_when(rig, host: str, bucket: str, marker: str, seconds: float, log: Path):
    """A fault thread: once the step's scratch shows on the S3 host, `host`'s link goes down for `seconds`."""
    def fault(proc) -> None:
        s3_log = rig.logs / "s3.log"
        while proc.poll() is None:
            text = s3_log.read_text(errors="replace") if s3_log.exists() else ""
            if any(bucket in line and marker in line for line in text.splitlines()):
                rig.set_link(host, up=False)
                log.write_text(f"cut {host}\n")
                time.sleep(seconds)
                rig.set_link(host, up=True)
                return
            time.sleep(0.2)
    return fault


@pytest.mark.slow
def test_a_worker_host_cut_off_for_seconds(multihost_rig, rig_graph, single_host, tmp_path):
    """(c) worker3's link down for 5 s mid-shuffle: the run survives with the undisturbed bytes, or ends with one line
    naming the host and publishes nothing."""
    _, url, storage = rig_graph
    bucket = multihost_rig.s3.new_bucket()
    prefix = f"{bucket}/cut"
    note = tmp_path / "fault.txt"
    done = _graphshard_run(multihost_rig, _rig_config(tmp_path / "rig", url, prefix, "random",
                                                      multihost_rig.scheduler_address), tmp_path / "logs",
                           during=_cut_when(multihost_rig, "worker3", bucket[len("s3://"):], "/idmap/", 5, note))
    assert note.exists(), "the fault never fired"
    assert "Traceback" not in done.stdout, done.stdout[-4000:]
    if done.returncode == 0:
        assert _published(storage, prefix, tmp_path / "fetched") == single_host("random")
    else:
        errors = [ln for ln in done.stdout.splitlines() if "error" in ln.lower()]
        assert done.returncode == 2 and len(errors) == 1 and "worker3" in errors[0], done.stdout[-4000:]
        assert not [e for e in storage.listing(f"{prefix}/out") if e.rel.endswith(".json")]  # nothing published

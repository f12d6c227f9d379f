"""`graphshard run` with every location on S3 (issue 21): the input graph, the config itself (relative locations
resolved against its folder there), the step cache and the output on the suite's moto server. The fetched set equals a
local-disk run's files byte for byte; a second run reuses every step; `--from assign` re-runs from there; a second
"host" (a fresh process state: nothing remembered) reuses the steps the first wrote to the store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from flow_helpers import (
    STATES,
    run,
    subprocess_env,
    tree_bytes,
    wait_for,
    write_config,
)

from graphshard.fetch import fetch
from graphshard.storage import Storage

REPORT = ("report.json", "report.html")


def upload_tree(folder: Path, url: str) -> None:
    storage = Storage()
    for path in sorted(folder.rglob("*")):
        if path.is_file():
            storage.upload(path, f"{url}/{path.relative_to(folder).as_posix()}")


def s3_job(bucket: str, metadata: Path, address: str, options: dict, **changes) -> str:
    """The graph uploaded under `<bucket>/graph/`, a config at `<bucket>/jobs/job.yaml` naming everything relative to
    its folder, credentials in its storage_options (the session's Dask workers started without the AWS environment:
    the options reach them); returns the config's URL."""
    upload_tree(metadata.parent, f"{bucket}/graph")
    data = {"input": {"metadata": "../graph/metadata.json"}, "output": {"dir": "../sets/rmat"},
            "work_dir": "../cache", "num_parts": 4, "cluster": {"address": address},
            "assign": {"method": "random", "seed": 0, "random": {"balanced": True}},
            "shuffle": {"save_orig_nids": True, "save_orig_eids": True, "graph_formats": ["coo", "csc"]},
            "validate": {"enabled": True, "full": True}, "storage_options": {"s3://": options}, **changes}
    url = f"{bucket}/jobs/job.yaml"
    Storage().write_bytes(url, yaml.safe_dump(data).encode())
    return url


def local_job(folder: Path, metadata: Path, address: str) -> Path:
    """configs/example.yaml on local disk: the same steps and options as `s3_job`."""
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder, metadata, address)


def test_every_location_on_s3_equals_local_run_and_is_cached(tmp_path, rmat_small, dask_address, s3_env, s3_bucket):
    local = run(local_job(tmp_path / "local", rmat_small, dask_address))
    job = s3_job(s3_bucket, rmat_small, dask_address, s3_env.options())
    summary = run(job)
    assert summary["partition_config"] == f"{s3_bucket}/sets/rmat/rmat.json"
    assert summary["work_dir"] == f"{s3_bucket}/cache"
    assert [e.rel.split("/")[0] for e in Storage().listing(f"{s3_bucket}/cache")].count("shuffle") > 0
    fetch(summary["partition_config"], tmp_path / "fetched")
    got, want = tree_bytes(tmp_path / "fetched"), tree_bytes(Path(local["output"]), REPORT)
    assert sorted(got) == sorted(want)
    assert got == want
    assert summary["edge_cut"] == local["edge_cut"]

    secret = s3_env.options()["secret"]  # given in the config's storage_options: in no log, manifest or report
    assert secret not in json.dumps(summary)
    for prefix in ("cache", "sets"):
        for e in Storage().listing(f"{s3_bucket}/{prefix}"):
            if e.rel.endswith((".json", ".html", ".log")):
                assert secret.encode() not in Storage().read_bytes(f"{s3_bucket}/{prefix}/{e.rel}"), e.rel

    again = run(job)
    assert again["steps"] == {s: "Cached" for s in STATES}, again["steps"]

    rerun = run(job, from_step="assign")
    assert rerun["steps"]["ingest"] == "Cached" and rerun["steps"]["assign"] == "Completed"
    runs = {e.rel.split("/")[1] for e in Storage().listing(f"{s3_bucket}/sets/rmat") if e.rel.startswith(".runs/")}
    assert len(runs) == 1  # the report's timings changed, so a new run prefix replaced the earlier one
    assert rerun["report"] == f"{s3_bucket}/sets/rmat/.runs/{runs.pop()}/report.html"
    report = json.loads(Storage().read_bytes(rerun["report"].replace("report.html", "report.json")))
    assert report["ok"] and report["config"] == summary["partition_config"]


def test_rebuilt_shuffle_on_s3_is_cached_again(rmat_small, dask_address, s3_env, s3_bucket):
    """A shuffle rebuilt into the run prefix a set was published from (`--force shuffle`; also `--from`, a lost
    manifest, a deleted partition object) lists only its own files, not the report publishing wrote there: that
    report's timings change at each publish, so its size in the manifest never matched again and every later run
    re-ran shuffle and validate."""
    job = s3_job(s3_bucket, rmat_small, dask_address, s3_env.options())
    run(job)
    forced = run(job, force=["shuffle"])
    assert forced["steps"]["shuffle"] == "Completed"
    manifest = next(e.rel for e in Storage().listing(f"{s3_bucket}/cache/shuffle") if e.rel.endswith("manifest.json"))
    files = json.loads(Storage().read_bytes(f"{s3_bucket}/cache/shuffle/{manifest}"))["files"]
    assert not [name for name in files if name.endswith(REPORT)], sorted(files)
    again = run(job)
    assert again["steps"] == {s: "Cached" for s in STATES}, again["steps"]


@pytest.mark.slow
def test_sigkill_during_shuffle_on_s3_publishes_nothing_and_resumes(tmp_path, make_graph, s3_bucket):
    """`graphshard run s3://.../job.yaml` killed (SIGKILL, with its cluster) while the shuffle writes to the store:
    no config is published; the next run, a fresh process as on another host, reuses ingest and assign from the
    store (the killed run's objects under the output's `.runs/` are no set: no overwrite needed) and publishes what
    an uninterrupted local run does."""
    graph = make_graph("rmat", nodes=100_000, edges=1_000_000, chunks=6)
    upload_tree(graph.parent, f"{s3_bucket}/graph")
    data = {"input": {"metadata": "../graph/metadata.json"}, "output": {"dir": "../sets/rmat"}, "work_dir": "../cache",
            "num_parts": 4, "cluster": {"workers": 2, "memory_limit": "2GB"}, "shuffle": {"scratch_dir": "../scratch"}}
    Storage().write_bytes(f"{s3_bucket}/jobs/job.yaml", yaml.safe_dump(data).encode())
    local = tmp_path / "local.yaml"
    local.write_text(yaml.safe_dump({**data, "input": {"metadata": str(graph)}, "shuffle": {},
                                     "output": {"dir": str(tmp_path / "out")}, "work_dir": str(tmp_path / "work")}))
    cmd = [sys.executable, "-m", "graphshard.cli", "run", f"{s3_bucket}/jobs/job.yaml"]
    env = {**subprocess_env(), "GRAPHSHARD_LEASE": "3"}  # the leases (scratch, run), short for the test
    proc = subprocess.Popen(cmd, stdout=open(tmp_path / "run1.log", "w"), stderr=subprocess.STDOUT,
                            env=env, start_new_session=True)
    # the shuffle writes the set straight under the output's run prefix (steps/shuffle.build)
    wait_for(lambda: any(e.rel.endswith(".dgl") for e in Storage().listing(f"{s3_bucket}/sets")), 300,
             "the shuffle to write partition files to the store")
    assert proc.poll() is None, (tmp_path / "run1.log").read_text()
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    left = [e.rel for e in Storage().listing(f"{s3_bucket}/sets")]
    assert left and all(r.startswith("rmat/.runs/") for r in left), left  # no config: nothing a reader takes for a set
    assert not [e for e in Storage().listing(f"{s3_bucket}/cache/shuffle") if e.rel.endswith("manifest.json")]
    assert len(Storage().listing(f"{s3_bucket}/scratch")) > 1  # the killed shuffle's buckets and its lease record

    time.sleep(4)  # the killed run's lease expires
    resumed = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "cached: ingest, assign" in resumed.stdout, resumed.stdout
    assert Storage().listing(f"{s3_bucket}/scratch") == []  # the resumed shuffle deleted the killed one's scratch
    reference = subprocess.run([*cmd[:-1], str(local)], capture_output=True, text=True, env=subprocess_env(),
                               timeout=600)
    assert reference.returncode == 0, reference.stderr
    fetch(f"{s3_bucket}/sets/rmat/rmat.json", tmp_path / "fetched")
    assert tree_bytes(tmp_path / "fetched") == tree_bytes(tmp_path / "out", REPORT)

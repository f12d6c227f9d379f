"""Shared by the pipeline tests (test_flow*, test_cluster*, test_deploy*): Prefect's environment for the test
process, a session-wide Dask cluster, and helpers to run the pipeline and compare outputs.

Importing this module sets Prefect's environment before Prefect is imported: telemetry off and a temporary
PREFECT_HOME, so that tests never touch ~/.prefect and never collide.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import pytest
import yaml

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="graphshard-test-prefect-"))
from graphshard.flows.env import prefect_environment  # noqa: E402

prefect_environment()

REPO = Path(__file__).resolve().parents[1]
STATES = ("ingest", "assign", "shuffle", "validate", "publish")


@pytest.fixture(scope="session")
def dask_address():
    """One LocalCluster for every in-process pipeline test (runs point cluster.address at it)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="2GB", dashboard_address=":0") as cluster:
        yield cluster.scheduler_address


def write_config(folder: Path, metadata: Path, address: str | None = None, **changes) -> Path:
    """configs/example.yaml with input/output/work pointed into `folder` (and the shared cluster), plus changes."""
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data["input"]["metadata"] = str(metadata)
    data["output"]["dir"] = str(folder / "out")
    data["work_dir"] = str(folder / "work")
    if address:
        data["cluster"] = {"address": address}
    for key, value in changes.items():
        data[key] = value
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def run(config: Path, overrides: list[str] | None = None, from_step: str | None = None,
        force: list[str] | None = None) -> dict:
    """The pipeline in this process; returns the flow's summary (with each step's final state name)."""
    from graphshard.flows.pipeline import run_pipeline

    return run_pipeline(config, overrides, from_step, force)


def tree_bytes(folder: Path, skip: tuple[str, ...] = ()) -> dict[str, bytes]:
    """Every file under `folder` (relative name -> bytes), except names in `skip`."""
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name not in skip}


def copy_graph(metadata: Path, dest: Path) -> Path:
    """A private copy of a shared test graph (safe to edit); returns its metadata.json."""
    shutil.copytree(metadata.parent, dest)
    return dest / metadata.name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout: float, what: str, interval: float = 0.2):
    """Poll until `predicate()` is truthy; fail the test with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")

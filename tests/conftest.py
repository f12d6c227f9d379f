"""Shared fixtures: small generated chunked graphs, made once per test session and cached by their arguments."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Callable, Iterator

import pytest

from graphshard.generate import GENERATORS

# Command log files (graphshard.logs) of the test session go to a temporary folder, not ~/.graphshard.
os.environ.setdefault("GRAPHSHARD_LOG_DIR", tempfile.mkdtemp(prefix="graphshard-test-logs-"))
# So does graphshard's home: the background Prefect server a `graphshard run` subprocess starts is the session's own
# (stopped at the end by `_stop_background_server`), never one under ~/.graphshard.
os.environ["GRAPHSHARD_HOME"] = tempfile.mkdtemp(prefix="graphshard-test-home-")


@pytest.fixture(scope="session", autouse=True)
def _stop_background_server():
    """No test leaves a Prefect server running: stop the session's background server, if a run started one, and
    the temporary servers of in-process runs in ephemeral mode, after their queued flow-run logs are sent. These are
    stopped here, while pytest's output streams are still open: at interpreter exit, Prefect's goodbye line went to a
    closed stream as a logging traceback."""
    yield
    import logging

    from graphshard.pipeline import prefect_server

    if "prefect.logging.handlers" in sys.modules:
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=10)  # flow-run logs still queued go to their server while it still runs
    # whatever Prefect's log worker still sends at interpreter exit goes to a stopped server: its "Error logging to
    # API" line would land after pytest's summary (the stdlib's switch for handler errors silences it)
    logging.raiseExceptions = False
    prefect_server.stop(force=True)
    if "prefect.server.api.server" in sys.modules:
        from prefect.server.api.server import SubprocessASGIServer

        for instance in list(SubprocessASGIServer._instances.values()):
            instance.stop()


@pytest.fixture(scope="session")
def make_graph(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    """`make_graph(kind, **kwargs) -> metadata.json path` for kind in {"rmat", "mag"}; same arguments, same graph.

    The graphs are shared by the whole session: treat them as read-only (copy one before corrupting it).
    """
    base = tmp_path_factory.mktemp("graphs")
    cache: dict[str, Path] = {}

    def make(kind: str, **kwargs) -> Path:
        key = json.dumps([kind, kwargs], sort_keys=True, default=str)
        if key not in cache:
            name = f"{kind}-{hashlib.blake2b(key.encode(), digest_size=6).hexdigest()}"
            cache[key] = GENERATORS[kind](base / name, **kwargs)
        return cache[key]

    return make


@pytest.fixture(scope="session")
def rmat_small(make_graph) -> Path:
    """Homogeneous R-MAT graph: 2,000 nodes, 20,000 edges, 3 chunks, numpy files (metadata.json path)."""
    return make_graph("rmat", nodes=2000, edges=20000, chunks=3)


@pytest.fixture(scope="session")
def mag_small(make_graph) -> Path:
    """Heterogeneous MAG-like graph: 4 node types (2,633 nodes), 8 edge types, 2 chunks (metadata.json path)."""
    return make_graph("mag", papers=1000, chunks=2)


@pytest.fixture(scope="session")
def _session_cluster():
    """One small LocalCluster for the whole session (2 workers x 1 thread, like the target machine). Defined here
    once: a session fixture imported into several test modules is one cluster per module, all idle until the
    session ends (six of them took a core of the 2-core CI machine)."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, memory_limit="2GB", dashboard_address=":0",
                      processes=True) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def dask_cluster_client(_session_cluster):
    """A client of the session's cluster, for library calls that take one."""
    from distributed import Client

    with Client(_session_cluster) as client:
        yield client


@pytest.fixture(scope="session")
def dask_address(_session_cluster) -> str:
    """The session cluster's scheduler address, for pipeline runs (`cluster.address`)."""
    return _session_cluster.scheduler_address


@pytest.fixture(scope="session")
def s3_server():
    """moto's S3 server on a free 127.0.0.1 port for the whole session (tests/s3_helpers.py); no environment set."""
    from s3_helpers import process_server

    with process_server() as server:
        yield server


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (needs root and mount rights; skipped otherwise)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                                                        capture_output=True).returncode != 0:
        pytest.skip("cannot mount a small tmpfs here (needs root): the monkeypatched tests cover the wording")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.fixture
def s3_env(s3_server, monkeypatch: pytest.MonkeyPatch):
    """The AWS environment pointing at the session's S3 server with its dummy credentials, for this test only."""
    from s3_helpers import AWS_VARS

    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    for name, value in s3_server.env().items():
        monkeypatch.setenv(name, value)
    return s3_server


@pytest.fixture
def s3_bucket(s3_env) -> str:
    """A fresh bucket on the session's S3 server (environment set as s3_env does): `s3://<name>`."""
    return s3_env.new_bucket()


@pytest.fixture(scope="session")
def multihost_rig(tmp_path_factory: pytest.TempPathFactory):
    """The multi-host rig (tests/multihost_rig.py) for the whole session: hosts s3, scheduler, worker1..3 in their
    own network namespaces; skipped with one line where it cannot run (not root, no `ip netns`)."""
    from multihost_rig import Rig, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with Rig(tmp_path_factory.mktemp("multihost")) as rig:
        yield rig

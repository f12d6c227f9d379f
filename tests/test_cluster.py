"""The compose topology without Docker: the same commands docker-compose.yml runs (`prefect server start`,
`dask scheduler`, two `dask worker`s) as local processes on 127.0.0.1, and configs/cluster.yaml run against them end
to end, visible in the Prefect API (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from flow_helpers import REPO, Processes, flow_run_states, free_port, server_env, start_prefect_server, wait_for

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def test_compose_file_names_the_commands_started_here():
    compose = yaml.safe_load((REPO / "docker-compose.yml").read_text())["services"]
    assert compose["prefect-server"]["command"].startswith("prefect server start")
    assert compose["scheduler"]["command"].startswith("dask scheduler")
    assert compose["worker-1"]["command"].startswith("dask worker tcp://scheduler:8786")
    assert compose["worker-2"]["command"] == compose["worker-3"]["command"] == compose["worker-1"]["command"]
    # the rig's topology (tests/multihost_rig.py): an S3 host, and workers with no shared data volume
    assert "moto" in compose["s3"]["image"]
    assert all(not compose[w].get("volumes") and compose[w]["tmpfs"] == ["/tmp"] and
               compose[w]["environment"]["AWS_ENDPOINT_URL"] == "http://s3:5000" for w in ("worker-1", "worker-3"))
    assert compose["prefect-worker"]["command"].startswith("prefect worker start --pool graphshard")
    assert "DASK_DISTRIBUTED__DASHBOARD__LINK" in compose["prefect-worker"]["environment"]
    cluster = yaml.safe_load((REPO / "configs" / "cluster.yaml").read_text())
    assert cluster["cluster"]["address"] == "tcp://scheduler:8786"
    assert all(where.startswith("s3://graphshard/") for where in
               (cluster["input"]["metadata"], cluster["output"]["dir"], cluster["work_dir"]))


def test_cluster_config_on_scheduler_workers_and_prefect_server(tmp_path, rmat_small):
    procs = Processes(tmp_path / "logs")
    try:
        api = start_prefect_server(procs, tmp_path / "prefect-server")
        port, dash = free_port(), free_port()
        env = server_env(tmp_path / "client-home", api)
        procs.start("scheduler", [str(BIN / "dask"), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                  "--dashboard-address", f"127.0.0.1:{dash}"], env)
        address = f"tcp://127.0.0.1:{port}"
        for i in (1, 2):
            procs.start(f"worker-{i}", [str(BIN / "dask"), "worker", address, "--nworkers", "1", "--nthreads", "1",
                                        "--memory-limit", "2GB"], env)

        def two_workers():
            procs.check_alive()
            from distributed import Client

            try:
                with Client(address, timeout=5) as c:
                    return len(c.scheduler_info()["workers"]) == 2
            except OSError:
                return False

        wait_for(two_workers, 120, "two Dask workers", interval=1.0)
        env["DASK_DISTRIBUTED__DASHBOARD__LINK"] = f"http://127.0.0.1:{dash}/status"
        sets = [f"cluster.address={address}", f"input.metadata={rmat_small}", f"output.dir={tmp_path / 'out'}",
                f"work_dir={tmp_path / 'work'}"]
        args = [str(BIN / "graphshard"), "run", str(REPO / "configs" / "cluster.yaml")]
        for s in sets:
            args += ["--set", s]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        assert f"Dask dashboard: http://127.0.0.1:{dash}/status" in done.stdout + done.stderr
        assert "Starting temporary server" not in done.stdout + done.stderr  # it used the running server
        report = json.loads((tmp_path / "out" / "report.json").read_text())
        assert report["ok"] and report["quality"]["num_parts"] == 4

        flow_run, tasks = flow_run_states(api)
        assert flow_run["state"]["type"] == "COMPLETED"
        assert tasks == {"ingest": "Completed", "assign": "Completed", "shuffle": "Completed",
                         "validate": "Completed", "publish": "Completed"}
        artifacts = {a["key"] for a in __import__("flow_helpers").http_json(
            f"{api}/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run["id"]]}}})}
        assert {"graphshard-dask-dashboard", "graphshard-summary", "graphshard-partitions",
                "graphshard-shuffle-progress"} <= artifacts
    finally:
        procs.stop()


def test_a_scheduler_without_workers_is_one_line():
    """Every task would wait on a scheduler no worker joined: the run ended in 'no worker took the constant ...'
    after four scatter warnings. Now one line once `cluster.connect_timeout` has passed."""
    from distributed import LocalCluster

    from graphshard.cluster import ClusterSpec, dask_client
    from graphshard.errors import GraphshardError

    with LocalCluster(n_workers=0, dashboard_address=":0") as cluster:
        with pytest.raises(GraphshardError) as err:
            with dask_client(ClusterSpec(address=cluster.scheduler_address, connect_timeout=1)):
                pass
    assert str(err.value) == (f"cluster.address (--scheduler): the Dask scheduler {cluster.scheduler_address} has no "
                              f"workers (waited 1 s); start `dask worker {cluster.scheduler_address}` on the worker "
                              "hosts first (a run may wait longer for them: cluster.connect_timeout)")

"""Deployments against a real `prefect server start` on 127.0.0.1: `graphshard serve`, and prefect.yaml with
`prefect deploy` + a process worker; `prefect deployment run 'graphshard/partition'` runs the flow to Completed and
the run's task states are read back from the Prefect API (slow)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from flow_helpers import (
    REPO,
    Processes,
    flow_run_states,
    http_json,
    run_log_messages,
    server_env,
    start_prefect_server,
    wait_for,
    write_config,
)

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
STEPS = {"ingest": "Completed", "assign": "Completed", "shuffle": "Completed", "validate": "Completed",
         "publish": "Completed"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    procs = Processes(tmp_path_factory.mktemp("deploy-logs"))
    home = tmp_path_factory.mktemp("prefect-server")
    try:
        yield procs, start_prefect_server(procs, home), tmp_path_factory.mktemp("client-home")
    finally:
        procs.stop()


def _deployment(api: str) -> dict | None:
    try:
        return http_json(f"{api}/deployments/name/graphshard/partition")
    except OSError:
        return None


def _run_deployment(api: str, env: dict, config: Path) -> str:
    """`prefect deployment run ... --watch`; returns the flow run id."""
    done = subprocess.run([str(BIN / "prefect"), "deployment", "run", "graphshard/partition",
                           "--param", f"config={config}", "--param", 'overrides=["num_parts=3"]',
                           "--watch", "--watch-timeout", "600"],
                          env=env, capture_output=True, text=True, timeout=700, cwd=REPO)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    runs = http_json(f"{api}/flow_runs/filter", {"deployments": {"id": {"any_": [_deployment(api)["id"]]}},
                                                 "sort": "EXPECTED_START_TIME_DESC", "limit": 1})
    return runs[0]["id"]


def _check_run(api: str, run_id: str, out: Path) -> None:
    flow_run, tasks = flow_run_states(api, run_id)
    assert flow_run["state"]["type"] == "COMPLETED", flow_run["state"]
    assert tasks == STEPS
    assert json.loads((out / "rmat.json").read_text())["num_parts"] == 3
    assert json.loads((out / "report.json").read_text())["ok"]
    wanted = f"Prefect UI: {api.removesuffix('/api')}/runs/flow-run/{run_id}"  # the run's page, logged by the run
    logs = run_log_messages(api, run_id, wanted)
    assert wanted in logs, logs[:10]


def test_graphshard_serve_and_deployment_run(server, tmp_path, rmat_small):
    procs, api, home = server
    env = server_env(home, api)
    serve = procs.start("serve", [str(BIN / "graphshard"), "serve"], env, cwd=REPO)
    wait_for(lambda: procs.check_alive() or _deployment(api), 120, "the served deployment")
    config = write_config(tmp_path, rmat_small)
    run_id = _run_deployment(api, env, config)
    _check_run(api, run_id, tmp_path / "out")
    serve.terminate()  # SIGTERM, as a service manager stops it: a clean stop, as on Ctrl-C
    assert serve.wait(timeout=30) == 0, procs.log("serve")[-3000:]
    assert "never awaited" not in procs.log("serve") and "Traceback" not in procs.log("serve"), procs.log("serve")


def test_prefect_yaml_deploy_and_process_worker(server, tmp_path, rmat_small):
    procs, api, home = server
    env = server_env(home, api)
    prefect = str(BIN / "prefect")
    for args in (["work-pool", "create", "graphshard", "--type", "process", "--overwrite"],
                 ["--no-prompt", "deploy", "--all"]):
        done = subprocess.run([prefect, *args], env=env, capture_output=True, text=True, timeout=300, cwd=REPO)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    deployment = _deployment(api)
    assert deployment["work_pool_name"] == "graphshard"
    assert deployment["parameters"] == {"config": "configs/example.yaml", "overrides": []}
    procs.start("worker", [prefect, "worker", "start", "--pool", "graphshard"], env, cwd=tmp_path)
    config = write_config(tmp_path, rmat_small)
    run_id = _run_deployment(api, env, config)
    _check_run(api, run_id, tmp_path / "out")

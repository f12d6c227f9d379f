"""Shared by the pipeline tests (test_flow*, test_cluster*, test_deploy*): Prefect's environment for the test
process and helpers to run the pipeline and compare outputs.

Importing this module sets Prefect's environment before Prefect is imported: telemetry off, a temporary
PREFECT_HOME and ephemeral mode, so that tests never touch ~/.prefect and never collide.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

import yaml

os.environ.setdefault("PREFECT_HOME", tempfile.mkdtemp(prefix="graphshard-test-prefect-"))
# In-process runs (`run`, `cli.main(["run", ...])`) use ephemeral mode: Prefect's settings are fixed when it is first
# imported here. `graphshard run` subprocesses may drop this to use the session's background server (subprocess_env).
os.environ.setdefault("GRAPHSHARD_PREFECT", "ephemeral")
from graphshard.pipeline.prefect_env import prefect_environment  # noqa: E402

prefect_environment()

REPO = Path(__file__).resolve().parents[1]
STATES = ("ingest", "assign", "shuffle", "validate", "publish")


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
    from graphshard.pipeline.flow import run_pipeline

    return run_pipeline(config, overrides, from_step, force)


def subprocess_env(**changes: str) -> dict:
    """The environment of a `graphshard run` subprocess: the session's background Prefect server (started by the
    first such run, stopped at the end of the session), Prefect's state not shared with this process."""
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PREFECT_API_URL", "GRAPHSHARD_PREFECT",
                                                               "PREFECT_LOGGING_SETTINGS_PATH")}
    env.update(changes)
    return env


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


def http_json(url: str, body: dict | None = None, timeout: float = 10.0):
    """GET (or POST `body` as JSON) a URL on 127.0.0.1 and decode the JSON answer."""
    import json
    import urllib.request

    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        return json.loads(resp.read() or b"null")


def server_env(home: Path, api_url: str | None) -> dict:
    """The environment of a process that talks to (or is) a Prefect server on 127.0.0.1."""
    env = dict(os.environ)
    env.update(DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false", PREFECT_HOME=str(home))
    if api_url:
        env["PREFECT_API_URL"] = api_url
    return env


class Processes:
    """Long-running processes of a test (servers, workers), each in its own session, all killed at the end."""

    def __init__(self, logs: Path):
        self.logs, self.procs = logs, []
        logs.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, args: list[str], env: dict, cwd: Path | None = None):
        import subprocess

        log = open(self.logs / f"{name}.log", "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=cwd, start_new_session=True)
        self.procs.append((name, proc))
        return proc

    def log(self, name: str) -> str:
        return (self.logs / f"{name}.log").read_text()

    def check_alive(self) -> None:
        for name, proc in self.procs:
            assert proc.poll() is None, f"{name} exited ({proc.returncode}):\n{self.log(name)[-3000:]}"

    def stop(self) -> None:
        import signal

        for _, proc in reversed(self.procs):
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for _, proc in reversed(self.procs):
            try:
                proc.wait(timeout=20)
            except Exception:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def start_prefect_server(procs: Processes, home: Path) -> str:
    """`prefect server start` on 127.0.0.1 and a free port; returns the API URL once /api/health answers."""
    import sys

    port = free_port()
    api = f"http://127.0.0.1:{port}/api"
    prefect = str(Path(sys.executable).with_name("prefect"))
    procs.start("prefect-server", [prefect, "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                server_env(home, None))

    def healthy():
        procs.check_alive()
        try:
            return http_json(f"{api}/health", timeout=2) is True
        except OSError:
            return False

    wait_for(healthy, 180, "prefect server start", interval=1.0)
    return api


def flow_run_states(api: str, flow_run_id: str | None = None) -> tuple[dict, dict[str, str]]:
    """(the flow run, {task name: final state name}) of a flow run (the latest one when no id is given)."""
    if flow_run_id is None:
        runs = http_json(f"{api}/flow_runs/filter", {"sort": "EXPECTED_START_TIME_DESC", "limit": 1})
        flow_run = runs[0]
    else:
        flow_run = http_json(f"{api}/flow_runs/{flow_run_id}")
    tasks = http_json(f"{api}/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run["id"]]}}})
    return flow_run, {t["name"].rsplit("-", 1)[0]: t["state"]["name"] for t in tasks}


def run_log_messages(api: str, flow_run_id: str, wanted: str, timeout: float = 30.0) -> list[str]:
    """The flow run's log messages once `wanted` is among them (the server stores logs as they arrive in batches),
    or all of them after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        entries = http_json(f"{api}/logs/filter", {"logs": {"flow_run_id": {"any_": [flow_run_id]}}})
        logs = [e["message"] for e in entries]
        if wanted in logs or time.monotonic() > deadline:
            return logs
        time.sleep(0.5)

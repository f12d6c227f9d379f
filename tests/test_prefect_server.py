"""graphshard's background Prefect server: which API a run uses (explicit URL, ephemeral opt-out, background server),
and, end to end (slow), a run that starts the server, later runs that reuse it, runs visible through Prefect's API,
two concurrent starts making one server, and `graphshard server status|stop`."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from flow_helpers import http_json, subprocess_env, write_config

from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.pipeline import prefect_env, prefect_server

GRAPHSHARD = [sys.executable, "-m", "graphshard.cli"]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def clean_env(monkeypatch, tmp_path):
    """Prefect/graphshard variables of this test only (restored after it); a private graphshard home."""
    for name in ("PREFECT_API_URL", "PREFECT_PROFILE", "PREFECT_PROFILES_PATH", "GRAPHSHARD_PREFECT",
                 "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE", "PREFECT_CLIENT_CSRF_SUPPORT_ENABLED",
                 "PREFECT_LOGGING_SETTINGS_PATH"):
        # set, then delete: monkeypatch records each, so what `connect()` writes into os.environ is undone too
        # (a bare delenv of an absent name records nothing, and a profile's API URL leaked into later tests)
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    monkeypatch.setenv("GRAPHSHARD_HOME", str(tmp_path / "gs-home"))
    return monkeypatch


def test_explicit_api_url_wins_and_is_checked(clean_env):
    clean_env.setenv("PREFECT_API_URL", f"http://127.0.0.1:{_closed_port()}/api")
    with pytest.raises(GraphshardError, match="no Prefect server answers"):
        prefect_env.connect()
    # no background server started
    assert prefect_server.recorded() is None and not prefect_server.server_home().exists()


def test_api_url_with_a_password_is_checked_with_it_and_never_shown(clean_env):
    """A PREFECT_API_URL with user:password (a server behind a proxy): the health check sends them as Prefect's
    client does (urllib dropped them: 'Name or service not known'), and no line shows the password. A URL without
    /api gets a line saying where the API is."""
    import base64
    import http.server
    import threading

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            good = self.headers.get("Authorization") == "Basic " + base64.b64encode(b"alice:s3cr3tpw").decode()
            code = 200 if self.path == "/api/health" and good else 401 if self.path == "/api/health" else 404
            self.send_response(code)
            self.end_headers()
            self.wfile.write(b"true" if code == 200 else b"")

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        clean_env.setenv("PREFECT_API_URL", f"http://alice:s3cr3tpw@127.0.0.1:{port}/api")
        prefect_env.check_api()
        for url, words in ((f"http://alice:wrong-pw@127.0.0.1:{port}/api", "the server refused the request (HTTP 401)"),
                           (f"http://alice:s3cr3tpw@127.0.0.1:{port}", "a Prefect server's API is at its /api path")):
            clean_env.setenv("PREFECT_API_URL", url)
            with pytest.raises(GraphshardError) as err:
                prefect_env.check_api()
            assert words in str(err.value) and "pw@" not in str(err.value) and "***@127.0.0.1" in str(err.value)
    finally:
        server.shutdown()


def test_graphshard_home_naming_a_file_is_one_line(clean_env, tmp_path, capsys):
    """`server start` with GRAPHSHARD_HOME naming a file was an internal error (NotADirectoryError)."""
    from graphshard.cli import main

    clean_env.setenv("GRAPHSHARD_HOME", str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")
    for action in ("start", "status", "stop"):
        assert main(["server", action]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"graphshard server: error: GRAPHSHARD_HOME {tmp_path / 'a-file'}: a file, not a folder; point "
                       "it at a folder (graphshard keeps the Prefect server's state and the logs there), or unset it "
                       "for ~/.graphshard"]
    clean_env.setenv("GRAPHSHARD_HOME", str(tmp_path / "a-file" / "below"))  # cannot be made: one line too
    assert main(["server", "start"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"GRAPHSHARD_HOME {tmp_path / 'a-file' / 'below'}: cannot create " in err[0], err


def test_api_url_of_the_active_profile_counts_as_explicit(clean_env, tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/api"
    home = tmp_path / "prefect-home"
    home.mkdir()
    (home / "profiles.toml").write_text(f'active = "mine"\n[profiles.mine]\nPREFECT_API_URL = "{url}"\n')
    assert prefect_env.profile_api_url() == url
    with pytest.raises(GraphshardError, match=re.escape(url)):
        prefect_env.connect()
    assert not prefect_server.server_home().exists()


def test_ephemeral_opt_out_and_bad_mode(clean_env, tmp_path):
    clean_env.setenv("GRAPHSHARD_PREFECT", "ephemeral")
    assert prefect_env.connect(tmp_path / "work") is None
    assert os.environ["PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"] == "true" and "PREFECT_API_URL" not in os.environ
    assert not prefect_server.server_home().exists()
    with pytest.raises(GraphshardError, match="outlives"):
        prefect_env.connect(ephemeral_ok=False)  # `graphshard serve` needs a real server
    clean_env.setenv("GRAPHSHARD_PREFECT", "temporary")
    with pytest.raises(GraphshardError, match=r"GRAPHSHARD_PREFECT='temporary': expected one of server, ephemeral"):
        prefect_env.connect()


EPHEMERAL_ON_A_TAKEN_PORT = """
import socket, sys
from pathlib import Path
from graphshard.pipeline import prefect_env
prefect_env.connect(Path(sys.argv[1]))
from prefect.server.api.server import SubprocessASGIServer
with socket.socket() as taken:
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    print(SubprocessASGIServer(port=taken.getsockname()[1])._run_uvicorn_command().wait())
"""


def test_ephemeral_server_failing_to_bind_logs_to_a_file_not_the_terminal(tmp_path):
    """Prefect starts its temporary server on a random port and tries another when uvicorn exits with 3; what uvicorn
    says then (its error and a traceback) goes to <work>/prefect/server.log, not the run's stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["GRAPHSHARD_PREFECT"] = "ephemeral"
    done = subprocess.run([sys.executable, "-c", EPHEMERAL_ON_A_TAKEN_PORT, str(tmp_path / "work")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.stdout.strip() == "3" and done.stderr == ""  # uvicorn's exit status for a failed start
    assert "address already in use" in (tmp_path / "work" / "prefect" / "server.log").read_text()


def test_status_when_no_server_runs(clean_env, capsys):
    assert main(["server", "status"]) == 3
    assert "no Prefect server running" in capsys.readouterr().out
    assert main(["server", "stop"]) == 0
    assert "no Prefect server was running" in capsys.readouterr().out


def test_stop_is_refused_while_a_graphshard_process_uses_the_server(clean_env, capsys):
    """`server stop` during a run left the run retrying for ~2.5 minutes, then failing with an internal error."""
    import json

    import psutil

    server = subprocess.Popen(["sleep", "60"], start_new_session=True)  # stands for the server's process
    user = subprocess.Popen(["sleep", "60"])  # stands for a `graphshard run` using it
    try:
        home = prefect_server.server_home()
        (home / "users").mkdir(parents=True)
        (home / "server.json").write_text(json.dumps({"pid": server.pid, "port": 1,
                                                      "create_time": psutil.Process(server.pid).create_time()}))
        (home / "users" / f"{user.pid}.json").write_text(json.dumps({
            "pid": user.pid, "create_time": psutil.Process(user.pid).create_time(), "command": "graphshard run x"}))
        (home / "users" / "1.json").write_text(json.dumps({"pid": 1, "create_time": 0.0, "command": "gone"}))
        assert main(["server", "stop"]) == 2
        err = capsys.readouterr().err
        assert f"in use by 1 graphshard process(es) (pid {user.pid}: graphshard run x)" in err and "--force" in err
        assert server.poll() is None and not (home / "users" / "1.json").exists()  # a dead user's record goes
        assert main(["server", "stop", "--force"]) == 0
        assert server.wait(timeout=30) is not None
    finally:
        for proc in (server, user):
            proc.kill()
            proc.wait()


def _cli(args: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([*GRAPHSHARD, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def own_home(tmp_path, monkeypatch):
    """A graphshard home of this test; its server is stopped afterwards, whatever happened."""
    home = tmp_path / "gs-home"
    monkeypatch.setenv("GRAPHSHARD_HOME", str(home))
    yield subprocess_env(GRAPHSHARD_HOME=str(home))
    prefect_server.stop(force=True)


FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}


def _recorded_task_runs(api_url: str, flow_run_id: str, expected: int, timeout: float = 60.0) -> list[dict]:
    """The flow run's task runs once the server has recorded all `expected` of them, each with a final state (its
    task-run recorder writes task runs and their states from the events it received, in batches every few seconds:
    a quick look may find only some of them)."""
    deadline = time.monotonic() + timeout
    while True:
        tasks = http_json(f"{api_url}/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}})
        done = len(tasks) >= expected and all(t["state"] and t["state"]["type"] in FINAL for t in tasks)
        if done or time.monotonic() > deadline:
            return tasks
        time.sleep(0.5)


@pytest.mark.slow
def test_run_starts_reuses_and_stops_the_background_server(tmp_path, rmat_small, own_home):
    starts = [subprocess.Popen([*GRAPHSHARD, "server", "start"], env=own_home, stdout=subprocess.PIPE, text=True)
              for _ in range(2)]  # concurrent first uses: the lock lets one of them start the server
    outs = [p.communicate(timeout=300)[0] for p in starts]
    assert all(p.returncode == 0 for p in starts), outs
    pids = {re.search(r"pid (\d+)", o).group(1) for o in outs}
    assert len(pids) == 1 and sorted("already running" in o for o in outs) == [False, True], outs
    srv = prefect_server.recorded()
    assert srv is not None and str(srv.pid) == pids.pop()

    config = write_config(tmp_path, rmat_small)
    first = _cli(["run", str(config)], own_home)
    assert first.returncode == 0, first.stderr[-3000:]
    again = _cli(["run", str(config)], own_home)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "cached: ingest, assign, shuffle, validate, publish" in again.stdout
    assert prefect_server.recorded() == srv  # the same server served both runs
    assert "Traceback" not in first.stderr + again.stderr

    runs = http_json(f"{srv.api_url}/flow_runs/filter", {"sort": "EXPECTED_START_TIME_ASC"})
    assert [r["state"]["type"] for r in runs] == ["COMPLETED", "COMPLETED"]
    assert f"prefect:    {srv.url}/runs/flow-run/{runs[0]['id']}\n" in first.stdout  # the run's page in the UI
    tasks = _recorded_task_runs(srv.api_url, runs[1]["id"], expected=5)
    assert sorted(t["state"]["name"] for t in tasks) == ["Cached"] * 5
    # the process exits with its heap frozen (cli.console): the run's last log lines still reached the API
    logs = http_json(f"{srv.api_url}/logs/filter", {"logs": {"flow_run_id": {"any_": [runs[1]["id"]]}}})
    assert any(entry["message"].startswith("graphshard: 4 partitions") for entry in logs), [e["message"] for e in logs]
    assert any("Finished in state Completed" in entry["message"] for entry in logs)

    status = _cli(["server", "status"], own_home)
    assert status.returncode == 0 and f"pid {srv.pid}" in status.stdout and srv.url in status.stdout
    stop = _cli(["server", "stop"], own_home)
    assert stop.returncode == 0 and f"stopped (pid {srv.pid}" in stop.stdout
    assert not srv.alive() and not srv.healthy()
    assert _cli(["server", "status"], own_home).returncode == 3
    log = prefect_server.log_path()
    assert log.parent == Path(own_home["GRAPHSHARD_HOME"]) / "prefect" and log.exists()

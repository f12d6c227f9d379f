"""graphshard's own local Prefect server: started in the background on first use, reused by later runs.

Prefect's ephemeral mode starts a temporary API server in every process (~15-20 s here); a server that outlives the
run pays that once. State lives under `$GRAPHSHARD_HOME/prefect` (default `~/.graphshard/prefect`): the server's
PREFECT_HOME (SQLite database), `server.json` (pid, start time, port), `server.log`, and `server.lock`, held while a
process looks for the server and starts it, so that two concurrent runs start one server. It listens on 127.0.0.1 only.
This module does not import Prefect (the server is a `python -m prefect server start` child process).
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterator

import psutil

from graphshard.errors import GraphshardError

START_TIMEOUT = 180.0  # seconds for a cold server (first start creates its database) to answer its health check
STOP_TIMEOUT = 20.0
HOST = "127.0.0.1"


def graphshard_home() -> Path:
    """`$GRAPHSHARD_HOME`, else `~/.graphshard`; one line when it names a file (the server's state goes in it)."""
    home = Path(os.environ.get("GRAPHSHARD_HOME") or Path.home() / ".graphshard")
    if home.exists() and not home.is_dir():
        raise GraphshardError(f"GRAPHSHARD_HOME {home}: a file, not a folder; point it at a folder (graphshard keeps "
                              "the Prefect server's state and the logs there), or unset it for ~/.graphshard")
    return home


def server_home() -> Path:
    """The background server's folder (its PREFECT_HOME, pid/port file, log, lock)."""
    return graphshard_home() / "prefect"


@dataclass(frozen=True)
class Server:
    """A background server as recorded in `server.json`."""

    pid: int
    create_time: float  # the process's start time: a recycled pid is not mistaken for the server
    port: int

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def api_url(self) -> str:
        return f"{self.url}/api"

    def alive(self) -> bool:
        try:
            return abs(psutil.Process(self.pid).create_time() - self.create_time) < 1.0
        except psutil.Error:
            return False

    def healthy(self, timeout: float = 2.0) -> bool:
        try:
            with urllib.request.urlopen(f"{self.api_url}/health", timeout=timeout) as resp:
                return json.loads(resp.read() or b"null") is True
        except (OSError, ValueError):
            return False


def _state_file() -> Path:
    return server_home() / "server.json"


def log_path() -> Path:
    return server_home() / "server.log"


def recorded() -> Server | None:
    """The server `server.json` names, if its process still runs."""
    try:
        server = Server(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return server if server.alive() else None


@contextmanager
def _locked() -> Iterator[None]:
    """Hold `server.lock` (one process at a time looks for, starts or stops the server)."""
    try:
        server_home().mkdir(parents=True, exist_ok=True)
        lock = open(server_home() / "server.lock", "a")
    except OSError as err:
        raise GraphshardError(f"GRAPHSHARD_HOME {graphshard_home()}: cannot create {server_home()} ({err.strerror}); "
                              "point GRAPHSHARD_HOME at a folder you can write (graphshard keeps the Prefect "
                              "server's state there)") from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def server_environment(port: int) -> dict[str, str]:
    """The server process's environment: its own PREFECT_HOME, telemetry off, and its own address as the API its UI
    talks to (Prefect's UI otherwise asks 127.0.0.1:4200, the default port, whatever port the server listens on)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(server_home()), DO_NOT_TRACK="1", PREFECT_SERVER_ANALYTICS_ENABLED="false",
               PREFECT_SERVER_API_HOST=HOST, PREFECT_SERVER_API_PORT=str(port),
               PREFECT_UI_API_URL=f"http://{HOST}:{port}/api")
    return env


def _spawn() -> Server:
    """Start `prefect server start` detached (own session, output to server.log) and record it."""
    port = _free_port()
    with open(log_path(), "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "prefect", "server", "start", "--host", HOST,
                                 "--port", str(port)], stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, env=server_environment(port), cwd=server_home(),
                                start_new_session=True)
    server = Server(proc.pid, psutil.Process(proc.pid).create_time(), port)
    _state_file().write_text(json.dumps(asdict(server)))
    return server


def start() -> tuple[Server, bool]:
    """The running server, or a newly started one (True); does not wait for it to answer (see `wait`)."""
    with _locked():
        server = recorded()
        if server is not None:
            return server, False
        return _spawn(), True


def wait(server: Server, timeout: float = START_TIMEOUT) -> Server:
    """Block until `server` answers its health check; one line naming its log if it dies or never answers."""
    deadline = time.monotonic() + timeout
    while not server.healthy():
        if not server.alive():
            raise GraphshardError(f"the background Prefect server (pid {server.pid}) exited while starting; see "
                                  f"{log_path()} (or set GRAPHSHARD_PREFECT=ephemeral to run without it)")
        if time.monotonic() > deadline:
            raise GraphshardError(f"the background Prefect server (pid {server.pid}, {server.url}) did not answer "
                                  f"within {timeout:g} s; see {log_path()} or stop it with `graphshard server stop`")
        time.sleep(0.2)
    return server


def ensure(pending: Server | None = None, timeout: float = START_TIMEOUT) -> Server:
    """A healthy background server: `pending` (from `start`) or the running/a new one; one that died while starting
    (e.g. its port was taken meanwhile) is replaced once."""
    server = pending or start()[0]
    try:
        return wait(server, timeout)
    except GraphshardError:
        if server.alive():
            raise
        with _locked():
            if recorded() is None:
                _state_file().unlink(missing_ok=True)
        return wait(start()[0], timeout)


def _users_dir() -> Path:
    return server_home() / "users"


def register_user() -> None:
    """Record this process as one that uses the background server until it exits (`stop` waits for none of them:
    it refuses while one lives, since a run whose server went away retried for minutes, then failed)."""
    _users_dir().mkdir(parents=True, exist_ok=True)
    me = psutil.Process()
    path = _users_dir() / f"{me.pid}.json"
    path.write_text(json.dumps({"pid": me.pid, "create_time": me.create_time(), "command": " ".join(sys.argv)}))
    atexit.register(path.unlink, missing_ok=True)


def users() -> list[dict]:
    """The live processes that use the background server (records of dead ones are removed)."""
    found = []
    for path in sorted(_users_dir().glob("*.json")) if _users_dir().is_dir() else []:
        try:
            user = json.loads(path.read_text())
            alive = abs(psutil.Process(user["pid"]).create_time() - user["create_time"]) < 1.0
        except (OSError, ValueError, KeyError, psutil.Error):
            alive = False
        if alive:
            found.append(user)
        else:
            path.unlink(missing_ok=True)
    return found


def stop(timeout: float = STOP_TIMEOUT, force: bool = False) -> Server | None:
    """Stop the background server (SIGTERM to its process group, SIGKILL after `timeout`); the one stopped, if any.
    While a graphshard process uses it, one line instead, unless `force`."""
    with _locked():
        server = recorded()
        if server is not None and not force and (live := [u for u in users() if u["pid"] != os.getpid()]):
            shown = "; ".join(f"pid {u['pid']}: {u['command'][:80]}" for u in live[:3])
            raise GraphshardError(f"the background Prefect server is in use by {len(live)} graphshard process(es) "
                                  f"({shown}): stopping it now leaves them retrying for minutes before they fail; "
                                  "wait for them to end, or `graphshard server stop --force`")
        if server is not None:
            _terminate(server.pid, timeout)
        _state_file().unlink(missing_ok=True)
        return server


def _terminate(pid: int, timeout: float) -> None:
    """End a process group started with its own session, waiting for its leader to exit."""
    try:
        os.killpg(pid, signal.SIGTERM)
        psutil.Process(pid).wait(timeout)
    except psutil.TimeoutExpired:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, psutil.NoSuchProcess):
        pass

"""Prefect's environment for a graphshard process, set before Prefect is imported (its settings are read at import).

Telemetry is always off. Which API a `graphshard run` talks to, first match wins:
1. an explicit `PREFECT_API_URL` (environment, or the active Prefect profile): that server, health-checked first;
2. `GRAPHSHARD_PREFECT=ephemeral`: Prefect's ephemeral mode, a temporary API server inside the run's process
   (~15-20 s of start-up per run here) with its SQLite database under `<work_dir>/prefect`;
3. otherwise (`GRAPHSHARD_PREFECT=server`, the default): graphshard's background server
   (graphshard.pipeline.prefect_server), started by the first run and reused by later ones.
Prefect 3.8.8 allows ephemeral mode only through its default `ephemeral` profile
(`PREFECT_SERVER_ALLOW_EPHEMERAL_MODE`; the setting's own default is off), so it is set explicitly here. Its
temporary server, a subprocess writing to our stderr, logs to `<PREFECT_HOME>/server.log` instead (server_logging).
"""

from __future__ import annotations

import base64
import importlib.util
import json
import os
import tomllib
import urllib.parse
import urllib.request
from pathlib import Path

from graphshard.errors import GraphshardError
from graphshard.pipeline import prefect_server
from graphshard.storage.locations import redact

MODE_ENV = "GRAPHSHARD_PREFECT"
MODES = ("server", "ephemeral")


def prefect_environment(work_dir: Path | None = None) -> None:
    """Telemetry off; no API URL -> ephemeral mode with Prefect's state under `<work_dir>/prefect`."""
    os.environ["DO_NOT_TRACK"] = "1"
    os.environ["PREFECT_SERVER_ANALYTICS_ENABLED"] = "false"
    if not os.environ.get("PREFECT_API_URL"):
        os.environ["PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"] = "true"
        os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "120")
        if work_dir is not None and not os.environ.get("PREFECT_HOME"):
            home = Path(work_dir) / "prefect"
            home.mkdir(parents=True, exist_ok=True)  # Prefect creates only the last level itself
            os.environ["PREFECT_HOME"] = str(home)
        server_logging(Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect"))


def server_logging(home: Path) -> None:
    """Ephemeral mode: the temporary API server's own lines (its uvicorn and fastapi loggers) go to
    `<home>/server.log`, not to the terminal it inherits. Prefect picks its port at random and tries another when
    the bind fails; uvicorn's "address already in use" is not the run's problem. Done through a logging config
    derived from Prefect's default (`PREFECT_LOGGING_SETTINGS_PATH`), unless the user set one."""
    if os.environ.get("PREFECT_LOGGING_SETTINGS_PATH"):
        return
    import yaml

    default = Path(importlib.util.find_spec("prefect").submodule_search_locations[0]) / "logging" / "logging.yml"
    config = yaml.safe_load(default.read_text())
    log = str(home / "server.log").replace("$", "$$")  # Prefect fills ${SETTING}s in the config's text
    config["handlers"]["server_file"] = {"class": "logging.FileHandler", "filename": log, "delay": True,
                                         "formatter": "standard", "level": 0}
    for name in ("uvicorn", "fastapi"):
        config["loggers"][name]["handlers"] = ["server_file"]
    path = home / "graphshard-logging.yml"
    try:
        home.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(config, sort_keys=False))
    except OSError:  # Prefect's own first write there reports an unwritable home
        return
    os.environ["PREFECT_LOGGING_SETTINGS_PATH"] = str(path)


def profile_api_url() -> str | None:
    """PREFECT_API_URL of the active Prefect profile (read from profiles.toml without importing Prefect)."""
    home = Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect")
    path = Path(os.environ.get("PREFECT_PROFILES_PATH") or home / "profiles.toml")
    try:
        profiles = tomllib.loads(path.read_text())
    except (OSError, ValueError):
        return None
    active = os.environ.get("PREFECT_PROFILE") or profiles.get("active", "ephemeral")
    return (profiles.get("profiles", {}).get(active) or {}).get("PREFECT_API_URL") or None


def mode() -> str:
    """`GRAPHSHARD_PREFECT`: 'server' (default) or 'ephemeral'."""
    value = os.environ.get(MODE_ENV, "").strip().lower() or "server"
    if value not in MODES:
        raise GraphshardError(f"{MODE_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


def connect(work_dir: Path | None = None, ephemeral_ok: bool = True) -> prefect_server.Server | None:
    """Point this process at its Prefect API (see the module doc); the background server it uses, not yet waited
    for (`prefect_server.ensure`), so that the caller's imports overlap a cold start. Call before importing Prefect.
    `ephemeral_ok=False`: the caller needs a server that outlives it (`graphshard serve`)."""
    explicit = os.environ.get("PREFECT_API_URL") or profile_api_url()
    if explicit:
        os.environ["PREFECT_API_URL"] = explicit  # kept when PREFECT_HOME moves
        check_api()
        prefect_environment(work_dir)
        return None
    if mode() == "ephemeral":
        if not ephemeral_ok:
            raise GraphshardError(f"{MODE_ENV}=ephemeral: this command needs a Prefect server that outlives it; "
                                  f"unset {MODE_ENV} or point PREFECT_API_URL at a server")
        prefect_environment(work_dir)
        return None
    pending, _ = prefect_server.start()
    prefect_server.register_user()  # `graphshard server stop` refuses while this process runs
    os.environ["PREFECT_API_URL"] = pending.api_url
    # that server never enables CSRF protection (it gets no PREFECT_* settings of ours): without this, every API
    # client Prefect makes (one per artifact update) first asks it for a CSRF token and is refused
    os.environ["PREFECT_CLIENT_CSRF_SUPPORT_ENABLED"] = "false"
    prefect_environment(work_dir)
    return pending


def check_api(timeout: float = 5.0) -> None:
    """With `PREFECT_API_URL` set, a server must answer its health check, else one line before any work starts (the
    URL shown without its password; a user and password in it are sent as Prefect's client sends them)."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return
    shown = redact(url)
    if not url.startswith(("http://", "https://")):
        raise GraphshardError(f"PREFECT_API_URL={shown}: expected an http(s):// URL of a Prefect server's API, e.g. "
                              "http://host:4200/api")
    try:
        with urllib.request.urlopen(_health_request(url), timeout=timeout) as resp:
            healthy = json.loads(resp.read() or b"null") is True
    except (OSError, ValueError) as err:
        if getattr(err, "code", None) in (401, 403):
            raise GraphshardError(f"PREFECT_API_URL={shown}: the server refused the request (HTTP {err.code}); check "
                                  "the user and password in the URL, or PREFECT_API_KEY / PREFECT_API_AUTH_STRING") \
                from None
        if getattr(err, "code", None) == 404 and not url.rstrip("/").endswith("/api"):
            raise GraphshardError(f"PREFECT_API_URL={shown}: no Prefect API there (its health check is Not Found); "
                                  "a Prefect server's API is at its /api path, e.g. http://host:4200/api") from None
        raise GraphshardError(f"PREFECT_API_URL={shown}: no Prefect server answers within {timeout:g} s "
                              f"({redact(str(getattr(err, 'reason', err)))}); start one (`prefect server start`) or "
                              "unset PREFECT_API_URL to use graphshard's background server") from None
    if not healthy:
        raise GraphshardError(f"PREFECT_API_URL={shown}: the server's health check did not answer true")


def _health_request(url: str) -> urllib.request.Request:
    """GET <url>/health, a user and password in the URL sent as basic authentication (urllib does not)."""
    parts = urllib.parse.urlsplit(url.rstrip("/") + "/health")
    bare = parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")) if parts.username \
        else parts
    request = urllib.request.Request(urllib.parse.urlunsplit(bare))
    if parts.username:
        pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
        request.add_header("Authorization", "Basic " + base64.b64encode(pair.encode()).decode())
    return request

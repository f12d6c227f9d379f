"""Prefect's environment for a graphshard run, set before Prefect is imported (its settings are read at import).

Telemetry is always off. Without `PREFECT_API_URL`, Prefect runs a temporary local API server for the run
(ephemeral mode) whose SQLite database lives under the work folder unless `PREFECT_HOME` says otherwise.
Prefect 3.8.8 allows ephemeral mode only through its default `ephemeral` profile
(`PREFECT_SERVER_ALLOW_EPHEMERAL_MODE`; the setting's own default is off), so it is set explicitly here.
"""

from __future__ import annotations

import json
import os
import urllib.request
from pathlib import Path

from graphshard.errors import GraphshardError


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


def check_api(timeout: float = 5.0) -> None:
    """With `PREFECT_API_URL` set, a server must answer its health check, else one line before any work starts."""
    url = os.environ.get("PREFECT_API_URL")
    if not url:
        return
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/health", timeout=timeout) as resp:
            healthy = json.loads(resp.read() or b"null") is True
    except (OSError, ValueError) as err:
        raise GraphshardError(f"PREFECT_API_URL={url}: no Prefect server answers within {timeout:g} s "
                              f"({getattr(err, 'reason', err)}); start one (`prefect server start`) or unset "
                              "PREFECT_API_URL to run without a server") from None
    if not healthy:
        raise GraphshardError(f"PREFECT_API_URL={url}: the server's health check did not answer true")

"""Prefect's environment for a graphshard run, set before Prefect is imported (its settings are read at import).

Telemetry is always off. Without `PREFECT_API_URL`, Prefect runs a temporary local API server for the run
(ephemeral mode) whose SQLite database lives under the work folder unless `PREFECT_HOME` says otherwise.
"""

from __future__ import annotations

import os
from pathlib import Path


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

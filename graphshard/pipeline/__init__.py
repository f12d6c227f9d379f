"""The pipeline: the library's steps as one Prefect flow, and everything only the flow and `graphshard run` need.

- `flow.py`: the `graphshard` flow (`partition`) and `run_pipeline`; `steps/`: one Prefect task per step wrapping the
  library's step function (ingest, assign, shuffle, validate, publish) and what they share (`steps/common.py`).
- `config.py`: the YAML config's schema and loading; `preflight.py`: its checks before any work starts.
- `cache.py`, `manifest.py`: step artifacts keyed on the content of their inputs; `publish.py`: the output swapped
  into place; `summary.py`: the run summary; `ondemand.py`: the run's Dask cluster, started by the first step that
  builds; `progress.py`: per-step progress of the Dask tasks.
- `prefect_env.py`: which Prefect API a run talks to (set before Prefect is imported); `prefect_server.py`:
  graphshard's background Prefect server.

Prefect is imported by `flow.py` and `steps/` only, never by the library (graphshard's other packages import nothing
from here). progress.py is also imported by the Dask scheduler (its plugin), so this package must not import Prefect
at import time.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"run_pipeline": "flow", "partition": "flow", "STEPS": "config", "PipelineConfig": "config",
           "load_config": "config", "check_config": "preflight"}


def __getattr__(name: str):
    """The public names load on first use: flow.py imports Prefect, which nothing may import by importing this
    package (the Dask scheduler imports progress.py from it)."""
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.pipeline' has no attribute '{name}'")
    return getattr(importlib.import_module(f"graphshard.pipeline.{_PUBLIC[name]}"), name)


__all__ = sorted(_PUBLIC)

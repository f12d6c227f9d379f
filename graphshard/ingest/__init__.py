"""Step 0 of the pipeline: check the input graph (every file opened, all problems at once), fingerprint it and
summarize it.

`check_graph(graph, client=None) -> list[GraphshardError]`; `check_and_hash(graph, client=None)` (the same checks,
each task also hashing the file it read); `fingerprint(graph) -> dict` (every file's path, size and blake2b hash);
`summary(graph) -> dict` (what `graphshard inspect` prints). Modules: `step.py` (the checks, one Dask task per file),
`graph_fingerprint.py`, `graph_summary.py` (named apart from their functions, so that the package's attribute is
always the function).

The public names load on first use (step.py imports the readers), so that importing the package stays cheap.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"check_graph": "graphshard.ingest.step", "check_and_hash": "graphshard.ingest.step",
           "check_edge_chunk": "graphshard.ingest.step", "check_feature_file": "graphshard.ingest.step",
           "fingerprint": "graphshard.ingest.graph_fingerprint", "summary": "graphshard.ingest.graph_summary"}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.ingest' has no attribute '{name}'")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = ["check_and_hash", "check_edge_chunk", "check_feature_file", "check_graph", "fingerprint", "summary"]

"""Shuffle + write: from a chunked graph and an assignment folder to DGL-loadable partitions, on Dask.

`dispatch` runs the steps of docs/DESIGN.md "Shuffle data flow" as Dask tasks over plain functions that take paths
(no graph data goes through the scheduler, only small count matrices come back): assignment text -> binary, node
counts -> new IDs, edge/feature exchange into bucket files, one task per partition building and writing it, then
the partition config. Everything is built in a staging folder that is published only when complete; the scratch
folder (on a filesystem that every worker sees) is deleted at the end.

The public names load on first use (step.py imports Dask), so that importing the options (as the config does in
every command) stays cheap.
"""

from __future__ import annotations

import importlib

_PUBLIC = {"DispatchOptions": "graphshard.shuffle.options", "dispatch": "graphshard.shuffle.step"}


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module 'graphshard.shuffle' has no attribute '{name}'")
    return getattr(importlib.import_module(_PUBLIC[name]), name)


__all__ = list(_PUBLIC)

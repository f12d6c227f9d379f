"""Shuffle + write: from a chunked graph and an assignment folder to DGL-loadable partitions, on Dask.

`shuffle` runs the steps of docs/DESIGN.md "Shuffle data flow" as Dask tasks over plain functions that take paths
(no graph data goes through the scheduler, only small count matrices come back): assignment text -> binary, node
counts -> new IDs, edge/feature exchange into bucket files, one task per partition building and writing it, then
the partition config. Everything is built in a staging folder that is published only when complete; the scratch
folder (on a filesystem that every worker sees) is deleted at the end.

The public names load on first use (step.py imports Dask), so that importing the options (as the config does in
every command) stays cheap.
"""

from __future__ import annotations

import importlib

from graphshard._deprecated import renamed

_PUBLIC = {"ShuffleOptions": "graphshard.shuffle.options", "shuffle": "graphshard.shuffle.step"}
_OLD = renamed(__name__, {"DispatchOptions": "graphshard.shuffle:ShuffleOptions",
                          "dispatch": "graphshard.shuffle:shuffle"})  # the step's old word, until 0.2


def __getattr__(name: str):
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    return _OLD(name)


__all__ = list(_PUBLIC)

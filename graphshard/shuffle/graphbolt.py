"""GraphBolt output: a finished partition set converted by DGL's own `dgl_partition_to_graphbolt` (DGL >= 2.1).

The conversion adds `part<i>/fused_csc_sampling_graph.pt` (GraphBolt's sampling graph) to every partition and
records it in the partition config (`part_graph_graphbolt`, `node_map_dtype`, `edge_map_dtype`), exactly as
`dgl.distributed.partition_graph(..., use_graphbolt=True)` does. It runs as one Dask task (DGL 2.1 converts the
partitions in one loop, with no per-partition entry point), or in this process when DGL is loaded here already;
graphshard imports DGL and torch only inside that task, and only when asked.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

from pydantic import BaseModel, ConfigDict

from graphshard.daskrun import run_tasks
from graphshard.errors import GraphshardError
from graphshard.formats.jsonfile import read_json_object
from graphshard.formats.set_digests import add_set_digests
from graphshard.storage import location

if TYPE_CHECKING:
    from distributed import Client

DEBUG_ENV = "DGL_DIST_DEBUG"  # DGL's debug mode: every node/edge field is kept in the GraphBolt graph
INSTALL_HINT = "pip install 'dgl>=2.1' torch (e.g. dgl==2.1.0 torch==2.1.2, as bench/dgl_compat.sh installs)"


class GraphboltOptions(BaseModel):
    """The keyword arguments of DGL 2.1's `dgl_partition_to_graphbolt`, with its defaults and meanings."""

    model_config = ConfigDict(extra="forbid")

    store_eids: bool = False
    store_inner_node: bool = False
    store_inner_edge: bool = False


def missing_modules() -> list[str]:
    """DGL and torch, those not installed here (found without importing them; a folder named `dgl` on the path,
    a namespace package, does not count)."""
    return [m for m in ("dgl", "torch") if getattr(importlib.util.find_spec(m), "origin", None) is None]


def require_dgl(what: str) -> None:
    """Refuse, in one line, when DGL or torch cannot be imported here."""
    missing = missing_modules()
    if missing:
        raise GraphshardError(f"{what}: GraphBolt output is written by DGL's own converter, and "
                              f"{' and '.join(missing)} cannot be imported here; install them: {INSTALL_HINT}")


def options_from_kwargs(use_graphbolt: bool, kwargs: dict) -> GraphboltOptions | None:
    """DGL 2.1's `partition_graph(..., use_graphbolt, **kwargs)`: kwargs go to `dgl_partition_to_graphbolt`, so
    only its keywords are accepted (one line naming any other); without `use_graphbolt` they do nothing, as in DGL."""
    known = list(GraphboltOptions.model_fields)
    unknown = [k for k in kwargs if k not in known]
    if unknown:
        raise GraphshardError(f"partition_graph: unexpected keyword argument {unknown[0]!r}; DGL 2.1 passes extra "
                              f"keyword arguments to dgl_partition_to_graphbolt, which takes {', '.join(known)}")
    if not use_graphbolt:
        if kwargs:
            warnings.warn(f"{', '.join(kwargs)}: used only with use_graphbolt=True (ignored, as DGL does)",
                          stacklevel=3)
        return None
    require_dgl("use_graphbolt")
    return GraphboltOptions(**{k: bool(v) for k, v in kwargs.items()})  # DGL tests them by truth value


@contextmanager
def _debug_mode(debug: bool) -> Iterator[None]:
    """DGL reads its debug switch from the environment: give the task the caller's choice, then restore."""
    before = os.environ.get(DEBUG_ENV)
    if debug:
        os.environ[DEBUG_ENV] = "1"
    else:
        os.environ.pop(DEBUG_ENV, None)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(DEBUG_ENV, None)
        else:
            os.environ[DEBUG_ENV] = before


def _convert(config: str, *, options: dict, debug: bool) -> str:
    """Dask task: DGL's converter on the whole set (it rewrites the config in place)."""
    try:
        from dgl.distributed import dgl_partition_to_graphbolt
    except ImportError as err:
        raise GraphshardError(f"GraphBolt conversion: cannot import DGL's converter on this worker ({err}); "
                              f"install: {INSTALL_HINT}") from None
    with _debug_mode(debug):
        dgl_partition_to_graphbolt(config, **options)
    return config


def to_graphbolt(config_path: str | Path, options: GraphboltOptions, client: Client | None = None) -> Path:
    """Convert the partition set of `config_path` to GraphBolt's format in place (DGL 2.1's result, file for file).

    Runs in this process when DGL is already loaded here (an in-memory caller with a DGLGraph), else as a Dask task;
    the new files join the set's digests file (what `graphshard fetch` copies and checks). DGL's debug mode
    (`DGL_DIST_DEBUG` set in this process's environment) is passed on to the task."""
    require_dgl("use_graphbolt")
    if not location(config_path).is_local:
        raise GraphshardError(f"{location(config_path)}: use_graphbolt converts a set on local disk (DGL's converter "
                              "writes files there); write the set to a local folder, then publish it")
    config = str(Path(config_path).resolve())
    here = "dgl.distributed" in sys.modules  # loaded by the caller: a worker would import DGL and torch first
    run_tasks(None if here else client, "graphbolt", "convert", _convert, [config], label=lambda _: "all-partitions",
              options=options.model_dump(), debug=DEBUG_ENV in os.environ)
    meta = read_json_object(config, "partition config JSON")
    add_set_digests(Path(config), [meta[f"part-{i}"]["part_graph_graphbolt"] for i in range(meta["num_parts"])])
    return Path(config)

"""Pre-flight checks of a pipeline config: everything that can be known to be wrong before any work starts.

The input is readable and its files' headers are sound (`precheck`), the output and work folders are placed where they
may be written and do not overlap the input, the assignment folder exists (method `file`), the scheduler answers.
Each problem is one line naming the config file and the key (`InputError`).
"""

from __future__ import annotations

import logging
import os
import socket
from pathlib import Path
from typing import Any, Callable

from graphshard.errors import GraphshardError, InputError
from graphshard.pipeline.config import PipelineConfig
from graphshard.shuffle.graphbolt import GraphboltOptions, require_dgl


def _inside(child: Path, parent: Path) -> bool:
    child, parent = child.resolve(), parent.resolve()
    return child == parent or parent in child.parents


def check_scheduler(address: str, timeout: float, source: Path) -> None:
    """A TCP connection to the scheduler within `timeout` seconds, else a one-line error.

    Parameters
    ----------
    address : str
        `tcp://host:port` or `tls://host:port`.
    timeout : float
        Seconds.
    source : Path
        The config file (named in the error).
    """
    from distributed.comm.addressing import parse_address, parse_host_port

    try:
        scheme, loc = parse_address(address)
        host, port = parse_host_port(loc)
    except ValueError as err:
        raise InputError(source, "cluster.address", "a scheduler address like tcp://host:8786", address) from err
    if scheme not in ("tcp", "tls"):
        raise InputError(source, "cluster.address", "a tcp:// or tls:// scheduler address", address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as err:
        reason = "timed out" if isinstance(err, TimeoutError) else (err.strerror or type(err).__name__)
        raise GraphshardError(f"{source}: cluster.address: cannot reach Dask scheduler {address} within "
                              f"{timeout:g} s ({reason})") from None


def check_config(cfg: PipelineConfig, published_by_us: bool = False,
                 warn: Callable[[str], Any] = logging.getLogger(__name__).warning):
    """Everything that can be known to be wrong before work starts (one InputError line each).

    Parameters
    ----------
    cfg : PipelineConfig
        The loaded config.
    published_by_us : bool
        The output folder was published by this work folder before, so replacing it is allowed.
    warn : callable
        Gets one line per flat assign option the chosen method ignores (the flow sends them to Prefect's log).

    Returns
    -------
    ChunkedGraph
        The parsed input metadata.
    """
    for item in cfg._ignored:
        warn(f"{cfg.source}: {item.warning(f'assign.{item.option}')}")
    from graphshard.formats.chunked import load_metadata
    from graphshard.precheck import precheck, precheck_assignment, refuse

    src = cfg.source
    meta_path = cfg.input.metadata
    if meta_path.is_dir():
        meta_path = meta_path / "metadata.json"
    if not meta_path.is_file():
        raise InputError(src, "input.metadata", "an existing metadata.json", f"{meta_path} (no such file)")
    graph = load_metadata(meta_path)
    in_dir = meta_path.parent
    out, work = cfg.output.dir, cfg.work
    if _inside(out, in_dir):
        raise InputError(src, "output.dir", f"a folder outside the input folder {in_dir}", str(out))
    if _inside(in_dir, out):
        raise InputError(src, "output.dir", f"a folder that does not contain the input folder {in_dir}", str(out))
    if _inside(work, out) or _inside(out, work):
        raise InputError(src, "work_dir", f"a folder separate from output.dir {out}", str(work))
    if _inside(work, in_dir):
        raise InputError(src, "work_dir", f"a folder outside the input folder {in_dir}", str(work))
    if out.exists() and not (out.is_dir() and (cfg.output.overwrite or published_by_us)):
        raise InputError(src, "output.dir", "a folder that does not exist yet (or output.overwrite: true)",
                         f"{out} exists")
    if cfg.graph_name is not None and cfg.graph_name != graph.graph_name:
        raise InputError(src, "graph_name", f"the input's graph_name '{graph.graph_name}' (or no graph_name)",
                         cfg.graph_name)
    if cfg.num_parts > graph.total_nodes:
        raise InputError(src, "num_parts", f"at most the number of nodes ({graph.total_nodes})", cfg.num_parts)
    stored = [k for k in GraphboltOptions.model_fields if getattr(cfg.output, k)]
    if stored and not cfg.output.graphbolt:
        raise InputError(src, f"output.{stored[0]}", "only with output.graphbolt: true", True)
    if cfg.output.graphbolt:
        require_dgl(f"{src}: output.graphbolt")
    if cfg.assign.method == "file" and not (cfg.assign.dir and cfg.assign.dir.is_dir()):
        raise InputError(src, "assign.dir", "an existing assignment folder for method file (assign.dir or "
                         "assign.file.dir)", str(cfg.assign.dir))
    if cfg.cluster.memory_limit not in (None, "auto"):
        from dask.utils import parse_bytes  # here: importing dask costs ~0.2 s of a cached run's ~2 s

        try:
            parse_bytes(cfg.cluster.memory_limit)
        except (ValueError, TypeError):
            raise InputError(src, "cluster.memory_limit", "a size like '4GB' or 'auto'",
                             cfg.cluster.memory_limit) from None
    for folder in (out.parent, work):
        probe = folder
        while not probe.exists():
            probe = probe.parent
        if not probe.is_dir() or not _writable(probe):
            raise InputError(src, "output.dir" if folder == out.parent else "work_dir",
                             "a location this user can write to", str(probe))
    refuse(precheck(graph))
    if cfg.assign.method == "file":
        refuse(precheck_assignment(graph, cfg.assign.dir))
    if cfg.cluster.address:
        check_scheduler(cfg.cluster.address, cfg.cluster.connect_timeout, src)
    return graph


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)

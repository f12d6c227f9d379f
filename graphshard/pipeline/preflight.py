"""Pre-flight checks of a pipeline config: everything that can be known to be wrong before any work starts.

The input is readable and its files' headers are sound (`precheck`), the output and work folders are placed where they
may be written and do not overlap the input, the assignment folder exists (method `file`), the scheduler answers.
Each problem is one line naming the config file and the key (`InputError`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
from pathlib import Path
from typing import Any, Callable

from graphshard.errors import GraphshardError, InputError
from graphshard.formats.set_digests import foreign_entries
from graphshard.pipeline.config import PipelineConfig
from graphshard.runprefix import RUNS
from graphshard.shuffle.graphbolt import GraphboltOptions, require_dgl
from graphshard.storage import Location, inside, location
from graphshard.validate.report_html import REPORT_CLASH, REPORT_FILES, report_clash

RECHECK_AFTER = 60.0  # seconds a passed location check answers for in this process (see `_located`)
_PASSED: dict[tuple, float] = {}  # (URL, write, `check.client_key`) -> when its check passed (monotonic)


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
    from graphshard.precheck import precheck_assignment, precheck_once, refuse

    src = cfg.source
    graph = _input_graph(cfg)
    in_dir = location(graph.metadata_path).parent
    out, work = cfg.output.dir, cfg.work
    _check_places(cfg, in_dir, published_by_us)
    if cfg.graph_name is not None and cfg.graph_name != graph.graph_name:
        raise InputError(src, "graph_name", f"the input's graph_name '{graph.graph_name}' (or no graph_name)",
                         cfg.graph_name)
    if cfg.validate_.enabled and report_clash(graph.graph_name):
        raise InputError(graph.metadata_path, "graph_name", REPORT_CLASH, graph.graph_name)
    if (expected := cfg.shuffle.halo_problem(cfg.num_parts)) is not None:
        raise InputError(src, "shuffle.halo_hops", expected, cfg.shuffle.halo_hops)
    if cfg.num_parts > graph.total_nodes:
        raise InputError(src, "num_parts", f"at most the number of nodes ({graph.total_nodes})", cfg.num_parts)
    stored = [k for k in GraphboltOptions.model_fields if getattr(cfg.output, k)]
    if stored and not cfg.output.graphbolt:
        raise InputError(src, f"output.{stored[0]}", "only with output.graphbolt: true", True)
    if cfg.output.graphbolt:
        require_dgl(f"{src}: output.graphbolt")
    if cfg.assign.method == "file":
        _check_assignment_dir(cfg)
    if cfg.cluster.memory_limit not in (None, "auto"):
        from dask.utils import parse_bytes  # here: importing dask costs ~0.2 s of a cached run's ~2 s

        try:
            negative = parse_bytes(cfg.cluster.memory_limit) < 0
        except (ValueError, TypeError):
            negative = True
        if negative:
            raise InputError(src, "cluster.memory_limit", "a size like '4GB' or 'auto'", cfg.cluster.memory_limit)
    for key, where in (("output.dir", out), ("work_dir", work), ("shuffle.scratch_dir", cfg.shuffle.scratch_dir)):
        if where is not None:
            _check_writable(cfg, key, where)
    if isinstance(out, Location):
        check_output_free(cfg, published_by_us)
    refuse(precheck_once(graph))  # `graphshard run` checks twice in one process (command, flow): headers read once
    if cfg.assign.method == "file":
        refuse(precheck_assignment(graph, cfg.assign.dir))
    if cfg.cluster.address:
        check_scheduler(cfg.cluster.address, cfg.cluster.connect_timeout, src)
    return graph


def _located(cfg: PipelineConfig, key: str, where: Location, write: bool) -> None:
    """`check_location` of one config location: one line naming the config file and key (never a secret). A check
    that passed in this process less than RECHECK_AFTER seconds ago, for the same location, access, storage options
    and credential environment, is not sent again: `graphshard run` checks in the command and again in the flow it
    calls, seconds apart, and on a store each check is 2-4 round trips (a write probe: HEAD, listing, PUT, DELETE)."""
    from graphshard.storage import check_location
    from graphshard.storage.check import client_key

    memo = (where.url, write, client_key(where, cfg.storage))
    if time.monotonic() - _PASSED.get(memo, -RECHECK_AFTER) < RECHECK_AFTER:
        return
    try:
        check_location(where, write=write, storage=cfg.storage)
    except GraphshardError as err:  # StorageError, or no filesystem for the URL (unknown protocol, package missing)
        raise GraphshardError(f"{cfg.source}: {key}: {err}") from None
    _PASSED[memo] = time.monotonic()


def _input_graph(cfg: PipelineConfig):
    """The input's metadata (a local metadata.json or its folder; a URL of either)."""
    from graphshard.formats.chunked import load_metadata, metadata_location

    meta = cfg.input.metadata
    if isinstance(meta, Location):
        meta = metadata_location(meta)  # a URL not ending in .json is a folder
        _located(cfg, "input.metadata", meta, write=False)
        return load_metadata(meta, storage=cfg.storage)
    if meta.is_dir():
        meta = meta / "metadata.json"
    if not meta.is_file():
        raise InputError(cfg.source, "input.metadata", "an existing metadata.json", f"{meta} (no such file)")
    return load_metadata(meta)


def _check_places(cfg: PipelineConfig, in_dir: Location, published_by_us: bool) -> None:
    """Output, work folder and input apart from each other; an existing output only when it may be replaced."""
    src, out, work = cfg.source, cfg.output.dir, cfg.work
    if inside(out, in_dir):
        raise InputError(src, "output.dir", f"a location outside the input folder {in_dir}", str(out))
    if inside(in_dir, out):
        raise InputError(src, "output.dir", f"a location that does not contain the input folder {in_dir}", str(out))
    if cfg.work_dir is None and isinstance(out, Location) and not out.is_local and out.parent == out:
        # the default `<output.dir>.work` is a sibling, and a bucket's root has none (it was `<bucket>/<bucket>.work`,
        # inside the output, refused below as if the user had chosen it)
        raise InputError(src, "work_dir", f"a work_dir in the config when output.dir is a bucket's root ({out}: the "
                         "default, <output.dir>.work beside it, has no place there)", "none")
    if inside(work, out) or inside(out, work):
        raise InputError(src, "work_dir", f"a location separate from output.dir {out}", str(work))
    if inside(work, in_dir):
        raise InputError(src, "work_dir", f"a location outside the input folder {in_dir}", str(work))
    if not isinstance(out, Location):  # on a store: after the store is known to answer
        check_output_free(cfg, published_by_us)


def check_output_free(cfg: PipelineConfig, published_by_us: bool) -> None:
    """An existing output is replaced only with overwrite, or when this work folder published it: checked before any
    work, and again by the publish step (another run may have published there meanwhile)."""
    src, out = cfg.source, cfg.output.dir
    if isinstance(out, Location):
        _check_stored_output(cfg, published_by_us)
        return
    if out.exists() and not out.is_dir():  # output.overwrite replaces a folder, not a file
        raise InputError(src, "output.dir", "a folder (or a path that does not exist yet)", f"{out}, a file")
    if out.exists() and not (cfg.output.overwrite or published_by_us):
        raise InputError(src, "output.dir", "a folder that does not exist yet (or output.overwrite: true)",
                         f"{out} exists, and work_dir holds no record of publishing it")
    if out.exists() and (foreign := foreign_entries(out, cfg.storage, REPORT_FILES)):
        raise InputError(src, "output.dir", "a folder holding only an earlier partition set, which is replaced whole "
                         "(give a new folder, or move the other files away)", f"{out} holds {foreign[:3]}")


def _check_stored_output(cfg: PipelineConfig, published_by_us: bool) -> None:
    """An output prefix on a store that holds anything is replaced only with overwrite (or when this work folder
    published it). Objects under its `.runs/` alone are no set (no config names them: what a failed or killed run
    left, which the next publish deletes)."""
    out = cfg.output.dir
    if cfg.output.overwrite or published_by_us or not cfg.storage.exists(out):
        return
    if all(e.rel.startswith(f"{RUNS}/") for e in cfg.storage.listing(out)):
        return
    raise InputError(cfg.source, "output.dir", "a prefix that holds nothing yet (or output.overwrite: true)",
                     f"{out} holds objects, and work_dir holds no record of publishing them")


def _check_assignment_dir(cfg: PipelineConfig) -> None:
    where = cfg.assign.dir
    if isinstance(where, Location):
        _located(cfg, "assign.dir", where, write=False)
    elif not (where and where.is_dir()):
        raise InputError(cfg.source, "assign.dir", "an existing assignment folder for method file (assign.dir or "
                         "assign.file.dir)", str(where))


def _check_writable(cfg: PipelineConfig, key: str, where: Path | Location) -> None:
    """A location this user can write to: a probe object on a store, the nearest existing folder locally."""
    if isinstance(where, Location):
        _located(cfg, key, where, write=True)
        return
    probe = where.parent if key == "output.dir" else where
    while not probe.exists():
        probe = probe.parent
    if not probe.is_dir():  # a file where a folder (or one of its parents) should be
        raise InputError(cfg.source, key, "a folder (or a path that does not exist yet)", f"{probe}, a file")
    if not _writable(probe):
        raise InputError(cfg.source, key, "a location this user can write to", str(probe))


def _writable(folder: Path) -> bool:
    return os.access(folder, os.W_OK | os.X_OK)

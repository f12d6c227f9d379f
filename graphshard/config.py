"""The pipeline configuration (`configs/*.yaml`): a strict pydantic model, `--set` overrides, and pre-flight checks.

Every problem is reported as one line naming the config file, the key path and what was expected, before any work
starts. Relative paths are resolved against the config file's folder.
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import socket
import typing
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError

from graphshard.assign.options import AssignOptions, IgnoredOption, OptionConflict, resolve
from graphshard.cluster import ClusterSpec
from graphshard.errors import GraphshardError, InputError
from graphshard.graphbolt import GraphboltOptions, require_dgl
from graphshard.shuffle.options import DispatchOptions

STEPS = ("ingest", "assign", "shuffle", "validate")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSection(_Section):
    """The chunked graph to partition."""

    metadata: Path


class OutputSection(_Section):
    """Where the finished partition set (and the quality report) is published; `graphbolt` adds GraphBolt's
    sampling graph per partition (DGL's converter, with its `store_*` choices), as `use_graphbolt=True` in DGL."""

    dir: Path
    overwrite: bool = False
    graphbolt: bool = False
    store_eids: bool = False
    store_inner_node: bool = False
    store_inner_edge: bool = False

    def graphbolt_options(self) -> GraphboltOptions | None:
        """The conversion's options, None when no GraphBolt output is asked for."""
        return GraphboltOptions(**self.model_dump(include=set(GraphboltOptions.model_fields))) \
            if self.graphbolt else None


class ValidateSection(_Section):
    """Re-read the written partitions and check them against the input (`full`: every row, else a seeded sample)."""

    enabled: bool = True
    full: bool = False
    seed: int = 0


class ClusterSection(_Section):
    """An existing Dask scheduler (`address`) or the size of a local cluster started for the run."""

    address: str | None = None
    workers: int = Field(default=2, ge=1)
    threads_per_worker: int = Field(default=1, ge=1)
    memory_limit: str | None = "auto"
    connect_timeout: float = Field(default=10.0, gt=0)

    def spec(self) -> ClusterSpec:
        return ClusterSpec(address=self.address, workers=self.workers, threads_per_worker=self.threads_per_worker,
                           memory_limit=self.memory_limit, connect_timeout=self.connect_timeout)


class PipelineConfig(_Section):
    """The whole run: input, output, partition count, per-step options, cluster and work folder."""

    input: InputSection
    output: OutputSection
    graph_name: str | None = None
    num_parts: int = Field(ge=1)
    assign: AssignOptions = Field(default_factory=AssignOptions)
    shuffle: DispatchOptions = Field(default_factory=DispatchOptions)
    validate_: ValidateSection = Field(default_factory=ValidateSection, alias="validate")
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    work_dir: Path | None = None
    source: Path = Field(default=Path("config.yaml"), exclude=True)
    _ignored: list[IgnoredOption] = PrivateAttr(default_factory=list)  # flat assign options the method ignores

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @property
    def work(self) -> Path:
        """The work folder (default: `<output.dir>.work` beside the output)."""
        return self.work_dir or self.output.dir.with_name(self.output.dir.name + ".work")

    def section(self, name: str) -> dict:
        """The JSON form of one config section (what a step's cache key depends on)."""
        model = {"assign": self.assign, "shuffle": self.shuffle, "validate": self.validate_,
                 "cluster": self.cluster}[name]
        return model.model_dump(mode="json")


# ---- loading ---------------------------------------------------------------------------------------------------

_PATH_KEYS = [("input", "metadata"), ("output", "dir"), ("work_dir",), ("assign", "dir"), ("assign", "file", "dir"),
              ("shuffle", "scratch_dir")]


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Key name (alias if any) -> annotation of a model's fields."""
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items() if not f.exclude}


def _submodel(annotation: Any) -> type[BaseModel] | None:
    """The model of a section's annotation (`Model` or `Model | None`), else None."""
    for candidate in (annotation, *typing.get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _check_keys(data: dict, model: type[BaseModel], source: Path, prefix: str = "") -> None:
    """Reject unknown keys anywhere in the tree, suggesting the closest known key (difflib)."""
    known = _fields(model)
    for key, value in data.items():
        path = f"{prefix}{key}"
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1, cutoff=0.6)
            hint = f" (did you mean '{prefix}{close[0]}'?)" if close else f" (known: {', '.join(sorted(known))})"
            raise InputError(source, path, f"a known key{hint}", "an unknown key")
        sub = _submodel(known[key])
        if sub is not None and isinstance(value, dict):
            _check_keys(value, sub, source, f"{path}.")


def _resolve_paths(data: dict, base: Path) -> None:
    for keys in _PATH_KEYS:
        node = data
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str):
            p = Path(node[keys[-1]]).expanduser()
            node[keys[-1]] = str(p if p.is_absolute() else (base / p).resolve())


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `key.path=value` override; the value is parsed as YAML (`4` is an int, `[a, b]` a list)."""
    key, sep, text = assignment.partition("=")
    if not sep or not key.strip():
        raise InputError("--set", assignment, "key.path=value")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as err:
        raise InputError("--set", key, "a YAML value", f"{text!r} ({err.__class__.__name__})") from None
    parts = key.strip().split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise InputError("--set", ".".join(parts[: i + 1]), "a section (mapping)", type(child).__name__)
        node = child
    node[parts[-1]] = value


def _validation_message(err: ValidationError) -> tuple[str, str, str]:
    """(key path, expected, found) of the first pydantic error, in one line."""
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ").removeprefix("Input should be ").replace("\n", " ")
    if msg.startswith(("greater", "less")):
        msg = "a value " + msg
    found = first.get("input")
    if first["type"] == "missing":
        return loc, "a value (required key)", "nothing"
    shown = json.dumps(found, default=str) if not isinstance(found, dict) else "a mapping"
    return loc, msg[0].lower() + msg[1:], shown


def parse_config(data: Any, source: Path) -> PipelineConfig:
    """Validate a config tree (already overridden); paths are resolved against the config file's folder."""
    if not isinstance(data, dict):
        raise InputError(source, None, "a YAML mapping at the top level", type(data).__name__)
    _check_keys(data, PipelineConfig, source)
    _resolve_paths(data, source.parent)
    try:
        # JSON mode + strict: YAML's typed values must already have the right type ("4" is not an int).
        cfg = PipelineConfig.model_validate_json(json.dumps(data, default=str), strict=True)
    except ValidationError as err:
        loc, expected, found = _validation_message(err)
        raise InputError(source, loc, expected, found) from None
    cfg.source = source
    try:  # the method's own block over the flat options: what the assign step runs with and is cached by
        cfg.assign, cfg._ignored = resolve(cfg.assign)
    except OptionConflict as err:
        raise GraphshardError(f"{source}: {err.line(f'assign.{err.option}', 'assign.')}") from None
    return cfg


def load_config(path: str | Path, overrides: list[str] | None = None) -> PipelineConfig:
    """Read a YAML config, apply `--set` overrides, validate; InputError (one line) on any problem."""
    source = Path(path).resolve()
    if not source.is_file():
        raise InputError(source, None, "an existing YAML config file", "no such file")
    try:
        data = yaml.safe_load(source.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise InputError(source, None, "valid YAML", f"{problem}{where}") from None
    data = {} if data is None else data
    if isinstance(data, dict):
        for item in overrides or []:
            apply_override(data, item)
    return parse_config(data, source)


# ---- pre-flight checks -----------------------------------------------------------------------------------------

def _inside(child: Path, parent: Path) -> bool:
    child, parent = child.resolve(), parent.resolve()
    return child == parent or parent in child.parents


def check_scheduler(address: str, timeout: float, source: Path) -> None:
    """A TCP connection to the scheduler within `timeout` seconds, else a one-line error."""
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
    """Everything that can be known to be wrong before work starts; returns the parsed input metadata.

    `published_by_us`: the output folder was published by this work folder before, so replacing it is allowed.
    `warn` gets one line per flat assign option the chosen method ignores (the flow sends them to Prefect's log).
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

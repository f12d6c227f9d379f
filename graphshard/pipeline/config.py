"""The pipeline configuration (`configs/*.yaml`): a strict pydantic model and its loading with `--set` overrides.

Every problem is reported as one line naming the config file, the key path and what was expected, before any work
starts. Every location (`input.metadata`, `output.dir`, `work_dir`, `assign.dir`, `shuffle.scratch_dir`) is a path or
a URL (`s3://...`: `graphshard.storage`); relative ones are resolved against the config's folder, which may itself be a
URL (`graphshard run s3://bucket/jobs/job.yaml`). `storage_options` (per URL prefix) reaches every step through
`PipelineConfig.storage`. The checks that look at the files and the cluster a config names are in
`graphshard.pipeline.preflight`.
"""

from __future__ import annotations

import difflib
import json
import typing
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StrictInt, ValidationError

from graphshard.assign.options import AssignOptions, IgnoredOption, OptionConflict, resolve
from graphshard.cluster import ClusterSpec
from graphshard.errors import GraphshardError, InputError
from graphshard.shuffle.graphbolt import GraphboltOptions
from graphshard.shuffle.options import ShuffleOptions
from graphshard.storage import Location, Storage, StorageOptions, location
from graphshard.storage.field import Where
from graphshard.storage.locations import beside_link

STEPS = ("ingest", "assign", "shuffle", "validate")


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class InputSection(_Section):
    """The chunked graph to partition."""

    metadata: Where


class OutputSection(_Section):
    """Where the finished partition set (and the quality report) is published; `graphbolt` adds GraphBolt's
    sampling graph per partition (DGL's converter, with its `store_*` choices), as `use_graphbolt=True` in DGL."""

    dir: Where
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
    """Re-read the written partitions and check them against the input (`full`: every row, else a seeded sample;
    `remote_share`: also estimate the remote share of mini-batch input nodes, more passes over every edge)."""

    enabled: bool = True
    full: bool = False
    seed: int = 0
    remote_share: bool = True


class ClusterSection(_Section):
    """An existing Dask scheduler (`address`) or the size of a local cluster started for the run."""

    address: str | None = None
    workers: int = Field(default=2, ge=1)
    threads_per_worker: int = Field(default=1, ge=1)
    memory_limit: StrictInt | str | None = "auto"  # bytes, a size like '4GB', or 'auto' (as LocalCluster takes them)
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
    shuffle: ShuffleOptions = Field(default_factory=ShuffleOptions)
    validate_: ValidateSection = Field(default_factory=ValidateSection, alias="validate")
    cluster: ClusterSection = Field(default_factory=ClusterSection)
    work_dir: Where | None = None
    # Filesystem options per URL prefix (`StorageOptions`' shape); secrets in them: never dumped nor shown.
    storage_options: dict[str, Any] = Field(default_factory=dict, exclude=True, repr=False)
    source: Where = Field(default=Path("config.yaml"), exclude=True)
    _ignored: list[IgnoredOption] = PrivateAttr(default_factory=list)  # flat assign options the method ignores
    _storage: Storage | None = PrivateAttr(default=None)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    @property
    def work(self) -> Path | Location:
        """The work folder (default: `<output.dir>.work` beside the output)."""
        if self.work_dir is not None:
            return self.work_dir
        out = self.output.dir
        if isinstance(out, Location):
            return out.parent.join(out.name + ".work")
        if not out.name:  # the filesystem's root has no sibling
            raise InputError(self.source, "work_dir", f"a work_dir in the config when output.dir is {out} (the "
                             "default, <output.dir>.work beside it, has no place there)", "none")
        return out.with_name(out.name + ".work")

    @property
    def storage(self) -> Storage:
        """The storage layer every step reads and writes through (credentials: `storage_options`, else each store's
        SDK defaults)."""
        if self._storage is None:
            self._storage = Storage(self.storage_options)
        return self._storage

    def section(self, name: str) -> dict:
        """The JSON form of one config section (what a step's cache key depends on)."""
        model = {"assign": self.assign, "shuffle": self.shuffle, "validate": self.validate_,
                 "cluster": self.cluster}[name]
        return model.model_dump(mode="json")


# ---- loading ---------------------------------------------------------------------------------------------------

_PATH_KEYS = [("input", "metadata"), ("output", "dir"), ("work_dir",), ("assign", "dir"), ("assign", "file", "dir"),
              ("shuffle", "scratch_dir")]


def _fields(model: type[BaseModel]) -> dict[str, Any]:
    """Key name (alias if any) -> annotation of a model's fields (not `source`, which the loader sets)."""
    return {(f.alias or name): f.annotation for name, f in model.model_fields.items() if name != "source"}


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


def _resolve_paths(data: dict, source: Path | Location) -> None:
    """Relative locations against the config's folder (a local folder, or a URL prefix); URLs stay as written."""
    base = source.parent
    for keys in _PATH_KEYS:
        node = data
        for k in keys[:-1]:
            node = node.get(k) if isinstance(node, dict) else None
        if isinstance(node, dict) and isinstance(node.get(keys[-1]), str):
            text = node[keys[-1]]
            if "://" in text or isinstance(base, Location):
                try:
                    node[keys[-1]] = location(text, base=base).url
                except GraphshardError as err:  # a malformed URL: named with the key that holds it
                    raise GraphshardError(f"{source}: field '{'.'.join(keys)}': {err}") from None
                continue
            p = Path(text).expanduser()
            node[keys[-1]] = str(p if p.is_absolute() else beside_link(base / p))


def apply_override(data: dict, assignment: str) -> None:
    """Apply one `key.path=value` override to a config tree; the value is parsed as YAML (`4` is an int).

    Parameters
    ----------
    data : dict
        The config tree, changed in place.
    assignment : str
        `key.path=value`.
    """
    key, sep, text = assignment.partition("=")
    if not sep or not key.strip():
        raise InputError("--set", assignment, "key.path=value")
    try:
        value = yaml.safe_load(text) if text.strip() else None
    except yaml.YAMLError as err:
        shown = "a value" if key.strip().startswith("storage_options") else repr(text)  # may hold a secret
        raise InputError("--set", key, "a YAML value (quote it: key='...')",
                         f"{shown} ({err.__class__.__name__})") from None
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
    if msg.startswith("expected "):  # a validator's own "expected X, found <type>": X, then the value as found
        msg = msg.removeprefix("expected ").split(", found ")[0]
    found = first.get("input")
    if first["type"] == "missing":
        return loc, "a value (required key)", "nothing"
    shown = json.dumps(found, default=str) if not isinstance(found, dict) else "a mapping"
    return loc, msg[0].lower() + msg[1:], shown


def parse_config(data: Any, source: Path | Location) -> PipelineConfig:
    """Validate a config tree (already overridden); paths are resolved against the config file's folder.

    Parameters
    ----------
    data : object
        The YAML's top level (a mapping, or the problem is reported).
    source : Path or Location
        The config file (named in every problem; relative locations are resolved against its folder).

    Returns
    -------
    PipelineConfig
        The validated config (the assign section resolved for its method).
    """
    if not isinstance(data, dict):
        raise InputError(source, None, "a YAML mapping at the top level", type(data).__name__)
    _check_keys(data, PipelineConfig, source)
    _resolve_paths(data, source)
    _check_storage_options(data.get("storage_options"), source)
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


def _check_storage_options(value: Any, source: Path | Location) -> None:
    """`storage_options` must be a mapping of URL prefix -> options mapping (StorageOptions says which is not);
    checked here so that pydantic never shows a value (they hold secrets)."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise InputError(source, "storage_options", "a mapping of URL prefix (s3://bucket/) -> filesystem options",
                         type(value).__name__)
    try:
        StorageOptions(value)
    except GraphshardError as err:
        raise GraphshardError(f"{source}: {err}") from None


def _config_text(source: Path | Location) -> str:
    """The config's text, from a local file or a URL (credentials: each store's SDK defaults, as no
    storage_options are known before the config is read)."""
    if isinstance(source, Location):
        from graphshard.storage import check_location

        check_location(source)
        return _decoded(Storage().read_bytes(source), source)
    if not source.is_file():
        found = "a folder" if source.is_dir() else "no such file"
        raise InputError(source, None, "an existing YAML config file", found)
    return _decoded(source.read_bytes(), source)


def _decoded(data: bytes, source: Path | Location) -> str:
    """The config's bytes as UTF-8 text (YAML's encoding), else one line naming the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(source, None, "a UTF-8 text file (save the config as UTF-8)",
                         f"byte 0x{data[err.start]:02x} at offset {err.start}") from None


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader refusing a key given twice in one mapping (PyYAML keeps the last one silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        """The mapping, after checking that no key repeats."""
        seen: dict[Any, yaml.Mark] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: its keys may be overridden here
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, typing.Hashable) and key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key '{key}' given twice (first at line {seen[key].line + 1})",
                    key_node.start_mark)
            if isinstance(key, typing.Hashable):
                seen[key] = key_node.start_mark
        return super().construct_mapping(node, deep=deep)


def load_config(path: str | Path | Location, overrides: list[str] | None = None) -> PipelineConfig:
    """Read a YAML config, apply `--set` overrides, validate; InputError (one line) on any problem.

    Parameters
    ----------
    path : str, Path or Location
        The YAML config: a path (`~` is the home folder, as a deployment's `config` parameter gets no shell to
        expand it) or a URL (`s3://bucket/jobs/job.yaml`).
    overrides : list of str, optional
        `key.path=value` strings.

    Returns
    -------
    PipelineConfig
        The validated config.
    """
    loc = location(Path(path).expanduser() if isinstance(path, (str, Path)) and str(path).startswith("~") else path)
    source: Path | Location = beside_link(loc.local_path()) if loc.is_local else loc
    text = _config_text(source)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = (getattr(err, "problem", None) or type(err).__name__).removeprefix("found ")  # "found found ..."
        raise InputError(source, None, "valid YAML", f"{problem}{where}") from None
    data = {} if data is None else data
    if isinstance(data, dict):
        for item in overrides or []:
            apply_override(data, item)
    try:
        return parse_config(data, source)
    except InputError as err:
        raise _from_override(err, overrides or []) from None


def _from_override(err: InputError, overrides: list[str]) -> InputError:
    """A problem with a key an override set is named as `--set key=...`, not as the YAML file's."""
    keys = [item.partition("=")[0].strip() for item in overrides]
    field = err.field or ""
    given = next((k for k in reversed(keys) if field == k or field.startswith(f"{k}.")), None)
    if given is None:
        return err
    return InputError(f"--set {given}=... (over {err.file})", err.field, err.expected, err.found)

"""The chunked graph input format (`metadata.json`), as a typed model (reference formats.md §1)."""

from __future__ import annotations

import os
import re
from functools import cached_property
from pathlib import Path
from typing import Annotated, Literal

import numpy as np
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from graphshard.errors import InputError
from graphshard.formats.jsonfile import read_json_object
from graphshard.storage import Location, Storage, StoredFile, location
from graphshard.storage.locations import beside_link

FORMAT_NAMES = ("csv", "numpy", "parquet")
_NAME_RE = re.compile(r"^[A-Za-z0-9_\-.]+$")


class FieldProblem(ValueError):
    """A metadata inconsistency found by a validator: which field, what was expected, what was found."""

    def __init__(self, field: str, expected: str, found: object = None):
        super().__init__(f"{field}: expected {expected}" + (f", found {found}" if found is not None else ""))
        self.field, self.expected, self.found = field, expected, found


def _count(v: object) -> object:
    """JSON true and false are not counts (pydantic would read them as 1 and 0), nor are strings (pydantic would
    read "150" as 150: a count written as a string is a wrong type, as the config check says of `num_parts: "4"`)."""
    if isinstance(v, bool):
        raise ValueError("a whole number, not true or false")
    if isinstance(v, str):
        raise ValueError("a whole number, not a string")
    return v


def _chunk_path(v: str) -> str:
    if not v.strip():
        raise ValueError("a chunk file path, not an empty string")
    return v


Count = Annotated[int, BeforeValidator(_count)]
ChunkPath = Annotated[str, AfterValidator(_chunk_path)]


class FileFormat(BaseModel):
    """How a chunk file is encoded; `delimiter` applies to csv only."""

    model_config = ConfigDict(extra="allow")
    name: Literal["csv", "numpy", "parquet"]
    delimiter: str = " "

    @field_validator("delimiter")
    @classmethod
    def _delimiter(cls, v: str, info: ValidationInfo) -> str:
        if info.data.get("name") == "csv" and (len(v) != 1 or not v.isascii() or v in "\r\n"):
            raise ValueError("one ASCII character, not a line end (what csv columns are split at)")
        return v


class ChunkFileSpec(BaseModel):
    """A list of chunk files of one format, in row order."""

    model_config = ConfigDict(extra="allow")
    format: FileFormat
    data: list[ChunkPath] = Field(min_length=1)


class EdgeType(BaseModel):
    """A canonical edge type `src:rel:dst`."""

    src: str
    rel: str
    dst: str

    @property
    def name(self) -> str:
        return f"{self.src}:{self.rel}:{self.dst}"

    @classmethod
    def parse(cls, text: str) -> "EdgeType":
        parts = text.split(":")
        if len(parts) != 3 or not all(parts):
            raise ValueError(f"edge type '{text}' is not of the form 'src:rel:dst'")
        return cls(src=parts[0], rel=parts[1], dst=parts[2])


class ChunkedGraph(BaseModel):
    """The parsed `metadata.json`; paths are resolved against its folder (`base`, a path or a URL: chunk files named
    relative to it, or by absolute paths or URLs) and read through `storage`."""

    model_config = ConfigDict(extra="allow")

    graph_name: str
    node_type: list[str] = Field(min_length=1)
    num_nodes_per_chunk: list[list[Count]]
    edge_type: list[str]
    num_edges_per_chunk: list[list[Count]]
    edges: dict[str, ChunkFileSpec]
    node_data: dict[str, dict[str, ChunkFileSpec]] = Field(default_factory=dict)
    edge_data: dict[str, dict[str, ChunkFileSpec]] = Field(default_factory=dict)
    num_nodes_per_type: list[Count] | None = None
    num_edges_per_type: list[Count] | None = None
    base_dir: Path = Field(default=Path("."), exclude=True)
    metadata_path: Path | Location | None = Field(default=None, exclude=True)
    _base: Location | None = PrivateAttr(default=None)
    _storage: Storage | None = PrivateAttr(default=None)
    _held: dict = PrivateAttr(default_factory=dict)

    @field_validator("graph_name")
    @classmethod
    def _graph_name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_]+$", v):
            raise FieldProblem("graph_name", "letters, digits and '_' only", repr(v))
        return v

    @field_validator("node_type")
    @classmethod
    def _node_types(cls, v: list[str]) -> list[str]:
        for name in v:
            if not name or ":" in name or "/" in name:
                raise FieldProblem("node_type", "names non-empty without ':' or '/'", repr(name))
        if len(set(v)) != len(v):
            raise FieldProblem("node_type", "distinct node types", v)
        return v

    @field_validator("num_nodes_per_chunk", "num_edges_per_chunk")
    @classmethod
    def _counts(cls, v: list[list[int]], info: ValidationInfo) -> list[list[int]]:
        for i, row in enumerate(v):
            if any(c < 0 for c in row):
                raise FieldProblem(f"{info.field_name}[{i}]", "chunk row counts >= 0", row)
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "ChunkedGraph":
        if len(self.num_nodes_per_chunk) != len(self.node_type):
            raise FieldProblem("num_nodes_per_chunk", f"one row per node type ({len(self.node_type)})",
                               f"{len(self.num_nodes_per_chunk)} rows")
        if len(self.num_edges_per_chunk) != len(self.edge_type):
            raise FieldProblem("num_edges_per_chunk", f"one row per edge type ({len(self.edge_type)})",
                               f"{len(self.num_edges_per_chunk)} rows")
        if len(set(self.edge_type)) != len(self.edge_type):
            raise FieldProblem("edge_type", "distinct edge types", self.edge_type)
        for i, et in enumerate(self.edge_type):
            try:
                parsed = EdgeType.parse(et)
            except ValueError:
                raise FieldProblem(f"edge_type[{i}]", "a canonical edge type 'src:rel:dst'", repr(et)) from None
            if "/" in parsed.rel:
                raise FieldProblem(f"edge_type[{i}]", "a relation name without '/' (DistGraph splits the partitions' "
                                   "feature names '<src:rel:dst>/<feature>' at '/')", repr(et))
            for end in (parsed.src, parsed.dst):
                if end not in self.node_type:
                    raise FieldProblem(f"edge_type[{i}]", f"node types from node_type {self.node_type}",
                                       f"'{end}' in '{et}'")
        for et in self.edges:
            if et not in self.edge_type:
                raise FieldProblem(f"edges['{et}']", f"an edge type listed in edge_type {self.edge_type}", repr(et))
        for i, et in enumerate(self.edge_type):
            if et not in self.edges:
                raise FieldProblem("edges", f"an entry for every edge type, including '{et}'", "none for it")
            n_files = len(self.edges[et].data)
            n_chunks = len(self.num_edges_per_chunk[i])
            if n_files != n_chunks:
                raise FieldProblem(f"edges['{et}'].data",
                                   f"one file per chunk of num_edges_per_chunk[{i}] ({n_chunks})", f"{n_files} files")
        for nt in self.node_data:
            if nt not in self.node_type:
                raise FieldProblem(f"node_data['{nt}']", f"a node type listed in node_type {self.node_type}", repr(nt))
        for et in self.edge_data:
            if et not in self.edge_type:
                raise FieldProblem(f"edge_data['{et}']", f"an edge type listed in edge_type {self.edge_type}", repr(et))
        for section in ("node_data", "edge_data"):
            for owner, feats in getattr(self, section).items():
                for feat in feats:
                    if not feat or "/" in feat:
                        raise FieldProblem(f"{section}['{owner}']", "feature names non-empty without '/'", repr(feat))
        derived_n = [sum(r) for r in self.num_nodes_per_chunk]
        derived_e = [sum(r) for r in self.num_edges_per_chunk]
        if not sum(derived_n):
            raise FieldProblem("num_nodes_per_chunk", "at least one node in all (a graph to partition)",
                               self.num_nodes_per_chunk)
        if self.num_nodes_per_type is None:
            self.num_nodes_per_type = derived_n
        elif list(self.num_nodes_per_type) != derived_n:
            raise FieldProblem("num_nodes_per_type", f"the sums of num_nodes_per_chunk {derived_n}",
                               self.num_nodes_per_type)
        if self.num_edges_per_type is None:
            self.num_edges_per_type = derived_e
        elif list(self.num_edges_per_type) != derived_e:
            raise FieldProblem("num_edges_per_type", f"the sums of num_edges_per_chunk {derived_e}",
                               self.num_edges_per_type)
        return self

    # ---- lookups -------------------------------------------------------------------------------------------
    @property
    def base(self) -> Location:
        """The metadata's folder, a local path or a URL: what relative chunk paths are resolved against."""
        return self._base or location(self.base_dir)

    @property
    def storage(self) -> Storage:
        """What the graph's files are read through (the default: credentials from the environment)."""
        if self._storage is None:
            self._storage = Storage()
        return self._storage

    @property
    def is_local(self) -> bool:
        return self.base.is_local

    def location(self, p: str) -> Location:
        """Where a chunk file named in the metadata lies (relative names are against `base`; URLs stand alone)."""
        return location(p, base=self.base)

    def path(self, p: str) -> Path | Location:
        """A chunk file named in the metadata as messages show it: an absolute Path when local, else its location."""
        loc = self.location(p)
        return Path(loc.path) if loc.is_local else loc

    def file(self, p: str) -> StoredFile:
        """A chunk file named in the metadata, to read through the graph's storage (or from bytes `holding` gave)."""
        loc = self.location(p)
        return StoredFile(loc, self.storage, self._held.get(loc))

    def holding(self, held: dict[Location, bytes]) -> ChunkedGraph:
        """A copy of this graph whose files at these locations are read from these bytes (read once already)."""
        copy = self.model_copy()
        copy._base, copy._storage, copy._held = self._base, self.storage, {**self._held, **held}
        return copy

    def ntype_id(self, ntype: str) -> int:
        return self.node_type.index(ntype)

    def etype_id(self, etype: str) -> int:
        return self.edge_type.index(etype)

    def canonical(self, etype: str) -> EdgeType:
        return EdgeType.parse(etype)

    def num_nodes(self, ntype: str) -> int:
        return int(self.num_nodes_per_type[self.ntype_id(ntype)])

    def num_edges(self, etype: str) -> int:
        return int(self.num_edges_per_type[self.etype_id(etype)])

    @property
    def total_nodes(self) -> int:
        return int(sum(self.num_nodes_per_type))

    @property
    def total_edges(self) -> int:
        return int(sum(self.num_edges_per_type))

    @property
    def is_homogeneous(self) -> bool:
        return len(self.node_type) == 1 and len(self.edge_type) == 1

    def node_chunk_offsets(self, ntype: str) -> np.ndarray:
        """Row offsets of the node chunks of one type: [0, c0, c0+c1, ..., N]."""
        return np.concatenate([[0], np.cumsum(self.num_nodes_per_chunk[self.ntype_id(ntype)])]).astype(np.int64)

    def edge_chunk_offsets(self, etype: str) -> np.ndarray:
        """Row offsets of the edge chunks of one type: [0, c0, c0+c1, ..., E]."""
        return np.concatenate([[0], np.cumsum(self.num_edges_per_chunk[self.etype_id(etype)])]).astype(np.int64)

    @cached_property
    def type_node_offsets(self) -> np.ndarray:
        """Offsets of each node type in a type-major homogeneous ID space."""
        return np.concatenate([[0], np.cumsum(self.num_nodes_per_type)]).astype(np.int64)

    def data_files(self) -> list[str]:
        """Every chunk file the metadata names (edges, node features, edge features), as written there."""
        specs = [self.edges[et] for et in self.edge_type]
        specs += [s for feats in self.node_data.values() for s in feats.values()]
        specs += [s for feats in self.edge_data.values() for s in feats.values()]
        return [name for spec in specs for name in spec.data]

    def to_json_dict(self) -> dict:
        """The metadata as written to metadata.json (with derived per-type counts filled in)."""
        return self.model_dump(mode="json", exclude={"base_dir", "metadata_path"}, exclude_none=True)


def chunk_bounds(total: int, chunks: int) -> list[int]:
    """Offsets [0, ..., total] splitting `total` rows into `chunks` near-equal chunks (what every writer of chunks,
    and every step that splits rows into blocks, uses)."""
    return [total * i // chunks for i in range(chunks + 1)]


def _field_path(loc: tuple) -> str:
    """A pydantic location as the user's JSON path: edges['a:b:c'].format.name, node_data['paper']['feat']."""
    keyed = {"edges": 1, "node_data": 2, "edge_data": 2}.get(loc[0] if loc else "", 0)
    out = str(loc[0]) if loc else "(top level)"
    for i, x in enumerate(loc[1:], start=1):
        out += f"[{x}]" if isinstance(x, int) else (f"['{x}']" if i <= keyed else f".{x}")
    return out


def _pydantic_problem(err: ValidationError) -> tuple[str, str, object]:
    """Turn the first pydantic error into (field path, expected, found)."""
    first = err.errors()[0]
    ctx = first.get("ctx") or {}
    if isinstance(ctx.get("error"), FieldProblem):
        problem = ctx["error"]
        return problem.field, problem.expected, problem.found
    loc = _field_path(first["loc"])
    kind, value = first["type"], first.get("input")
    if kind == "missing":
        return loc, "a value (required field)", "nothing"
    if kind == "too_short" and loc.endswith(".data"):
        return loc, ("at least 1 file (for a type with no rows, list one empty file and count it 0 in "
                     "num_nodes_per_chunk / num_edges_per_chunk)"), f"{ctx.get('actual_length')}"
    if kind == "too_short":
        return loc, f"at least {ctx.get('min_length')} item(s)", f"{ctx.get('actual_length')}"
    if kind == "literal_error":
        return loc, f"one of {ctx.get('expected')}", repr(value)
    expected = first["msg"].removeprefix("Value error, ").removeprefix("Input should be ")
    found = repr(value) if value is not None and len(repr(value)) <= 80 else None
    return loc, expected, found


def parse_metadata(data: dict, base_dir: str | Path | Location, source: str | Path | Location = "metadata.json",
                   storage: Storage | None = None) -> ChunkedGraph:
    """Validate a metadata dict; raise InputError naming the file and the field on any problem."""
    if not isinstance(data, dict):
        raise InputError(source, None, "a JSON object at the top level", type(data).__name__)
    base = location(base_dir)
    try:
        graph = ChunkedGraph.model_validate({**data, "base_dir": Path(base.path) if base.is_local else Path(".")})
    except ValidationError as err:
        field, expected, found = _pydantic_problem(err)
        raise InputError(source, field, expected, found) from None
    graph._base, graph._storage = base, storage
    if isinstance(source, Location):
        graph.metadata_path = Path(source.path) if source.is_local else source
    else:
        graph.metadata_path = Path(source)
    return graph


def metadata_location(path: str | os.PathLike | Location, storage: Storage | None = None) -> Location:
    """A metadata.json's location from the file or its folder (a URL not ending in `.json` is taken as a folder)."""
    loc = location(path)
    if loc.is_local:
        return location(Path(loc.path).resolve() / "metadata.json") if Path(loc.path).is_dir() else loc
    return loc if loc.name.endswith(".json") else loc.join("metadata.json")


def load_metadata(path: str | os.PathLike | Location, storage: Storage | None = None) -> ChunkedGraph:
    """Read and validate a chunked graph's `metadata.json`, a local file or an object at a URL.

    Parameters
    ----------
    path : str, Path or Location
        The metadata.json, or its folder: a path or a URL such as s3://bucket/graph/metadata.json.
    storage : Storage, optional
        What the metadata and the chunk files are read through; None: credentials from the environment.

    Returns
    -------
    ChunkedGraph
        The parsed metadata (chunk paths relative to its folder).

    Raises
    ------
    InputError
        Naming the file, the field and what was expected.
    """
    loc = metadata_location(path, storage)
    if loc.is_local:
        local = beside_link(loc.path)
        return parse_metadata(read_json_object(local, "metadata.json file"), local.parent, local, storage)
    data = read_json_object(loc, "metadata.json file", storage)
    (storage or Storage()).prime(loc.parent)  # the chunk files' sizes and ETags from one listing, not a HEAD each
    return parse_metadata(data, loc.parent, loc, storage)


def as_graph(graph: ChunkedGraph | str | os.PathLike | Location, storage: Storage | None = None) -> ChunkedGraph:
    """A loaded graph as it is, else `load_metadata(graph, storage)` (a metadata.json or its folder)."""
    return graph if isinstance(graph, ChunkedGraph) else load_metadata(graph, storage)

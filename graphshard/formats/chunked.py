"""The chunked graph input format (`metadata.json`), as a typed model (reference formats.md §1)."""

from __future__ import annotations

import json
import re
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from graphshard.errors import InputError

FORMAT_NAMES = ("csv", "numpy", "parquet")
_NAME_RE = re.compile(r"^[A-Za-z0-9_\-.]+$")


class FileFormat(BaseModel):
    """How a chunk file is encoded; `delimiter` applies to csv only."""

    model_config = ConfigDict(extra="allow")
    name: Literal["csv", "numpy", "parquet"]
    delimiter: str = " "


class ChunkFileSpec(BaseModel):
    """A list of chunk files of one format, in row order."""

    model_config = ConfigDict(extra="allow")
    format: FileFormat
    data: list[str] = Field(min_length=1)


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
    """The parsed `metadata.json`; paths are resolved against `base_dir` (the file's folder)."""

    model_config = ConfigDict(extra="allow")

    graph_name: str
    node_type: list[str] = Field(min_length=1)
    num_nodes_per_chunk: list[list[int]]
    edge_type: list[str]
    num_edges_per_chunk: list[list[int]]
    edges: dict[str, ChunkFileSpec]
    node_data: dict[str, dict[str, ChunkFileSpec]] = Field(default_factory=dict)
    edge_data: dict[str, dict[str, ChunkFileSpec]] = Field(default_factory=dict)
    num_nodes_per_type: list[int] | None = None
    num_edges_per_type: list[int] | None = None
    base_dir: Path = Field(default=Path("."), exclude=True)
    metadata_path: Path | None = Field(default=None, exclude=True)

    @field_validator("graph_name")
    @classmethod
    def _graph_name(cls, v: str) -> str:
        if not re.match(r"^[A-Za-z0-9_]+$", v):
            raise ValueError(f"graph_name '{v}' must use letters, digits and '_' only")
        return v

    @field_validator("node_type")
    @classmethod
    def _node_types(cls, v: list[str]) -> list[str]:
        for name in v:
            if not name or ":" in name or "/" in name:
                raise ValueError(f"node type '{name}' must be non-empty without ':' or '/'")
        if len(set(v)) != len(v):
            raise ValueError(f"node types repeat: {v}")
        return v

    @field_validator("num_nodes_per_chunk", "num_edges_per_chunk")
    @classmethod
    def _counts(cls, v: list[list[int]]) -> list[list[int]]:
        for row in v:
            if any(c < 0 for c in row):
                raise ValueError(f"chunk row counts must be >= 0, found {row}")
        return v

    @model_validator(mode="after")
    def _consistent(self) -> "ChunkedGraph":
        if len(self.num_nodes_per_chunk) != len(self.node_type):
            raise ValueError(
                f"num_nodes_per_chunk has {len(self.num_nodes_per_chunk)} rows, expected one per node type "
                f"({len(self.node_type)})"
            )
        if len(self.num_edges_per_chunk) != len(self.edge_type):
            raise ValueError(
                f"num_edges_per_chunk has {len(self.num_edges_per_chunk)} rows, expected one per edge type "
                f"({len(self.edge_type)})"
            )
        if len(set(self.edge_type)) != len(self.edge_type):
            raise ValueError(f"edge types repeat: {self.edge_type}")
        for et in self.edge_type:
            parsed = EdgeType.parse(et)
            for end in (parsed.src, parsed.dst):
                if end not in self.node_type:
                    raise ValueError(f"edge type '{et}' names node type '{end}', not in node_type {self.node_type}")
        for et in self.edges:
            if et not in self.edge_type:
                raise ValueError(f"edges has edge type '{et}' that is not in edge_type {self.edge_type}")
        for et in self.edge_type:
            if et not in self.edges:
                raise ValueError(f"edge type '{et}' has no entry in 'edges'")
            n_files = len(self.edges[et].data)
            n_chunks = len(self.num_edges_per_chunk[self.edge_type.index(et)])
            if n_files != n_chunks:
                raise ValueError(f"edges['{et}'] lists {n_files} files but num_edges_per_chunk has {n_chunks} chunks")
        for nt in self.node_data:
            if nt not in self.node_type:
                raise ValueError(f"node_data has node type '{nt}' that is not in node_type {self.node_type}")
        for et in self.edge_data:
            if et not in self.edge_type:
                raise ValueError(f"edge_data has edge type '{et}' that is not in edge_type {self.edge_type}")
        for feats in list(self.node_data.values()) + list(self.edge_data.values()):
            for feat in feats:
                if not feat or "/" in feat:
                    raise ValueError(f"feature name '{feat}' must be non-empty without '/'")
        derived_n = [sum(r) for r in self.num_nodes_per_chunk]
        derived_e = [sum(r) for r in self.num_edges_per_chunk]
        if self.num_nodes_per_type is None:
            self.num_nodes_per_type = derived_n
        elif list(self.num_nodes_per_type) != derived_n:
            raise ValueError(f"num_nodes_per_type {self.num_nodes_per_type} != sums of num_nodes_per_chunk {derived_n}")
        if self.num_edges_per_type is None:
            self.num_edges_per_type = derived_e
        elif list(self.num_edges_per_type) != derived_e:
            raise ValueError(f"num_edges_per_type {self.num_edges_per_type} != sums of num_edges_per_chunk {derived_e}")
        return self

    # ---- lookups -------------------------------------------------------------------------------------------
    def path(self, p: str) -> Path:
        """Absolute path of a chunk file named in the metadata (relative paths are against base_dir)."""
        q = Path(p)
        return q if q.is_absolute() else self.base_dir / q

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

    def to_json_dict(self) -> dict:
        """The metadata as written to metadata.json (with derived per-type counts filled in)."""
        return self.model_dump(mode="json", exclude={"base_dir", "metadata_path"}, exclude_none=True)


def _pydantic_message(err: ValidationError) -> tuple[str, str]:
    """Turn the first pydantic error into (field path, message)."""
    first = err.errors()[0]
    loc = ".".join(str(x) for x in first["loc"]) or "(top level)"
    msg = first["msg"].removeprefix("Value error, ")
    return loc, msg


def parse_metadata(data: dict, base_dir: Path, source: str | Path = "metadata.json") -> ChunkedGraph:
    """Validate a metadata dict; raise InputError naming the file and the field on any problem."""
    if not isinstance(data, dict):
        raise InputError(source, None, "a JSON object at the top level", type(data).__name__)
    try:
        graph = ChunkedGraph.model_validate({**data, "base_dir": Path(base_dir)})
    except ValidationError as err:
        loc, msg = _pydantic_message(err)
        raise InputError(source, loc, msg) from None
    graph.metadata_path = Path(source)
    return graph


def load_metadata(path: str | Path) -> ChunkedGraph:
    """Read and validate a `metadata.json`; raise InputError (file, field, expected) when it is bad."""
    path = Path(path).resolve()
    if path.is_dir():
        path = path / "metadata.json"
    if not path.exists():
        raise InputError(path, None, "an existing metadata.json file", "no such file")
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise InputError(path, None, "valid JSON", f"{err.msg} at line {err.lineno} column {err.colno}") from None
    return parse_metadata(data, path.parent, path)

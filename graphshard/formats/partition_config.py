"""The partition config `<graph_name>.json` that DGL's `load_partition` reads (reference formats.md §3)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict, ValidationError, model_validator

from graphshard.errors import InputError
from graphshard.formats.jsonfile import read_json_object
from graphshard.storage import Location, Storage, location

_PART_KEY = re.compile(r"^part-(\d+)$")
HOMO_NTYPE = "_N"
HOMO_ETYPE = "_N:_E:_N"


class PartFiles(BaseModel):
    """The files of one partition, relative to the config's folder."""

    model_config = ConfigDict(extra="allow")
    node_feats: str
    edge_feats: str
    part_graph: str


class PartitionConfig(BaseModel):
    """`<graph_name>.json`: ID ranges per (type, partition) in the new homogeneous ID space and per-partition files."""

    model_config = ConfigDict(extra="ignore")

    graph_name: str
    num_nodes: int
    num_edges: int
    part_method: str
    num_parts: int
    halo_hops: int
    node_map: dict[str, list[tuple[int, int]]]
    edge_map: dict[str, list[tuple[int, int]]]
    ntypes: dict[str, int]
    etypes: dict[str, int]
    parts: list[PartFiles]

    @model_validator(mode="before")
    @classmethod
    def _collect_parts(cls, data: Any) -> Any:
        """Gather the `part-<i>` keys of the JSON into the `parts` list."""
        if not isinstance(data, dict) or "parts" in data:
            return data
        found = {int(m.group(1)): v for k, v in data.items() if (m := _PART_KEY.match(k))}
        return {**data, "parts": [found.get(i) for i in range(max(found, default=-1) + 1)]}

    @model_validator(mode="after")
    def _consistent(self) -> "PartitionConfig":
        if self.num_parts != len(self.parts):
            raise ValueError(f"num_parts: {self.num_parts} but {len(self.parts)} 'part-<i>' entries are present")
        for key, ranges, types in (("node_map", self.node_map, self.ntypes), ("edge_map", self.edge_map, self.etypes)):
            if set(ranges) != set(types):
                raise ValueError(f"{key}: keys {sorted(ranges)} differ from the types {sorted(types)}")
            for name, rs in ranges.items():
                if len(rs) != self.num_parts:
                    raise ValueError(f"{key}['{name}']: {len(rs)} ranges, expected one per partition "
                                     f"({self.num_parts})")
                if any(start > end or start < 0 for start, end in rs):
                    raise ValueError(f"{key}['{name}']: a range with start > end or start < 0: {rs}")
        if sorted(self.ntypes.values()) != list(range(len(self.ntypes))):
            raise ValueError(f"ntypes: ids must be 0..{len(self.ntypes) - 1}, found {sorted(self.ntypes.values())}")
        if sorted(self.etypes.values()) != list(range(len(self.etypes))):
            raise ValueError(f"etypes: ids must be 0..{len(self.etypes) - 1}, found {sorted(self.etypes.values())}")
        for etype in self.etypes:
            parts = etype.split(":")
            if len(parts) != 3 or parts[0] not in self.ntypes or parts[2] not in self.ntypes:
                raise ValueError(f"etypes: edge type '{etype}' is not 'src:rel:dst' over the node types "
                                 f"{list(self.ntypes)}")
        return self

    # ------------------------------------------------------------ views

    @property
    def ntype_names(self) -> list[str]:
        """Node type names in type-id order."""
        return sorted(self.ntypes, key=self.ntypes.__getitem__)

    @property
    def etype_names(self) -> list[str]:
        """Canonical edge type names in type-id order."""
        return sorted(self.etypes, key=self.etypes.__getitem__)

    def node_ranges(self) -> np.ndarray:
        """(num_ntypes, num_parts, 2) int64 array of [start, end) homogeneous node ID ranges, types in id order."""
        return np.array([self.node_map[t] for t in self.ntype_names], dtype=np.int64).reshape(-1, self.num_parts, 2)

    def edge_ranges(self) -> np.ndarray:
        """(num_etypes, num_parts, 2) int64 array of [start, end) homogeneous edge ID ranges, types in id order."""
        return np.array([self.edge_map[t] for t in self.etype_names], dtype=np.int64).reshape(-1, self.num_parts, 2)

    def part_paths(self, base_dir: str | Path, part_id: int) -> dict[str, Path]:
        """Absolute paths of partition `part_id`'s files (`node_feats`, `edge_feats`, `part_graph`)."""
        files = self.parts[part_id]
        return {key: Path(base_dir) / getattr(files, key) for key in ("node_feats", "edge_feats", "part_graph")}

    # ------------------------------------------------------------ building

    @classmethod
    def from_counts(cls, graph_name: str, ntypes: Sequence[str], etypes: Sequence[str], node_counts: np.ndarray,
                    edge_counts: np.ndarray, part_method: str, halo_hops: int) -> "PartitionConfig":
        """Build from (num_parts, num_types) counts of owned nodes and edges: ranges partition-major, then type."""
        node_counts = np.asarray(node_counts, dtype=np.int64).reshape(-1, len(ntypes))
        edge_counts = np.asarray(edge_counts, dtype=np.int64).reshape(-1, len(etypes))
        num_parts = node_counts.shape[0]
        if edge_counts.shape[0] != num_parts:
            raise ValueError(f"node counts have {num_parts} partitions, edge counts {edge_counts.shape[0]}")
        return cls(
            graph_name=graph_name,
            num_nodes=int(node_counts.sum()),
            num_edges=int(edge_counts.sum()),
            part_method=part_method,
            num_parts=num_parts,
            halo_hops=halo_hops,
            node_map=_range_map(ntypes, node_counts),
            edge_map=_range_map(etypes, edge_counts),
            ntypes={name: i for i, name in enumerate(ntypes)},
            etypes={name: i for i, name in enumerate(etypes)},
            parts=[PartFiles(node_feats=f"part{p}/node_feat.dgl", edge_feats=f"part{p}/edge_feat.dgl",
                             part_graph=f"part{p}/graph.dgl") for p in range(num_parts)],
        )

    # ------------------------------------------------------------ files

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON layout DGL expects, keys in a fixed order."""
        out: dict[str, Any] = {
            "graph_name": self.graph_name,
            "num_nodes": self.num_nodes,
            "num_edges": self.num_edges,
            "part_method": self.part_method,
            "num_parts": self.num_parts,
            "halo_hops": self.halo_hops,
            "node_map": {t: [list(r) for r in self.node_map[t]] for t in self.ntype_names},
            "edge_map": {t: [list(r) for r in self.edge_map[t]] for t in self.etype_names},
            "ntypes": {t: self.ntypes[t] for t in self.ntype_names},
            "etypes": {t: self.etypes[t] for t in self.etype_names},
        }
        for p, files in enumerate(self.parts):
            out[f"part-{p}"] = files.model_dump()
        return out

    def save(self, path: str | Path | Location, storage: Storage | None = None) -> Path | Location:
        """Write the config deterministically (fixed key order, 4-space indent) atomically: a local file via a
        temporary name, an object as one PUT. Returns a Path for a local path, else the Location."""
        loc = location(path)
        (storage or Storage()).write_bytes(loc, (json.dumps(self.to_json_dict(), indent=4) + "\n").encode())
        return Path(loc.path) if loc.is_local else loc

    @classmethod
    def load(cls, path: str | Path | Location, storage: Storage | None = None) -> "PartitionConfig":
        """Parse and check a partition config (a path or URL); problems raise InputError naming the file and the
        field."""
        loc = location(path)
        path = Path(loc.path) if loc.is_local else loc
        data = read_json_object(loc, "partition config JSON", storage)
        try:
            return cls.model_validate(data)
        except ValidationError as err:
            first = err.errors()[0]
            loc = ".".join(str(x) for x in first["loc"]) or None
            if loc and loc.startswith("parts."):  # the JSON spells the list as part-<i> keys
                loc = "part-" + loc[len("parts."):]
            msg = first["msg"].removeprefix("Value error, ")
            raise InputError(path, loc, msg, first.get("input") if loc else None) from None


def _range_map(names: Sequence[str], counts: np.ndarray) -> dict[str, list[tuple[int, int]]]:
    """Per type, [start, end) per partition, with IDs laid out partition-major then type (prefix sums)."""
    ends = np.cumsum(counts.ravel()).reshape(counts.shape)
    starts = ends - counts
    return {name: [(int(starts[p, t]), int(ends[p, t])) for p in range(counts.shape[0])]
            for t, name in enumerate(names)}

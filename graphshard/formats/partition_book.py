"""ID lookups over a partition set with DGL's meanings (`RangePartitionBook`), from the config's range maps only.

Every lookup is a `searchsorted` over range bounds, so the book costs O(types x partitions) memory whatever the
graph size. "Homogeneous" IDs are the new (shuffled) IDs of the whole graph; "per-type" IDs are new IDs within one
type (the offset in the concatenation of that type's ranges).
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.partition_config import PartitionConfig


def _as_ids(ids) -> np.ndarray:
    return np.asarray(ids, dtype=np.int64)


class RangeMap:
    """Ranges of one kind (nodes or edges): (num_types, num_parts, 2) [start, end) in the homogeneous space."""

    def __init__(self, names: Sequence[str], ranges: np.ndarray, num_parts: int, total: int,
                 source: str | Path | None, field: str):
        self.names = list(names)
        self.type_ids = {name: i for i, name in enumerate(self.names)}
        num_types = len(self.names)
        self.ranges = np.asarray(ranges, dtype=np.int64).reshape(num_types, num_parts, 2)
        flat = self.ranges.transpose(1, 0, 2).reshape(-1, 2)  # (partition, type) order = ID order
        expected_starts = np.concatenate([[0], flat[:-1, 1]])
        bad = np.flatnonzero(flat[:, 0] != expected_starts)
        if bad.size:
            p, t = divmod(int(bad[0]), num_types)
            raise InputError(source, f"{field}['{self.names[t]}'][{p}]",
                             f"start {int(expected_starts[bad[0]])} (ranges partition-major then type, gap-free)",
                             int(flat[bad[0], 0]))
        if (flat[:, 1] < flat[:, 0]).any() or (flat[-1, 1] if flat.size else 0) != total:
            raise InputError(source, field, f"ranges covering 0..{total}", int(flat[-1, 1]) if flat.size else 0)
        self.flat_ends = flat[:, 1].copy()
        self.sizes = self.ranges[:, :, 1] - self.ranges[:, :, 0]  # (types, parts)
        self.typed_ends = np.cumsum(self.sizes, axis=1)  # per type, end of each partition's per-type IDs
        self.typed_starts = self.typed_ends - self.sizes
        empty = np.zeros(num_parts, np.int64)
        self.part_starts = flat.reshape(num_parts, num_types, 2)[:, 0, 0] if num_types else empty
        self.part_ends = flat.reshape(num_parts, num_types, 2)[:, -1, 1] if num_types else empty.copy()
        self.total = total

    @property
    def num_parts(self) -> int:
        return self.ranges.shape[1]

    def type_id(self, name: str) -> int:
        if name not in self.type_ids:
            raise KeyError(f"unknown type '{name}'; known: {self.names}")
        return self.type_ids[name]

    def _check(self, ids: np.ndarray, bound: int, what: str) -> None:
        if ids.size and (ids.min() < 0 or ids.max() >= bound):
            raise ValueError(f"{what} out of range [0, {bound}): min {ids.min()}, max {ids.max()}")

    def partid(self, ids, name: str | None) -> np.ndarray:
        """Owning partition of homogeneous IDs (name None) or of per-type IDs of type `name`."""
        ids = _as_ids(ids)
        if name is None:
            self._check(ids, self.total, "IDs")
            return np.searchsorted(self.part_ends, ids, side="right")
        t = self.type_id(name)
        self._check(ids, int(self.typed_ends[t, -1]), f"'{name}' IDs")
        return np.searchsorted(self.typed_ends[t], ids, side="right")

    def partid2ids(self, part: int, name: str | None) -> np.ndarray:
        """IDs owned by `part`: homogeneous (name None) or per-type IDs of type `name`."""
        if name is None:
            return np.arange(self.part_starts[part], self.part_ends[part], dtype=np.int64)
        t = self.type_id(name)
        return np.arange(self.typed_starts[t, part], self.typed_ends[t, part], dtype=np.int64)

    def to_local(self, ids, part: int, name: str | None) -> np.ndarray:
        """Local IDs inside `part` (homogeneous: offset in the partition; per-type: offset in its type range)."""
        ids = _as_ids(ids)
        owner = self.partid(ids, name)
        if (owner != part).any():
            raise ValueError(f"IDs not owned by partition {part}: {ids[owner != part][:5].tolist()}")
        start = self.part_starts[part] if name is None else self.typed_starts[self.type_id(name), part]
        return ids - start

    def to_per_type(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """Homogeneous IDs -> (type IDs, per-type IDs)."""
        ids = _as_ids(ids)
        self._check(ids, self.total, "IDs")
        slot = np.searchsorted(self.flat_ends, ids, side="right")
        part, tid = np.divmod(slot, len(self.names))
        local = ids - self.ranges[tid, part, 0]
        return tid, self.typed_starts[tid, part] + local

    def to_homo(self, ids, name: str) -> np.ndarray:
        """Per-type IDs of type `name` -> homogeneous IDs."""
        ids = _as_ids(ids)
        t = self.type_id(name)
        self._check(ids, int(self.typed_ends[t, -1]), f"'{name}' IDs")
        part = np.searchsorted(self.typed_ends[t], ids, side="right")
        return self.ranges[t, part, 0] + (ids - self.typed_starts[t, part])


def _etype_name(etype) -> str:
    """Accept DGL's canonical tuple or the `src:rel:dst` string."""
    return ":".join(etype) if isinstance(etype, tuple) else etype


class PartitionBook:
    """Which partition owns which node/edge, and ID translations, as DGL's RangePartitionBook defines them."""

    def __init__(self, config: PartitionConfig, source: str | Path | None = None):
        self.config = config
        self.nodes = RangeMap(config.ntype_names, config.node_ranges(), config.num_parts, config.num_nodes, source,
                              "node_map")
        self.edges = RangeMap(config.etype_names, config.edge_ranges(), config.num_parts, config.num_edges, source,
                              "edge_map")

    @classmethod
    def load(cls, config_path: str | Path) -> "PartitionBook":
        return cls(PartitionConfig.load(config_path), config_path)

    @property
    def ntypes(self) -> list[str]:
        return self.nodes.names

    @property
    def etypes(self) -> list[str]:
        """Canonical edge types `src:rel:dst`, in type-id order."""
        return self.edges.names

    def num_partitions(self) -> int:
        return self.nodes.num_parts

    def metadata(self) -> list[dict[str, int]]:
        """Per partition: `machine_id`, owned `num_nodes` and `num_edges` (all types)."""
        n = self.nodes.part_ends - self.nodes.part_starts
        e = self.edges.part_ends - self.edges.part_starts
        return [{"machine_id": p, "num_nodes": int(n[p]), "num_edges": int(e[p])} for p in range(len(n))]

    # nodes
    def nid2partid(self, nids, ntype: str | None = None) -> np.ndarray:
        """Owner of homogeneous node IDs, or of per-type IDs when `ntype` is given."""
        return self.nodes.partid(nids, ntype)

    def partid2nids(self, part_id: int, ntype: str | None = None) -> np.ndarray:
        """Homogeneous node IDs owned by `part_id`, or its per-type IDs of `ntype`."""
        return self.nodes.partid2ids(part_id, ntype)

    def nid2localnid(self, nids, part_id: int, ntype: str | None = None) -> np.ndarray:
        """Local node IDs in `part_id` of nodes it owns (per-type offsets when `ntype` is given)."""
        return self.nodes.to_local(nids, part_id, ntype)

    def map_to_per_ntype(self, nids) -> tuple[np.ndarray, np.ndarray]:
        """Homogeneous node IDs -> (node type IDs, per-type node IDs)."""
        return self.nodes.to_per_type(nids)

    def map_to_homo_nid(self, nids, ntype: str) -> np.ndarray:
        """Per-type node IDs of `ntype` -> homogeneous node IDs."""
        return self.nodes.to_homo(nids, ntype)

    # edges
    def eid2partid(self, eids, etype: str | tuple | None = None) -> np.ndarray:
        """Owner of homogeneous edge IDs, or of per-type IDs when `etype` is given."""
        return self.edges.partid(eids, None if etype is None else _etype_name(etype))

    def partid2eids(self, part_id: int, etype: str | tuple | None = None) -> np.ndarray:
        """Homogeneous edge IDs owned by `part_id`, or its per-type IDs of `etype`."""
        return self.edges.partid2ids(part_id, None if etype is None else _etype_name(etype))

    def eid2localeid(self, eids, part_id: int, etype: str | tuple | None = None) -> np.ndarray:
        """Local edge IDs in `part_id` of edges it owns (per-type offsets when `etype` is given)."""
        return self.edges.to_local(eids, part_id, None if etype is None else _etype_name(etype))

    def map_to_per_etype(self, eids) -> tuple[np.ndarray, np.ndarray]:
        """Homogeneous edge IDs -> (edge type IDs, per-type edge IDs)."""
        return self.edges.to_per_type(eids)

    def map_to_homo_eid(self, eids, etype: str | tuple) -> np.ndarray:
        """Per-type edge IDs of `etype` -> homogeneous edge IDs."""
        return self.edges.to_homo(eids, _etype_name(etype))

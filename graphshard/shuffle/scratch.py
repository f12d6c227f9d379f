"""The scratch of one shuffle run: where the binary assignment, the ID map and the bucket files live: a folder every
worker sees, or a prefix in the run's store (graphshard.storage.scratch: buckets as objects, each worker reading the
assignment and ID maps from its own local copy).

Buckets are the exchange's unit: one file per (edge type, edge chunk, owner partition) and per (node type, node block,
owner partition), in the bucket format of graphshard.formats.buckets.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from graphshard._deprecated import renamed
from graphshard.storage.scratch import ScratchPath


@dataclass(frozen=True)
class ShuffleScratch:
    """The paths of one shuffle's scratch files: binary assignment, ID maps, buckets (a folder shared by the client
    and every worker, or a `StorePath` prefix)."""

    root: ScratchPath

    def parts(self, ntype_id: int) -> ScratchPath:
        """int32 owner partition of every node of a type (original per-type order)."""
        return self.root / "parts" / f"{ntype_id}.npy"

    def trainers(self, ntype_id: int) -> ScratchPath:
        """int32 trainer id of every node of a type (original per-type order), with several trainers per machine."""
        return self.root / "parts" / f"trainers-{ntype_id}.npy"

    def idmap(self, ntype_id: int) -> ScratchPath:
        """New homogeneous ID of every node of a type (original per-type order), int32 or int64."""
        return self.root / "idmap" / f"{ntype_id}.npy"

    def edge_bucket(self, etype_id: int, chunk: int, part: int) -> ScratchPath:
        return self.root / "edges" / str(etype_id) / str(chunk) / f"{part}.bkt"

    def out_bucket(self, etype_id: int, chunk: int, part: int) -> ScratchPath:
        """Cut edges of a chunk whose source `part` owns (DGL's halo adds a partition's out-edges)."""
        return self.root / "out_edges" / str(etype_id) / str(chunk) / f"{part}.bkt"

    def node_bucket(self, ntype_id: int, block: int, part: int) -> ScratchPath:
        return self.root / "nodes" / str(ntype_id) / str(block) / f"{part}.bkt"

    def make(self) -> "ShuffleScratch":
        if not isinstance(self.root, Path):
            return self  # a store has no folders
        for sub in ("parts", "idmap", "edges", "out_edges", "nodes"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self


__getattr__ = renamed(__name__, {"Scratch": "graphshard.shuffle.scratch:ShuffleScratch"})

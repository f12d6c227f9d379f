"""The scratch folder of one shuffle run: where the binary assignment, the ID map and the bucket files live.

Buckets are the exchange's unit: one file per (edge type, edge chunk, owner partition) and per (node type, node block,
owner partition). A bucket is a sequence of `.npy` records in one file (read back in order, the first ones alone when
only they are needed), written under a temporary name and renamed, so a retried task never leaves a torn bucket.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Scratch:
    """Paths inside the scratch folder (shared by the client and every worker)."""

    root: Path

    def parts(self, ntype_id: int) -> Path:
        """int32 owner partition of every node of a type (original per-type order)."""
        return self.root / "parts" / f"{ntype_id}.npy"

    def idmap(self, ntype_id: int) -> Path:
        """New homogeneous ID of every node of a type (original per-type order), int32 or int64."""
        return self.root / "idmap" / f"{ntype_id}.npy"

    def edge_bucket(self, etype_id: int, chunk: int, part: int) -> Path:
        return self.root / "edges" / str(etype_id) / str(chunk) / f"{part}.bkt"

    def out_bucket(self, etype_id: int, chunk: int, part: int) -> Path:
        """Cut edges of a chunk whose source `part` owns (DGL's halo adds a partition's out-edges)."""
        return self.root / "out_edges" / str(etype_id) / str(chunk) / f"{part}.bkt"

    def node_bucket(self, ntype_id: int, block: int, part: int) -> Path:
        return self.root / "nodes" / str(ntype_id) / str(block) / f"{part}.bkt"

    def make(self) -> "Scratch":
        for sub in ("parts", "idmap", "edges", "out_edges", "nodes"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self


def write_bucket(path: Path, arrays: list[np.ndarray]) -> None:
    """Write arrays as consecutive `.npy` records (temporary name + rename)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        for arr in arrays:
            np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
    os.replace(tmp, path)


def read_bucket(path: Path, count: int | None = None) -> list[np.ndarray]:
    """The first `count` records of a bucket (all when None)."""
    out = []
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        while (count is None or len(out) < count) and fh.tell() < size:
            out.append(np.load(fh, allow_pickle=False))
    return out

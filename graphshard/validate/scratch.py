"""Disk-backed arrays that partition tasks fill and read across partitions (memory stays at one partition).

Phase-one tasks write their own slices (their ID ranges), the entries of the original IDs they list, or their own
files; phase-two tasks read any of it. Memmaps are shared through the page cache without msync (a flush of every
array cost more than the checks), so the folder must be on a filesystem whose mmap is coherent for all workers:
local disk for workers on one host (LocalCluster). It lives beside the partition set and is deleted afterwards.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from graphshard._deprecated import renamed

CHUNK = 1 << 22


@dataclass(frozen=True)
class SharedArrays:
    """Named `.npy` memmaps (and small files) in one folder, shared by the validation's partition tasks."""

    root: Path
    _kept: dict = field(default_factory=dict, compare=False, repr=False)  # open memmaps while kept_open() runs

    @contextmanager
    def kept_open(self) -> Iterator[None]:
        """Within a task: map each array once instead of once per piece (every new mapping faults its pages in)."""
        self._kept["on"] = True
        try:
            yield
        finally:
            self._kept.clear()

    def create(self, name: str, dtype, length: int, fill: int = 0) -> None:
        arr = np.lib.format.open_memmap(self.root / f"{name}.npy", mode="w+", dtype=dtype, shape=(length,))
        if fill:
            for i in range(0, length, CHUNK):
                arr[i:i + CHUNK] = fill
        del arr

    def open(self, name: str, writable: bool = False) -> np.ndarray:
        arr = self._kept.get((name, writable))
        if arr is None:
            arr = np.load(self.root / f"{name}.npy", mmap_mode="r+" if writable else "r")
            if self._kept.get("on"):
                self._kept[(name, writable)] = arr
        return arr

    def exists(self, name: str) -> bool:
        return (self.root / f"{name}.npy").exists()

    def save(self, name: str, arr: np.ndarray) -> None:
        np.save(self.root / f"{name}.npy", arr)

    def count_equal(self, name: str, value: int) -> int:
        """How many entries equal `value`, scanning in chunks."""
        arr = self.open(name)
        return int(sum(int((arr[i:i + CHUNK] == value).sum()) for i in range(0, arr.shape[0], CHUNK)))

    def first_equal(self, name: str, value: int, limit: int = 5) -> list[int]:
        arr = self.open(name)
        found: list[int] = []
        for i in range(0, arr.shape[0], CHUNK):
            found += (np.flatnonzero(arr[i:i + CHUNK] == value) + i).tolist()[:limit - len(found)]
            if len(found) >= limit:
                break
        return found


@contextmanager
def scratch_beside(target: Path, where: Path | None = None) -> Iterator[SharedArrays]:
    """A fresh scratch folder (hidden sibling of `target`, else the system temp folder), removed on exit."""
    base = Path(where) if where else Path(target).parent
    try:
        root = base / f".{Path(target).name}.validate-{uuid.uuid4().hex[:8]}"
        root.mkdir(parents=True)
    except OSError:
        root = Path(tempfile.mkdtemp(prefix="graphshard-validate-"))
    try:
        yield SharedArrays(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


__getattr__ = renamed(__name__, {"Scratch": "graphshard.validate.scratch:SharedArrays"})

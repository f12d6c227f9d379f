"""Where one multilevel run keeps its data: a scratch folder (visible to every worker) with one folder per level.

A level holds its nodes in contiguous blocks (`bounds`); block b's file is a bucket of (indptr, global neighbour
ids, edge weights; empty at level 0, where every edge weighs 1). Arrays over all nodes of a level are `.npy`
memory maps that tasks read by random access and write only in their own block's range: node weights (`vwgt`,
column 0 = node count, then the balance columns), labels and cluster weights per LP round, the cluster -> coarse
node map and parts per refinement round. Every file of round r+1 is new, so a retried task rewrites the same bytes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.formats.buckets import read_bucket
from graphshard.formats.chunked import chunk_bounds


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: its size, blocks and weight columns."""

    root: Path
    index: int
    nodes: int
    entries: int  # directed adjacency entries (twice the undirected edges)
    bounds: tuple[int, ...]
    columns: int  # node weight columns: count, then balance columns
    weighted: bool  # edges carry weights (every level but the input)

    @property
    def blocks(self) -> range:
        return range(len(self.bounds) - 1)

    def span(self, b: int) -> tuple[int, int]:
        return self.bounds[b], self.bounds[b + 1]

    def block(self, b: int) -> Path:
        return self.root / "blocks" / f"{b}.bkt"

    @property
    def vwgt(self) -> Path:
        return self.root / "vwgt.npy"

    def labels(self, rnd: int) -> Path:
        return self.root / f"labels-{rnd}.npy"

    def cluster_weights(self, rnd: int) -> Path:
        return self.root / f"cw-{rnd}.npy"

    def delta(self, rnd: int, src: int, dst: int) -> Path:
        """Cluster weight changes made by block `src` in round `rnd`, for the clusters of block `dst`'s range."""
        return self.root / f"delta-{rnd}" / str(src) / f"{dst}.bkt"

    @property
    def cmap(self) -> Path:
        return self.root / "cmap.npy"

    def contracted(self, src: int, dst: int) -> Path:
        """Coarse edges made by fine block `src` whose coarse source lies in coarse block `dst`."""
        return self.root / "contract" / str(src) / f"{dst}.bkt"

    def fine_to_coarse(self, b: int) -> Path:
        return self.root / "f2c" / f"{b}.npy"

    def parts(self, rnd: int) -> Path:
        return self.root / f"parts-{rnd}.npy"

    def make(self) -> Level:
        for sub in ("blocks", "f2c"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        return self


def even_bounds(n: int, blocks: int) -> tuple[int, ...]:
    """Block bounds splitting [0, n) into `blocks` near-equal ranges (at least one node each when n allows)."""
    return tuple(chunk_bounds(n, max(1, min(blocks, n))))


def create(path: Path, shape: tuple[int, ...], dtype) -> Path:
    """A new `.npy` file of the shape, to be filled range by range through `open_rw`."""
    np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape).flush()
    return path


def open_ro(path: Path) -> np.ndarray:
    return np.load(path, mmap_mode="r")


def write_range(path: Path, lo: int, values: np.ndarray) -> None:
    """Write rows [lo, lo + len(values)) of a memory-mapped `.npy` file."""
    arr = np.load(path, mmap_mode="r+")
    arr[lo:lo + len(values)] = values
    arr.flush()
    del arr


def read_block(level: Level, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, neighbour ids, edge weights or an empty array) of one block."""
    indptr, indices, ew = read_bucket(level.block(b))
    return indptr, indices, ew


def local_rows(indices: np.ndarray, lo: int, hi: int) -> np.ndarray:
    """Per adjacency entry, the neighbour's row in the block [lo, hi), or -1 when another block holds it."""
    loc = indices - lo
    loc[(indices < lo) | (indices >= hi)] = -1
    return loc


def remove(*paths: Path) -> None:
    """Delete files or folders of a finished round."""
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)

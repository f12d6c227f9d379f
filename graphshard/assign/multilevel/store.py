"""Where one multilevel run keeps its data: a scratch folder with one folder per level, either a folder every worker
sees or a prefix in the run's store (graphshard.storage.scratch: buckets as objects, each worker reading an array
from its own local copy).

A level holds its nodes in contiguous blocks (`bounds`); block b's file is a bucket of (indptr, global neighbour
ids, edge weights; empty at level 0, where every edge weighs 1). Arrays over all nodes of a level are `.npy`
memory maps that tasks read by random access and write only in their own block's range: node weights (`vwgt`,
column 0 = node count, then the balance columns), labels and cluster weights per LP round, the cluster -> coarse
node map and parts per refinement round. Every file of round r+1 is new, so a retried task rewrites the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from graphshard.formats.buckets import read_bucket
from graphshard.formats.chunked import chunk_bounds
from graphshard.storage import scratch, windowed
from graphshard.storage.overlap import each
from graphshard.storage.scratch import ScratchPath, load_array, save_array  # noqa: F401 - the levels' file API


@dataclass(frozen=True)
class Level:
    """One level of the hierarchy: its size, blocks and weight columns."""

    root: ScratchPath
    index: int
    nodes: int
    entries: int  # directed adjacency entries (twice the undirected edges)
    bounds: tuple[int, ...]
    columns: int  # node weight columns: count, then balance columns
    weighted: bool  # edges carry weights (every level but the input)
    cycle: int = 0  # the V-cycle whose working files these are (level 0's blocks and weights serve every cycle)

    @property
    def work(self) -> ScratchPath:
        """The folder of this cycle's working files (labels, maps, parts): new names in every cycle, as a worker's
        local copy of a store-backed array is keyed by its name."""
        return self.root / f"cycle-{self.cycle}"

    @property
    def blocks(self) -> range:
        return range(len(self.bounds) - 1)

    def span(self, b: int) -> tuple[int, int]:
        return self.bounds[b], self.bounds[b + 1]

    def block(self, b: int) -> ScratchPath:
        return self.root / "blocks" / f"{b}.bkt"

    @property
    def vwgt(self) -> ScratchPath:
        return self.root / "vwgt.npy"

    def labels(self, rnd: int) -> ScratchPath:
        return self.work / f"labels-{rnd}.npy"

    def cluster_weights(self, rnd: int) -> ScratchPath:
        return self.work / f"cw-{rnd}.npy"

    def delta(self, rnd: int, src: int, dst: int) -> ScratchPath:
        """Cluster weight changes made by block `src` in round `rnd`, for the clusters of block `dst`'s range."""
        return self.work / f"delta-{rnd}" / str(src) / f"{dst}.bkt"

    @property
    def cmap(self) -> ScratchPath:
        return self.work / "cmap.npy"

    def contracted(self, src: int, dst: int) -> ScratchPath:
        """Coarse edges made by fine block `src` whose coarse source lies in coarse block `dst`."""
        return self.work / "contract" / str(src) / f"{dst}.bkt"

    def fine_to_coarse(self, b: int) -> ScratchPath:
        return self.work / "f2c" / f"{b}.npy"

    def parts(self, rnd: int) -> ScratchPath:
        return self.work / f"parts-{rnd}.npy"

    def within(self, b: int) -> ScratchPath:
        """Block b's edges within parts (a V-cycle's coarsening: coarsen.within_block)."""
        return self.work / "within" / f"{b}.bkt"

    @property
    def inherited(self) -> ScratchPath:
        """A V-cycle's level: the parts its clusters were kept within (the coarsest level's partition starts there)."""
        return self.work / "inherited.npy"

    def make(self) -> Level:
        if isinstance(self.root, Path):
            for sub in (self.root / "blocks", self.work / "f2c"):
                sub.mkdir(parents=True, exist_ok=True)
        return self


def even_bounds(n: int, blocks: int) -> tuple[int, ...]:
    """Block bounds splitting [0, n) into `blocks` near-equal ranges (at least one node each when n allows)."""
    return tuple(chunk_bounds(n, max(1, min(blocks, n))))


def create(path: ScratchPath, shape: tuple[int, ...], dtype) -> ScratchPath:
    """A new array of the shape, to be filled range by range through `write_range`."""
    scratch.create_array(path, shape, dtype)
    return path


def open_ro(path: ScratchPath) -> np.ndarray:
    """An array read-only: the shared memory map, or this worker's local copy of it."""
    return scratch.open_array(path)


def prefetch(*paths: ScratchPath) -> None:
    """Make the arrays a task reads ready together: on a store their local copies are assembled at once, rather
    than each waiting its own round trips when it is first opened (a shared folder's maps need nothing)."""
    if paths and scratch.is_store(paths[0]):
        each(open_ro, paths, remote=True)


def gather(path: ScratchPath, rows: np.ndarray) -> np.ndarray:
    """open_ro(path)[rows], a window of the map at a time (storage.windowed): random neighbour ids touch every page of
    a level's map, so a plain gather would put the whole map (8 B per node of the level and column) in the task's
    RSS; the map's pages are released afterwards (a worker may keep the map open: scratch.open_array)."""
    arr = open_ro(path)
    out = windowed.take(arr, rows)
    windowed.release(arr)
    return out


def write_range(path: ScratchPath, lo: int, values: np.ndarray) -> None:
    """Write rows [lo, lo + len(values)) of an array (a task writes only its own rows)."""
    scratch.write_range(path, lo, values)


def read_block(level: Level, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(indptr, neighbour ids, edge weights or an empty array) of one block, read-only (every round reads it)."""
    indptr, indices, ew = read_bucket(level.block(b), mapped=True)
    return indptr, indices, ew


def remove(*paths: ScratchPath) -> None:
    """Delete files, arrays or folders of a finished round."""
    each(scratch.remove, paths, remote=bool(paths) and scratch.is_store(paths[0]))


def local_folder(path: ScratchPath) -> Path:
    """A folder on this process's own disk for a task's temporary files: the scratch folder when it is local, else
    the worker's local directory."""
    if isinstance(path, Path):
        return path
    folder = scratch.local_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return folder

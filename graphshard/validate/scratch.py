"""Disk-backed arrays that partition tasks fill and read across partitions (memory stays at one partition).

Phase-one tasks write their own slices (their ID ranges), the entries of the original IDs they list, or their own
files; phase-two tasks read any of it. In a folder every worker sees, the arrays are `.npy` memmaps shared through
the page cache without msync (a flush of every array cost more than the checks), so that folder must be on a
filesystem whose mmap is coherent for all workers: local disk for workers on one host (LocalCluster). When the
partition set (or `scratch_dir`) is on a store, the arrays are store arrays (graphshard.storage.scratch): a write is a
piece object named after the task that wrote it, and a reading task maps its worker's local copy, assembled once from
the pieces. Either way the scratch lies beside the partition set and is deleted afterwards.
"""

from __future__ import annotations

import itertools
import tempfile
import uuid
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np

from graphshard._deprecated import renamed
from graphshard.storage import Location, Storage, location
from graphshard.storage import scratch as store
from graphshard.storage.scratch import ScratchPath, is_store

CHUNK = 1 << 22


class _PieceWriter:
    """What `open(name, writable=True)` gives on a store: `arr[index] = values` and `arr[lo:hi] = values` become
    piece objects named after the running task (the same names when it is run again)."""

    def __init__(self, path: ScratchPath, writer: str, counter: Iterator[int]):
        self.path, self.writer, self.counter = path, writer, counter
        self.shape = tuple(store.array_header(path)["shape"])

    def __setitem__(self, index, values) -> None:
        if isinstance(index, slice):
            lo = index.start or 0
            store.write_range(self.path, lo, np.broadcast_to(values, (index.stop - lo, *self.shape[1:])))
        else:
            store.write_at(self.path, index, values, f"{self.writer}-{next(self.counter):08d}")


_LOCAL_TASKS = itertools.count()


def _task_name() -> str:
    """The running Dask task's key (stable when it is retried), else a new name per in-process task (the tasks run
    one after the other, so their pieces still apply in the tasks' order)."""
    try:
        from distributed import get_worker

        key = get_worker().get_current_task()
    except (ImportError, ValueError, KeyError):  # KeyError: a thread the task started (storage.overlap)
        key = None
    return uuid.uuid5(uuid.NAMESPACE_OID, str(key)).hex if key is not None else f"local{next(_LOCAL_TASKS):08d}"


@dataclass(frozen=True)
class SharedArrays:
    """Named arrays in one scratch folder or store prefix, shared by the validation's partition tasks."""

    root: ScratchPath
    _kept: dict = field(default_factory=dict, compare=False, repr=False)  # open memmaps while kept_open() runs

    @contextmanager
    def kept_open(self) -> Iterator[None]:
        """Within a task: map each array once instead of once per piece (every new mapping faults its pages in)."""
        self._kept["on"] = True
        self._kept["writer"] = (_task_name(), itertools.count())
        try:
            yield
        finally:
            self._kept.clear()

    def _path(self, name: str) -> ScratchPath:
        return self.root / f"{name}.npy"

    def create(self, name: str, dtype, length: int, fill: int = 0) -> None:
        store.create_array(self._path(name), (length,), dtype, fill)

    def open(self, name: str, writable: bool = False) -> np.ndarray:
        arr = self._kept.get((name, writable))
        if arr is None:
            if writable and is_store(self.root):
                writer, counter = self._kept.get("writer") or (_task_name(), itertools.count())
                arr = _PieceWriter(self._path(name), f"{writer}-{name}", counter)
            else:
                arr = np.load(self._path(name), mmap_mode="r+") if writable else store.open_array(self._path(name))
            if self._kept.get("on"):
                self._kept[(name, writable)] = arr
        return arr

    def exists(self, name: str) -> bool:
        path = self._path(name)
        return path.storage.exists((path / store.HEADER).loc) if is_store(path) else path.exists()

    def save(self, name: str, arr: np.ndarray) -> None:
        store.create_array(self._path(name), arr.shape, arr.dtype)
        store.write_range(self._path(name), 0, arr)

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
def scratch_beside(target: Path | Location, where: str | Path | Location | None = None,
                   storage: Storage | None = None, client=None) -> Iterator[SharedArrays]:
    """A fresh scratch (a hidden sibling of `target`, else inside `where`; a local folder that cannot be made falls
    back to the system temp folder), removed on exit with every worker's local copies."""
    base = location(where) if where is not None else location(target).parent
    if base.is_local:
        try:
            root = Path(base.path) / f".{location(target).name}.validate-{uuid.uuid4().hex[:8]}"
            root.mkdir(parents=True)
        except OSError:
            root = Path(tempfile.mkdtemp(prefix="graphshard-validate-"))
        where_root: Path | Location = root
    else:
        where_root = base.join(f".{location(target).name}.validate")  # scratch_space adds a fresh suffix
    with store.scratch_space(where_root, storage, client) as root:
        yield SharedArrays(root)


__getattr__ = renamed(__name__, {"Scratch": "graphshard.validate.scratch:SharedArrays"})

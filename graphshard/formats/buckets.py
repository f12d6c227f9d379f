"""Bucket files: a sequence of `.npy` records in one file, what a Dask task hands to the tasks after it.

The shuffle's exchange (edges and features routed to their owner partition) and the multilevel partitioner (blocks of
a level, weight deltas, contracted edges) write them. A bucket is read back in order, the first records alone when
only they are needed; it is written under a temporary name and renamed, so a retried task never leaves a torn one.
In a scratch prefix on a store (`graphshard.storage.scratch.StorePath`) a bucket is one object, written in one PUT.
"""

from __future__ import annotations

import mmap
import os
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from graphshard.storage.overlap import AT_ONCE, each
from graphshard.storage.scratch import ScratchPath, get_records, is_store, npy_header, put_records

IN_FLIGHT = 64 << 20  # bytes of bucket pieces a task may hold encoded while several go up at once


def write_bucket(path: ScratchPath, arrays: list[np.ndarray]) -> None:
    """Write arrays as consecutive `.npy` records (temporary name + rename; one object on a store)."""
    if is_store(path):
        put_records(path, arrays)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as fh:
        for arr in arrays:
            np.save(fh, np.ascontiguousarray(arr), allow_pickle=False)
    os.replace(tmp, path)


def write_buckets(items: Sequence[tuple[ScratchPath, list[np.ndarray]]]) -> None:
    """write_bucket for each (path, arrays); on a store several PUTs in flight at once (a task's pieces, one per
    destination block, would otherwise wait a round trip each), as many as keep IN_FLIGHT bytes or fewer encoded."""
    largest = max([1] + [sum(a.nbytes for a in arrays) for _, arrays in items])
    each(lambda item: write_bucket(*item), items, remote=bool(items) and is_store(items[0][0]),
         at_once=max(1, min(AT_ONCE, IN_FLIGHT // largest)))


def read_buckets(paths: Sequence[ScratchPath]) -> Iterator[list[np.ndarray]]:
    """read_bucket of each path, in order; on a store fetched AT_ONCE at a time (memory: that many buckets)."""
    for i in range(0, len(paths), AT_ONCE):
        yield from each(read_bucket, paths[i:i + AT_ONCE], remote=is_store(paths[0]))


def read_bucket(path: ScratchPath, count: int | None = None, mapped: bool = False) -> list[np.ndarray]:
    """The first `count` records of a bucket (all when None); `mapped`: read-only views of a local file's pages
    (no copy, and no fresh memory to fault in and zero for each record), for buckets read whole and often."""
    if is_store(path):
        return get_records(path, count)
    if mapped:
        return _mapped(Path(path), count)
    out = []
    with open(Path(path), "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        while (count is None or len(out) < count) and fh.tell() < size:
            out.append(np.load(fh, allow_pickle=False))
    return out


def _mapped(path: Path, count: int | None) -> list[np.ndarray]:
    """read_bucket's records as views of one read-only mapping of the file (alive while a view is)."""
    with open(path, "rb") as fh:
        if not os.fstat(fh.fileno()).st_size:
            return []  # a bucket of no records (an empty file cannot be mapped)
        pages = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        out = []
        while (count is None or len(out) < count) and fh.tell() < len(pages):
            shape, fortran, dtype = npy_header(fh)
            rows = int(np.prod(shape, dtype=np.int64))
            arr = np.frombuffer(pages, dtype=dtype, count=rows, offset=fh.tell())
            out.append(arr.reshape(shape, order="F" if fortran else "C"))
            fh.seek(rows * dtype.itemsize, os.SEEK_CUR)
    return out

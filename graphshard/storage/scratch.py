"""Scratch that workers share without a shared filesystem: bucket files and per-node arrays under a scratch prefix
in the run's store, each worker keeping a local copy of an array it reads (memory-mapped from its own disk).

A scratch location that is a local path (`Path`) is a shared folder, used exactly as before: buckets are files and
arrays are `.npy` memory maps that tasks write range by range. A URL gives a `StorePath`: a bucket is one object;
an array is a prefix holding `_header.json` (shape, dtype, fill) and the pieces tasks wrote, `r<lo>.npy` (rows from
`lo`) and `s<writer>.bkt` (index and value records, a scatter); a task that reads it gets the local copy, which the
first reader on a worker assembles from the pieces into the worker's local folder (Dask's `local_directory`). An
array is read only after every write to it has finished (the steps' task rounds), so a copy never goes stale, and a
lost worker's copies are simply assembled again by whichever worker runs its tasks next: nothing on a worker's disk is
ever the only copy.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Union

import numpy as np

from graphshard import npyheader  # noqa: F401 - numpy's header parser under one lock (threads)
from graphshard.errors import GraphshardError
from graphshard.storage import lease
from graphshard.storage.locations import Location, location
from graphshard.storage.overlap import each
from graphshard.storage.store import Storage

log = logging.getLogger(__name__)

HEADER = "_header.json"
COPY_BLOCK = 8 << 20  # bytes per read when a range piece is copied into a local array
# Local copies a process keeps under one scratch root before it asks which arrays the step removed: below it, stale
# copies cost less than the HEAD per held copy (and a listing per removed one) every new copy would send (the test
# suite's multilevel runs on a store: a quarter of their requests).
EVICT_BYTES = 256 << 20
PIECES_BYTES = 64 << 20  # bytes an array's pieces may hold while they are fetched at once for its local copy
_LOCK = threading.Lock()
_KEY_LOCKS: dict[str, threading.Lock] = {}
_OPEN: dict[str, tuple[StorePath, np.ndarray]] = {}  # local copies mapped in this process, by the array's URL
_PROCESS_DIR: list[Path] = []
_USED: set[Path] = set()  # every local folder this process has kept copies in


@dataclass(frozen=True)
class StorePath:
    """A scratch file, array or folder in the run's store: its location, the scratch root it lies under (whose local
    copies are dropped together) and the `Storage` that reaches it. Picklable; joins like a `Path` (`/`, `parent`)."""

    loc: Location
    storage: Storage
    root: str

    def __truediv__(self, part: object) -> StorePath:
        return StorePath(self.loc.join(str(part)), self.storage, self.root)

    @property
    def parent(self) -> StorePath:
        return StorePath(self.loc.parent, self.storage, self.root)

    @property
    def name(self) -> str:
        return self.loc.name

    def __str__(self) -> str:
        return str(self.loc)


ScratchPath = Union[Path, StorePath]


def scratch_path(where: str | os.PathLike | Location, storage: Storage | None = None) -> ScratchPath:
    """A local path (a folder every worker sees) or a `StorePath` rooted at `where` (a URL)."""
    loc = location(where)
    return loc.local_path() if loc.is_local else StorePath(loc, storage or Storage(), loc.url)


def is_store(path: object) -> bool:
    return isinstance(path, StorePath)


def _records(arrays: list[np.ndarray]) -> bytes:
    buf = io.BytesIO()
    for arr in arrays:
        np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
    return buf.getvalue()


def put_records(path: StorePath, arrays: list[np.ndarray]) -> None:
    """Arrays as consecutive `.npy` records in one object (one PUT: a reader sees all of it or nothing)."""
    path.storage.write_bytes(path.loc, _records(arrays))


def get_records(path: StorePath, count: int | None = None) -> list[np.ndarray]:
    """The first `count` records of an object written by `put_records` (all when None: one GET)."""
    if count is None:
        data = path.storage.read_bytes(path.loc)
        fh, size = io.BytesIO(data), len(data)
    else:
        fh = path.storage.open_read(path.loc)
        size = fh.size
    out = []
    with fh:
        while (count is None or len(out) < count) and fh.tell() < size:
            out.append(np.lib.format.read_array(fh, allow_pickle=False))
    return out


def create_array(path: ScratchPath, shape: tuple[int, ...], dtype, fill: int = 0) -> None:
    """A new array of the shape, every entry `fill` until tasks write their ranges or entries."""
    if is_store(path):
        header = {"shape": [int(s) for s in shape], "dtype": np.dtype(dtype).str, "fill": int(fill)}
        path.storage.write_bytes((path / HEADER).loc, json.dumps(header).encode())
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    arr = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=tuple(shape))
    _fill(arr, fill)
    arr.flush()
    del arr


def _fill(arr: np.ndarray, fill: int) -> None:
    if fill:
        for i in range(0, arr.shape[0], 1 << 22):
            arr[i:i + (1 << 22)] = fill


def write_range(path: ScratchPath, lo: int, values: np.ndarray) -> None:
    """Rows [lo, lo + len(values)) of an array (a task writes only its own rows). A local file takes one positioned
    write: what it writes is in the page cache for every process of the host at once and, on a shared filesystem,
    sent when the file is closed (close-to-open), with no synchronous flush to disk (a memory map's flush took 3-9 ms
    a call, and the multilevel rounds make hundreds)."""
    if is_store(path):
        put_records(path / f"r{lo:020d}.npy", [values])
        return
    with open(path, "r+b") as fh:
        shape, _, dtype = npy_header(fh)
        values = np.ascontiguousarray(values, dtype=dtype)
        if values.shape[1:] != tuple(shape[1:]) or not 0 <= lo <= shape[0] - len(values):
            raise ValueError(f"{path}: rows {lo}..{lo + len(values)} of shape {values.shape} do not fit {shape}")
        fh.seek(lo * values[:1].nbytes, os.SEEK_CUR)
        fh.write(values.data)


def npy_header(fh) -> tuple[tuple[int, ...], bool, np.dtype]:
    """(shape, Fortran order, dtype) of the `.npy` record at the file's position, which is left at its data."""
    fmt = np.lib.format
    return (fmt.read_array_header_1_0 if fmt.read_magic(fh) == (1, 0) else fmt.read_array_header_2_0)(fh)


def upload_range(path: ScratchPath, lo: int, npy_file: Path, keep: bool = False) -> None:
    """Rows from `lo` given as a local `.npy` file (streamed up, never held in memory); the file is consumed unless
    `keep`."""
    if is_store(path):
        path.storage.upload(npy_file, (path / f"r{lo:020d}.npy").loc)
    else:
        src = np.load(npy_file, mmap_mode="r")
        for i in range(0, src.shape[0], 1 << 22):
            write_range(path, lo + i, np.asarray(src[i:i + (1 << 22)]))
        del src
    if not keep:
        npy_file.unlink()


def write_at(path: ScratchPath, index: np.ndarray, values: np.ndarray | int, writer: str) -> None:
    """Entries `index` of an array set to `values` (a scatter); `writer` names this write uniquely and the same way
    when a task is run again, so a retried task replaces its pieces rather than adding to them. Pieces apply in
    name order: where two writers set one entry, the later name keeps it."""
    if is_store(path):
        put_records(path / f"s{writer}.bkt", [_narrow(np.asarray(index)), np.asarray(values)])
        return
    arr = np.load(path, mmap_mode="r+")
    arr[index] = values
    del arr


def _narrow(index: np.ndarray) -> np.ndarray:
    """Entry numbers as 4-byte integers when they fit (a scatter piece's bytes are mostly its index)."""
    if index.size and index.dtype.itemsize > 4 and -2**31 <= index.min() and index.max() < 2**31:
        return index.astype(np.int32)
    return index


def save_array(path: ScratchPath, arr: np.ndarray) -> None:
    """A whole (block-sized) array in one file or object."""
    if is_store(path):
        put_records(path, [arr])
    else:
        np.save(path, arr)


def load_array(path: ScratchPath) -> np.ndarray:
    return get_records(path)[0] if is_store(path) else np.load(path)


def remove(path: ScratchPath) -> None:
    """Delete a file, array or folder of the scratch (missing: nothing to do)."""
    if is_store(path):
        path.storage.delete_prefix(path.loc)  # one listing, then deletes of up to 1,000 objects a request
        return
    path = Path(path)
    if path.is_dir():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def open_array(path: ScratchPath) -> np.ndarray:
    """The array read-only: the shared memory map, or this worker's local copy (assembled on first use)."""
    if not is_store(path):
        return np.load(path, mmap_mode="r")
    key = path.loc.url
    with _LOCK:
        held = _OPEN.get(key)
        lock = _KEY_LOCKS.setdefault(key, threading.Lock())
    if held is not None:
        return held[1]
    with lock:
        if key not in _OPEN:
            local = _local_file(path)
            if not local.exists():
                _assemble(path, local)
            with _LOCK:
                _OPEN[key] = (path, np.load(local, mmap_mode="r"))
        return _OPEN[key][1]


def _evict_removed(path: StorePath) -> None:
    """Delete this process's copies of arrays (under the same root) that the step has removed from the store since
    (a finished round's), so that a worker's disk holds the arrays still in use, not every round's; asked only once
    the copies held pass EVICT_BYTES."""
    with _LOCK:
        held = [(p, arr.nbytes) for p, arr in _OPEN.values() if p.root == path.root]
    if sum(size for _, size in held) <= EVICT_BYTES:
        return
    held = [p for p, _ in held]
    # asked through this task's own `Storage`: the one that listed an old array answers from that listing
    gone = each(lambda old: not path.storage.exists((old / HEADER).loc), held, remote=True)
    for old in (old for old, g in zip(held, gone) if g):
        with _LOCK:
            _OPEN.pop(old.loc.url, None)
        _local_file(old).unlink(missing_ok=True)


def array_header(path: StorePath) -> dict:
    return json.loads(path.storage.read_bytes((path / HEADER).loc))


def _pieces(path: StorePath) -> list[tuple[str, StorePath, int]]:
    """(name, path, bytes) of every piece written to an array."""
    return [(entry.rel, path / entry.rel, entry.size) for entry in path.storage.listing(path.loc)
            if entry.rel != HEADER and "/" not in entry.rel]


def _assemble(path: StorePath, local: Path) -> None:
    """Build the local copy from the header and every piece (the range pieces, disjoint, several at once; then the
    scatters, applied in name order), streamed in bounded blocks, then renamed into place."""
    header, pieces, _ = each(lambda read: read(path), [array_header, _pieces, _evict_removed], remote=True)
    local.parent.mkdir(parents=True, exist_ok=True)
    tmp = local.with_name(f".{local.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.dtype(header["dtype"]), shape=tuple(header["shape"]))
    _fill(out, header["fill"])
    at_once = PIECES_BYTES // max([1] + [min(size, 2 * COPY_BLOCK) for _, _, size in pieces])
    ranges = [(piece, int(name[1:-4]), out) for name, piece, _ in pieces if name.startswith("r")]
    each(lambda job: _copy_range(*job), ranges, remote=True, at_once=at_once)
    scatters = sorted((name, piece) for name, piece, _ in pieces if not name.startswith("r"))
    for i in range(0, len(scatters), at_once):  # fetched together, applied in name order
        for index, values in each(get_records, [p for _, p in scatters[i:i + at_once]], remote=True):
            out[index] = values
    out.flush()
    del out, ranges
    os.replace(tmp, local)


def _copy_range(piece: StorePath, lo: int, out: np.ndarray) -> None:
    """A range piece's rows into the local copy, COPY_BLOCK bytes at a time."""
    with piece.storage.open_read(piece.loc) as fh:
        shape, _, dtype = npy_header(fh)
        row_bytes = max(1, int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize)
        step = max(1, COPY_BLOCK // row_bytes)
        for i in range(0, shape[0] if shape else 0, step):
            n = min(step, shape[0] - i)
            out[lo + i:lo + i + n] = np.frombuffer(fh.read(n * row_bytes), dtype=dtype).reshape((n, *shape[1:]))


def local_dir() -> Path:
    """This process's local folder for scratch copies: the Dask worker's `local_directory`, else a temporary one."""
    try:
        from distributed import get_worker

        folder = Path(get_worker().local_directory) / "graphshard-scratch"
    except (ImportError, ValueError):
        with _LOCK:
            if not _PROCESS_DIR:
                _PROCESS_DIR.append(Path(tempfile.mkdtemp(prefix="graphshard-scratch-")))
            folder = _PROCESS_DIR[0]
    with _LOCK:
        _USED.add(folder)
    return folder


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _local_file(path: StorePath) -> Path:
    return local_dir() / _digest(path.root) / f"{_digest(path.loc.url)}.npy"


def drop_local(root: str) -> None:
    """Forget and delete this process's local copies of the arrays under a scratch root (the step is over)."""
    with _LOCK:
        for key in [k for k in _OPEN if k == root or k.startswith(root.rstrip("/") + "/")]:
            del _OPEN[key]
            _KEY_LOCKS.pop(key, None)
        used = list(_USED)
    for folder in used:  # `client.run` calls this outside any task, where the worker's folder is not known
        shutil.rmtree(folder / _digest(root), ignore_errors=True)


@contextmanager
def scratch_space(where: str | os.PathLike | Location, storage: Storage | None = None, client=None,
                  fresh: bool = False) -> Iterator[ScratchPath]:
    """A step's scratch: the folder `where` (made, and deleted afterwards); or, on a store or with `fresh`, a new
    root below `where` (a run never meets another's objects or local copies) held under a lease (`storage.lease`:
    a killed run's root is deleted by a later run's in `where`), deleted afterwards with every process's local
    copies (`client`'s workers included)."""

    base = scratch_path(where, storage)
    if not (fresh or is_store(base)):
        base.mkdir(parents=True, exist_ok=True)
        try:
            yield base
        finally:
            remove(base)
        return
    loc, store = location(where), base.storage if is_store(base) else (storage or Storage())
    with lease.holding(store, loc, "graphshard") as name:
        root = scratch_path(loc.join(name), store)
        if not is_store(root):
            root.mkdir()
        try:
            yield root
        except BaseException:
            _removed(root, client, quiet=True)  # the step's own failure is what the user reads
            raise
        _removed(root, client)


def _removed(root: ScratchPath, client, quiet: bool = False) -> None:
    """Delete a scratch root with every process's local copies; `quiet`: after a failure, a cleanup that fails too
    (the store gone) is logged, not raised over it (the lease lapses and a later run sweeps the root)."""
    from graphshard.daskrun import everywhere

    try:
        if is_store(root):
            everywhere(client, drop_local, root.root)
        remove(root)
    except (GraphshardError, OSError) as err:
        if not quiet:
            raise
        log.info("could not delete the scratch %s after the step failed: %s", root, err)


def publish_file(local: Path, path: ScratchPath) -> None:
    """A finished local file put in place at `path` (renamed into a shared folder, uploaded to a store); consumed."""
    if is_store(path):
        path.storage.upload(local, path.loc)
        local.unlink()
    else:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        os.replace(local, path)


def open_file(path: ScratchPath):
    """A scratch file to read (a streaming read of the object on a store)."""
    return path.storage.open_read(path.loc) if is_store(path) else open(path, "rb")

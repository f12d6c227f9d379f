"""Copies of a store's objects on a worker's local disk, for tasks that read an object in several passes: an object
is copied whole the first time a task asks for it (one GET streamed to disk, never to memory) and then read like a
local file (page cache, no ranged request per pass).

The copies of one step (a `CopyCache`, by name) are kept per worker process for the whole step, so the step's tasks
on one worker share them: an object is fetched once per worker, not once per task. A worker's copies never take more
than a byte budget: the least recently used go first, never one a running task reads; an object that does not fit
is read from the store by ranges instead. `drop_copies` deletes a step's copies. Nothing on a worker's disk is the
only copy of anything, so a lost worker's tasks simply copy again wherever they run next.
"""

from __future__ import annotations

import hashlib
import shutil
import threading
import uuid
from collections import OrderedDict
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from graphshard.errors import GraphshardError
from graphshard.storage.files import StoredFile
from graphshard.storage.locations import Location, location
from graphshard.storage.scratch import local_dir
from graphshard.storage.store import Storage

FREE_SHARE = 0.5  # default budget: this share of the local folder's free space when a worker first copies
BUDGET_KEY = "graphshard.copy-budget"  # Dask config (env DASK_GRAPHSHARD__COPY_BUDGET): bytes, e.g. "1 GiB"
_LOCK = threading.Lock()
_HELD: dict[tuple[str, str], _Held] = {}  # (cache name, local folder) -> that worker's copies


@dataclass(frozen=True)
class CopyCache:
    """Names one step's copies on every worker (picklable: tasks take it). `budget`: the bytes a worker's copies may
    take; None: the Dask config's `graphshard.copy-budget` on the worker, else FREE_SHARE of its local folder's free
    space when it first copies."""

    name: str
    budget: int | None = None

    @classmethod
    def fresh(cls, budget: int | None = None) -> CopyCache:
        return cls(uuid.uuid4().hex[:12], budget)


@dataclass
class _Copy:
    path: Path
    size: int
    pins: int = 0  # tasks reading it now: never evicted while > 0
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while it downloads


class _Held:
    """One step's copies in one local folder: least recently used first, the bytes they take never over `budget`
    (a copy is counted from the moment its download is decided)."""

    def __init__(self, folder: Path, budget: int):
        self.folder, self.budget, self.used = folder, budget, 0
        self.copies: OrderedDict[tuple, _Copy] = OrderedDict()
        self._lock = threading.Lock()

    def take(self, key: tuple, source: Location, storage: Storage) -> Path | None:
        """The local copy of `source` (whose identity is `key`: URL, ETag, size), downloaded now unless this worker
        holds it; pinned until `give_back(key)`. None when it cannot fit beside the pinned copies."""
        with self._lock:
            copy = self.copies.get(key)
            if copy is None:
                size = int(key[2])
                if not self._room(size):
                    return None
                name = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
                copy = self.copies[key] = _Copy(self.folder / name / source.name, size)
                self.used += size
            copy.pins += 1
            self.copies.move_to_end(key)
        with copy.lock:
            if not copy.done:
                try:
                    copy.path.parent.mkdir(parents=True, exist_ok=True)
                    storage.download(source, copy.path)
                except BaseException:
                    self.give_back(key)
                    shutil.rmtree(copy.path.parent, ignore_errors=True)
                    raise
                copy.done = True
        return copy.path

    def give_back(self, key: tuple) -> None:
        with self._lock:
            self.copies[key].pins -= 1

    def _room(self, size: int) -> bool:
        """Evict unpinned copies, least recently used first, until `size` more bytes fit (caller holds the lock)."""
        for key, copy in list(self.copies.items()):
            if self.used + size <= self.budget:
                break
            if copy.pins == 0:
                del self.copies[key]
                self.used -= copy.size
                shutil.rmtree(copy.path.parent, ignore_errors=True)
        return self.used + size <= self.budget


def _budget(cache: CopyCache, folder: Path) -> int:
    if cache.budget is not None:
        return int(cache.budget)
    import dask.config
    from dask.utils import parse_bytes

    configured = dask.config.get(BUDGET_KEY, None)
    if configured is not None:
        return int(parse_bytes(configured))
    return int(shutil.disk_usage(folder).free * FREE_SHARE)


def _held(cache: CopyCache) -> _Held:
    """This worker's copies of the step (made on first use, in Dask's `local_directory`, else a temporary folder)."""
    base = local_dir()
    with _LOCK:
        held = _HELD.get((cache.name, str(base)))
        if held is None:
            folder = base / f"copies-{cache.name}"
            folder.mkdir(parents=True, exist_ok=True)
            held = _HELD[(cache.name, str(base))] = _Held(folder, _budget(cache, folder))
        return held


def drop_copies(name: str) -> None:
    """Delete this process's copies of the step `name` (every local folder's: threads of one process may be several
    workers). Run on every worker when the step ends (`daskrun.everywhere`)."""
    with _LOCK:
        gone = [_HELD.pop(k) for k in [k for k in _HELD if k[0] == name]]
    for held in gone:
        shutil.rmtree(held.folder, ignore_errors=True)


class LocalCopies:
    """The objects under `prefix` (one listing: their names, sizes and ETags), each served from this worker's copy in
    `cache`, made the first time a task of the step asks for it; the copies this task took stay until `release`."""

    def __init__(self, prefix: Location, storage: Storage, cache: CopyCache):
        self.prefix, self.storage = prefix, storage
        self.sizes = {e.rel: e.size for e in storage.listing(prefix)}
        self.held = _held(cache)
        self.taken: dict[str, tuple[tuple, Path] | None] = {}  # rel -> (identity, copy); None: read from the store
        self._lock = threading.Lock()

    def file(self, where: Location) -> StoredFile | None:
        """The local copy of `where`, naming `where` in messages; None when `where` is not an object listed under
        the prefix (the caller reads it as before: a missing file stays missing) or its copy does not fit."""
        try:
            rel = where.relative_to(self.prefix)
        except GraphshardError:
            return None
        if rel not in self.sizes:
            return None
        with self._lock:
            if rel not in self.taken:
                source = self.prefix.join(rel)
                key = StoredFile(source, self.storage).identity()[:3]  # from the listing above: no request
                path = self.held.take(key, source, self.storage)
                self.taken[rel] = (key, path) if path is not None else None
            got = self.taken[rel]
        return None if got is None else StoredFile(location(str(got[1])), self.storage, origin=where)

    def release(self) -> None:
        """The task is done with its copies: they may be evicted from now on."""
        with self._lock:
            for got in self.taken.values():
                if got is not None:
                    self.held.give_back(got[0])
            self.taken.clear()


@contextmanager
def local_copies(prefix: str | Location, storage: Storage, cache: CopyCache | None = None
                 ) -> Iterator[LocalCopies]:
    """Copies of the objects under `prefix`, made on demand on this worker's local disk: the step's `cache`
    (kept for the step's later tasks), else copies of this block only (deleted on exit)."""
    own = cache is None
    cache = cache or CopyCache.fresh()
    copies = LocalCopies(location(prefix), storage, cache)
    try:
        yield copies
    finally:
        copies.release()
        if own:
            drop_copies(cache.name)

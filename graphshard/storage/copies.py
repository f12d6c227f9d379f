"""Copies of a store's objects on a worker's local disk, for tasks that read an object in several passes: an object
is copied whole the first time a task asks for it (one GET streamed to disk, never to memory) and then read like a
local file (page cache, no ranged request per pass).

The copies of one step (a `CopyCache`, by name) are kept per worker process for the whole step, so the step's tasks
on one worker share them: an object is fetched once per worker, not once per task. A worker's copies never take more
than a byte budget: the least recently used go first, never one a running task reads; an object that does not fit
is read from the store by ranges instead. `drop_copies` deletes a step's copies. Nothing on a worker's disk is the
only copy of anything, so a lost worker's tasks simply copy again wherever they run next.

A task may also `prefetch` objects that a later task on its worker will read: one background download at a time per
worker and step, in the order asked, while the tasks compute; such a copy is made only when it fits the budget
beside the copies held (nothing is evicted for it), and a task asking for it meanwhile waits for that download
instead of starting its own. When the client listed the step's objects once (`CopyCache.objects`), tasks take
names, sizes and ETags from that listing instead of listing their prefix again.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import threading
import uuid
from collections import OrderedDict, deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Mapping, Sequence

from graphshard.errors import GraphshardError
from graphshard.storage.files import StoredFile
from graphshard.storage.locations import Location, location
from graphshard.storage.scratch import local_dir
from graphshard.storage.store import Storage

log = logging.getLogger(__name__)
FREE_SHARE = 0.5  # default budget: this share of the local folder's free space when a worker first copies
BUDGET_KEY = "graphshard.copy-budget"  # Dask config (env DASK_GRAPHSHARD__COPY_BUDGET): bytes, e.g. "1 GiB"
_LOCK = threading.Lock()
_HELD: dict[tuple[str, str], _Held] = {}  # (cache name, local folder) -> that worker's copies


@dataclass(frozen=True)
class CopyCache:
    """Names one step's copies on every worker (picklable: tasks take it). `budget`: the bytes a worker's copies may
    take; None: the Dask config's `graphshard.copy-budget` on the worker, else FREE_SHARE of its local folder's free
    space when it first copies. `objects`: the step's objects as the client listed them once
    (`Storage.identities`: URL -> identity); None: each task lists the prefix it copies from."""

    name: str
    budget: int | None = None
    objects: Mapping[str, tuple] | None = field(default=None, compare=False, repr=False)

    @classmethod
    def fresh(cls, budget: int | None = None, objects: Mapping[str, tuple] | None = None) -> CopyCache:
        return cls(uuid.uuid4().hex[:12], budget, objects)

    def under(self, prefix: Location, storage: Storage) -> dict[str, tuple]:
        """The objects under `prefix` and their identities (URL, ETag, size, ...) by path below it: from `objects`,
        else one listing now (each identity then answered from it, no request)."""
        if self.objects is None:
            return {e.rel: StoredFile(prefix.join(e.rel), storage).identity() for e in storage.listing(prefix)}
        root = prefix.url.rstrip("/") + "/"
        return {url[len(root):]: ident for url, ident in self.objects.items() if url.startswith(root)}


@dataclass
class _Copy:
    path: Path
    size: int
    pins: int = 0  # tasks reading it now: never evicted while > 0
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)  # held while it downloads


class _Held:
    """One step's copies in one local folder: least recently used first, the bytes they take never over `budget`
    (a copy is counted from the moment its download is decided); the background downloads asked by `prefetch`."""

    def __init__(self, folder: Path, budget: int):
        self.folder, self.budget, self.used = folder, budget, 0
        self.copies: OrderedDict[tuple, _Copy] = OrderedDict()
        self._lock = threading.Lock()
        self._queue: deque[tuple[tuple, _Copy, Location, Storage]] = deque()
        self._fetcher: threading.Thread | None = None
        self._stopped = False

    def _new(self, key: tuple, source: Location) -> _Copy:
        """A copy of `source` counted against the budget, not downloaded yet (caller holds the lock)."""
        name = hashlib.sha256(repr(key).encode()).hexdigest()[:20]
        copy = self.copies[key] = _Copy(self.folder / name / source.name, int(key[2]))
        self.used += copy.size
        return copy

    def take(self, key: tuple, source: Location, storage: Storage) -> Path | None:
        """The local copy of `source` (whose identity is `key`: URL, ETag, size), downloaded now unless this worker
        holds it (or waited for while a prefetch downloads it); pinned until `give_back(key)`. None when it cannot
        fit beside the pinned copies."""
        with self._lock:
            copy = self.copies.get(key)
            if copy is None:
                if not self._room(int(key[2])):
                    return None
                copy = self._new(key, source)
            copy.pins += 1
            self.copies.move_to_end(key)
        try:
            _fill(copy, source, storage)
        except BaseException:
            self.give_back(key)
            raise
        return copy.path

    def prefetch(self, key: tuple, source: Location, storage: Storage) -> None:
        """Download `source` in the background (after what is queued) unless held already or it does not fit beside
        the copies held; pinned until downloaded, so that no eviction removes it meanwhile."""
        with self._lock:
            if self._stopped or key in self.copies or self.used + int(key[2]) > self.budget:
                return
            copy = self._new(key, source)
            copy.pins += 1
            self._queue.append((key, copy, source, storage))
            if self._fetcher is None:
                self._fetcher = threading.Thread(target=self._fetch_queued, name="graphshard-prefetch", daemon=True)
                self._fetcher.start()

    def _fetch_queued(self) -> None:
        """The background downloads, one after another; a failed one is left to the task that reads it (which
        downloads it again and reports the store's error in its own words)."""
        while True:
            with self._lock:
                if self._stopped or not self._queue:
                    self._fetcher = None
                    return
                key, copy, source, storage = self._queue.popleft()
            try:
                _fill(copy, source, storage)
            except Exception:  # noqa: BLE001 - the reading task fetches it again and says what failed
                log.debug("prefetch of %s failed", source, exc_info=True)
            finally:
                self.give_back(key)

    def stop(self) -> None:
        """No more background downloads: the queue dropped, the one under way waited for (the folder goes next)."""
        with self._lock:
            self._stopped = True
            queued, fetcher = list(self._queue), self._fetcher
            self._queue.clear()
        for key, *_ in queued:
            self.give_back(key)
        if fetcher is not None and fetcher is not threading.current_thread():
            fetcher.join()

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


def _fill(copy: _Copy, source: Location, storage: Storage) -> None:
    """Download `copy` unless done (one download per copy: whoever comes second waits for the first)."""
    with copy.lock:
        if copy.done:
            return
        try:
            copy.path.parent.mkdir(parents=True, exist_ok=True)
            storage.download(source, copy.path)
        except BaseException:
            shutil.rmtree(copy.path.parent, ignore_errors=True)
            raise
        copy.done = True


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
        held.stop()
        shutil.rmtree(held.folder, ignore_errors=True)


def prefetch(sources: Sequence[Location], storage: Storage, cache: CopyCache) -> None:
    """Start copying `sources` (objects of the step's `cache.objects`) to this worker's copies in the background, one
    at a time in the order given, while the caller computes: a later task asking for one finds it there or being
    fetched. Objects held or queued already, not in `cache.objects`, or not fitting beside the copies held are
    left to the tasks that read them."""
    if cache.objects is None:
        return
    held = _held(cache)
    for source in sources:
        ident = cache.objects.get(source.url)
        if ident is not None:
            held.prefetch(tuple(ident[:3]), source, storage)


class LocalCopies:
    """The objects under `prefix` (their names, sizes and ETags: `CopyCache.under`), each served from this worker's
    copy in `cache`, made the first time a task of the step asks for it; the copies this task took stay until
    `release`."""

    def __init__(self, prefix: Location, storage: Storage, cache: CopyCache):
        self.prefix, self.storage = prefix, storage
        self.known = cache.under(prefix, storage)
        self.sizes = {rel: int(ident[2]) for rel, ident in self.known.items()}
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
                key = tuple(self.known[rel][:3])
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

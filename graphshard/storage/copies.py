"""Task-local copies of the objects under one prefix: a task that reads a store's files in several passes copies each
object it asks for once, whole (one GET streamed to the worker's local disk, never to memory), and reads the copy
like a local file (page cache, no ranged request per pass). The folder lies in the worker's local directory and goes
when the task ends; a lost worker's task simply copies again wherever it runs next.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from graphshard.errors import GraphshardError
from graphshard.storage.files import StoredFile
from graphshard.storage.locations import Location, location
from graphshard.storage.scratch import local_dir
from graphshard.storage.store import Storage


class LocalCopies:
    """The objects under `prefix` (one listing: their names and sizes), each copied into `folder` the first time
    `file` asks for it."""

    def __init__(self, prefix: Location, storage: Storage, folder: Path):
        self.prefix, self.storage, self.folder = prefix, storage, folder
        self.sizes = {e.rel: e.size for e in storage.listing(prefix)}
        self.copied: dict[str, Path] = {}
        self._lock = threading.Lock()

    def file(self, where: Location) -> StoredFile | None:
        """The local copy of `where` (made now if it is the first ask), naming `where` in messages; None when
        `where` is not an object listed under the prefix (the caller reads it as before: a missing file stays
        missing)."""
        try:
            rel = where.relative_to(self.prefix)
        except GraphshardError:
            return None
        if rel not in self.sizes:
            return None
        with self._lock:
            path = self.copied.get(rel)
            if path is None:
                path = self.folder / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                self.storage.download(self.prefix.join(rel), path)
                self.copied[rel] = path
        return StoredFile(location(str(path)), self.storage, origin=where)


@contextmanager
def local_copies(prefix: str | Location, storage: Storage) -> Iterator[LocalCopies]:
    """Copies of the objects under `prefix`, made on demand in a fresh folder of this worker's local directory
    (Dask's `local_directory`, else a temporary folder), deleted on exit."""
    base = local_dir()
    base.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="copies-", dir=base))
    try:
        yield LocalCopies(location(prefix), storage, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)

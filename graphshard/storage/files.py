"""`StoredFile`: one file or object and the `Storage` that serves it, as the readers and writers of graph files take
it, so the same reader code reads a local path (memory maps where it did), an object by ranges (npy rows, parquet
row groups) or bytes already read once (a worker that hashed an object parses the same bytes, no second download).
"""

from __future__ import annotations

import io
import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Iterator

from graphshard.storage.locations import Location, location
from graphshard.storage.store import READ_BLOCK, Storage, object_identity


@dataclass(frozen=True)
class StoredFile:
    """A file at `loc` read through `storage`; `data` holds its whole bytes when they were read already; `origin`:
    the location this file is a local copy of (what messages name)."""

    loc: Location
    storage: Storage = field(default_factory=Storage, compare=False)
    data: bytes | None = field(default=None, compare=False, repr=False)
    origin: Location | None = field(default=None, compare=False)

    @classmethod
    def of(cls, where: str | os.PathLike | Location | StoredFile, storage: Storage | None = None) -> StoredFile:
        """A StoredFile as given, else one for a path or URL (`storage` None: credentials from the environment)."""
        if isinstance(where, StoredFile):
            return where
        return cls(location(where), storage or Storage())

    @property
    def is_local(self) -> bool:
        return self.loc.is_local and self.data is None

    @property
    def shown(self) -> Path | Location:
        """What messages name: the location copied (a local copy's origin), the local Path, else the (redacted)
        location."""
        if self.origin is not None:
            return self.origin
        return Path(self.loc.path) if self.loc.is_local else self.loc

    def __str__(self) -> str:
        return str(self.origin or self.loc)

    def __fspath__(self) -> str:
        """The local path (local files only), so that numpy and pyarrow open it as they always did."""
        return self.loc.local_path().as_posix()

    def holding(self, data: bytes) -> StoredFile:
        """The same file served from `data` (its whole content, already read)."""
        return StoredFile(self.loc, self.storage, data, self.origin)

    def exists(self) -> bool:
        if self.data is not None:
            return True
        if self.loc.is_local:
            return os.path.isfile(self.loc.path)
        return self.storage.exists(self.loc)

    def size(self) -> int:
        if self.data is not None:
            return len(self.data)
        return os.stat(self.loc.path).st_size if self.loc.is_local else self.storage.size(self.loc)

    def open(self, block_size: int = READ_BLOCK) -> BinaryIO:
        """A seekable binary file: local, in memory, or an object read by ranged requests of `block_size` bytes."""
        if self.data is not None:
            return io.BytesIO(self.data)
        return self.storage.open_read(self.loc, block_size=block_size)

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes [start, end): from memory, a local read, or one ranged request."""
        if self.data is not None:
            return self.data[start:end]
        if self.loc.is_local:
            with open(self.loc.path, "rb") as fh:
                fh.seek(start)
                return fh.read(max(end - start, 0))
        return self.storage.read_range(self.loc, start, end)

    def read_into(self, start: int, buffer: memoryview) -> int:
        """Fill `buffer` with the bytes from `start` (a local file: read straight into it); returns how many came."""
        if self.loc.is_local and self.data is None:
            with open(self.loc.path, "rb") as fh:
                fh.seek(start)
                return fh.readinto(buffer) or 0
        data = self.read_range(start, start + buffer.nbytes)
        buffer[:len(data)] = data
        return len(data)

    def read_all(self, size: int | None = None) -> bytes:
        """The whole file: from memory, or one read (one GET for an object; `size` if known spares s3fs's HEAD)."""
        return self.data if self.data is not None else self.storage.read_bytes(self.loc, size)

    @contextmanager
    def write(self) -> Iterator:
        """Write the whole file atomically (`Storage.write_atomic`)."""
        with self.storage.write_atomic(self.loc) as fh:
            yield fh

    def identity(self) -> tuple:
        """What identifies this state of an object: (URL, ETag, size, 0, 0) from one HEAD request (index 2 is the
        size, as in a local file's stat identity)."""
        with self.storage.translated(self.loc, "read"):
            return object_identity(self.loc, self.storage.fs(self.loc).info(self.loc.path))

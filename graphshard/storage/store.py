"""`Storage`: every file operation on a location, local path or URL alike: open for reading (and byte ranges),
atomic write of one file or object, list and delete a prefix, exists and size.

Atomic write: a local file is written to a hidden temporary sibling, fsynced and `os.replace`d into place (then the
folder is fsynced); an object is one PUT or one multipart upload that the store shows only once it is complete
(on S3, `storage.uploads`: an object under one part is PUT at the end, a larger one's parts go up while the writer
goes on; on other stores an object under the filesystem's block size is held and PUT at the end, a larger one is
fsspec's `autocommit=False` file): `commit` on success, `discard`, which aborts the upload, on failure. Either way
a reader sees the old content or the whole new one, never a part.
"""

from __future__ import annotations

import io
import os
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, BinaryIO, Callable, ContextManager, Iterator, Mapping

from graphshard import logs
from graphshard.storage.failures import secrets_of, translated
from graphshard.storage.locations import Location, location
from graphshard.storage.options import StorageOptions
from graphshard.storage.uploads import ConcurrentUpload

if TYPE_CHECKING:
    from fsspec import AbstractFileSystem

READ_BLOCK = 8 << 20  # bytes per read request when streaming an object
# A store client collected after its event loop was gone (aiobotocore's close of a client made in another thread's
# loop): asyncio reports it at garbage collection, long after the request it served succeeded. The log keeps it.
logs.quiet_message("asyncio", "Task exception was never retrieved")


@dataclass(frozen=True, order=True)
class Entry:
    """One file under a listed prefix: its path below the prefix (POSIX form) and its size in bytes."""

    rel: str
    size: int


def _fsync_dir(folder: str) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _LocalAtomicFile:
    """A local file written under a hidden temporary sibling: `close` flushes and fsyncs it, `commit` replaces the
    target with it (and fsyncs the folder), `discard` deletes it: the interface of fsspec's autocommit=False files."""

    def __init__(self, path: str, sync: bool = True):
        self.path, self.sync = path, sync
        folder, name = os.path.split(path)
        os.makedirs(folder, exist_ok=True)
        self.temp = os.path.join(folder, f".{name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        self.f = open(self.temp, "wb")

    def write(self, data) -> int:
        return self.f.write(data)

    def tell(self) -> int:
        return self.f.tell()

    def close(self) -> None:
        if not self.f.closed:
            self.f.flush()
            if self.sync:
                os.fsync(self.f.fileno())
            self.f.close()

    def commit(self) -> None:
        os.replace(self.temp, self.path)
        if self.sync:
            _fsync_dir(os.path.dirname(self.path))

    def discard(self) -> None:
        self.f.close()
        if os.path.exists(self.temp):
            os.unlink(self.temp)


class _ObjectAtomicFile:
    """An object written atomically with as few requests as its size allows: bytes are held until they pass
    fsspec's block size (`fs.blocksize`, 4 MiB; s3fs buffers more than that before it uploads a part), so a smaller
    object is one PUT at `commit`; a larger one becomes fsspec's autocommit=False file, one multipart upload that
    `commit` completes.
    Either way nothing is visible before `commit` and `discard` leaves nothing."""

    def __init__(self, fs: AbstractFileSystem, path: str):
        self.fs, self.path, self.closed = fs, path, False
        self.limit = int(getattr(fs, "blocksize", 5 << 20))
        self.held: io.BytesIO | None = io.BytesIO()
        self.fh = None

    def write(self, data) -> int:
        n = memoryview(data).nbytes
        if self.held is not None and self.held.tell() + n <= self.limit:
            return self.held.write(data)
        if self.fh is None:
            self.fh = self.fs.open(self.path, "wb", autocommit=False)
            self.fh.write(self.held.getbuffer())
            self.held = None
        return self.fh.write(data)

    def tell(self) -> int:
        return self.fh.tell() if self.fh is not None else self.held.tell()

    def flush(self) -> None:
        if self.fh is not None:
            self.fh.flush()

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()

    def commit(self) -> None:
        if self.fh is not None:
            self.fh.commit()
        else:
            self.fs.pipe_file(self.path, self.held.getvalue())

    def discard(self) -> None:
        if self.fh is not None:
            self.fh.discard()
            self.fh.closed = True  # so that garbage collection does not try to upload what is left
        self.held = None


class _Writer:
    """What `write_atomic` yields: the file's `write`/`tell`/`flush`, with the store's failures as StorageError."""

    def __init__(self, fh, translate: Callable[[], ContextManager]):
        self._fh, self._translate = fh, translate

    def write(self, data) -> int:
        with self._translate():
            return self._fh.write(data)

    def tell(self) -> int:
        return self._fh.tell()

    def flush(self) -> None:
        with self._translate():
            self._fh.flush()


def _s3_whole(fs: AbstractFileSystem, path: str) -> tuple[bytes, dict]:
    """A whole S3 object without a HEAD first: its first block (s3fs's `default_block_size`, 50 MiB) in a ranged GET
    whose Content-Range gives the size, then the rest in block-sized ranged GETs sent together (at most s3fs's
    `max_concurrency` at a time, as its own concurrent read), each only while the ETag is the first's (If-Match: an
    object replaced meanwhile fails the read rather than mixing two states); an empty object, which no range
    satisfies, in one plain GET. Returns the bytes and {"ETag", "size"}."""
    import asyncio

    from fsspec.asyn import sync

    bucket, key, version = fs.split_path(path)
    block = int(getattr(fs, "default_block_size", 0) or READ_BLOCK)
    versioned = {"VersionId": version} if version else {}

    async def get(**extra: Any) -> tuple[bytes, dict]:
        response = await fs._call_s3("get_object", Bucket=bucket, Key=key, **versioned, **extra)
        try:
            return await response["Body"].read(), response
        finally:
            response["Body"].close()

    async def whole() -> tuple[bytes, dict]:
        try:
            first, response = await get(Range=f"bytes=0-{block - 1}")
        except OSError as err:
            if "InvalidRange" not in repr(err.__cause__):
                raise
            data, response = await get()
            return data, {"ETag": response.get("ETag"), "size": len(data)}
        tag = response.get("ETag")
        size = int(str(response.get("ContentRange") or "").rpartition("/")[2] or len(first))
        slots = asyncio.Semaphore(max(1, int(getattr(fs, "max_concurrency", 1) or 1)))

        async def rest(lo: int) -> bytes:
            async with slots:
                return (await get(Range=f"bytes={lo}-{min(lo + block, size) - 1}", IfMatch=tag))[0]

        parts = await asyncio.gather(*(rest(lo) for lo in range(len(first), size, block)))
        return b"".join([first, *parts]), {"ETag": tag, "size": size}

    return sync(fs.loop, whole)


def object_identity(loc: Location, info: Mapping[str, Any]) -> tuple:
    """What identifies this state of an object, from its HEAD or listing entry: (URL, ETag, size, 0, 0) (index 2 is
    the size, as in a local file's stat identity)."""
    tag = str(info.get("ETag") or info.get("etag") or info.get("mtime") or info.get("LastModified") or "")
    return loc.url, tag, int(info.get("size") or 0), 0, 0


def _mtime(info: Mapping[str, Any]) -> float | None:
    """A listing entry's last-modified time in epoch seconds (local `mtime`; S3 `LastModified`; Azure
    `last_modified`; GCS `updated`), None when the filesystem gives none."""
    stamp = info.get("mtime", info.get("LastModified", info.get("last_modified", info.get("updated"))))
    if isinstance(stamp, str):
        stamp = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    if isinstance(stamp, datetime):
        return stamp.timestamp()
    return float(stamp) if isinstance(stamp, (int, float)) else None


class Storage:
    """The storage layer over fsspec; `options` is `storage_options` per URL prefix (see `StorageOptions`).

    Picklable (filesystems are made again where it is unpickled), so Dask tasks can take it as an argument."""

    def __init__(self, options: Mapping[str, Mapping[str, Any]] | StorageOptions | None = None):
        self.options = options if isinstance(options, StorageOptions) else StorageOptions(options)

    def __repr__(self) -> str:
        return f"Storage({self.options!r})"

    def fs(self, loc: Location, **extra: Any) -> AbstractFileSystem:
        return self.options.filesystem(loc, **extra)

    def endpoint(self, loc: Location) -> str | None:
        """The endpoint a location's requests go to, when the store has one (S3: options, then AWS_ENDPOINT_URL)."""
        if loc.is_local:
            return None
        opts = self.options.for_location(loc)
        return (opts.get("endpoint_url") or (opts.get("client_kwargs") or {}).get("endpoint_url")
                or (os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
                    if loc.protocol in ("s3", "s3a") else None))

    def translated(self, loc: Location, action: str):
        """Store failures inside the block as one StorageError line naming `loc` (see storage.failures)."""
        return translated(loc, action, self.endpoint(loc), secrets_of(self.options.for_location(loc)))

    def open_read(self, where: str | Location, block_size: int = READ_BLOCK, cache_type: str = "readahead"
                  ) -> BinaryIO:
        """A seekable binary file over the object: reads are ranged requests of at least `block_size` bytes
        (`cache_type="none"`: each read is exactly one ranged request, for streaming a copy in bounded memory)."""
        loc = location(where)
        with self.translated(loc, "read"):
            if loc.is_local:
                return open(loc.path, "rb")
            return self.fs(loc).open(loc.path, "rb", block_size=block_size, cache_type=cache_type)

    def read_range(self, where: str | Location, start: int, end: int) -> bytes:
        """Bytes [start, end) of a file or object: one ranged request."""
        loc = location(where)
        with self.translated(loc, "read"):
            return self.fs(loc).cat_file(loc.path, start=start, end=end)

    def read_bytes(self, where: str | Location, size: int | None = None) -> bytes:
        """A whole (small) file or object. On S3 no HEAD first, whether or not the caller knows the `size`: an
        object up to s3fs's block (50 MiB) is one GET, a larger one that GET plus concurrent ranged ones (`_s3_whole`;
        s3fs's own `cat_file` sends a HEAD to choose between them when its listings cache lacks the object)."""
        loc = location(where)
        fs = self.fs(loc)
        with self.translated(loc, "read"):
            return _s3_whole(fs, loc.path)[0] if loc.protocol in ("s3", "s3a") else fs.cat_file(loc.path)

    def read_identified(self, where: str | Location) -> tuple[tuple, bytes]:
        """A whole object and its identity (`object_identity`) from the same read: on S3 the GET's response
        carries the ETag and size a HEAD gives (`_s3_whole`: one GET up to 50 MiB, the rest by range while the
        ETag holds), so the identity is that of exactly these bytes, with no HEAD first and no window between them.
        Other stores: the identity (a HEAD), then the bytes."""
        loc = location(where)
        fs = self.fs(loc)
        if loc.protocol not in ("s3", "s3a"):
            with self.translated(loc, "read"):
                ident = object_identity(loc, fs.info(loc.path))
            return ident, self.read_bytes(loc, int(ident[2]))
        with self.translated(loc, "read"):
            data, info = _s3_whole(fs, loc.path)
        return object_identity(loc, info), data

    @contextmanager
    def write_atomic(self, where: str | Location, sync: bool = True) -> Iterator[_Writer]:
        """A binary file to write; it appears at `where` whole when the block ends, and not at all if it raises.
        The store's failures become one StorageError line; the block's own exceptions pass unchanged.
        `sync=False`: a local file is not fsynced (files a later step publishes, as the partition writers' were)."""
        loc = location(where)
        with self.translated(loc, "write"):
            fh = _LocalAtomicFile(loc.path, sync) if loc.is_local else self._object_file(loc)
        try:
            yield _Writer(fh, lambda: self.translated(loc, "write"))
        except BaseException:
            fh.discard()  # an object store aborts a multipart upload or drops the held bytes: nothing appears
            raise
        with self.translated(loc, "write"):
            fh.close()
            fh.commit()

    def _object_file(self, loc: Location):
        """An object's atomic file: on S3, parts uploaded while the writer goes on (`storage.uploads`); elsewhere
        fsspec's autocommit=False file behind a small-object PUT (`_ObjectAtomicFile`)."""
        fs = self.fs(loc)
        if loc.protocol in ("s3", "s3a"):
            return ConcurrentUpload(fs, loc.path)
        return _ObjectAtomicFile(fs, loc.path)

    def write_new(self, where: str | Location, data: bytes) -> bool:
        """Write a small file or object only where none is; False (nothing written) when one is there already.
        Atomic locally (a hard link of a written file) and wherever the store's fsspec filesystem makes
        `pipe_file(mode="create")` atomic (s3fs: a PUT with If-None-Match: *); fsspec's default checks first, so two
        writers at the same moment may both succeed on a store without it."""
        loc = location(where)
        if loc.is_local:
            tmp = f"{loc.path}.new-{uuid.uuid4().hex[:8]}"
            with self.translated(loc, "write"):
                os.makedirs(os.path.dirname(loc.path), exist_ok=True)
                with open(tmp, "wb") as fh:
                    fh.write(data)
                try:
                    os.link(tmp, loc.path)
                except FileExistsError:
                    return False
                finally:
                    os.unlink(tmp)
            return True
        with self.translated(loc, "write"):
            try:
                self.fs(loc).pipe_file(loc.path, data, mode="create")
            except FileExistsError:  # the store's failed precondition (S3: 412), or fsspec's own check
                return False
        return True

    def write_bytes(self, where: str | Location, data: bytes) -> None:
        """Write a whole (small) file or object atomically: one PUT for an object."""
        loc = location(where)
        if loc.is_local:
            with self.write_atomic(loc) as fh:
                fh.write(data)
            return
        with self.translated(loc, "write"):
            self.fs(loc).pipe_file(loc.path, data)

    def upload(self, local: str | os.PathLike, where: str | Location, block: int = READ_BLOCK) -> int:
        """Copy a local file to `where` atomically, streaming `block` bytes at a time; returns its size."""
        size = 0
        with open(local, "rb") as fin, self.write_atomic(where) as fout:
            while data := fin.read(block):
                fout.write(data)
                size += len(data)
        return size

    def download(self, where: str | Location, local: str | os.PathLike) -> int:
        """Copy a file or object to the local file `local` (its folder must exist), streamed to disk, never held in
        memory (S3: one GET; s3fs would otherwise split a large object into concurrent ranged GETs); returns its
        size."""
        loc = location(where)
        single = {"max_concurrency": 1} if loc.protocol in ("s3", "s3a") else {}
        with self.translated(loc, "read"):
            if loc.is_local:
                shutil.copyfile(loc.path, local)
            else:
                self.fs(loc).get_file(loc.path, os.fspath(local), **single)
        return os.path.getsize(local)

    def copy(self, src: str | Location, dst: str | Location, block: int = READ_BLOCK) -> None:
        """Copy one file or object to `dst` atomically. Within one object store the store copies
        it (S3: CopyObject, no bytes through this process); otherwise it is streamed `block` bytes at a time."""
        src_loc, dst_loc = location(src), location(dst)
        if src_loc.protocol == dst_loc.protocol and not src_loc.is_local and \
                self.options.for_location(src_loc) == self.options.for_location(dst_loc):
            with self.translated(dst_loc, "copy"):
                self.fs(dst_loc).copy(src_loc.path, dst_loc.path)
            return
        with self.open_read(src_loc, block_size=block, cache_type="none") as fin, self.write_atomic(dst_loc) as fout:
            while data := fin.read(block):
                fout.write(data)

    def prime(self, prefix: str | Location) -> None:
        """List a prefix afresh (one request per 1,000 objects), so that `exists`, `size` and `StoredFile.identity`
        of the objects under it are answered in this process from that listing (size and ETag, as a HEAD gives
        them; fsspec keeps it), not by one HEAD each. A missing object stays missing. Local paths: nothing to do."""
        self.identities(prefix)

    def identities(self, prefix: str | Location) -> dict[str, tuple]:
        """`prime` a prefix and return what its listing said: every object's `object_identity` by its URL (so that
        other processes can be told them instead of asking again); {} for a local path."""
        loc = location(prefix)
        if loc.is_local:
            return {}
        fs = self.fs(loc)
        with self.translated(loc, "list"):
            fs.invalidate_cache(loc.path)
            found = fs.find(loc.path, detail=True)
        return {(at := Location(loc.protocol, name)).url: object_identity(at, info)
                for name, info in found.items() if info.get("type") != "directory"}

    def exists(self, where: str | Location) -> bool:
        loc = location(where)
        with self.translated(loc, "read"):
            return bool(self.fs(loc).exists(loc.path))

    def size(self, where: str | Location) -> int:
        loc = location(where)
        with self.translated(loc, "read"):
            return int(self.fs(loc).size(loc.path))

    def _found(self, loc: Location) -> dict[str, int]:
        """The store's own names (fsspec paths) and sizes of the files under `loc`, or of `loc` itself if a file."""
        return {name: int(info.get("size") or 0) for name, info in self._files(loc).items()}

    def _files(self, loc: Location) -> dict[str, Mapping[str, Any]]:
        """The store's own names (fsspec paths) of the files under `loc` (or `loc` itself), with their details."""
        with self.translated(loc, "list"):
            found = self.fs(loc).find(loc.path, detail=True)
        return {name: info for name, info in found.items() if info.get("type") != "directory"}

    def modified(self, prefix: str | Location) -> dict[str, float]:
        """When each file under a prefix was last written, in seconds since the epoch by the store's (or this
        host's filesystem's) clock, by its path below the prefix; a store that gives no time leaves its files out."""
        loc = location(prefix)
        root = loc.path.rstrip("/") + "/"
        stamped = {name[len(root):] if name.startswith(root) else name: _mtime(info)
                   for name, info in self._files(loc).items()}
        return {rel: t for rel, t in stamped.items() if t is not None}

    def listing(self, prefix: str | Location) -> list[Entry]:
        """Every file under a prefix (a folder, recursively), sorted by path; [] when there is none. A file's own
        location lists that file under its full store path."""
        loc = location(prefix)
        root = loc.path.rstrip("/") + "/"
        return sorted(Entry(name[len(root):] if name.startswith(root) else name, size)
                      for name, size in self._found(loc).items())

    def delete_prefix(self, prefix: str | Location) -> int:
        """Delete every file under a prefix, or the file at it (and the prefix's folder, locally); returns how
        many files went. Deletes by the names the store listed, so a file's own location deletes that file."""
        loc = location(prefix)
        names = sorted(self._found(loc))
        fs = self.fs(loc)
        with self.translated(loc, "delete"):
            if names:
                fs.rm(names)
            if loc.is_local and os.path.isdir(loc.path):
                fs.rm(loc.path, recursive=True)
        return len(names)

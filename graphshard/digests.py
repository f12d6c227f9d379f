"""Content hashes of files, taken where the bytes already pass: while a file is written, or by the task that reads it
anyway, instead of reading it again later.

Two algorithms, both 128-bit: xxh3_128 (`FAST`, ~14 GB/s per core here) for what graphshard writes and caches by
(partition files, folder manifests), where blake2b (~0.6 GB/s) cost 40% of the partition writers' CPU; blake2b
(`INPUT`) for the input graph's files, whose public fingerprint (`ingest.fingerprint`, fingerprint.json) names it.

A digest taken elsewhere (a Dask worker writing a partition) is handed to this process as a `FileDigest` and
remembered by the file's stat identity (device, inode, size, mtime, ctime): `hash_file` of a file whose identity is
unchanged returns the remembered digest without reading the file. Writing to a file (or replacing it) changes its
mtime/ctime, so a file changed since it was hashed is read again. Renaming the folders above it changes nothing.
An object on a store (a `StoredFile` at a URL) is identified by its URL, ETag and size (`StoredFile.identity`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, BinaryIO, Callable, Iterable

import xxhash

if TYPE_CHECKING:
    from graphshard.storage import Location, Storage, StoredFile

Where = "str | Path | Location | StoredFile"  # a local path, or a URL / StoredFile read through the storage layer

BLOCK = 4 << 20
FAST, INPUT = "xxh3_128", "blake2b"
ALGORITHMS: dict[str, Callable[[], object]] = {FAST: xxhash.xxh3_128, INPUT: lambda: hashlib.blake2b(digest_size=16)}


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What identifies one state of one file: device, inode, size, mtime and ctime (ns)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def _stored(where: Where) -> StoredFile:
    from graphshard.storage import StoredFile

    return StoredFile.of(where)


def identity_of(where: Where) -> tuple:
    """The identity of a local file (stat) or of an object (URL, ETag, size: one HEAD request)."""
    f = _stored(where)
    return identity(os.stat(f.loc.path)) if f.loc.is_local else f.identity()


def written_identity(loc: Location, size: int) -> tuple:
    """The identity of an object just written (its URL and size; no ETag: that would cost a HEAD per object)."""
    return loc.url, "", int(size), 0, 0


@dataclass(frozen=True)
class FileDigest:
    """A file's digest (`algorithm`: a key of ALGORITHMS) as taken where its bytes were, with the identity it had
    then (`identity[2]` is its size, local or not)."""

    identity: tuple
    algorithm: str
    hexdigest: str

    @classmethod
    def of(cls, path: Where, algorithm: str, hexdigest: str) -> "FileDigest":
        return cls(identity_of(path), algorithm, hexdigest)

    @property
    def size(self) -> int:
        return int(self.identity[2])


_remembered: dict[tuple[str, tuple], str] = {}


def remember(digests: Iterable[FileDigest]) -> None:
    """Let `hash_file` answer for these files (as long as they are unchanged) without reading them."""
    _remembered.update(((d.algorithm, d.identity), d.hexdigest) for d in digests)


def remember_written(where: Location, data: bytes) -> None:
    """Remember the FAST digest of bytes just written whole to `where` (an object: `written_identity`), so that a
    manifest of its folder does not download them again."""
    h = ALGORITHMS[FAST]()
    h.update(data)
    remember([FileDigest(written_identity(where, len(data)), FAST, h.hexdigest())])


def upload(local: str | os.PathLike, where: Location, storage: Storage) -> FileDigest:
    """`Storage.upload` of a local file to `where`, its FAST digest taken from the local copy and remembered (a
    manifest of the folder then asks instead of downloading it)."""
    size = storage.upload(local, where)
    digest = FileDigest(written_identity(where, size), FAST, read_digest(os.fspath(local), FAST))
    remember([digest])
    return digest


def recalled(algorithm: str, ident: tuple) -> str | None:
    """The remembered digest of a file or object in this state (`identity(stat)`, `written_identity`, an object's
    `StoredFile.identity`), else None: what the pipeline's step cache asks instead of downloading."""
    return _remembered.get((algorithm, ident))


def read_digest(path: Where, algorithm: str = FAST) -> str:
    """A file's digest, read in blocks (reads release the GIL, so threads overlap; an object: ranged reads)."""
    h = ALGORITHMS[algorithm]()
    with _stored(path).open(BLOCK) as fh:
        while chunk := fh.read(BLOCK):
            h.update(chunk)
    return h.hexdigest()


def hash_file(path: Where, algorithm: str = FAST) -> str:
    """A file's digest: the remembered one when the file is unchanged since it was taken, else read."""
    known = _remembered.get((algorithm, identity_of(path)))
    return known if known is not None else read_digest(path, algorithm)


def hashed_read(path: Where, algorithm: str = FAST) -> FileDigest:
    """Read a file to hash it, on the worker that has just read (or is about to read) it; its identity with it."""
    before = identity_of(path)
    digest = read_digest(path, algorithm)
    return FileDigest(before, algorithm, digest)


def hashed_bytes(where: Where, algorithm: str = FAST) -> tuple[FileDigest, bytes]:
    """Read a whole file once (an object: one GET, whose response gives its identity: `Storage.read_identified`) and
    hash it: the digest and the bytes, so the caller parses what was hashed instead of downloading it again."""
    f = _stored(where)
    if f.loc.is_local:
        before = identity_of(f)
        data = f.read_all(int(before[2]))
    else:
        before, data = f.storage.read_identified(f.loc)
    h = ALGORITHMS[algorithm]()
    h.update(data)
    return FileDigest(before, algorithm, h.hexdigest()), data


class HashingWriter:
    """A binary file that hashes what is written through it (`write`, `tell`), so its digest needs no re-read."""

    algorithm = FAST

    def __init__(self, f: BinaryIO):
        self._f, self._h = f, ALGORITHMS[self.algorithm]()

    def write(self, data) -> int:
        self._h.update(data)
        return self._f.write(data)

    def tell(self) -> int:
        return self._f.tell()

    def hexdigest(self) -> str:
        return self._h.hexdigest()

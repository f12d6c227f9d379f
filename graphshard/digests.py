"""Content hashes of files, taken where the bytes already pass: while a file is written, or by the task that reads it
anyway, instead of reading it again later.

Two algorithms, both 128-bit: xxh3_128 (`FAST`, ~14 GB/s per core here) for what graphshard writes and caches by
(partition files, folder manifests), where blake2b (~0.6 GB/s) cost 40% of the partition writers' CPU; blake2b
(`INPUT`) for the input graph's files, whose public fingerprint (`ingest.fingerprint`, fingerprint.json) names it.

A digest taken elsewhere (a Dask worker writing a partition) is handed to this process as a `FileDigest` and
remembered by the file's stat identity (device, inode, size, mtime, ctime): `hash_file` of a file whose identity is
unchanged returns the remembered digest without reading the file. Writing to a file (or replacing it) changes its
mtime/ctime, so a file changed since it was hashed is read again. Renaming the folders above it changes nothing.
An object on a store (`s3://...`) has no inode: its identity is its URL and size (`url_identity`), remembered in the
process that had it written, for that run (`recalled`); the pipeline's step cache asks for it instead of downloading.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Callable, Iterable

import xxhash

BLOCK = 4 << 20
FAST, INPUT = "xxh3_128", "blake2b"
ALGORITHMS: dict[str, Callable[[], object]] = {FAST: xxhash.xxh3_128, INPUT: lambda: hashlib.blake2b(digest_size=16)}


def identity(st: os.stat_result) -> tuple[int, int, int, int, int]:
    """What identifies one state of one file: device, inode, size, mtime and ctime (ns)."""
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


@dataclass(frozen=True)
class FileDigest:
    """A file's digest (`algorithm`: a key of ALGORITHMS) as taken where its bytes were, with the identity it had
    then."""

    identity: tuple
    algorithm: str
    hexdigest: str

    @classmethod
    def of(cls, path: str | Path, algorithm: str, hexdigest: str) -> "FileDigest":
        return cls(identity(os.stat(path)), algorithm, hexdigest)

    @classmethod
    def at(cls, url: str, size: int, algorithm: str, hexdigest: str) -> "FileDigest":
        """The digest of an object just written to a store (see `url_identity`)."""
        return cls(url_identity(url, size), algorithm, hexdigest)


def url_identity(url: str, size: int) -> tuple[str, str, int]:
    """What identifies an object written to a store: its URL (the form `Location.url` gives) and its size."""
    return ("url", url, size)


_remembered: dict[tuple[str, tuple], str] = {}


def remember(digests: Iterable[FileDigest]) -> None:
    """Let `hash_file` answer for these files (as long as they are unchanged) without reading them."""
    _remembered.update(((d.algorithm, d.identity), d.hexdigest) for d in digests)


def recalled(algorithm: str, ident: tuple) -> str | None:
    """The remembered digest of a file or object in this state (`identity(stat)` or `url_identity`), else None."""
    return _remembered.get((algorithm, ident))


def read_digest(path: str | Path, algorithm: str = FAST) -> str:
    """A file's digest, read in blocks (reads release the GIL, so threads overlap)."""
    h = ALGORITHMS[algorithm]()
    with open(path, "rb") as fh:
        while chunk := fh.read(BLOCK):
            h.update(chunk)
    return h.hexdigest()


def hash_file(path: str | Path, algorithm: str = FAST) -> str:
    """A file's digest: the remembered one when the file is unchanged since it was taken, else read."""
    known = _remembered.get((algorithm, identity(os.stat(path))))
    return known if known is not None else read_digest(path, algorithm)


def hashed_read(path: str | Path, algorithm: str = FAST) -> FileDigest:
    """Read a file to hash it, on the worker that has just read (or is about to read) it; its identity with it."""
    before = os.stat(path)
    digest = read_digest(path, algorithm)
    return FileDigest(identity(before), algorithm, digest)


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

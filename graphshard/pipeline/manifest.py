"""Manifests: sizes and content hashes of a set of files, and one digest over them.

Cache keys are built from digests, so they follow file contents, not paths or timestamps. Hashing a large input
again on every run would cost a full read, so input hashes are remembered per (path, size, mtime, inode) like git's
index: a file whose stat is unchanged keeps its hash, any write (new mtime) is hashed again.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from graphshard.atomic import write_text_atomic
from graphshard.digests import ALGORITHMS, FAST, INPUT, hash_file, recalled, written_identity
from graphshard.formats.chunked import ChunkedGraph
from graphshard.pipeline.files import read_text, write_text
from graphshard.storage import Location, Storage, StorageError, StoredFile
from graphshard.storage.store import READ_BLOCK

MANIFEST = "manifest.json"


def digest_of(obj: object) -> str:
    """A stable hash of a JSON-able object (keys sorted)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=16).hexdigest()


@dataclass
class Manifest:
    """File name (relative, '/'-separated) -> {"size", <algorithm>: hash}; `digest` covers names, sizes and hashes."""

    files: dict[str, dict] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        return digest_of(self.files)


def _hash_all(paths: list[Path], algorithm: str, threads: int = 2) -> list[str]:
    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(hash_file, paths, [algorithm] * len(paths)))


def folder_manifest(folder: Path | Location, exclude: tuple[str, ...] = (MANIFEST,),
                    storage: Storage | None = None) -> Manifest:
    """The manifest of every file under `folder` (names relative to it), sorted by name; a folder on a store is one
    listing, with the digests its writers took (`digests.recalled`)."""
    if isinstance(folder, Location) and not folder.is_local:
        return _store_manifest(folder, exclude, storage or Storage())
    folder = Path(folder)
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() not in exclude)
    hashes = _hash_all(paths, FAST)
    return Manifest({p.relative_to(folder).as_posix(): {"size": p.stat().st_size, FAST: h}
                     for p, h in zip(paths, hashes)})


def _store_manifest(folder: Location, exclude: tuple[str, ...], storage: Storage) -> Manifest:
    files = {}
    for entry in storage.listing(folder):
        if entry.rel not in exclude:
            loc = folder / entry.rel
            known = recalled(FAST, written_identity(loc, entry.size))
            files[entry.rel] = {"size": entry.size, FAST: known or _streamed_digest(storage, loc)}
    return Manifest(files)


def _streamed_digest(storage: Storage, loc: Location, algorithm: str = FAST) -> str:
    """A digest no writer or reader handed over (a small file the flow wrote itself, e.g. a report): read in
    blocks."""
    h = ALGORITHMS[algorithm]()
    with storage.open_read(loc, cache_type="none") as fh:
        while block := fh.read(READ_BLOCK):
            h.update(block)
    return h.hexdigest()


def graph_files(graph: ChunkedGraph) -> dict[str, Path | Location]:
    """Every file a chunked graph consists of: metadata.json and each chunk file, by the name the metadata uses
    (local paths, or locations on a store)."""
    meta = graph.metadata_path
    return {"metadata.json": meta if isinstance(meta, Location) else Path(meta),
            **{name: graph.path(name) for name in graph.data_files()}}


def _key(p: Path | Location) -> str:
    return p.url if isinstance(p, Location) else str(p)


class HashCache:
    """Remembered hashes of input files (the fingerprint's algorithm) keyed by absolute path or URL + its state
    ((size, mtime_ns, inode, ctime_ns) locally, as git's index compares them: a copy that keeps size and mtime, `cp -p`
    over the file, still changes its ctime; (size, ETag) on a store: one HEAD per file); stored as JSON in the work
    folder (which may itself be on a store)."""

    def __init__(self, path: Path | Location, storage: Storage | None = None):
        self.path, self.storage = path, storage or Storage()
        try:
            self.entries: dict[str, list] = json.loads(read_text(path, self.storage))
        except (OSError, ValueError, StorageError):
            self.entries = {}

    def _state(self, p: Path | Location) -> list:
        if isinstance(p, Path):
            st = os.stat(p)
            return [st.st_size, st.st_mtime_ns, st.st_ino, st.st_ctime_ns]
        _, tag, size, _, _ = StoredFile(p, self.storage).identity()  # one HEAD
        return [size, tag, 0, 0]

    def unknown(self, files: dict[str, Path | Location], states: dict[str, list] | None = None) -> list[str]:
        """The names among `files` with no remembered hash for their current state (new or changed files)."""
        states = states or {name: self._state(p) for name, p in files.items()}
        return [name for name, p in files.items() if (self.entries.get(_key(p)) or [])[:-1] != states[name]]

    def manifest(self, files: dict[str, Path | Location]) -> Manifest:
        """Hash the named files (reusing unchanged ones) and return their manifest; the cache is saved."""
        states = {name: self._state(p) for name, p in files.items()}
        todo = self.unknown(files, states)
        for name, h in zip(todo, self._hash([files[n] for n in todo], [states[n][:2] for n in todo])):
            self.entries[_key(files[name])] = [*states[name], h]
        if todo:
            if isinstance(self.path, Path):
                self.path.parent.mkdir(parents=True, exist_ok=True)
                write_text_atomic(self.path, json.dumps(self.entries))
            else:
                write_text(self.path, json.dumps(self.entries), self.storage)
        return Manifest({name: {"size": states[name][0], INPUT: self.entries[_key(p)][-1]}
                         for name, p in sorted(files.items())})

    def _hash(self, paths: list[Path | Location], states: list[list]) -> list[str]:
        """Local files read (or remembered), objects by the digest their checking task took (keyed by
        `StoredFile.identity`: URL, ETag, size), else read."""
        local = _hash_all([p for p in paths if isinstance(p, Path)], INPUT)[::-1]
        return [local.pop() if isinstance(p, Path) else
                recalled(INPUT, (p.url, tag, size, 0, 0)) or _streamed_digest(self.storage, p, INPUT)
                for p, (size, tag) in zip(paths, states)]

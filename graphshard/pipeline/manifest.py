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
from graphshard.digests import FAST, INPUT, hash_file
from graphshard.formats.chunked import ChunkedGraph

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


def folder_manifest(folder: Path, exclude: tuple[str, ...] = (MANIFEST,)) -> Manifest:
    """The manifest of every file under `folder` (names relative to it), sorted by name."""
    folder = Path(folder)
    paths = sorted(p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() not in exclude)
    hashes = _hash_all(paths, FAST)
    return Manifest({p.relative_to(folder).as_posix(): {"size": p.stat().st_size, FAST: h}
                     for p, h in zip(paths, hashes)})


def graph_files(graph: ChunkedGraph) -> dict[str, Path]:
    """Every file a chunked graph consists of: metadata.json and each chunk file, by the name the metadata uses."""
    return {"metadata.json": Path(graph.metadata_path), **{name: graph.path(name) for name in graph.data_files()}}


class HashCache:
    """Remembered hashes of input files (the fingerprint's algorithm) keyed by absolute path + (size, mtime_ns,
    inode); stored as JSON in the work folder."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self.entries: dict[str, list] = json.loads(self.path.read_text())
        except (OSError, ValueError):
            self.entries = {}

    def unknown(self, files: dict[str, Path], stats: dict[str, os.stat_result] | None = None) -> list[str]:
        """The names among `files` with no remembered hash for their current stat (new or changed files)."""
        stats = stats or {name: os.stat(p) for name, p in files.items()}
        todo = []
        for name, p in files.items():
            st, entry = stats[name], self.entries.get(str(p))
            if not entry or entry[:3] != [st.st_size, st.st_mtime_ns, st.st_ino]:
                todo.append(name)
        return todo

    def manifest(self, files: dict[str, Path]) -> Manifest:
        """Hash the named files (reusing unchanged ones) and return their manifest; the cache is saved."""
        stats = {name: os.stat(p) for name, p in files.items()}
        todo = self.unknown(files, stats)
        for name, h in zip(todo, _hash_all([files[n] for n in todo], INPUT)):
            st = stats[name]
            self.entries[str(files[name])] = [st.st_size, st.st_mtime_ns, st.st_ino, h]
        if todo:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(self.path, json.dumps(self.entries))
        return Manifest({name: {"size": stats[name].st_size, INPUT: self.entries[str(p)][3]}
                         for name, p in sorted(files.items())})

"""The partition set's digests file, `<graph_name>.digests.json` beside `<graph_name>.json` (DGL does not read it):
every partition file of the set with its size and xxh3_128, so that a copy (`graphshard fetch`) can be checked.

The digests are the ones the partition writers took while writing (`digests.FileDigest`), matched to the files by
their stat identity: the set is never read again to make this file. The partition config itself is not listed: it
is the entry point that names the files, and `partition_graph` rewrites it (graph name) after the shuffle.

    {"version": 1, "algorithm": "xxh3_128", "num_parts": 2,
     "files": {"part0/graph.dgl": {"size": 1234, "digest": "9f..."}, ...}}
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence

from graphshard.digests import FAST, FileDigest, hash_file, identity
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.overwrite import Belongs, foreign
from graphshard.runprefix import RUNS, part_paths, split_prefix
from graphshard.storage import Location, Storage, location

SUFFIX = ".digests.json"
VERSION = 1
PART_DIR = re.compile(r"^part\d+$")
REPORT_FILES = ("report.json", "report.html")  # a set's validation report, beside its config
PART_FILES = frozenset({"graph.dgl", "node_feat.dgl", "edge_feat.dgl", "orig_nids.dgl", "orig_eids.dgl",
                        "fused_csc_sampling_graph.pt"})


@dataclass(frozen=True)
class FileEntry:
    """One listed file: its size in bytes and its digest (hex)."""

    size: int
    digest: str


def digests_name(config_name: str) -> str:
    """`rmat.json` -> `rmat.digests.json`."""
    return f"{config_name.removesuffix('.json')}{SUFFIX}"


def write_set_digests(out_dir: Path | Location, graph_name: str, written: Sequence[Iterable[FileDigest]],
                      storage: Storage | None = None) -> Path | Location:
    """Write `<graph_name>.digests.json` for the files under `out_dir/part<i>/`, from `written[i]` (the digests
    partition i's writer returned); a file there that its writer did not hash is an error, not a read. On a store
    (`out_dir` a URL) the files are the objects the writers wrote, named by their digests (no listing, no read)."""
    out = location(out_dir)
    files = _local_files(Path(out.path), written) if out.is_local else _written_files(out, written)
    target = out.join(digests_name(f"{graph_name}.json"))
    text = json.dumps({"version": VERSION, "algorithm": FAST, "num_parts": len(written), "files": files}, indent=1)
    (storage or Storage()).write_bytes(target, text.encode())
    return Path(target.path) if target.is_local else target


def _written_files(out: Location, written: Sequence[Iterable[FileDigest]]) -> dict[str, dict]:
    """{path under `out`: size and digest} of objects the writers wrote (identity: URL, "", size), in the order of
    `_local_files` (by partition, then path), so a set on a store lists its files as the same set on disk does."""
    files = {}
    for digests in written:
        part = {location(d.identity[0]).relative_to(out): {"size": d.size, "digest": d.hexdigest}
                for d in digests if d.algorithm == FAST}
        files.update(sorted(part.items()))
    return files


def _local_files(out_dir: Path, written: Sequence[Iterable[FileDigest]]) -> dict[str, dict]:
    """{path under `out_dir`: size and digest} of every file under its `part<i>/` folders, matched to the digests
    by stat identity."""
    files: dict[str, dict] = {}
    for part, digests in enumerate(written):
        known = {d.identity: d for d in digests if d.algorithm == FAST}
        folder = Path(out_dir) / f"part{part}"
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            digest = known.get(identity(os.stat(path)))
            if digest is None:
                raise GraphshardError(f"{path}: not hashed by its partition writer (internal error)")
            files[path.relative_to(out_dir).as_posix()] = {"size": digest.identity[2], "digest": digest.hexdigest}
    return files


def add_set_digests(config_path: Path, rel_paths: Iterable[str]) -> Path:
    """List files added to a finished set (GraphBolt's graphs, written by DGL's converter) in its digests file,
    hashing each once (they have no graphshard writer)."""
    target = Path(config_path).with_name(digests_name(Path(config_path).name))
    doc = json.loads(target.read_bytes())
    for rel in rel_paths:
        path = target.parent / rel
        doc["files"][rel] = {"size": path.stat().st_size, "digest": hash_file(path, FAST)}
    doc["files"] = dict(sorted(doc["files"].items()))
    Storage().write_bytes(target, json.dumps(doc, indent=1).encode())
    return target


def parse_set_digests(data: bytes, source: str) -> tuple[int, dict[str, FileEntry]]:
    """(num_parts, {path relative to the config's folder: FileEntry}) from a digests file's bytes."""
    try:
        doc = json.loads(data)
        if doc.get("version") != VERSION or doc.get("algorithm") != FAST:
            raise InputError(source, "version/algorithm", f"version {VERSION} with algorithm {FAST}",
                             f"{doc.get('version')}/{doc.get('algorithm')}")
        files = {str(rel): FileEntry(int(e["size"]), str(e["digest"])) for rel, e in doc["files"].items()}
        return int(doc["num_parts"]), files
    except (ValueError, TypeError, KeyError, AttributeError) as err:
        raise InputError(source, None, "a partition set digests file written by graphshard",
                         f"unreadable ({type(err).__name__}: {err})") from None


def unprefixed_set(out: Location, config_name: str, storage: Storage, beside: tuple[str, ...] = ()) -> list[Location]:
    """The files of a set at `out` whose config names them beside it, not under a run prefix (written by
    `graphshard shuffle --out s3://...`, or a local set copied there): the files its config and digests file name,
    the digests file and `beside` (e.g. its report). A config published over it replaces that set, so they are
    what `overwrite` deletes; a run-prefixed set goes with its prefix, and objects no set names stay."""
    try:
        text = storage.read_bytes(out / config_name).decode()
        prefix, _ = split_prefix(text)
        names = set(part_paths(json.loads(text)))
    except (GraphshardError, ValueError):
        return []
    if prefix:
        return []
    digests = digests_name(config_name)
    try:
        names |= set(parse_set_digests(storage.read_bytes(out / digests), str(out / digests))[1])
    except GraphshardError:
        pass
    names |= {digests, *beside}
    return [out / rel for rel in sorted(names)
            if rel and not rel.startswith(("/", "../", f"{RUNS}/")) and "://" not in rel]


def in_set(folder: Path | Location, storage: Storage, beside: tuple[str, ...] = REPORT_FILES) -> Belongs:
    """Whether a path under `folder` is part of a partition set: DGL's files in `part<i>/`, JSON files that are a
    partition config or its digests, the run prefixes of a set on a store, and `beside` (its report)."""
    loc = location(folder)
    return lambda rel: _in_set(rel, beside, lambda: storage.read_bytes(loc.join(rel)))


def foreign_entries(folder: Path | Location, storage: Storage, beside: tuple[str, ...] = REPORT_FILES) -> list[str]:
    """What an existing output folder holds that no partition set does (sorted relative paths; an empty folder ends
    in '/'): replacing the folder whole would delete them."""
    return foreign(folder, storage, in_set(folder, storage, beside))


def _in_set(rel: str, beside: tuple[str, ...], read: Callable[[], bytes]) -> bool:
    top, _, rest = rel.partition("/")
    if top == RUNS or (PART_DIR.match(top) and rest in PART_FILES) or (top in beside and not rest):
        return True
    if rest or not top.endswith(".json"):
        return False
    try:
        data = json.loads(read())
    except (OSError, ValueError, GraphshardError):
        return False
    return isinstance(data, dict) and ("node_map" in data or top.endswith(SUFFIX))

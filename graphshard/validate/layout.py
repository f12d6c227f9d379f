"""The partition config read straight from its JSON (not through the writer's model) and checked (§5.2-3).

`Layout` holds what every check needs: type names in type-id order, the ID ranges as arrays, the files of each
partition, and owner lookups from a new homogeneous ID to its (partition, type).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from graphshard.errors import InputError
from graphshard.formats.jsonfile import parse_json_object, read_json_object
from graphshard.storage import Location, Storage, StoredFile, location
from graphshard.storage.copies import CopyCache, LocalCopies
from graphshard.validate.problems import Problem

_PART_KEY = re.compile(r"^part-(\d+)$")
_REQUIRED = ("graph_name", "num_nodes", "num_edges", "num_parts", "node_map", "edge_map")
PART_FILE_KEYS = ("part_graph", "node_feats", "edge_feats")


@dataclass(frozen=True)
class Layout:
    """The checked essentials of `<graph>.json`; small enough to ship to every Dask task. `config_path` is a Path
    for a local set, a Location for one on a store; either way its files are read through `storage`."""

    config_path: Path | Location
    graph_name: str
    num_parts: int
    halo_hops: int
    num_nodes: int
    num_edges: int
    ntypes: tuple[str, ...]
    etypes: tuple[str, ...]
    node_ranges: np.ndarray  # (T, P, 2)
    edge_ranges: np.ndarray  # (ET, P, 2)
    part_files: tuple[dict[str, str], ...]  # per partition: key -> path relative to the config
    raw: dict
    storage: Storage = field(default_factory=Storage, compare=False, repr=False)
    cache: CopyCache | None = field(default=None, compare=False, repr=False)  # a set on a store: the step's copies
    copies: LocalCopies | None = field(default=None, compare=False, repr=False)  # within a task: part_copies

    @property
    def base_dir(self) -> Path | Location:
        return self.config_path.parent

    @property
    def is_local(self) -> bool:
        return isinstance(self.config_path, Path)

    def under(self, rel: str) -> Path | Location:
        """A path relative to the config's folder (a Location on a store)."""
        return self.base_dir / rel if self.is_local else self.base_dir.join(rel)

    def file(self, where: Path | Location) -> StoredFile:
        """A file of the set, to read through the layout's storage (its task-local copy when there is one)."""
        loc = location(where)
        return (self.copies and self.copies.file(loc)) or StoredFile(loc, self.storage)

    def path(self, part: int, key: str) -> Path | Location:
        return self.under(self.part_files[part][key])

    def rel(self, part: int, key: str) -> str:
        return self.part_files[part][key]

    def part_dir(self, part: int) -> Path:
        return self.path(part, "part_graph").parent

    def extra_file(self, part: int, name: str) -> Path | Location:
        """Optional files beside graph.dgl (orig_nids.dgl, orig_eids.dgl)."""
        folder = self.part_dir(part)
        return folder / name if self.is_local else folder.join(name)

    def extra_rel(self, part: int, name: str) -> str:
        return str(Path(self.rel(part, "part_graph")).parent / name)

    @property
    def etype_ends(self) -> np.ndarray:
        """(ET, 2) node type ids of each canonical edge type's source and destination."""
        return np.array([[self.ntypes.index(e.split(":")[0]), self.ntypes.index(e.split(":")[2])]
                         for e in self.etypes], dtype=np.int64).reshape(-1, 2)

    def nodes_per_type(self) -> np.ndarray:
        return (self.node_ranges[:, :, 1] - self.node_ranges[:, :, 0]).sum(axis=1)

    def edges_per_type(self) -> np.ndarray:
        return (self.edge_ranges[:, :, 1] - self.edge_ranges[:, :, 0]).sum(axis=1)

    def part_span(self, ranges: np.ndarray, part: int) -> tuple[int, int]:
        """[start, end) of all of a partition's IDs (its ranges are contiguous when the layout is valid)."""
        return int(ranges[:, part, 0].min()), int(ranges[:, part, 1].max())

    def per_type_offset(self, ranges: np.ndarray) -> np.ndarray:
        """(T, P): the per-type ID of each range's first element (offset in the concatenation of the type's ranges)."""
        widths = ranges[:, :, 1] - ranges[:, :, 0]
        return np.cumsum(widths, axis=1) - widths


def owners(ranges: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(partition, type) of each homogeneous ID from (T, P, 2) ranges; -1 for IDs outside every range."""
    num_types, num_parts = ranges.shape[:2]
    flat = ranges.transpose(1, 0, 2).reshape(-1, 2)  # partition-major, then type
    order = np.argsort(flat[:, 0], kind="stable")
    # A sentinel range first (covers nothing, catches IDs below every start), so that no clipping pass is needed.
    lowest = np.iinfo(np.int64).min
    starts = np.concatenate([[lowest], flat[order, 0]])
    ends = np.concatenate([[lowest], flat[order, 1]])
    slot = np.concatenate([[-1], order])
    pos = np.searchsorted(starts, ids, side="right")
    pos -= 1
    outside = ids >= ends[pos]
    width = max(num_types, 1)
    part_of, type_of = np.where(slot >= 0, slot // width, -1), np.where(slot >= 0, slot % width, -1)
    pos[outside] = 0
    return part_of[pos], type_of[pos]


def _ranges(data: dict, key: str, names: list[str], num_parts: int, path: Path) -> np.ndarray:
    table = data[key]
    if not isinstance(table, dict) or set(table) != set(names):
        raise InputError(path, key, f"one entry per type {names}", sorted(table) if isinstance(table, dict) else table)
    try:
        arr = np.array([table[n] for n in names], dtype=np.int64)
    except (TypeError, ValueError):
        raise InputError(path, key, "lists of [start, end) integer pairs", table) from None
    if arr.shape != (len(names), num_parts, 2):
        raise InputError(path, key, f"{num_parts} [start, end) pairs per type", f"shape {arr.shape}")
    return arr


def _type_names(data: dict, key: str, default: str, path: Path) -> list[str]:
    table = data.get(key, {default: 0})
    if not isinstance(table, dict) or sorted(table.values()) != list(range(len(table))):
        raise InputError(path, key, "{name: type id} with ids 0..n-1", table)
    return sorted(table, key=table.__getitem__)


def load_layout(config_path: str | Path | Location, storage: Storage | None = None) -> Layout:
    """Read `<graph>.json` (a path or a URL); raise InputError when it is unreadable or lacks what the checks
    need."""
    loc, storage = location(config_path), storage or Storage()
    path = Path(loc.path).resolve() if loc.is_local else loc
    data = read_json_object(path if loc.is_local else loc, "partition config JSON", storage)
    for key in _REQUIRED:
        if key not in data:
            raise InputError(path, key, "a value (DGL's load_partition_book requires it)", "missing")
    num_parts = data["num_parts"]
    if not isinstance(num_parts, int) or num_parts < 1:
        raise InputError(path, "num_parts", "an integer >= 1", num_parts)
    ntypes = _type_names(data, "ntypes", "_N", path)
    etypes = _type_names(data, "etypes", "_N:_E:_N", path)
    for et in etypes:
        ends = et.split(":")
        if len(ends) != 3 or ends[0] not in ntypes or ends[2] not in ntypes:
            raise InputError(path, "etypes", f"canonical 'src:rel:dst' over node types {ntypes}", et)
    parts = []
    for p in range(num_parts):
        files = data.get(f"part-{p}")
        if not isinstance(files, dict) or any(not isinstance(files.get(k), str) for k in PART_FILE_KEYS):
            raise InputError(path, f"part-{p}", f"an object with string paths {list(PART_FILE_KEYS)}", files)
        parts.append({k: files[k] for k in PART_FILE_KEYS})
    return Layout(
        config_path=path, graph_name=str(data["graph_name"]), num_parts=num_parts,
        halo_hops=int(data.get("halo_hops", 1)), num_nodes=int(data["num_nodes"]), num_edges=int(data["num_edges"]),
        ntypes=tuple(ntypes), etypes=tuple(etypes),
        node_ranges=_ranges(data, "node_map", ntypes, num_parts, path),
        edge_ranges=_ranges(data, "edge_map", etypes, num_parts, path),
        part_files=tuple(parts), raw=data, storage=storage,
    )


def check_layout(layout: Layout) -> list[Problem]:
    """Ranges partition-major, type-minor, gap-free from 0; totals equal num_nodes/num_edges; extra part keys."""
    problems = []
    name = layout.config_path.name
    for key, ranges, types, total_key, total in (
            ("node_map", layout.node_ranges, layout.ntypes, "num_nodes", layout.num_nodes),
            ("edge_map", layout.edge_ranges, layout.etypes, "num_edges", layout.num_edges)):
        expected = 0
        for p in range(layout.num_parts):
            for t, tname in enumerate(types):
                start, end = (int(x) for x in ranges[t, p])
                if start != expected or end < start:
                    problems.append(Problem(
                        "id-ranges", f"{key}['{tname}'][{p}] = [{start}, {end}), expected it to start at {expected} "
                        f"(partition-major, type-minor, gap-free) and end at or after its start", p, name))
                expected = max(end, expected)
        held = int((ranges[:, :, 1] - ranges[:, :, 0]).clip(min=0).sum())
        if held != total:
            problems.append(Problem("counts", f"{total_key} is {total} but the {key} ranges hold {held} IDs",
                                    None, name))
    extra = sorted(k for k in layout.raw if (m := _PART_KEY.match(k)) and int(m.group(1)) >= layout.num_parts)
    if extra:
        problems.append(Problem("config", f"keys {extra} beyond num_parts = {layout.num_parts}", None, name))
    return problems


def find_config(folder: str | Path | Location, storage: Storage | None = None) -> Path | Location:
    """The partition config inside an output folder (a path or URL): the one JSON file there with `node_map` and
    `num_parts`."""
    loc, storage = location(folder), storage or Storage()
    folder = Path(loc.path) if loc.is_local else loc
    if loc.is_local and folder.is_dir():
        names = [p.name for p in folder.glob("*.json")]
    elif not loc.is_local and (entries := storage.listing(loc)):
        names = [e.rel for e in entries if "/" not in e.rel and e.rel.endswith(".json")]
    else:
        raise InputError(folder, None, "a partition output folder", "no such folder")
    found = []
    for name in sorted(names):
        path = folder / name if loc.is_local else loc.join(name)
        try:
            data = parse_json_object(storage.read_bytes(path), path, "partition config")
        except (OSError, InputError):
            continue
        if "node_map" in data and "num_parts" in data:
            found.append(path)
    if len(found) != 1:
        raise InputError(folder, "<graph_name>.json", "exactly one partition config (a JSON file with node_map and "
                         "num_parts)", f"{len(found)}: {[p.name for p in found]}")
    return found[0]

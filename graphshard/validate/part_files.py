"""Indexing one partition's files for checking (arrays are read later, piece by piece: formats/dgl_columns.py);
every read failure becomes a Problem, not an exception."""

from __future__ import annotations

import dataclasses
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from graphshard.errors import GraphshardError
from graphshard.formats.dgl_columns import Column, GraphColumns, graph_columns, tensor_dict_columns
from graphshard.storage import Location, Storage, StoredFile, location
from graphshard.storage.copies import local_copies
from graphshard.validate.layout import Layout
from graphshard.validate.problems import Problem

ORIG_NIDS = "orig_nids.dgl"
ORIG_EIDS = "orig_eids.dgl"


@dataclass
class PartData:
    """One partition as indexed on disk; a tensor dict is None when its file is absent or unreadable."""

    part: int
    graph: GraphColumns | None
    node_feats: dict[str, Column] | None
    edge_feats: dict[str, Column] | None
    orig_nids: dict[str, Column] | None
    orig_eids: dict[str, Column] | None
    file_bytes: dict[str, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)


def _read(reader, source: StoredFile, rel: str, part: int, problems: list[Problem], required: bool):
    """A file of the set indexed by `reader` (local, or an object read by ranges); a Problem when it is missing
    (`required`) or unreadable."""
    try:
        return reader(source)
    except (GraphshardError, OSError, ValueError) as err:
        if not source.exists():  # asked only when the read failed: one request less per file on a store
            if required:
                problems.append(Problem("files", "file named by the partition config does not exist", part, rel))
            return None
        problems.append(Problem("files", f"cannot be read as a DGL file: {err}", part, rel))
        return None


def dir_bytes(folder: Path | Location, storage: Storage | None = None) -> dict[str, int]:
    """Size of every regular file under a partition folder (or prefix), by name relative to it."""
    loc = location(folder)
    if loc.is_local and not Path(loc.path).is_dir():
        return {}
    return {e.rel: e.size for e in (storage or Storage()).listing(loc)}


@contextmanager
def part_copies(layout: Layout, part: int) -> Iterator[Layout]:
    """The layout a task reads partition `part` through: the layout itself for a local set; for a set on a store, one
    whose files in the partition's folder are read from this worker's copies (each object copied whole when a task
    first reads it; kept for the step's later tasks on this worker when the layout carries the step's `cache`, else
    deleted when the block ends), so that a file costs one GET per worker, not one per piece or per task."""
    if layout.is_local:
        yield layout
        return
    with local_copies(layout.part_dir(part), layout.storage, layout.cache) as copies:
        yield dataclasses.replace(layout, copies=copies)


def part_bytes(layout: Layout, part: int) -> dict[str, int]:
    """Size of every file in the partition's folder (the task's copies already listed it: no second listing)."""
    folder = location(layout.part_dir(part))
    if layout.copies is not None and layout.copies.prefix == folder:
        return dict(layout.copies.sizes)
    return dir_bytes(folder, layout.storage)


def orig_ids(layout: Layout, part: int, name: str) -> dict[str, Column] | None:
    """One original-ID file (ORIG_NIDS or ORIG_EIDS) indexed; None when absent or unreadable (phase one says so)."""
    return _read(tensor_dict_columns, layout.file(layout.extra_file(part, name)), layout.extra_rel(part, name), part,
                 [], False)


def load_part(layout: Layout, part: int, with_graph: bool = True, with_feats: bool = True,
              with_orig: bool = True) -> PartData:
    """Index partition `part`'s graph, features and optional original-ID files (`with_orig`)."""
    problems: list[Problem] = []
    graph = node_feats = edge_feats = None
    def named(key: str) -> tuple[StoredFile, str]:
        return layout.file(layout.path(part, key)), layout.rel(part, key)

    def extra(name: str) -> tuple[StoredFile, str]:
        return layout.file(layout.extra_file(part, name)), layout.extra_rel(part, name)

    if with_graph:
        graph = _read(graph_columns, *named("part_graph"), part, problems, True)
    if with_feats:
        node_feats = _read(tensor_dict_columns, *named("node_feats"), part, problems, True)
        edge_feats = _read(tensor_dict_columns, *named("edge_feats"), part, problems, True)
    orig_nids = _read(tensor_dict_columns, *extra(ORIG_NIDS), part, problems, False) if with_orig else None
    orig_eids = _read(tensor_dict_columns, *extra(ORIG_EIDS), part, problems, False) if with_orig else None
    return PartData(part, graph, node_feats, edge_feats, orig_nids, orig_eids,
                    part_bytes(layout, part), problems)

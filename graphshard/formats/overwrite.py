"""What `overwrite` may replace: a folder (or store prefix) that holds only an earlier output of the same kind, or
nothing. Replacing the folder whole would delete anything else there, such as the user's files or the input graph
(`assign --in top/g/metadata.json --out top --overwrite`), so any other entry refuses the write in one line. Each
kind of output says which paths belong to it."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Callable

from graphshard.errors import GraphshardError
from graphshard.storage import Location, Storage, location

Belongs = Callable[[str], bool]  # a path relative to the folder -> whether it is part of the output kind

_ASSIGNMENT = re.compile(r"^(trainer_ids/)?(partition_meta\.json|assignment_report\.json)$")
_PARTS = re.compile(r"^(trainer_ids/)?[^/]+\.txt$")


def foreign(folder: str | Path | Location, storage: Storage, belongs: Belongs) -> list[str]:
    """The entries of an existing folder that are not part of its output kind (sorted relative paths; an empty
    sub-folder ends in '/')."""
    loc = location(folder)
    if loc.is_local and os.path.lexists(loc.path) and not os.path.isdir(loc.path):
        return []  # a file where the folder goes: the writer's own check says so (`atomic.output_folder`)
    found = [e.rel for e in storage.listing(loc)]
    if loc.is_local and os.path.isdir(loc.path):  # empty folders too, which a listing of files leaves out
        found += [f"{p.name}/" for p in Path(loc.path).iterdir() if p.is_dir() and not any(p.iterdir())]
    return sorted(rel for rel in found if not belongs(rel))


def check_replaceable(folder: str | Path | Location, storage: Storage, belongs: Belongs, what: str) -> None:
    """One line when replacing `folder` would delete something that is not part of `what` (e.g. "an assignment")."""
    if found := foreign(folder, storage, belongs):
        names = _grouped(found)
        shown = ", ".join(names[:3]) + (f", ... ({len(names)} in all)" if len(names) > 3 else "")
        raise GraphshardError(f"{location(folder)}: --overwrite replaces the whole folder, and it holds {shown}, "
                              f"not part of {what}; give a new or empty folder, or move them first")


def _grouped(found: list[str]) -> list[str]:
    """The entries to name: a sub-folder holding more than 3 of them as `name/` (an input graph), else each one."""
    under: dict[str, list[str]] = {}
    for rel in found:
        under.setdefault(rel.split("/", 1)[0] if "/" in rel.rstrip("/") else rel, []).append(rel)
    shown: list[str] = []
    for top, rels in under.items():
        shown += [f"{top}/"] if len(rels) > 3 else rels
    return sorted(shown)


def in_assignment(folder: str | Path | Location, storage: Storage) -> Belongs:
    """An assignment folder's files: partition_meta.json, assignment_report.json and, when partition_meta.json is
    there, the `<ntype>.txt` files (and the trainers' under trainer_ids/): of the node types its report names, else
    (an assignment DGL's tools wrote: no report) any."""
    base = location(folder)
    if not storage.exists(base.join("partition_meta.json")):
        return lambda rel: bool(_ASSIGNMENT.match(rel))
    try:
        ntypes = set(json.loads(storage.read_bytes(base.join("assignment_report.json")))["nodes_per_part"])
    except (GraphshardError, ValueError, KeyError, TypeError):
        ntypes = None
    return lambda rel: bool(_ASSIGNMENT.match(rel) or (_PARTS.match(rel) and (
        ntypes is None or rel.rsplit("/", 1)[-1].removesuffix(".txt") in ntypes)))


def in_chunked_graph(folder: str | Path | Location, storage: Storage) -> Belongs:
    """A chunked graph's files: its metadata.json and every file that names below the folder (none when there is
    no readable metadata.json)."""
    from graphshard.formats.chunked import load_metadata

    base = location(folder)
    try:
        graph = load_metadata(base.join("metadata.json"), storage)
    except GraphshardError:
        return lambda rel: False
    names = {"metadata.json"}
    for p in graph.data_files():
        try:
            names.add(graph.location(p).relative_to(base))
        except GraphshardError:  # a file outside the folder stays where it is
            pass
    return names.__contains__

"""Publishing the finished partition set (and report) to `output.dir`, atomically, from the step artifacts.

Files are hard-linked from the work folder when it shares the output's filesystem (no copy of a large partition
set), copied otherwise. `<work>/published.json` records what was published where, so that a second identical run
leaves the output untouched and a changed run may replace an output this work folder published before.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Callable

from graphshard.atomic import staged_output, write_text_atomic
from graphshard.errors import GraphshardError
from graphshard.pipeline.config import PipelineConfig
from graphshard.storage import Location, Storage, location

RECORD = "published.json"


def link_tree(src: Path, dst: Path) -> int:
    """Hard-link (or copy, across filesystems) every file under `src` into `dst`; returns the number of files."""
    count = 0
    for path in sorted(Path(src).rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(path, target)
        except OSError:
            shutil.copy2(path, target)
        count += 1
    return count


def read_record(work_dir: Path | Location, storage: Storage | None = None) -> dict:
    """What this work folder published last ({} if nothing)."""
    try:
        return json.loads((storage or Storage()).read_bytes(location(work_dir) / RECORD))
    except (GraphshardError, ValueError):
        return {}


def output_key(out_dir: Path | Location) -> str:
    """How the record names an output: a resolved local path, or the URL."""
    return out_dir.url if isinstance(out_dir, Location) else str(Path(out_dir).resolve())


def published_by(work_dir: Path | Location, out_dir: Path | Location, storage: Storage | None = None) -> bool:
    """True when this work folder published `out_dir` last (so a run of the same config may replace it)."""
    return read_record(work_dir, storage).get("output") == output_key(out_dir)


def published_record(cfg: PipelineConfig) -> bool:
    """The run's work folder has published a set before (its record exists)."""
    return cfg.storage.exists(location(cfg.work) / RECORD)


def is_current(work_dir: Path, out_dir: Path, digests: dict[str, str], sources: list[Path],
               rewritten: tuple[str, ...] = ()) -> bool:
    """The output already holds exactly these sources' files (recorded digests match, every file present, same size;
    files named in `rewritten`, rewritten when published, need only be present)."""
    record = read_record(work_dir)
    if record.get("output") != str(Path(out_dir).resolve()) or record.get("digests") != digests:
        return False
    for src in sources:
        for path in src.rglob("*"):
            if path.is_file():
                target = out_dir / path.relative_to(src)
                if not target.is_file() or (path.name not in rewritten and
                                            target.stat().st_size != path.stat().st_size):
                    return False
    return True


def publish_output(work_dir: Path, out_dir: Path, sources: list[Path], digests: dict[str, str],
                   finish: Callable[[Path], object] | None = None) -> Path:
    """Build `out_dir` from the source folders in a staging sibling (then `finish(stage)`, e.g. to rewrite a file
    that names its location), swap it into place, record it."""
    out_dir = Path(out_dir).resolve()
    with staged_output(out_dir, overwrite=True) as stage:
        for src in sources:
            link_tree(src, stage)
        if finish is not None:
            finish(stage)
    write_text_atomic(Path(work_dir) / RECORD, json.dumps({"output": str(out_dir), "digests": digests}, indent=1))
    return out_dir

"""Publishing the finished partition set (and report) to `output.dir`, atomically, from the step artifacts.

A local output: files are hard-linked from the work folder when it shares the output's filesystem (no copy of a large
partition set), copied otherwise, into a staging sibling that is swapped into place. An output on a store, which
has no rename (`publish_on_store`): the files go under a run-unique prefix `<out>/.runs/<run id>/` (the id a digest
of the artifacts' digests, so the same input, config and seed give the same objects), copied by the store itself
when the work folder is on the same store, then the partition config, naming that prefix's files, in one PUT, last:
a reader sees the earlier set or the whole new one. Prefixes the config no longer names (the earlier set's, a
crashed publish's) are deleted after it is in place. `<work>/published/<output's digest>.json` records what was
published there (one record per output, so configs sharing a work folder, or one config moved between outputs, each
keep theirs), so that a second identical run leaves the output untouched and a changed run may replace an output
this work folder published before.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable

from graphshard.atomic import publish_on_store, run_prefix, staged_output, write_text_atomic
from graphshard.errors import GraphshardError
from graphshard.formats.set_digests import unprefixed_set
from graphshard.pipeline.cache import StepResult
from graphshard.pipeline.config import PipelineConfig
from graphshard.pipeline.files import write_report_to
from graphshard.pipeline.manifest import digest_of
from graphshard.runprefix import RUNS
from graphshard.storage import Location, Storage, lease, location
from graphshard.validate.report_html import REPORT_FILES

RECORDS = "published"  # <work>/published/<digest of the output's key>.json: what was published there
LEGACY_RECORD = "published.json"  # before: the last output only (still read)


def link_tree(src: Path | Location, dst: Path, storage: Storage | None = None) -> int:
    """Hard-link (or copy, across filesystems) every file under `src` into `dst`; a work folder on a store is
    downloaded through the storage layer. Returns the number of files."""
    if isinstance(src, Location):
        storage = storage or Storage()
        entries = storage.listing(src)
        for e in entries:
            storage.copy(src / e.rel, location(dst / e.rel))
        return len(entries)
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


def _sizes(src: Path | Location, storage: Storage) -> dict[str, int]:
    """Relative name -> size of every file under a local folder or a prefix on a store."""
    if isinstance(src, Location):
        return {e.rel: e.size for e in storage.listing(src)}
    return {p.relative_to(src).as_posix(): p.stat().st_size for p in src.rglob("*") if p.is_file()}


def _records(work_dir: Path | Location, out_dir: Path | Location) -> tuple[Location, str]:
    """The folder of this work folder's publish records, and the name that `out_dir`'s record and lease go by."""
    return location(work_dir) / RECORDS, digest_of(output_key(out_dir))[:16]


def _record(work_dir: Path | Location, out_dir: Path | Location) -> Location:
    folder, name = _records(work_dir, out_dir)
    return folder / f"{name}.json"


def publishing(work_dir: Path | Location, out_dir: Path | Location, storage: Storage,
               waiting: Callable[[str], None] | None = None) -> AbstractContextManager[bool]:
    """Hold this work folder's publishing at `out_dir` alone (a lease beside its record): two runs of one config
    that finish together publish one after the other, and the second finds the set current, instead of finding
    the first's set half in place (not yet recorded as this work folder's) and refusing to replace it."""
    return lease.claimed(storage, *_records(work_dir, out_dir), waiting)


def read_record(work_dir: Path | Location, out_dir: Path | Location, storage: Storage | None = None) -> dict:
    """What this work folder published at `out_dir` ({} if nothing)."""
    storage = storage or Storage()
    for where in (_record(work_dir, out_dir), location(work_dir) / LEGACY_RECORD):
        try:
            record = json.loads(storage.read_bytes(where))
        except (GraphshardError, ValueError):
            continue
        if isinstance(record, dict) and record.get("output") == output_key(out_dir):
            return record
    return {}


def write_record(work_dir: Path | Location, out_dir: Path | Location, digests: dict, storage: Storage) -> None:
    """Record what this work folder published at `out_dir` (atomically)."""
    record = json.dumps({"output": output_key(out_dir), "digests": digests}, indent=1)
    where = _record(work_dir, out_dir)
    if where.is_local:
        Path(where.path).parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(Path(where.path), record)
    else:
        storage.write_bytes(where, record.encode())


def output_key(out_dir: Path | Location) -> str:
    """How the record names an output: a resolved local path, or the URL."""
    return out_dir.url if isinstance(out_dir, Location) else str(Path(out_dir).resolve())


def published_by(work_dir: Path | Location, out_dir: Path | Location, storage: Storage | None = None) -> bool:
    """True when this work folder published `out_dir` (so a run of a config writing there may replace it)."""
    return bool(read_record(work_dir, out_dir, storage))


def published_record(cfg: PipelineConfig) -> bool:
    """The run's work folder has published a set at the run's output before (what the pre-flight asks). An output
    there but not recorded may be another run of the same work folder's set, in place a moment before its record:
    a publish under way is waited for (nothing is written otherwise: a refused run leaves no trace), then the record
    read again."""
    work, out, storage = cfg.work, cfg.output.dir, cfg.storage
    if published_by(work, out, storage):
        return True
    try:
        if not storage.exists(location(out)):
            return False
        if lease.claimed_now(storage, *_records(work, out)):
            with publishing(work, out, storage, lambda who: print(
                    f"waiting for another run publishing to {out} ({who})", file=sys.stderr)):
                pass  # until it has ended
    except GraphshardError:  # an output or work folder that cannot be reached: the pre-flight says so
        return False
    return published_by(work, out, storage)  # a publish that ended since the first look recorded its set first


def run_id(digests: dict[str, str | None]) -> str:
    """The run-unique prefix name of a set on a store: follows the artifacts' content, not the time or host."""
    return digest_of(digests)[:16]


def run_name(shuffle_key: str) -> str:
    """The run prefix name of a set the shuffle step writes straight under its output (`steps/shuffle.build`):
    follows the step's key (its input, config and version), known before the set is written."""
    return shuffle_key[:16]


def run_of(shuffled: StepResult, validated: StepResult | None) -> str:
    """The run prefix a set on a store is published under: the one the shuffle wrote it to, else the artifacts'
    digest (`run_id`)."""
    product = shuffled.summary.get("product")
    return location(product).name if product else run_id(artifact_digests(shuffled, validated))


def artifact_digests(shuffled: StepResult, validated: StepResult | None) -> dict[str, str | None]:
    """What a published set is made of: the digests of the partition and report artifacts."""
    return {"partitions": shuffled.digest, "report": validated.digest if validated else None}


def published_folder(out: Path | Location, run: str) -> Path | Location:
    """Where the set's files (and the report) are published: `out` itself locally, its run prefix on a store."""
    return run_prefix(out, run) if isinstance(out, Location) else out


def is_current(work_dir: Path | Location, out_dir: Path | Location, digests: dict[str, str], sources: list[Path],
               rewritten: tuple[str, ...] = (), storage: Storage | None = None, config_name: str = "",
               run: str | None = None) -> bool:
    """The output already holds exactly these sources' files (recorded digests match, every file present, same size,
    and where publishing linked it, the source's own file: a step re-run since made new files, and the output's,
    changed in place meanwhile, are replaced; files named in `rewritten`, rewritten when published, need only be
    present). On a store: the config there names this run's prefix (`run`, default `run_id(digests)`)."""
    storage = storage or Storage()
    if read_record(work_dir, out_dir, storage).get("digests") != digests:
        return False
    if isinstance(out_dir, Location):
        try:
            text = storage.read_bytes(out_dir / config_name).decode()
        except GraphshardError:
            return False
        return f'"{RUNS}/{run or run_id(digests)}/' in text
    for src in sources:
        for rel, size in _sizes(src, storage).items():
            target = out_dir / rel
            if not target.is_file() or (target.name not in rewritten and not _same(src, rel, target, size)):
                return False
    return True


def _same(src: Path | Location, rel: str, target: Path, size: int) -> bool:
    """A published file is its source's: the same file where it could be linked (same filesystem), else its size."""
    have = target.stat()
    if isinstance(src, Location):
        return have.st_size == size
    own = (Path(src) / rel).stat()
    return (have.st_dev, have.st_ino) == (own.st_dev, own.st_ino) if have.st_dev == own.st_dev else have.st_size == size


def publish_output(work_dir: Path | Location, out_dir: Path, sources: list[Path | Location],
                   digests: dict[str, str], finish: Callable[[Path], object] | None = None,
                   storage: Storage | None = None, overwrite: bool = True) -> Path:
    """Build `out_dir` from the source folders (local, or on a store) in a staging sibling (then `finish(stage)`,
    e.g. to rewrite a file that names its location), swap it into place (an existing `out_dir`: only with
    `overwrite`), record it."""
    out_dir = Path(out_dir).resolve()
    with staged_output(out_dir, overwrite=overwrite) as stage:
        for src in sources:
            link_tree(src, stage, storage)
        if finish is not None:
            finish(stage)
    write_record(work_dir, out_dir, digests, storage or Storage())
    return out_dir


def publish_to_store(work_dir: Path | Location, out: Location, sources: list[Path | Location],
                     digests: dict[str, str | None], config_name: str, storage: Storage,
                     report: dict | None = None, run: str | None = None, overwrite: bool = True,
                     holder: str | None = None) -> Location:
    """`atomic.publish_on_store` under the run prefix `run` (default: the run id of these artifacts), the report
    (rewritten to name the published config) under the same prefix before the config (written only where none is
    unless `overwrite`; `holder`: the run's lease there); record it in the work folder."""
    run = run or run_id(digests)
    if report is not None:
        write_report_to(run_prefix(out, run), {**report, "config": (out / config_name).url}, storage)
    replaces = unprefixed_set(out, config_name, storage, REPORT_FILES) if overwrite else []
    publish_on_store(sources, out, config_name, run, storage, skip=REPORT_FILES if report is not None else (),
                     exclusive=not overwrite, replaces=replaces, holder=holder)
    write_record(work_dir, out, digests, storage)
    return out

"""Atomic publication of outputs: build under a hidden temporary sibling, rename into place when complete.

Every folder graphshard writes (a chunked graph, an assignment, a partition set, a step artifact) appears under its
final name only when complete, so a crashed or killed run never leaves a half-written one behind.

An object store has no rename: a partition set is published there by `publish_on_store`, its files under a
run-unique prefix and the partition config, naming them, written last in one PUT (`graphshard.runprefix`).
"""

from __future__ import annotations

import errno
import glob
import hashlib
import logging
import os
import re
import shutil
import socket
import uuid
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence

from graphshard.errors import GraphshardError
from graphshard.runprefix import RUNS, with_prefix
from graphshard.storage import Location, Storage, lease, location

log = logging.getLogger(__name__)
# staging_dir's and move_into_place's names: the pid, this host's tag (older names have none) and a random part
_STALE = re.compile(r"^\..+\.(?:tmp|old)-(\d+)(?:-h([0-9a-f]{6}))?-[0-9a-f]{8}$")


def _owner() -> str:
    """`<pid>-h<host tag>`: who made a staging name, so that a host sharing the folder (NFS) never takes another
    host's live folder for a dead process's (a process id means something on its own host only)."""
    return f"{os.getpid()}-h{_host_tag()}"


def _host_tag() -> str:
    return hashlib.blake2b(socket.gethostname().encode(), digest_size=3).hexdigest()


def is_stale(path: Path) -> bool:
    """Whether `path` is a staging folder (`staging_dir`) or a replaced output (`move_into_place`) of a process that
    is gone: a SIGKILLed one leaves them behind."""
    m = _STALE.match(Path(path).name)
    here = m is not None and m.group(2) in (None, _host_tag())
    return here and not lease.alive(int(m.group(1)))


def _remove(path: Path) -> None:
    """Delete a folder or a file, whatever is left of it."""
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def remove_stale(final: Path) -> list[Path]:
    """Delete the staging folders and replaced outputs that processes now gone left beside `final` (this host's
    processes: the ids are local)."""
    final = Path(final)
    return remove_stale_in(final.parent, f".{glob.escape(final.name)}.*")


def remove_stale_in(folder: Path, pattern: str = ".*") -> list[Path]:
    """Delete what processes of this host now gone left in `folder` under staging names matching `pattern`
    (staging folders, replaced outputs, a file's temporary sibling); returns them."""
    stale = [p for p in Path(folder).glob(pattern) if is_stale(p)]
    for p in stale:
        _remove(p)
    return stale


def staging_dir(final: Path) -> Path:
    """A fresh hidden folder beside `final` (same filesystem, so the final rename is atomic)."""
    final = Path(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        stage = final.parent / f".{final.name}.tmp-{_owner()}-{uuid.uuid4().hex[:8]}"
        stage.mkdir()
    except OSError as err:
        raise GraphshardError(f"{final.parent}: cannot create output folder ({err.strerror})") from None
    return stage


def _exists_error(final: Path) -> GraphshardError:
    return GraphshardError(f"{final}: output folder exists (pass --overwrite to replace it)")


def output_folder(final: str | Path, overwrite: bool = False) -> Path:
    """The folder an output is staged beside and moved to: `final`, or the folder it links to, made there when the
    link points at nothing yet (a link to a larger disk keeps the output there); one line before any work when it
    cannot be written: it exists (without `overwrite`), it is a file, or it is a mount point (replacing renames the
    folder aside, which a mount point refuses)."""
    final = Path(final)
    if final.is_symlink():
        try:
            final = final.resolve()
        except (RuntimeError, OSError) as err:  # a link loop
            raise GraphshardError(f"{final}: a symbolic link that cannot be followed ({err}); remove it or choose "
                                  "another output folder") from None
    if not final.exists():
        return final
    if not final.is_dir():
        raise GraphshardError(f"{final}: a file is there, not a folder; remove it or choose another output folder "
                              "(--overwrite replaces a folder only)")
    if not overwrite:
        raise _exists_error(final)
    if os.path.ismount(final):
        raise GraphshardError(f"{final}: a mount point, which --overwrite cannot replace (the folder is renamed "
                              "aside); give a folder inside it")
    return final


def _swap(stage: Path, final: Path) -> None:
    """Replace the folder `final` by `stage`: `final` renamed aside, `stage` renamed in, the old one deleted (put
    back when the second rename fails)."""
    trash = final.parent / f".{final.name}.old-{_owner()}-{uuid.uuid4().hex[:8]}"
    os.replace(final, trash)
    try:
        os.replace(stage, final)
    except OSError:
        os.replace(trash, final)
        raise
    _remove(trash)


def _move(stage: Path, final: Path, overwrite: bool) -> None:
    """Rename `stage` to `final`, replacing an existing `final` only with `overwrite`; one line when it cannot."""
    try:
        if final.exists():
            if not overwrite:
                raise _exists_error(final)
            _swap(stage, final)
        else:
            os.rename(stage, final)  # a folder another process moved there meanwhile is kept: never replaces a full one
    except OSError as err:
        if err.errno in (errno.ENOTEMPTY, errno.EEXIST) and not overwrite:
            raise _exists_error(final) from None
        raise GraphshardError(f"{final}: cannot move the finished output into place ({err.strerror or err}); "
                              "nothing was replaced") from err


def move_into_place(stage: Path, final: Path, overwrite: bool = False) -> Path:
    """Move a completed staging folder to `final`; an existing `final` is replaced only with `overwrite`. When the
    move fails (another process's output got there first, a rename refused), the staging folder is deleted."""
    final = Path(final)
    try:
        _move(stage, final, overwrite)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return final


@contextmanager
def staged_output(final: str | Path, overwrite: bool = False) -> Iterator[Path]:
    """Yield a staging folder beside `final`; move it into place on success, delete it on any error. What killed
    processes of this host left beside `final` (their staging folders) is deleted first.

    Parameters
    ----------
    final : str or Path
        The folder that appears, complete, when the block ends without error (a link to a folder: that folder).
    overwrite : bool
        Replace an existing `final` (else an existing one is an error before anything is written).

    Yields
    ------
    Path
        The staging folder to write into.
    """
    final = output_folder(final, overwrite)
    remove_stale(final)
    stage = staging_dir(final)
    try:
        yield stage
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    move_into_place(stage, final, overwrite)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write a small text file via a temporary name and a rename."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text)
    os.replace(tmp, path)


def run_prefix(out: Location, run: str) -> Location:
    """Where a set published on a store as run `run` keeps its files."""
    return out / RUNS / run


def publish_on_store(sources: list[Path | Location], out: Location, config_name: str, run: str, storage: Storage,
                     skip: tuple[str, ...] = (), transfers: int = 8, exclusive: bool = False,
                     replaces: Sequence[Location] = (), holder: str | None = None) -> Location:
    """Publish a partition set on a store: every file of `sources` (but `config_name` and `skip`) under
    `run_prefix(out, run)` (copied by the store itself within one store), then the config found in the first
    source, its paths moved under the prefix, at `<out>/<config_name>` in one PUT: the set appears whole (a source
    that is the run prefix itself, where the shuffle step wrote the set, is not copied: only named). Then the other
    run prefixes under `<out>/.runs/` (an earlier set's, a crashed publish's) are deleted, unless another run works
    on this output now (`_drop_other_runs`). `exclusive`: the config is written only where none is
    (`Storage.write_new`): of two runs publishing to one output at once, one wins and the other fails, nothing
    replaced. `replaces` (the files of a set the config replaces that lie beside it, not under a run prefix:
    `set_digests.unprefixed_set`) are deleted last. `holder`: the caller's lease in `<out>/.runs/` (held from
    before it wrote under its prefix); None: one is held for this call. Returns the config."""
    if holder is None:
        with lease.holding(storage, out / RUNS, "publish") as name:
            return publish_on_store(sources, out, config_name, run, storage, skip, transfers, exclusive, replaces,
                                    name)
    prefix = run_prefix(out, run)
    copies = [(location(src) / e.rel, prefix / e.rel) for src in sources for e in storage.listing(location(src))
              if e.rel != config_name and e.rel not in skip]
    copies = [(a, b) for a, b in copies if a.url != b.url]  # a set written under its run prefix already
    with ThreadPoolExecutor(transfers) as pool:
        list(pool.map(lambda pair: storage.copy(*pair), copies))
    text = with_prefix(storage.read_bytes(location(sources[0]) / config_name).decode(), f"{RUNS}/{run}")
    if not exclusive:
        storage.write_bytes(out / config_name, text.encode())
    elif not storage.write_new(out / config_name, text.encode()):
        raise GraphshardError(f"{out / config_name}: a partition config appeared there while this run published "
                              "(another run published to this output); nothing was replaced")
    _drop_other_runs(storage, out, run, holder)
    for loc in replaces:
        storage.delete_prefix(loc)
    return out / config_name


def _drop_other_runs(storage: Storage, out: Location, run: str, holder: str) -> None:
    """Delete every run prefix under `<out>/.runs/` but `run`'s, unless another run holds a lease there: it may be
    writing its own prefix, which its config will name (two runs that may both replace the output), so the earlier
    sets wait for a later publish."""
    busy = lease.others_live(storage, out / RUNS, holder)
    if busy:
        log.info("left earlier sets under %s for a later publish: runs at work on this output (%s)", out / RUNS,
                 ", ".join(busy))
        return
    for name in sorted({e.rel.split("/", 1)[0] for e in storage.listing(out / RUNS)} - {run, lease.LEASES}):
        storage.delete_prefix(out / RUNS / name)


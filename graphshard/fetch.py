"""`fetch`: copy a published partition set (or some of its parts) from any location to local disk, checked against
the set's digests file, so that a training host gets its partition in a form DGL's `load_partition` reads.

The partition config is copied verbatim: DGL's `load_partition(config, i)` opens only `part-<i>`'s files (paths
relative to the config), while `load_partition_book` needs `num_parts` and every part's ID ranges, so a config for a
subset must still describe all parts; parts not fetched are named there but absent. A set published on a store names
its files under a run-unique prefix (`.runs/<id>/`, `graphshard.runprefix`): they are fetched from there, with the
digests file the run wrote beside them, into the layout a local run writes, and the prefix is taken off the config's
paths (only those strings), so the fetched config is byte for byte a local run's. Everything is built in a staging
folder beside `out_dir` and moved into place only when every file matched its digest. With `overwrite`, a file
that the folder being replaced already holds with the listed size and digest (an earlier fetch of the set, of
other parts) is linked into the new folder instead of downloaded again.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import xxhash

from graphshard import diskfull
from graphshard.atomic import staged_output
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.jsonfile import parse_json_object
from graphshard.formats.set_digests import FileEntry, digests_name, parse_set_digests
from graphshard.runprefix import split_prefix
from graphshard.storage import Location, Storage, StorageError, check_location, inside, location
from graphshard.storage.failures import classify

if TYPE_CHECKING:
    from graphshard.validate.layout import Layout

COPY_BLOCK = 8 << 20  # bytes per ranged read: a transfer holds one block in memory
TRANSFERS = 4


@dataclass(frozen=True)
class Fetched:
    """What `fetch` copied: the local config, the parts, the number of files and their bytes."""

    config: Path
    parts: list[int]
    files: int
    bytes: int  # downloaded
    kept: int = 0  # files the replaced folder already held (linked, not downloaded)


def _safe_rel(rel: str, where: str) -> str:
    """A path relative to the config that stays inside the set's folder (it becomes a path under `out_dir`)."""
    norm = posixpath.normpath(rel)
    if "://" in rel or norm.startswith(("/", "../")) or norm == "..":
        raise GraphshardError(f"{where}: names {rel!r}; fetch copies sets whose config names every file by a path "
                              "relative to the config, inside its folder")
    return norm


def _part_files(layout: Layout, part: int, listed: dict[str, FileEntry], config: Location) -> list[str]:
    """The files of one partition: those the digests file lists in the folder of its graph (the config's three
    and the optional original-ID files); each file the config names must be listed."""
    named = [_safe_rel(layout.rel(part, key), f"{config} part-{part}") for key in ("part_graph", "node_feats",
                                                                                   "edge_feats")]
    for rel in named:
        if rel not in listed:
            raise GraphshardError(f"{config}: part-{part} names {rel}, which the set's digests file does not list; "
                                  "the config and the digests file are from different sets: publish the set again")
    folder = posixpath.dirname(named[0])
    return sorted({*named, *(r for r in listed if posixpath.dirname(r) == folder)})


@contextmanager
def _reading(storage: Storage, src: Location) -> Iterator[None]:
    """Store failures while reading one of the set's files as one line naming it (a missing file: the set is
    incomplete, whatever the store's own wording)."""
    try:
        with storage.translated(src, "read"):
            yield
    except StorageError as err:
        if classify(err.__cause__ or err) != "missing":
            raise
        raise GraphshardError(f"{src}: not on the store, though the set's config names it: the set is incomplete "
                              "(its files were deleted, or its publish did not finish); publish it again") from err


def _blocks(storage: Storage, src: Location) -> Iterator[bytes]:
    """The file at `src` in blocks of COPY_BLOCK bytes, one ranged read each."""
    with _reading(storage, src):
        fin = storage.open_read(src, block_size=COPY_BLOCK, cache_type="none")
    with fin:
        while True:
            with _reading(storage, src):
                block = fin.read(COPY_BLOCK)
            if not block:
                return
            yield block


def _found(size: int, digest: str, want: FileEntry) -> str:
    """What a copy that does not match `want` found: fewer bytes, more (not read past), or other ones."""
    if size < want.size:
        return f"{size:,} bytes"
    return f"more than {want.size:,} bytes" if size > want.size else f"xxh3_128 {digest}"


def _copy(storage: Storage, src: Location, dst: Path, want: FileEntry, stop: threading.Event) -> int:
    """Stream one file to `dst`, hashing as it goes; one line naming the file when it differs from its digest. Ends
    after the block in hand once `stop` is set (another file failed, or Ctrl-C)."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    h, size = xxhash.xxh3_128(), 0
    with open(dst, "wb") as fout:
        for block in _blocks(storage, src):
            if stop.is_set():
                raise InterruptedError(f"{src}: stopped")
            size += len(block)
            if size > want.size:  # another object at the key: not read on (the space check counts listed sizes)
                break
            h.update(block)
            fout.write(block)
    if size != want.size or h.hexdigest() != want.digest:
        raise GraphshardError(f"{src}: {_found(size, h.hexdigest(), want)}, but the set's digests file lists "
                              f"{want.size:,} bytes with xxh3_128 {want.digest}: the file changed after the set was "
                              "written or the copy is damaged; nothing was fetched")
    return size


def _size(path: Path) -> int | None:
    try:
        return path.stat().st_size if path.is_file() else None
    except OSError:
        return None


def _holds(have: Path, want: FileEntry) -> bool:
    """Whether a local file has `want`'s size and xxh3_128 digest (read through once)."""
    if _size(have) != want.size:
        return False
    h = xxhash.xxh3_128()
    try:
        with open(have, "rb") as fh:
            while block := fh.read(COPY_BLOCK):
                h.update(block)
    except OSError:
        return False
    return h.hexdigest() == want.digest


def _take(storage: Storage, stop: threading.Event, src: Location, dst: Path, want: FileEntry,
          have: Path | None) -> int | None:
    """`dst` from `have` (the same file in the folder `--overwrite` replaces) when it holds `want`: linked, or
    copied where links fail (None); else downloaded (`_copy`: the bytes downloaded)."""
    if have is None or not _holds(have, want):
        return _copy(storage, src, dst, want, stop)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(have, dst)
    except OSError:
        shutil.copyfile(have, dst)
    return None


def parse_parts(text: str | None, num_parts: int, source: str) -> list[int]:
    """`"0,3"` -> [0, 3]; None -> every part; ids outside 0..num_parts-1 are one line naming them."""
    if text is None:
        return list(range(num_parts))
    try:
        parts = sorted({int(p) for p in text.split(",") if p.strip()})
    except ValueError:
        raise GraphshardError(f"--parts {text!r}: expected comma-separated partition ids such as 0,3") from None
    bad = [p for p in parts if not 0 <= p < num_parts]
    if not parts or bad:
        raise GraphshardError(f"--parts {text!r}: expected ids in 0..{num_parts - 1} ({source} has {num_parts} "
                              f"parts), found {bad or 'none'}")
    return parts


def _checked_layout(config_file: Path, source: Location) -> Layout:
    from graphshard.validate.layout import check_layout, load_layout

    try:
        layout = load_layout(config_file)
    except GraphshardError as err:  # named by its staged copy: name the source instead
        raise GraphshardError(str(err).replace(str(config_file.resolve()), str(source))) from None
    problems = check_layout(layout)
    if problems:
        raise GraphshardError(f"{source}: not a valid partition config: {problems[0].message}")
    return layout


def _config_text(raw: bytes, source: Location) -> str:
    """The bytes at the config URL as a partition config's text; one line when they are not one (a wrong file)."""
    data = parse_json_object(raw, source, "partition config")
    if "node_map" not in data or "num_parts" not in data:
        raise InputError(source, None, "a partition config (a JSON object with node_map and num_parts)",
                         f"the keys {sorted(data)[:8]}")
    return raw.decode()


def _check_room(out: Path, stage: Path, need: int) -> None:
    """One line before any download when the filesystem of `out` has less free space than the fetched files take."""
    if need > shutil.disk_usage(stage).free:
        raise GraphshardError(f"--out {out}: the fetched files take {need / 1e6:,.1f} MB, {diskfull.room(stage)} "
                              "there: free space there or fetch to a larger filesystem (or fewer --parts); nothing "
                              "was fetched")


@contextmanager
def _writing(out: Path) -> Iterator[None]:
    """Local write failures inside the block (to `out`'s staging folder) as one line naming `out`."""
    try:
        yield
    except OSError as err:
        if diskfull.is_full(err):
            raise GraphshardError(f"--out {out}: no space left on device ({diskfull.room(out)}) while fetching: free "
                                  "space there or fetch to a larger filesystem; nothing was fetched") from err
        raise GraphshardError(f"--out {out}: cannot write {err.filename or 'a file'} ({err.strerror or err}); "
                              "nothing was fetched") from err


def _check_replaceable(out: Path, overwrite: bool) -> None:
    """`--overwrite` replaces a folder holding a partition set (an earlier fetch, another set) or nothing, never one
    of other files (`--out .` in a project folder)."""
    from graphshard.validate.layout import find_config

    if not overwrite or not out.is_dir() or not any(out.iterdir()):
        return
    try:
        find_config(out)
    except GraphshardError:
        names = sorted(p.name for p in out.iterdir())
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise GraphshardError(f"--out {out}: --overwrite replaces a folder holding a partition set, and this one "
                              f"holds other files ({shown}); give a new folder, or remove them first") from None


def _replaced(storage: Storage, config: Location, raw: bytes) -> bool:
    """Whether the config at `config` now holds other bytes than `raw` (a publish replaced the set meanwhile)."""
    try:
        return storage.read_bytes(config) != raw
    except GraphshardError:
        return False


@contextmanager
def _same_set(storage: Storage, config: Location, raw: bytes) -> Iterator[None]:
    """A failure reading the set's files inside the block, when the config is no longer `raw`, as one line saying
    that the set was published again meanwhile (its files changed or were deleted under the fetch)."""
    try:
        yield
    except GraphshardError as err:
        if not _replaced(storage, config, raw):
            raise
        raise GraphshardError(f"{config}: the set was published again while this fetch read it, so its files "
                              "changed or were deleted meanwhile; nothing was fetched: run the fetch again") from err


def _no_digests(digests: Location, prefix: str | None) -> str:
    """Why the digests file is not there: an incomplete published set (its run prefix is where the publish writes
    it), else a set written without one (another tool, an older graphshard)."""
    if prefix:
        return (f"{digests}: not on the store, though the config names files under {prefix}/, where its publish "
                "wrote it: the set is incomplete (its files were deleted, or its publish did not finish); publish it "
                "again")
    return (f"{digests}: no digests file beside the partition config, so the files cannot be checked; publish the set "
            "again with this graphshard (the shuffle step writes it)")


def _copy_all(storage: Storage, copies: list[tuple[Location, Path, FileEntry, Path | None]],
              transfers: int) -> tuple[int, int]:
    """Run `_take` on each (source, target, digest, local file that may hold it), `transfers` at once; the bytes
    downloaded and the number of files kept from the local ones."""
    stop = threading.Event()
    with ThreadPoolExecutor(transfers) as pool:
        jobs = [pool.submit(_take, storage, stop, *job) for job in copies]
        try:
            done = [job.result() for job in as_completed(jobs)]
            return sum(n for n in done if n is not None), done.count(None)
        except BaseException:  # the files in flight end after their current block, not at their end
            stop.set()
            for job in jobs:
                job.cancel()
            raise


def fetch(config_url: str, out_dir: str | Path, parts: str | None = None, storage: Storage | None = None,
          overwrite: bool = False, transfers: int = TRANSFERS) -> Fetched:
    """Copy the partition config at `config_url` and the listed parts (`"0,3"`; None: all) into `out_dir`."""
    storage = storage or Storage()
    config = location(config_url)
    out = location(out_dir)
    if not out.is_local:
        raise GraphshardError(f"--out {out}: fetch writes to local disk; give a folder path")
    if transfers < 1:
        raise GraphshardError(f"--transfers: expected at least 1 file copied at a time, found {transfers}")
    if config.is_local and (inside(out, config.parent) or inside(config.parent, out)):
        raise GraphshardError(f"--out {out}: the set's own folder {config.parent}, or a folder inside or around it: "
                              "fetch copies a set to another folder (replacing its own would delete its other parts)")
    check_location(config, storage=storage)  # store reachable, credentials and bucket right: one line if not
    raw = storage.read_bytes(config)
    prefix, config_text = split_prefix(_config_text(raw, config))
    config_bytes = config_text.encode()
    base = config.parent.join(prefix) if prefix else config.parent  # where the set's files are
    digests_loc = base.join(digests_name(config.name))
    with _same_set(storage, config, raw):  # the digests file is the run's: gone or other when it was replaced
        if not storage.exists(digests_loc):
            raise GraphshardError(_no_digests(digests_loc, prefix))
        digests_bytes = storage.read_bytes(digests_loc)
        num_listed, listed = parse_set_digests(digests_bytes, str(digests_loc))
    _check_replaceable(out.local_path(), overwrite)
    with staged_output(out.local_path(), overwrite) as stage, _writing(out.local_path()):
        pending = stage / f".{config.name}.pending"  # the config under its name last: a killed fetch leaves none
        pending.write_bytes(config_bytes)
        (stage / digests_loc.name).write_bytes(digests_bytes)
        layout = _checked_layout(pending, config)
        chosen = parse_parts(parts, layout.num_parts, str(config))
        with _same_set(storage, config, raw):
            if num_listed != layout.num_parts:
                raise GraphshardError(f"{digests_loc}: lists {num_listed} parts, the config {layout.num_parts}: they "
                                      "are from different sets; publish the set again")
            files = [rel for p in chosen for rel in _part_files(layout, p, listed, config)]
            old = out.local_path() if overwrite and out.local_path().is_dir() else None
            jobs = [(base.join(rel), stage / rel, listed[rel], old / rel if old else None) for rel in files]
            _check_room(out.local_path(), stage, sum(want.size for _, _, want, have in jobs
                                                     if not (have and _size(have) == want.size)))
            total, kept = _copy_all(storage, jobs, transfers)
        pending.replace(stage / config.name)
    return Fetched(out.local_path() / config.name, chosen, len(files), total, kept)

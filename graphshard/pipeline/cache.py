"""Step artifacts in the work folder: `<work>/<step>/<key>/` holding the step's files plus `manifest.json`.

A step's key hashes the digests of its inputs' manifests, the config section it uses and graphshard's version, so a
folder with that key is the step's result for exactly those inputs. The folder is built under a hidden staging name
and renamed into place with its manifest already inside: a folder that exists under its key is complete. That is what
makes a crashed run resume from its last finished step. A build holds its key alone (`storage.lease.claimed`, a
record in `<work>/<step>/.leases/`): a second run that needs the same key while the first builds it waits, then
reuses the first's artifact instead of building it again beside it.

A work folder on a store (`work_dir: s3://...`) has no rename: the step writes straight under `<step>/<key>/` (after
deleting what a crashed build of the same key left there) and `manifest.json` is written last, in one PUT, from the
digests the writers took. A key whose manifest is there and whose listing matches it is complete, on any host. The
files of a killed build whose key is never built again are deleted by a later build of the step once its claim's
lease lapses.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from graphshard import __version__
from graphshard.atomic import remove_stale, remove_stale_in, staged_output
from graphshard.pipeline.files import read_text, write_text
from graphshard.pipeline.manifest import MANIFEST, Manifest, digest_of, folder_manifest
from graphshard.storage import Location, Storage, StorageError, lease, location
from graphshard.validate.report_html import REPORT_FILES

# Sub-folder of each step's artifact that holds the step's product.
PRODUCT = {"assign": "assignment", "shuffle": "partitions", "validate": "report"}
# What others write into a product prefix afterwards (publishing, `validate --write-report`, `report`: the report
# beside the set's files): not the step's files, so never in its manifest. A rebuild of the same key into a prefix
# a set was published from would otherwise list the report there, whose timings change at every publish: the
# manifest's sizes never matched again and the step (and every later one) re-ran on every run.
NOT_PRODUCT = (MANIFEST, *REPORT_FILES)


def step_key(step: str, inputs: dict[str, str], section: dict | None = None) -> str:
    """The cache key of a step.

    Parameters
    ----------
    step : str
        The step's name.
    inputs : dict
        Digests of its inputs (manifests of files, by content).
    section : dict, optional
        The config section it uses.

    Returns
    -------
    str
        A hex digest of inputs, section and graphshard's version.
    """
    return digest_of({"step": step, "version": __version__, "inputs": inputs, "section": section or {}})


@dataclass(frozen=True)
class StepResult:
    """A finished step: its folder, the digest of its files (what downstream keys use) and a small summary."""

    step: str
    key: str
    folder: Path | Location
    digest: str
    summary: dict = field(default_factory=dict)
    reused: bool = False  # found complete (`lookup`), not built by the call that returned it

    def path(self, name: str) -> Path | Location:
        """A file or folder of the artifact; under its product folder, where the step wrote the product
        (`summary["product"]`: a set written straight under its output's run prefix, see `StepStore.build`)."""
        head, _, rest = name.partition("/")
        if self.summary.get("product") and head == PRODUCT.get(self.step):
            return location(self.summary["product"]).join(rest) if rest else location(self.summary["product"])
        return self.folder / name


class StepStore:
    """The work folder's step artifacts: look one up by key, or build it atomically."""

    def __init__(self, work_dir: Path | Location, storage: Storage | None = None):
        self.root = work_dir if isinstance(work_dir, Location) and not work_dir.is_local else Path(work_dir)
        self.storage = storage or Storage()

    @property
    def on_store(self) -> bool:
        return isinstance(self.root, Location)

    def folder(self, step: str, key: str) -> Path | Location:
        return self.root / step / key

    def lookup(self, step: str, key: str) -> StepResult | None:
        """The finished artifact for this key, if its manifest is there and every file it lists has its size (and
        locally its modification time: a published file is a hard link to the artifact's, so writing to it in place
        changes the artifact, whatever the size)."""
        folder = self.folder(step, key)
        try:
            data = json.loads(read_text(folder / MANIFEST, self.storage))
        except (OSError, ValueError, StorageError):
            return None
        found = self._states(folder, data["files"])
        if product := data.get("summary", {}).get("product"):
            found.update({f"{PRODUCT[step]}/{e.rel}": [e.size] for e in self.storage.listing(location(product))})
        mtimes = data.get("mtimes", {})
        if any(found.get(name, [None])[0] != entry["size"] or name in mtimes and found[name][1:] != [mtimes[name]]
               for name, entry in data["files"].items()):
            return None
        return StepResult(step, key, folder, data["digest"], data.get("summary", {}), reused=True)

    def _states(self, folder: Path | Location, names: dict) -> dict[str, list[int]]:
        """[size] of the named files on a store (one listing), [size, mtime_ns] locally (a stat each); missing ones
        absent."""
        if self.on_store:
            return {e.rel: [e.size] for e in self.storage.listing(folder)}
        found = {}
        for name in names:
            try:
                st = (folder / name).stat()
            except OSError:
                continue
            found[name] = [st.st_size, st.st_mtime_ns]
        return found

    def build(self, step: str, key: str, make: Callable[[Path], dict], inputs: dict[str, str],
              volatile: tuple[str, ...] = (), waiting: Callable[[str], None] | None = None,
              fresh: bool = False) -> StepResult:
        """Run `make(stage)` in a staging folder, add the manifest, then move it to `<step>/<key>` (replacing).

        The key is held alone while it builds: when another run holds it, `waiting(who)` is told once and the build
        waits. Once the key is held, a finished artifact is returned (`reused`) unless `fresh` asks for a new one,
        whether the build waited or not: another run may have finished it and let go of the key between the
        caller's lookup and this claim (while the caller started its cluster).
        `volatile` files (timings, peak memory) are listed in the manifest but left out of the digest that
        downstream keys use, so re-running a step that gives the same data does not invalidate what follows.
        A summary naming a `product` URL (the step wrote its product there, e.g. the shuffle straight under the
        output's run prefix) lists that folder's files in the manifest as `<PRODUCT[step]>/...`, as if they were
        in the artifact: the digest and `lookup` cover them.
        """
        where = self.root / step if self.on_store else location(str(self.root / step))
        with lease.claimed(self.storage, where, key, waiting):
            if not fresh and (hit := self.lookup(step, key)) is not None:
                return hit
            if self.on_store:  # a killed build's files, under its key or (lapsed) another's
                lease.sweep(self.storage, where, key)
            return self._build(step, key, make, inputs, volatile)

    def _build(self, step: str, key: str, make: Callable[[Path], dict], inputs: dict[str, str],
               volatile: tuple[str, ...]) -> StepResult:
        final = self.folder(step, key)
        start = time.perf_counter()

        def finish(stage: Path | Location) -> str:
            summary.update(make(stage) or {}, seconds=round(time.perf_counter() - start, 3))
            files = folder_manifest(stage, storage=self.storage).files
            if product := summary.get("product"):
                files.update({f"{PRODUCT[step]}/{k}": v for k, v in folder_manifest(
                    location(product), exclude=NOT_PRODUCT, storage=self.storage).files.items()})
            digest = Manifest({k: v for k, v in files.items() if k not in volatile}).digest
            record = {"step": step, "key": key, "version": __version__, "inputs": inputs, "summary": summary,
                      "digest": digest, "files": files}
            if isinstance(stage, Path):  # what `lookup` compares (a rename keeps them)
                record["mtimes"] = {k: (stage / k).stat().st_mtime_ns for k in files}
            write_text(stage / MANIFEST, json.dumps(record, indent=1, sort_keys=True, default=str), self.storage)
            return digest

        summary: dict = {}
        if self.on_store:  # no rename: the manifest, written last, is what makes the folder a finished artifact
            self.storage.delete_prefix(final)
            digest = finish(final)
        else:
            with staged_output(final, overwrite=True) as stage:
                digest = finish(stage)
        return StepResult(step, key, final, digest, summary)

    def clean_stale(self, out_dir: Path | Location | None = None) -> list[Path]:
        """Remove staging leftovers of runs whose process is gone (a SIGKILLed run leaves its staging folder), in
        a local work folder and beside a local `out_dir` (nothing is staged on a store: a crashed build's files are
        deleted when its key is built, or by a later build once its lease lapses; a crashed publish's by the next
        publish)."""
        parents = [] if self.on_store else [self.root, *[p for p in self.root.glob("*") if p.is_dir()]]
        removed = [p for parent in parents for p in remove_stale_in(parent)]
        return removed + (remove_stale(out_dir) if isinstance(out_dir, Path) else [])

"""Validation of a set on a store downloads the partition a worker reads next while it computes: a worker's node-maps
tasks start the download of its first partition's files, each scan that of its next partition's (one partition
ahead, in the background: storage/copies.py `prefetch`), so that a scan finds its files on the worker's disk instead
of fetching them when it starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphshard.storage.copies import prefetch
from graphshard.validate.layout import PART_FILE_KEYS, Layout
from graphshard.validate.part_files import ORIG_EIDS, ORIG_NIDS


@dataclass(frozen=True)
class Ahead:
    """Where each partition's tasks prefer to run (`daskrun.homes`; None: anywhere, e.g. in this process), so that a
    task knows which partition its worker reads next."""

    homes: tuple[str | None, ...]

    def first(self, part: int) -> int:
        """The first partition of `part`'s worker (the one its first scan reads)."""
        return next(q for q, home in enumerate(self.homes) if home == self.homes[part])

    def after(self, part: int) -> int | None:
        """The partition `part`'s worker scans after `part`, if any."""
        return next((q for q in range(part + 1, len(self.homes)) if self.homes[q] == self.homes[part]), None)


def _here(home: str | None) -> bool:
    """This task runs on `home` (or anywhere will do): a task another worker took prefetches nothing for it."""
    if home is None:
        return True
    from distributed import get_worker

    try:
        return get_worker().address == home
    except ValueError:  # not on a Dask worker: the client=None path runs everything here
        return True


def fetch_ahead(layout: Layout, ahead: Ahead | None, part: int | None) -> None:
    """Start downloading partition `part`'s files (in the order a scan reads them) to this worker's copies in the
    background, when the set is on a store and this worker is the partition's home."""
    if ahead is None or part is None or layout.cache is None or not _here(ahead.homes[part]):
        return
    files = [layout.path(part, key) for key in PART_FILE_KEYS] + [layout.extra_file(part, n)
                                                                  for n in (ORIG_NIDS, ORIG_EIDS)]
    prefetch(files, layout.storage, layout.cache)

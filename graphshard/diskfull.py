"""A disk that fills up during a run, worded as one line: "no space left", where, and what to change.

A full filesystem surfaces as OSError ENOSPC/EDQUOT, or, from numpy's writers, as a short write ("220977 requested
and 97423 written", no errno). `dasktasks` asks `line()` for the wording of any task failure that is one of these;
`graphshard run` registers the locations its plan checked (`watch`), so the line can name the config key and folder.
"""

from __future__ import annotations

import errno
import re
import shutil
from pathlib import Path

_SHORT_WRITE = re.compile(r"\d+ requested and \d+ written")
_WATCHED: dict[str, Path] = {}


def watch(locations: dict[str, Path]) -> None:
    """The run's locations by config key (replacing the previous run's)."""
    _WATCHED.clear()
    _WATCHED.update({k: Path(v) for k, v in locations.items()})


def is_full(err: BaseException) -> bool:
    """Whether an exception means the filesystem (or the user's quota) is full."""
    if not isinstance(err, OSError):
        return False
    return err.errno in (errno.ENOSPC, errno.EDQUOT) or bool(_SHORT_WRITE.search(str(err)))


def _existing(path: Path) -> Path:
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _free(path: Path) -> tuple[int, int]:
    usage = shutil.disk_usage(_existing(path))
    return usage.free, usage.total


def _in_or_staged(name: Path, folder: Path) -> bool:
    """`name` lies in `folder`, or in its staging sibling (`.<folder name>...`, where outputs are built)."""
    if folder in name.parents:
        return True
    if folder.parent not in name.parents:
        return False
    return name.relative_to(folder.parent).parts[0].startswith(f".{folder.name}")


def _where(err: OSError) -> tuple[str, Path] | None:
    """The watched location the failed write was in (by its file name), else the one with the least free space. A
    copy's error names its source first and the destination it wrote second (`filename2`, shutil's sendfile)."""
    written = err.filename2 if isinstance(getattr(err, "filename2", None), str) else err.filename
    name = Path(written) if isinstance(written, str) else None
    if name is not None:
        for key, path in _WATCHED.items():
            if _in_or_staged(name.resolve(), path.resolve()):
                return key, path
        return "", name.parent
    if not _WATCHED:
        return None
    return min(_WATCHED.items(), key=lambda kv: _free(kv[1])[0])


def room(path: Path) -> str:
    """'X MB free of Y MB' on the filesystem of `path` (or of its nearest existing folder)."""
    free, total = _free(path)
    return f"{free / 1e6:,.1f} MB free of {total / 1e6:,.1f} MB"


def line(where: str, err: OSError, run: bool = True) -> str:
    """'<step: task>: no space left on device in <key> (<folder>, X free of Y): <what to change>' (no `where`: the
    line starts with 'no space'; `run`: a pipeline run's write, whose plan shows the needs and which publishes
    nothing; else a command's own write)."""
    found = _where(err)
    start = f"{where}: " if where else ""
    tail = " (graphshard plan shows what each step needs); nothing was published" if run else ""
    if found is None:
        folders = "where this step writes (work_dir, shuffle.scratch_dir, output.dir)" if run else \
            "where this command writes"
        return f"{start}no space left on device ({err}): free space {folders} or point it at a larger filesystem{tail}"
    key, path = found
    place = f"{key} ({path}: {room(path)})" if key else f"{path} ({room(path)})"
    change = f"set {key} to a larger filesystem" if key else "point this step's folder at a larger filesystem"
    return f"{start}no space left on device in {place}: free space there or {change}{tail}"

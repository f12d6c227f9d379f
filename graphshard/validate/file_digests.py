"""The `digests` check: each file of a partition that the set's digests file (`<graph>.digests.json`, written with the
set) lists still has the size and xxh3_128 listed there, so that a file changed or damaged after the set was written
is found by `validate`, not only by `fetch`. A set without a digests file (one DGL wrote) skips the check."""

from __future__ import annotations

import posixpath

from graphshard.digests import FAST, hash_file
from graphshard.errors import GraphshardError
from graphshard.formats.set_digests import FileEntry, digests_name, parse_set_digests
from graphshard.validate.layout import PART_FILE_KEYS, Layout
from graphshard.validate.problems import Problem

CHECK = "digests"


def digests_file(layout: Layout) -> str:
    """The digests file's name beside the config."""
    return digests_name(layout.config_path.name)


def read_listing(layout: Layout) -> tuple[dict[str, FileEntry] | None, list[Problem]]:
    """The files the set's digests file lists ({path relative to the config: entry}); None when there is no such
    file; an unreadable one or one for another number of partitions is a problem."""
    name = digests_file(layout)
    where = layout.file(layout.under(name))
    if not where.exists():
        return None, []
    with where.open() as fh:
        data = fh.read()
    try:
        num_parts, listed = parse_set_digests(data, str(where))
    except GraphshardError as err:
        return None, [Problem(CHECK, str(err), None, name)]
    if num_parts != layout.num_parts:
        return None, [Problem(CHECK, f"lists {num_parts} partitions, the config {layout.num_parts}: the two files are "
                              "from different sets", None, name)]
    return listed, []


def part_problems(layout: Layout, part: int, listed: dict[str, FileEntry]) -> list[Problem]:
    """Each file of partition `part` that differs from its listed size or digest, is listed but missing, or is named
    by the config but not listed (one read of each file, in blocks)."""
    named = {layout.rel(part, key) for key in PART_FILE_KEYS}
    folder = posixpath.dirname(layout.rel(part, "part_graph"))
    problems = [Problem(CHECK, f"the config names it but {digests_file(layout)} does not list it: the config and "
                        "the digests file are from different sets", part, rel) for rel in sorted(named - set(listed))]
    for rel, want in sorted(listed.items()):
        if posixpath.dirname(rel) != folder:
            continue
        found = layout.file(layout.under(rel))
        if not found.exists():
            if rel not in named:  # a missing file the config names is the `files` check's
                problems.append(Problem(CHECK, f"listed in {digests_file(layout)} but missing", part, rel))
            continue
        size, digest = found.size(), hash_file(found, FAST)
        if (size, digest) != (want.size, want.digest):
            problems.append(Problem(CHECK, f"{size:,} bytes with xxh3_128 {digest}, but {digests_file(layout)} lists "
                                    f"{want.size:,} bytes with {want.digest}: the file changed after the set was "
                                    "written, or its copy is damaged", part, rel))
    return problems

"""DGL's own partition tests, run against `graphshard.partition_graph` (the drop-in check).

Usage, in the DGL venv (`bash bench/dgl_compat.sh setup`):
    python bench/dgl_suite.py TEST_FILE [--dgl] [--fresh-cluster] [pytest args...]
TEST_FILE is DGL's `tests/distributed/test_partition.py` at the tag of the installed DGL, beside its `utils.py` and
with `../backend/` (DGL's test backend): e.g. `git archive v2.1.0 tests/backend tests/distributed | tar -x -C DIR`
in a DGL checkout (README "Coming from DGL"). Nothing is downloaded here. `dgl.distributed.partition_graph` is
replaced by `graphshard.partition_graph` before the test file is imported; `--dgl` leaves DGL's own (the baseline).
The calls share one local Dask cluster (`--fresh-cluster`: each call starts its own, as a user's script does).
The last line reads `<who>: <passed> passed, <failed> failed, <skipped> skipped of <total> (dgl <version>)`.
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
from collections import Counter
from contextlib import ExitStack
from pathlib import Path

import pytest


class Tally:
    """A pytest plugin counting test outcomes (a test's failing setup or teardown counts as a failure)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, str] = {}

    def pytest_runtest_logreport(self, report) -> None:
        if report.when == "call" or report.outcome != "passed":
            if self.outcomes.get(report.nodeid) != "failed":
                self.outcomes[report.nodeid] = report.outcome

    def counts(self) -> Counter:
        return Counter(self.outcomes.values())


def _patch(client) -> None:
    """Make `from dgl.distributed import partition_graph` give graphshard's, on `client` when one is given."""
    import dgl.distributed
    import dgl.distributed.partition

    import graphshard

    drop_in = graphshard.partition_graph
    if client is not None:
        drop_in = functools.wraps(graphshard.partition_graph)(functools.partial(graphshard.partition_graph,
                                                                               client=client))
    dgl.distributed.partition_graph = drop_in
    dgl.distributed.partition.partition_graph = drop_in


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("test_file", type=Path, help="DGL's tests/distributed/test_partition.py")
    parser.add_argument("--dgl", action="store_true", help="run the tests against DGL's own partition_graph")
    parser.add_argument("--fresh-cluster", action="store_true", help="no shared cluster: one per partition_graph call")
    args, pytest_args = parser.parse_known_args(argv)
    test_file = args.test_file.resolve()
    if not test_file.is_file() or not (test_file.parent.parent / "backend").is_dir():
        parser.error(f"{test_file}: expected DGL's tests/distributed/test_partition.py with ../backend/ beside it")
    os.environ.setdefault("DGLBACKEND", "pytorch")
    sys.path[:0] = [str(test_file.parent), str(test_file.parent.parent)]  # `import utils`, `import backend`
    import dgl

    tally = Tally()
    with ExitStack() as stack:
        if not args.dgl:
            client = None
            if not args.fresh_cluster:
                from graphshard.cluster import ClusterSpec, dask_client

                client = stack.enter_context(dask_client(ClusterSpec(subprocess=True)))
            _patch(client)
        pytest.main([str(test_file), "-p", "no:cacheprovider", "--rootdir", str(test_file.parent), "-q",
                     *pytest_args], plugins=[tally])
    counts = tally.counts()
    who = "dgl.distributed.partition_graph" if args.dgl else "graphshard.partition_graph"
    print(f"{who}: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped of "
          f"{sum(counts.values())} (dgl {dgl.__version__})")
    return 0 if counts["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

"""A run whose Dask workers are too small for one partition's write fails with one line (step, partition and its
size, the limit, what to change), publishes nothing and keeps the traceback in its log file; with the limit raised,
the next run completes, reusing ingest and assign (slow: two real `graphshard run` processes)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from flow_helpers import subprocess_env, write_config

pytestmark = pytest.mark.slow
GRAPHSHARD = [sys.executable, "-m", "graphshard.cli"]
# A worker process alone holds ~110-140 MB; writing one of these partitions (100,000 nodes, ~3M owned edges + halo,
# COO + CSC, orig-ID files) needs several hundred MB more, while routing one of the 12 chunks (500,000 edges) fits.
SMALL, LARGE = "250MB", "2GB"
ONE_LINE = re.compile(r"graphshard run: error: shuffle: write-partitions part(\d) \(100,000 owned nodes, "
                      r"[\d,]+ owned edges\): Dask workers died repeatedly running this task \(likely above the "
                      r"workers' memory limit of 0\.23 GiB\): raise cluster\.memory_limit or use more, smaller "
                      r"partitions \(num_parts\) or chunks; nothing was published \(details: (\S+\.log)\)$")


def _run(config: Path, memory_limit: str) -> subprocess.CompletedProcess:
    # --force-plan: the plan check would refuse the small limit before any work; this test is about the workers
    return subprocess.run([*GRAPHSHARD, "run", str(config), "--set", f"cluster.memory_limit={memory_limit}",
                           "--force-plan"], env=subprocess_env(), capture_output=True, text=True, timeout=600)


def test_partition_above_the_memory_limit_then_raised(tmp_path, make_graph):
    graph = make_graph("rmat", nodes=200_000, edges=6_000_000, chunks=12)
    config = write_config(tmp_path, graph, num_parts=2)

    failed = _run(config, SMALL)
    assert failed.returncode == 2, failed.stdout + failed.stderr
    assert "Traceback" not in failed.stderr and "Traceback" not in failed.stdout
    line = failed.stderr.strip().splitlines()[-1]
    match = ONE_LINE.match(line)
    assert match, failed.stderr
    errors = [ln for ln in failed.stderr.splitlines() if "error" in ln.lower() or "prefect" in ln.lower()]
    assert errors == [line], failed.stderr  # Prefect's own failure logs stay off the terminal
    assert not (tmp_path / "out").exists()
    log = Path(match.group(2))
    assert log.parent == tmp_path / "work" / "logs"
    text = log.read_text()
    assert "Traceback" in text and "KilledWorker" in text and f"write-partitions-part{match.group(1)}" in text

    done = _run(config, LARGE)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "cached: ingest, assign\n" in done.stdout, done.stdout
    assert (tmp_path / "out" / "rmat.json").is_file() and (tmp_path / "out" / "report.html").is_file()

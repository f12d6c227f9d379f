"""bench/multihost.py's own logic: the byte-for-byte comparison of two published sets (as `graphshard fetch` names
their files, whatever their run prefixes) and the task round a worker's peak falls in."""

from __future__ import annotations

import sys
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))

from multihost import compare_published, round_at, task_rounds  # noqa: E402

from graphshard.runprefix import RUNS, with_prefix  # noqa: E402
from graphshard.storage import Storage  # noqa: E402

CONFIG = '{"graph_name": "g", "num_parts": 1, "part-0": {"part_graph": "part0/graph.dgl"}}'


def _publish(root: Path, run: str, graph: bytes, report: bytes = b"{}") -> str:
    """A set as publish leaves it on a store: files under `.runs/<run>/`, the config naming them there."""
    out = root / "out"
    (out / RUNS / run / "part0").mkdir(parents=True)
    (out / RUNS / run / "part0" / "graph.dgl").write_bytes(graph)
    (out / RUNS / run / "report.json").write_bytes(report)
    (out / "g.json").write_text(with_prefix(CONFIG, f"{RUNS}/{run}"))
    return str(root)


def test_sets_under_different_run_prefixes_compare_by_their_fetched_bytes(tmp_path):
    storage = Storage()
    a = _publish(tmp_path / "a", "1111", b"edges" * 1000, report=b'{"wall": 1}')
    b = _publish(tmp_path / "b", "2222", b"edges" * 1000, report=b'{"wall": 2}')
    assert compare_published(storage, a, b) == {"files": 2, "identical": True, "differ": []}
    c = _publish(tmp_path / "c", "2222", b"edges" * 999 + b"edgez")
    assert compare_published(storage, a, c) == {"files": 2, "identical": False, "differ": ["part0/graph.dgl"]}
    (tmp_path / "c" / "out" / RUNS / "2222" / "part0" / "extra.dgl").write_bytes(b"x")
    assert "part0/extra.dgl" in compare_published(storage, a, c)["differ"]
    assert not compare_published(storage, str(tmp_path / "none"), str(tmp_path / "none"))["identical"]


def test_a_peak_is_named_after_the_task_round_running_then(tmp_path):
    end = datetime(2026, 11, 24, 16, 25, 54, 416000)
    stamp = end.strftime("%Y-%m-%d %H:%M:%S,") + "416"
    (tmp_path / "run-1.log").write_text(
        f"{stamp} INFO graphshard.daskrun: shuffle write-partitions: 4 tasks in 65.97 s\n"
        f"{stamp} INFO prefect.task_runs: shuffle: done in 89.9 s\n")
    rounds = task_rounds(tmp_path, since=time.time() - 60)
    assert [name for _, _, name in rounds] == ["shuffle write-partitions"]
    t = end.timestamp()
    assert round_at(rounds, t - 30) == "shuffle write-partitions"
    assert round_at(rounds, t + 0.3) == "shuffle write-partitions"  # within the poll's period
    assert round_at(rounds, t + 5) == "-"
    assert task_rounds(tmp_path, since=time.time() + 60) == []

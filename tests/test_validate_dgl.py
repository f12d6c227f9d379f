"""The validator passes on partition sets written by DGL 2.1's own `partition_graph` (so it does not merely agree with
graphshard's writer), and still catches tampering there. Needs the DGL venv of bench/dgl_compat.sh.

DGL 2.1's partition_graph itself fails (IndexError) when a node type has no node in some partition, so the MAG-like
graph here is large enough (24 institutions) for every type to reach every partition of DGL's unseeded random
assignment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from test_validate import drop_halo_in_edge, id_int32

from graphshard.formats.chunked import load_metadata
from graphshard.validate import problem_lines, validate

REPO = Path(__file__).resolve().parent.parent
DGL_PYTHON = Path(os.environ.get("GRAPHSHARD_DGL_PYTHON", "/work/dgl-venv/bin/python"))

pytestmark = [pytest.mark.dgl,
              pytest.mark.skipif(not DGL_PYTHON.exists(), reason="DGL venv absent (run bench/dgl_compat.sh)")]


def dgl_partition(metadata: Path, out: Path, parts: int, hops: int, formats: str = "coo") -> Path:
    """bench/dgl_partition.py in the DGL venv: DGL's partition_graph (random) with original IDs saved."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "PIP_CONSTRAINT": ""}
    proc = subprocess.run([str(DGL_PYTHON), str(REPO / "bench/dgl_partition.py"), "--in", str(metadata), "--out",
                           str(out), "--parts", str(parts), "--hops", str(hops), "--graph-formats", formats,
                           "--save-orig-ids"], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out / f"{load_metadata(metadata).graph_name}.json"


@pytest.mark.parametrize("kind,kwargs,parts,hops,formats", [
    ("rmat", dict(nodes=400, edges=3000, chunks=2, seed=7), 3, 1, "coo"),
    ("rmat", dict(nodes=400, edges=3000, chunks=2, seed=7), 4, 2, "csc"),
    ("mag", dict(papers=2000, chunks=3), 3, 1, "coo,csc"),
])
def test_dgl_written_partitions_pass(make_graph, tmp_path, kind, kwargs, parts, hops, formats):
    md = make_graph(kind, **kwargs)
    config = dgl_partition(md, tmp_path / "dgl", parts, hops, formats)
    for full in (False, True):
        report = validate(config, md, full=full)
        assert report["ok"], problem_lines(report)
        st = {c["name"]: c["status"] for c in report["checks"]}
        assert st["edge-identity"] == st["feature-values"] == st["orig-ids"] == st["halo-completeness"] == "passed"
        assert report["halo_mode"] == "full"


def test_tampered_dgl_partitions_fail(make_graph, tmp_path):
    md = make_graph("mag", papers=2000, chunks=3)
    config = dgl_partition(md, tmp_path / "dgl", 3, 1)
    for tamper, check in ((id_int32, "reserved-dtypes"), (drop_halo_in_edge, "halo-completeness")):
        out = tmp_path / tamper.__name__
        shutil.copytree(config.parent, out)
        tamper(out / config.name)
        report = validate(out / config.name, md)
        assert any(p["check"] == check for p in report["problems"]), problem_lines(report)

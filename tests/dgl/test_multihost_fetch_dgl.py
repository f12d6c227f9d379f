"""Issue 22 (d): on a worker host of the multi-host rig (tests/multihost_rig.py), `graphshard fetch` of one part of
a set on the rig's S3 host, then DGL 2.1's own `load_partition` of that part, in that host's process (its private
/tmp and working folder: nothing of the set is on its disk but what fetch wrote). Run inside the DGL venv, as root
(`bash bench/dgl_compat.sh test`); skipped with one line where the rig cannot run."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
pytest.importorskip("moto")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/

import graphshard  # noqa: E402
from graphshard.storage import Storage, location  # noqa: E402

pytestmark = [pytest.mark.dgl, pytest.mark.slow]
MARK = "FETCHED-PART "

ON_HOST = """
import json, os, sys
from graphshard.cli import main
assert main(["fetch", sys.argv[1], "--out", sys.argv[2], "--parts", "1"]) == 0
import dgl
g, nfeat, _, gpb, name, _, _ = dgl.distributed.load_partition(os.path.join(sys.argv[2], "fetched.json"), 1)
print("FETCHED-PART " + json.dumps({
    "name": name, "parts": gpb.num_partitions(), "files": sorted(os.listdir(sys.argv[2])),
    "src": g.edges(order="eid")[0].tolist(), "dst": g.edges(order="eid")[1].tolist(),
    "nid": g.ndata["_ID"].tolist(), "feat": nfeat["_N/feat"].sum().item()}), flush=True)
"""


def test_fetch_on_a_worker_host_then_dgl_load_partition(multihost_rig, tmp_path):
    rig = multihost_rig
    rng = np.random.default_rng(5)
    n, m = 1200, 7000
    edges = {("_N", "_E", "_N"): (rng.integers(0, n, m), rng.integers(0, n, m))}
    feat = rng.random((n, 4), dtype=np.float32)
    graphshard.partition_graph(edges, "fetched", 3, tmp_path / "set", part_method="random", num_nodes={"_N": n},
                               node_feats={"_N": {"feat": feat}})
    storage, url = Storage({"s3://": rig.s3.options()}), f"{rig.s3.new_bucket()}/set"
    for path in sorted(p for p in (tmp_path / "set").rglob("*") if p.is_file()):
        storage.upload(path, location(url).join(path.relative_to(tmp_path / "set").as_posix()))
    out = rig.workdir / "fetched-on-worker1"  # under the worker host's private working folder
    proc = rig.start_process("worker1", [sys.executable, "-c", ON_HOST, f"{url}/fetched.json", str(out)])
    assert proc.wait(timeout=300) == 0, (rig.logs / "worker1.log").read_text()[-3000:]
    lines = [ln for ln in (rig.logs / "worker1.log").read_text().splitlines() if ln.startswith(MARK)]
    got = json.loads(lines[-1][len(MARK):])
    assert not out.exists()  # the fetched files live on worker1's own disk only

    g, nfeat, _, gpb, name, _, _ = dgl.distributed.load_partition(str(tmp_path / "set" / "fetched.json"), 1)
    assert got["name"] == name == "fetched" and got["parts"] == gpb.num_partitions() == 3
    assert got["files"] == ["fetched.digests.json", "fetched.json", "part1"]
    assert got["src"] == g.edges(order="eid")[0].tolist() and got["dst"] == g.edges(order="eid")[1].tolist()
    assert got["nid"] == g.ndata["_ID"].tolist()
    assert abs(got["feat"] - nfeat["_N/feat"].sum().item()) < 1e-3

"""`graphshard fetch` of one part of a set, read by DGL 2.1's own `load_partition` (what a training host does).

Run inside the DGL venv (`bash bench/dgl_compat.sh test`). DGL_DIST_DEBUG=1 makes `load_partition` run DGL's own
partition checks, which need the partition book of every part: the fetched config still describes all of them.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("DGLBACKEND", "pytorch")
os.environ["DGL_DIST_DEBUG"] = "1"
dgl = pytest.importorskip("dgl")
torch = pytest.importorskip("torch")
pytest.importorskip("distributed")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/

import graphshard  # noqa: E402
from graphshard.cli import main  # noqa: E402

pytestmark = pytest.mark.dgl


def test_dgl_loads_a_fetched_part(tmp_path: Path):
    rng = np.random.default_rng(3)
    n, m = 1500, 9000
    edges = {("_N", "_E", "_N"): (rng.integers(0, n, m), rng.integers(0, n, m))}
    feat = rng.random((n, 6), dtype=np.float32)
    nids, _ = graphshard.partition_graph(edges, "fetched", 3, tmp_path / "set", part_method="random",
                                         num_nodes={"_N": n}, node_feats={"_N": {"feat": feat}}, return_mapping=True)
    nids = nids["_N"] if isinstance(nids, dict) else nids
    source = tmp_path / "set" / "fetched.json"
    assert main(["fetch", str(source), "--out", str(tmp_path / "host1"), "--parts", "1"]) == 0
    fetched = tmp_path / "host1" / "fetched.json"
    assert not (tmp_path / "host1" / "part0").exists() and not (tmp_path / "host1" / "part2").exists()

    g, nfeat, efeat, gpb, name, ntypes, etypes = dgl.distributed.load_partition(str(fetched), 1)
    g0, nfeat0, _, gpb0, *_ = dgl.distributed.load_partition(str(source), 1)
    assert name == "fetched" and gpb.num_partitions() == 3
    for a, b in zip(g.edges(order="eid"), g0.edges(order="eid")):
        assert torch.equal(a, b)
    for field in ("_ID", "inner_node"):
        assert torch.equal(g.ndata[field], g0.ndata[field])
    assert torch.equal(nfeat["_N/feat"], nfeat0["_N/feat"])
    all_nids = torch.arange(n)
    assert torch.equal(gpb.nid2partid(all_nids), gpb0.nid2partid(all_nids))
    # the owned rows are the caller's rows at their original IDs
    owned = gpb.partid2nids(1).numpy()
    np.testing.assert_array_equal(nfeat["_N/feat"].numpy(), feat[np.asarray(nids)[owned]])

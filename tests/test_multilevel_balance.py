"""Balance on graphs of few heavy hubs, where clusters grow past their bound (a level's blocks add to a hub's cluster
at once) and partitioners overfill parts: the coarsest partition with the least weight over the bounds is kept, and
the overweight fix moves nodes whose best target is full into the part with the most room."""

from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.multilevel import hierarchy, initial, refine
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import load_metadata
from graphshard.inmemory.adapters import from_scipy
from graphshard.inmemory.chunks import write_chunked


def test_moves_whose_target_is_full_go_to_the_roomiest_part():
    """Six unit nodes leave part 0 (over by 6); all name part 1 (room 2): two go there, four to part 2 (room 10)."""
    found = [{"node": np.arange(6), "source": np.zeros(6, dtype=np.int64), "target": np.ones(6, dtype=np.int64),
              "loss": np.zeros(6, dtype=np.int64), "tie": np.arange(6, dtype=np.uint64),
              "weight": np.ones((6, 1), dtype=np.int64)}]
    excess, room = np.array([[6], [0], [0]]), np.array([[0], [2], [10]])
    chosen, delta = refine.choose_moves(found, excess, room)
    assert sorted(chosen[:, 1].tolist()) == [1, 1, 2, 2, 2, 2]
    assert delta[:, 0].tolist() == [-6, 2, 4]


def test_a_candidate_over_the_bounds_loses_to_one_within_them(rmat_small, tmp_path, monkeypatch):
    """METIS's stand-in puts every node in part 0 (no cut, far over the bound): KaMinPar's partition is kept."""
    plan = hierarchy.Plan(4, AssignOptions(method="multilevel"))
    level = hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None)
    monkeypatch.setattr(initial, "kaminpar_parts", lambda ip, ix, vw, ew, nparts, *a: np.arange(len(vw)) % nparts)
    monkeypatch.setattr(initial, "metis_parts", lambda ip, ix, vw, ew, nparts, *a: np.zeros(len(vw), dtype=np.int64))
    cut, load, by = initial.partition_coarsest(level, nparts=4, balance=plan.balance, seed=0, ufactor=30,
                                               method="kaminpar", tries=1, metis_lib=None)
    assert by == "kaminpar" and cut > 0 and load.max() <= level.nodes // 4 + 1


def _hubs(tmp_path, kind: str):
    """A complete bipartite graph of 40 hubs and 1,000 leaves, or a star of 8,000 leaves, as a chunked graph."""
    if kind == "bipartite":
        hubs, leaves = np.meshgrid(np.arange(40), np.arange(40, 1040))
        src, dst, n = hubs.ravel(), leaves.ravel(), 1040
    else:
        src, dst, n = np.zeros(8000, dtype=np.int64), np.arange(1, 8001), 8001
    m = sp.coo_matrix((np.ones(len(src)), (src, dst)), shape=(n, n))
    return write_chunked(from_scipy(m), tmp_path / kind, kind, num_chunks=3)


@pytest.mark.parametrize("kind", ["bipartite", "star"])
def test_hub_graphs_stay_within_the_bound(tmp_path, kind):
    """Coarsened over many blocks (so clusters overshoot their bound) at k=16: every part within 1.03."""
    md = _hubs(tmp_path, kind)
    opts = AssignOptions(method="multilevel", multilevel_coarse_nodes=300, multilevel_coarse_edges=2000,
                         multilevel_block_edges=2000)
    assign(md, tmp_path / "ml", 16, opts)
    report = json.loads((tmp_path / "ml" / REPORT_FILE).read_text())
    assert len(report["partitioner"]["levels"]) >= 2 and report["partitioner"]["levels"][0]["blocks"] >= 4
    assert report["imbalance"]["nodes"] <= 1.03 + 1e-9, (report["imbalance"], report["partitioner"]["part_weights"])

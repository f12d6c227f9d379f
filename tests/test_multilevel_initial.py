"""METIS's partition as a candidate: on the input graph itself beside KaMinPar's, so multilevel starts refinement
from no more than METIS's cut (a coarser level keeps KaMinPar's alone); on a graph one task holds whole that still
coarsens, METIS's partition of it, refined, against the hierarchy's result."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.multilevel import hierarchy, initial
from graphshard.assign.multilevel.store import open_ro
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import load_metadata


@pytest.mark.parametrize("index", [0, 1])
def test_metis_is_a_candidate_on_the_input_graph_only(rmat_small, tmp_path, monkeypatch, index):
    plan = hierarchy.Plan(4, AssignOptions(method="multilevel"))
    level = replace(hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None), index=index)
    monkeypatch.setattr(initial, "kaminpar_parts", lambda ip, ix, vw, ew, nparts, *a: np.arange(len(vw)) % nparts)
    cut, _ = initial.partition_coarsest(level, nparts=4, balance=plan.balance, seed=0, ufactor=30,
                                        method="kaminpar", tries=1, metis_lib=None)
    indptr, indices, ew = initial.assemble(level)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[:, plan.balance])
    metis = initial._cut(indptr, indices, ew, initial.metis_parts(indptr, indices, vw, ew, 4, 0, 30, None))
    striped = initial._cut(indptr, indices, ew, np.arange(level.nodes) % 4)
    assert metis < striped  # the stand-in for KaMinPar cuts far more than METIS
    assert cut == (metis if index == 0 else striped), (cut, metis, striped)


def _report(md, out, k: int, client=None, **options) -> dict:
    assign(md, out, k, AssignOptions(**options), client=client)
    return json.loads((out / REPORT_FILE).read_text())


@pytest.mark.parametrize("kind,kwargs", [("planted", {"nodes": 6000, "edges": 40000}),
                                         ("grid", {"nodes": 6400, "dims": 3})])
def test_metis_partition_of_a_graph_that_coarsens_is_a_candidate(make_graph, tmp_path, dask_cluster_client, kind,
                                                                 kwargs):
    """A graph within the coarsest level's edge cap but over its node cap coarsens, and METIS's partition of the
    whole graph, refined as level 0 is, replaces the hierarchy's when it cuts less: multilevel cuts at most what
    METIS does. The same bytes on a cluster, where METIS runs beside the hierarchy's tasks."""
    md = make_graph(kind, chunks=3, **kwargs)
    metis = _report(md, tmp_path / "metis", 8, method="metis")
    opts = {"method": "multilevel", "multilevel_coarse_nodes": metis["num_nodes"] // 4}
    ml = _report(md, tmp_path / "ml", 8, **opts)
    found = ml["partitioner"]["metis_input"]
    assert len(ml["partitioner"]["levels"]) >= 2
    assert found["refined_cut"] <= found["metis_cut"]
    assert found["kept"] == ("metis" if found["refined_cut"] < found["hierarchy_cut"] else "hierarchy")
    assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])
    assert max(ml["imbalance"].values()) <= 1.03 + 1e-9
    on_cluster = _report(md, tmp_path / "cluster", 8, client=dask_cluster_client, **opts)
    assert on_cluster["partitioner"]["metis_input"] == found
    assert (tmp_path / "cluster" / "_N.txt").read_bytes() == (tmp_path / "ml" / "_N.txt").read_bytes()


def test_no_candidate_for_a_graph_over_the_edge_cap(rmat_small, tmp_path):
    """A graph whose edges exceed `multilevel_coarse_edges` is never held whole by one task: no METIS candidate."""
    ml = _report(rmat_small, tmp_path / "ml", 4, method="multilevel", multilevel_coarse_nodes=500,
                 multilevel_coarse_edges=5000)
    assert ml["partitioner"]["metis_input"] is None and len(ml["partitioner"]["levels"]) >= 2

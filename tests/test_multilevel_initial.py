"""METIS's partition as a candidate: at the coarsest level beside KaMinPar's (on the input graph itself, multilevel
then starts refinement from no more than METIS's cut); on a graph one task holds whole that still
coarsens, METIS's partition of it, refined, against the hierarchy's result; on a graph up to twice that size, METIS's
partition of a sample of it."""

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
def test_metis_is_a_candidate_beside_kaminpar(rmat_small, tmp_path, monkeypatch, index):
    """On the input graph and on a coarser level alike, the smaller cut of KaMinPar's and METIS's partitions is
    kept, and the result says which."""
    plan = hierarchy.Plan(4, AssignOptions(method="multilevel"))
    level = replace(hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None), index=index)
    monkeypatch.setattr(initial, "kaminpar_parts", lambda ip, ix, vw, ew, nparts, *a: np.arange(len(vw)) % nparts)
    cut, _, by = initial.partition_coarsest(level, nparts=4, balance=plan.balance, seed=0, ufactor=30,
                                            method="kaminpar", tries=1, metis_lib=None)
    indptr, indices, ew = initial.assemble(level)
    vw = np.ascontiguousarray(open_ro(level.vwgt)[:, plan.balance])
    metis = initial._cut(indptr, indices, ew, initial.metis_parts(indptr, indices, vw, ew, 4, 0, 30, None))
    striped = initial._cut(indptr, indices, ew, np.arange(level.nodes) % 4)
    assert metis < striped  # the stand-in for KaMinPar cuts far more than METIS
    assert (cut, by) == (metis, "metis"), (cut, metis, striped)
    real = initial.metis_parts  # the roles swapped: KaMinPar's stand-in now cuts less
    monkeypatch.setattr(initial, "kaminpar_parts", lambda ip, ix, vw, ew, nparts, *a: real(ip, ix, vw[:, None], ew,
                                                                                           nparts, 0, 30, None))
    monkeypatch.setattr(initial, "metis_parts", lambda ip, ix, vw, ew, nparts, *a: np.arange(len(vw)) % nparts)
    assert initial.partition_coarsest(level, nparts=4, balance=plan.balance, seed=0, ufactor=30, method="kaminpar",
                                      tries=1, metis_lib=None)[::2] == (metis, "kaminpar")


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


def _pairs(indptr: np.ndarray, indices: np.ndarray) -> set[tuple[int, int]]:
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return set(zip(rows.tolist(), indices.tolist()))


def test_a_sample_of_a_level_is_symmetric_seeded_and_near_its_budget(rmat_small, tmp_path):
    """`assemble` with a budget below the level's edges keeps about that many, each edge both ways or not at all
    (over several blocks), the same edges for the same seed; at or above the level's edges, the level whole."""
    plan = hierarchy.Plan(4, AssignOptions(method="multilevel", multilevel_block_edges=4000))
    level = hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None)
    edges = level.entries // 2
    assert len(level.blocks) >= 3
    whole = _pairs(*initial.assemble(level)[:2])
    assert _pairs(*initial.assemble(level, edges)[:2]) == whole
    sample = _pairs(*initial.assemble(level, edges // 2, seed=0)[:2])
    assert sample < whole and sample == {(b, a) for a, b in sample}
    assert abs(len(sample) / 2 - edges / 2) < 0.05 * edges, (len(sample) / 2, edges)
    assert _pairs(*initial.assemble(level, edges // 2, seed=0)[:2]) == sample
    assert _pairs(*initial.assemble(level, edges // 2, seed=1)[:2]) != sample


def test_metis_partition_of_a_sample_is_a_candidate_over_the_edge_cap(make_graph, tmp_path, dask_cluster_client):
    """A graph over `multilevel_coarse_edges` (up to twice it) coarsens until a level fits; METIS partitions a sample
    of the cap's size of its edges (a task no larger than the coarsest level's), refined on the whole graph, and the
    smaller of the two refined cuts is kept. The same bytes on a cluster."""
    md = make_graph("planted", nodes=6000, edges=40000, chunks=3)
    fine = hierarchy.build_input(load_metadata(md), hierarchy.Plan(8, AssignOptions()), tmp_path / "L0", None)
    opts = {"method": "multilevel", "multilevel_coarse_edges": int(0.7 * fine.entries // 2)}
    ml = _report(md, tmp_path / "ml", 8, **opts)
    found = ml["partitioner"]["metis_input"]
    assert found["sampled"] and len(ml["partitioner"]["levels"]) >= 2, found
    assert found["kept"] == ("metis" if found["refined_cut"] < found["hierarchy_cut"] else "hierarchy")
    assert max(ml["imbalance"].values()) <= 1.03 + 1e-9
    on_cluster = _report(md, tmp_path / "cluster", 8, client=dask_cluster_client, **opts)
    assert on_cluster["partitioner"]["metis_input"] == found
    assert (tmp_path / "cluster" / "_N.txt").read_bytes() == (tmp_path / "ml" / "_N.txt").read_bytes()


def test_no_candidate_for_a_graph_over_twice_the_edge_cap(rmat_small, tmp_path):
    """A graph of more than twice `multilevel_coarse_edges` edges is not partitioned by METIS in one task, whole or
    sampled: no METIS candidate."""
    ml = _report(rmat_small, tmp_path / "ml", 4, method="multilevel", multilevel_coarse_nodes=500,
                 multilevel_coarse_edges=5000)
    assert ml["partitioner"]["metis_input"] is None and len(ml["partitioner"]["levels"]) >= 2

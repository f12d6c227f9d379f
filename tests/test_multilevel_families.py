"""`multilevel` against METIS on a small graph of every generated family, over several blocks: its cut at most
METIS's when the coarsest level is the graph or METIS's partition of it is a candidate, the hierarchy's own within
1.3x when it coarsens 4x; balance within the bound."""

from __future__ import annotations

import json

import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.options import AssignOptions

MAG_BALANCE = {"balance_ntypes": ["ntype", "paper/train_mask"]}
MAG_OVER = {("mag", 16), ("mag", 64)}  # METIS itself over the bound there (below)
FAMILIES = {  # family -> (generator, its arguments, options for every method)
    "rmat": ("rmat", {"nodes": 4000, "edges": 40000}, {}),
    "grid2d": ("grid", {"nodes": 4096, "dims": 2}, {}),
    "grid3d": ("grid", {"nodes": 4096, "dims": 3}, {}),
    "planted": ("planted", {"nodes": 4000, "edges": 30000}, {}),
    "geometric": ("geometric", {"nodes": 5000}, {}),
    "chunglu": ("chunglu", {"nodes": 4000, "edges": 30000}, {}),
    "mag": ("mag", {"papers": 1500}, MAG_BALANCE),
    "ba": ("ba", {"nodes": 4000, "edges": 20000}, {}),
    "useritem": ("useritem", {"nodes": 4000, "edges": 30000, "communities": 8, "mixing": 0.6}, {}),
}


def report(md, out, k: int, **options) -> dict:
    assign(md, out, k, AssignOptions(**options))
    return json.loads((out / REPORT_FILE).read_text())


def balanced_as_metis(ml: dict, metis: dict) -> bool:
    """Every constraint within 1.03, or no worse than METIS's (a class of 18 nodes over 16 parts cannot be 1.03)."""
    return all(v <= max(1.03, metis["imbalance"][c]) + 1e-9 for c, v in ml["imbalance"].items())


def pair(make_graph, tmp_path, family: str, k: int, coarse_share: float) -> tuple[dict, dict]:
    """(METIS's report, multilevel's over 3 blocks with the coarsest level at nodes / coarse_share)."""
    kind, kwargs, common = FAMILIES[family]
    md = make_graph(kind, chunks=3, **kwargs)
    metis = report(md, tmp_path / "metis", k, method="metis", **common)
    ml = report(md, tmp_path / "ml", k, method="multilevel",
                multilevel_coarse_nodes=int(metis["num_nodes"] / coarse_share),
                multilevel_block_edges=max(1, metis["num_edges"] // 3), **common)
    assert ml["partitioner"]["levels"][0]["blocks"] >= 3
    assert balanced_as_metis(ml, metis), (ml["imbalance"], metis["imbalance"])
    return metis, ml


# MAG at k=16 and 64: METIS leaves its small classes (18 institutions) over the bound and multilevel's overweight fix
# pays for them (k=16: 70,154 vs 68,428, 1.03x; k=64: 70,712 vs 69,894): held to 1.3x below, with the coarsened cases.
@pytest.mark.parametrize("family,k", [(f, k) for f in FAMILIES for k in (4, 16, 64) if (f, k) not in MAG_OVER])
def test_cut_at_most_metis(make_graph, tmp_path, family, k):
    """The coarsest level is the graph (as for any graph up to `multilevel_coarse_nodes`): the smaller cut of
    KaMinPar strong's and METIS's partitions there, then refinement over 3 blocks, which never raises it."""
    metis, ml = pair(make_graph, tmp_path, family, k, coarse_share=1)
    assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])


@pytest.mark.parametrize("k", [4, 16])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_coarsened_cut_near_metis(make_graph, tmp_path, family, k):
    """Coarsened about 4x, as the default coarsest level does to a 1M-node graph: the hierarchy's own cut within 1.3x
    of METIS's on the same graph (the coarsening by label propagation still loses to METIS's matchings here;
    BENCHMARKS.md "Partition quality"), and the result, where METIS's refined partition is a candidate, at most
    METIS's cut."""
    metis, ml = pair(make_graph, tmp_path, family, k, coarse_share=4)
    found = ml["partitioner"]["metis_input"]
    assert len(ml["partitioner"]["levels"]) >= 2
    assert found["hierarchy_cut"] <= 1.3 * found["metis_cut"], found
    if (family, k) not in MAG_OVER:  # there METIS leaves a class over its bound, and the overweight sums decide
        assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])


@pytest.mark.parametrize("coarse_share", [1.2, 4])
def test_coarsened_rmat_at_k8_at_most_metis(make_graph, tmp_path, coarse_share):
    """R-MAT coarsened (1.2x: one level, as the default does to the issue's 300k-node R-MAT; 4x) at k=8: at most
    METIS's cut. Before refinement ran in phases, this took hubs clustering apart (the hub rule): leaves glued to hubs
    gave 1.24x at both."""
    metis, ml = pair(make_graph, tmp_path, "rmat", 8, coarse_share=coarse_share)
    found = ml["partitioner"]["metis_input"]
    assert len(ml["partitioner"]["levels"]) >= 2
    assert found["hierarchy_cut"] <= found["metis_cut"], found  # the hierarchy's own, on the graph METIS sees
    assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])


@pytest.mark.parametrize("kind,kwargs,k", [("chunglu", {"nodes": 20000, "edges": 200000}, 4),
                                          ("grid", {"nodes": 40000, "dims": 2}, 32)])
def test_coarsened_one_block_at_most_metis(make_graph, tmp_path, kind, kwargs, k):
    """One block per level (every node moves in refinement), coarsened to a quarter of the nodes and a fifth of the
    edges (as the defaults do to a 20M-edge graph): at most METIS's cut. With FM passes of 100 stalled moves
    (before issue 18's longer passes): 1.033x on Chung-Lu, 1.031x on the mesh."""
    md = make_graph(kind, chunks=3, **kwargs)
    metis = report(md, tmp_path / "metis", k, method="metis")
    ml = report(md, tmp_path / "ml", k, method="multilevel", multilevel_coarse_nodes=metis["num_nodes"] // 4,
                multilevel_coarse_edges=metis["num_edges"] * 19 // 100)
    assert len(ml["partitioner"]["levels"]) >= 3
    assert balanced_as_metis(ml, metis), (ml["imbalance"], metis["imbalance"])
    assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])

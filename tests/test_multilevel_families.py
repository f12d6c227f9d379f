"""`multilevel` against METIS on a small graph of every generated family (coarsened about 4x over several blocks,
as the default coarsest level does to a 1M-node graph): its cut is at most METIS's, its balance within the bound."""

from __future__ import annotations

import json

import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.options import AssignOptions

MAG_BALANCE = {"balance_ntypes": ["ntype", "paper/train_mask"]}
FAMILIES = {  # family -> (generator, its arguments, options for every method)
    "rmat": ("rmat", {"nodes": 4000, "edges": 40000}, {}),
    "grid2d": ("grid", {"nodes": 4096, "dims": 2}, {}),
    "grid3d": ("grid", {"nodes": 4096, "dims": 3}, {}),
    "planted": ("planted", {"nodes": 4000, "edges": 30000}, {}),
    "geometric": ("geometric", {"nodes": 5000}, {}),
    "chunglu": ("chunglu", {"nodes": 4000, "edges": 30000}, {}),
    "mag": ("mag", {"papers": 1500}, MAG_BALANCE),
}


def report(md, out, k: int, **options) -> dict:
    assign(md, out, k, AssignOptions(**options))
    return json.loads((out / REPORT_FILE).read_text())


@pytest.mark.parametrize("k", [4, 16])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_cut_at_most_metis(make_graph, tmp_path, family, k):
    kind, kwargs, common = FAMILIES[family]
    md = make_graph(kind, chunks=3, **kwargs)
    metis = report(md, tmp_path / "metis", k, method="metis", **common)
    nodes = metis["num_nodes"]
    ml = report(md, tmp_path / "ml", k, method="multilevel", multilevel_coarse_nodes=nodes // 4,
                multilevel_block_edges=max(1, metis["num_edges"] // 3), **common)
    levels = ml["partitioner"]["levels"]
    assert len(levels) >= 2 and levels[0]["blocks"] >= 3, levels  # it did coarsen, over several blocks
    assert ml["edge_cut"]["count"] <= metis["edge_cut"]["count"], (ml["edge_cut"], metis["edge_cut"])
    assert max(ml["imbalance"].values()) <= 1.03 + 1e-9, ml["imbalance"]

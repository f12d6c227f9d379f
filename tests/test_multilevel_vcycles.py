"""`multilevel_vcycles`: a cycle after the first coarsens again with every cluster inside one part of the partition
found (so the coarse level inherits it exactly), partitions that level afresh and keeps whichever cuts less, then
refines back; the same bytes in-process and on Dask."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.multilevel import hierarchy
from graphshard.assign.multilevel.initial import assemble
from graphshard.assign.multilevel.store import create, load_array, open_ro, write_range
from graphshard.assign.options import AssignOptions
from graphshard.formats.chunked import load_metadata

SMALL = {"method": "multilevel", "multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000}


def test_clusters_stay_within_parts_and_the_coarse_level_inherits_them(rmat_small, tmp_path):
    plan = hierarchy.Plan(4, AssignOptions(**SMALL))
    fine = hierarchy.build_input(load_metadata(rmat_small), plan, tmp_path / "ml", None)
    assert len(fine.blocks) > 1  # rounds read other blocks' labels and parts
    parts = np.random.default_rng(0).integers(0, 4, fine.nodes).astype(np.int32)
    write_range(create(fine.parts(0), (fine.nodes,), np.int32), 0, parts)
    coarse, _ = hierarchy.coarsen_level(fine, plan, None, parts=fine.parts(0))
    assert coarse.nodes < fine.nodes / 2
    f2c = np.concatenate([load_array(fine.fine_to_coarse(b)) for b in fine.blocks])
    inherited = np.asarray(open_ro(coarse.inherited))
    np.testing.assert_array_equal(inherited[f2c], parts)  # every cluster inside one part, and that part inherited
    indptr, indices, ew = assemble(coarse)
    rows = np.repeat(np.arange(coarse.nodes), np.diff(indptr))
    crossing = inherited[rows] != inherited[indices]
    fine_ip, fine_ix, _ = assemble(fine)
    fine_rows = np.repeat(np.arange(fine.nodes), np.diff(fine_ip))
    assert ew[crossing].sum() == np.count_nonzero(parts[fine_rows] != parts[fine_ix])  # the same cut, exactly


def _run(md: Path, out: Path, client=None, **opts) -> dict:
    assign(md, out, 4, AssignOptions(**{**SMALL, **opts}), client=client)
    return json.loads((out / REPORT_FILE).read_text())


def _parts(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.txt"))}


def test_a_vcycle_runs_keeps_balance_and_is_deterministic(rmat_small, tmp_path, dask_cluster_client):
    one = _run(rmat_small, tmp_path / "one")
    two = _run(rmat_small, tmp_path / "two", multilevel_vcycles=1)
    cycle = two["partitioner"]["vcycles"]
    assert len(cycle) == 1 and len(cycle[0]["levels"]) > 1 and cycle[0]["refinement"]
    assert two["imbalance"]["nodes"] <= 1.03 + 1e-9
    assert two["edge_cut"]["count"] <= one["edge_cut"]["count"]
    _run(rmat_small, tmp_path / "dask", client=dask_cluster_client, multilevel_vcycles=1)
    assert _parts(tmp_path / "two") == _parts(tmp_path / "dask") != _parts(tmp_path / "one")


def test_a_vcycle_keeps_every_balance_constraint_with_fetch_weights(make_graph, tmp_path):
    """Within-part blocks keep the edge weights of `objtype: fetch` and the class columns; the cycle's coarsest
    level and refinement hold every constraint as the first cycle does."""
    md = make_graph("mag", papers=3000, chunks=2)
    options = {"balance_ntypes": ["ntype", "paper/train_mask"], "ufactor": 50, "objtype": "fetch",
               "sample_fanouts": [5, 3], "multilevel_coarse_nodes": 500}
    report = _run(md, tmp_path / "ml", multilevel_vcycles=1, **options)
    assert report["partitioner"]["vcycles"] and len(report["partitioner"]["vcycles"][0]["levels"]) > 1
    assert max(v for k, v in report["imbalance"].items() if k != "nodes") <= 1.05, report["imbalance"]

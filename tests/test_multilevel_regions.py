"""Blocks that are regions (assign/multilevel/regions.py): the input level renumbered region by region is the same
graph, each block one region; on a mesh of scattered IDs over many blocks the hierarchy then cuts less, with the same
bytes in-process and on Dask; a graph whose regions cut many edges keeps its blocks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.multilevel import coarsen_all, hierarchy, regions
from graphshard.assign.multilevel.initial import assemble
from graphshard.assign.multilevel.store import load_array, open_ro
from graphshard.assign.options import AssignOptions
from graphshard.daskrun import gather_tasks
from graphshard.formats.chunked import load_metadata

SMALL = {"method": "multilevel", "multilevel_coarse_nodes": 300, "multilevel_block_edges": 8000}


@pytest.fixture(scope="module")
def mesh(make_graph) -> Path:
    """A 3-D mesh of 34^3 nodes with scattered IDs (114k edges: 16 blocks of SMALL)."""
    return make_graph("grid", nodes=40000, dims=3, chunks=3)


def _edges(indptr: np.ndarray, indices: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """Every entry as (row, column) through `ids`, sorted."""
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    pairs = np.stack([ids[rows], ids[indices]], axis=1)
    return pairs[np.lexsort(pairs.T[::-1])]


def test_renumbered_level_is_the_same_graph_one_region_per_block(mesh, tmp_path):
    plan = hierarchy.Plan(4, AssignOptions(**SMALL))
    fine = hierarchy.build_input(load_metadata(mesh), plan, tmp_path / "ml", None)
    levels, _ = coarsen_all(fine, plan, None, None)
    assert len(fine.blocks) == 16 and len(levels) > 2
    group, found = regions.submit(levels, 5, 0, None, None)
    cut = gather_tasks(None, group)[0][0][0]
    old_ip, old_ix, _ = assemble(fine)
    old_w = np.array(open_ro(fine.vwgt))
    mapped, out = regions.renumber(levels, found, 6, None, keep=True)
    perm = np.concatenate([load_array(mapped.fine_to_coarse(b)) for b in mapped.blocks]).astype(np.int64)
    np.testing.assert_array_equal(np.sort(perm), np.arange(fine.nodes))
    new_ip, new_ix, new_w = assemble(out)
    assert new_w is None and out.entries == fine.entries == len(new_ix)
    np.testing.assert_array_equal(_edges(old_ip, old_ix, perm), _edges(new_ip, new_ix, np.arange(fine.nodes)))
    np.testing.assert_array_equal(np.asarray(open_ro(out.vwgt))[perm], old_w)
    block = np.searchsorted(np.asarray(out.bounds), np.arange(fine.nodes), side="right") - 1
    rows = np.repeat(np.arange(fine.nodes), np.diff(new_ip))
    assert np.count_nonzero(block[rows] != block[new_ix]) // 2 == cut  # the blocks are the regions METIS cut
    assert cut < 0.15 * fine.entries // 2 and len(out.blocks) == 16
    assert max(np.diff(out.bounds)) <= 1.03 * fine.nodes / 16 + 1


def _run(md: Path, out: Path, client=None, **opts) -> dict:
    assign(md, out, 4, AssignOptions(**{**SMALL, **opts}), client=client)
    return json.loads((out / REPORT_FILE).read_text())


def test_a_mesh_over_many_blocks_cuts_less_in_regions(mesh, tmp_path, dask_cluster_client):
    found = _run(mesh, tmp_path / "regions")
    facts = found["partitioner"]["regions"]
    assert facts["used"] and facts["share"] <= regions.SHARE
    _run(mesh, tmp_path / "dask", client=dask_cluster_client)
    assert (tmp_path / "regions" / "_N.txt").read_bytes() == (tmp_path / "dask" / "_N.txt").read_bytes()
    scattered = _run(mesh, tmp_path / "scattered", multilevel_regions=False)
    assert scattered["partitioner"]["regions"] is None
    ours, theirs = (r["partitioner"]["metis_input"]["hierarchy_cut"] for r in (found, scattered))
    assert ours < 0.9 * theirs, (ours, theirs)
    assert found["imbalance"]["nodes"] <= 1.03 + 1e-9


def test_a_graph_whose_regions_cut_much_keeps_its_blocks(rmat_small, tmp_path):
    facts = _run(rmat_small, tmp_path / "rmat")["partitioner"]["regions"]
    assert not facts["used"] and facts["share"] > regions.SHARE

"""`objtype: fetch`: the sampled-fetch gains against a direct count, the multilevel level-0 weights against the
whole-graph ones, the remote-share estimate's bounds, the options and the effect on the estimated remote share."""

from __future__ import annotations

import json

import numpy as np
import pytest

from graphshard.assign import REPORT_FILE, assign
from graphshard.assign.fetch import edge_gain, fetch_graph, saturate
from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
from graphshard.assign.multilevel import hierarchy
from graphshard.assign.multilevel.initial import assemble
from graphshard.assign.options import AssignOptions, OptionConflict, resolve
from graphshard.formats.assignment import read_parts
from graphshard.formats.chunked import load_metadata
from graphshard.validate.remote_share import batch_inputs, in_csr, remote_share


def edges_of(meta) -> tuple[np.ndarray, np.ndarray]:
    g = load_metadata(meta)
    pieces = [homogeneous_chunk(g, et, i) for et, i in edge_chunks(g)]
    return np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])


def test_gain_matches_a_direct_count_of_expected_takes():
    # 0 -> 2, 1 -> 2, 3 -> 2, 2 -> 0, 3 -> 0; seeds 2 and 0; fanouts [1, 2] (last layer first: fanout 2, then 1)
    src, dst = np.array([0, 1, 3, 2, 3]), np.array([2, 2, 2, 0, 0])
    seeds = np.array([1.0, 0, 1, 0])
    indeg = np.bincount(dst, minlength=4)
    gain, factor = edge_gain(src, dst, seeds, indeg, [1, 2], batches=1e12)
    # layer 1 (fanout 2): node 2 (indeg 3) takes each in-edge w.p. 2/3, node 0 (indeg 2) w.p. 1
    # frontier 1: node 0: 1 + 2/3 (0 -> 2), node 1: 2/3, node 2: 1 + 1 (2 -> 0), node 3: 2/3 + 1
    # layer 2 (fanout 1): node 0 takes w.p. 1/2, node 2 w.p. 1/3
    # (nodes 1 and 3 have no in-edge, so no edge weighs their gain)
    np.testing.assert_allclose(gain[[0, 2]], [1 + (1 + 2 / 3) / 2, 2 / 3 + 2 / 3])
    np.testing.assert_allclose(factor, 1.0, atol=1e-9)  # no saturation with unbounded batches
    assert saturate(np.array([1e9]), 5.0)[0] == pytest.approx(5.0)


def test_multilevel_level0_weights_equal_the_whole_graph_ones(make_graph, tmp_path):
    meta = make_graph("mag", papers=300, chunks=3)
    graph = load_metadata(meta)
    options = AssignOptions(method="multilevel", objtype="fetch", sample_fanouts=[5, 3],
                            balance_ntypes=["paper/train_mask"], multilevel_block_edges=1500)
    plan = hierarchy.Plan(4, options)
    level = hierarchy.build_input(graph, plan, tmp_path / "ml", None)
    assert len(level.blocks) > 2 and level.weighted
    indptr, indices, ew = assemble(level)
    want = fetch_graph(graph, options, 4)
    np.testing.assert_array_equal(indptr, want[0])
    np.testing.assert_array_equal(indices, want[1])
    np.testing.assert_array_equal(ew, want[2])
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    sym = dict(zip(zip(rows.tolist(), indices.tolist()), ew.tolist()))
    assert all(sym[(v, u)] == w for (u, v), w in sym.items())  # symmetric weights
    assert len(set(ew.tolist())) > 3


def test_batch_inputs_take_at_most_fanout_in_edges_per_node():
    src, dst = np.arange(1, 101), np.zeros(100, dtype=np.int64)  # node 0 has 100 in-edges
    ip, so = in_csr(src, dst, 101)
    got = batch_inputs(ip, so, np.array([0]), [7], np.random.default_rng(0))
    assert len(got) == 8 and got[0] == 0
    all_in = batch_inputs(ip, so, np.array([0]), [500], np.random.default_rng(0))
    np.testing.assert_array_equal(all_in, np.arange(101))


def test_options_and_refusals():
    assert resolve(AssignOptions(method="kaminpar", objtype="fetch"))[0].objtype == "fetch"
    assert resolve(AssignOptions(method="multilevel", multilevel={"objtype": "fetch"}))[0].objtype == "fetch"
    with pytest.raises(OptionConflict, match="edge cut only"):
        resolve(AssignOptions(method="multilevel", objtype="vol"))
    with pytest.raises(OptionConflict, match="ParMETIS"):
        resolve(AssignOptions(method="parmetis", objtype="fetch"))
    with pytest.raises(ValueError):
        AssignOptions(sample_fanouts=[10, 0])


def estimated_share(meta, out, k: int, **opts) -> tuple[float, dict]:
    assign(meta, out, k, AssignOptions(**opts))
    g = load_metadata(meta)
    parts = np.concatenate([read_parts(out, nt, g.num_nodes(nt), k) for nt in g.node_type])
    src, dst = edges_of(meta)
    ip, so = in_csr(src, dst, g.total_nodes)
    est = remote_share(ip, so, parts, np.ones(g.total_nodes, dtype=bool), [10, 25], batch_size=200)
    return est["overall"], json.loads((out / REPORT_FILE).read_text())


@pytest.mark.parametrize("method,extra", [
    ("metis", {}),
    ("multilevel", {"multilevel_coarse_nodes": 2000, "multilevel_block_edges": 10000}),
])
def test_fetch_lowers_the_estimated_remote_share(make_graph, tmp_path, method, extra):
    meta = make_graph("rmat", nodes=3000, edges=30000, chunks=3, seed=5)  # skewed degrees: where fetch pays
    cut, _ = estimated_share(meta, tmp_path / "cut", 4, method=method, **extra)
    fetch, report = estimated_share(meta, tmp_path / "fetch", 4, method=method, objtype="fetch",
                                    sample_batch_size=200, **extra)
    assert fetch < cut
    assert max(report["imbalance"].values()) <= 1.03 + 1e-9


def test_fetch_is_deterministic_on_multilevel(rmat_small, tmp_path):
    opts = AssignOptions(method="multilevel", objtype="fetch", multilevel_coarse_nodes=300,
                         multilevel_block_edges=8000, seed=3)
    for name in ("a", "b"):
        assign(rmat_small, tmp_path / name, 4, opts)
    for nt in ("_N.txt",):
        assert (tmp_path / "a" / nt).read_bytes() == (tmp_path / "b" / nt).read_bytes()

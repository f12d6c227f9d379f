"""The assignment report's balance figures: summed per (constraint column, partition) in the edge pass's chunk tasks,
never as an in-degree array over the graph's nodes per chunk (issue 20: 20 x 8 B per node gathered in the flow
process at 100M edges, graph x chunks at 500M)."""

from __future__ import annotations

import numpy as np
import pytest
from test_assign import all_edges

from graphshard.assign import assign
from graphshard.assign.constraints import class_columns, graph_constraints
from graphshard.assign.options import AssignOptions
from graphshard.assign.report import build_report, chunk_stats, degree_columns, load_parts
from graphshard.formats.chunked import load_metadata
from graphshard.storage.scratch import scratch_space

CASES = [("rmat_small", [], True), ("mag_small", [], True), ("mag_small", ["ntype"], True),
         ("mag_small", ["ntype", "paper/train_mask"], True), ("mag_small", ["ntype", "paper/train_mask"], False)]


def whole_graph_balance(meta, part_files, nparts: int, balance_ntypes: list[str], edges: bool) -> dict[str, float]:
    """The figures as the report computed them before: the graph's in-degree array, (n, ncon) weights, bincounts."""
    g = load_metadata(meta)
    parts = np.concatenate([np.load(part_files[nt]) for nt in g.node_type]).astype(np.int64)
    in_deg = np.bincount(all_edges(meta)[1], minlength=g.total_nodes) if edges else None
    cons = graph_constraints(g, balance_ntypes, in_deg)
    out = {}
    for c, label in enumerate(cons.labels):
        sums = np.bincount(parts, weights=cons.weights[:, c], minlength=nparts)
        out[label] = float(sums.max() / (sums.sum() / nparts))
    return out


@pytest.mark.parametrize("graph,balance_ntypes,balance_edges", CASES)
def test_balance_figures_equal_the_whole_graph_arrays(graph, balance_ntypes, balance_edges, request, tmp_path,
                                                      dask_cluster_client):
    """On Dask workers: every constraint's imbalance equals, to the last bit, the figure from whole-graph weights."""
    meta = request.getfixturevalue(graph)
    options = AssignOptions(method="metis", seed=5, balance_ntypes=balance_ntypes, balance_edges=balance_edges)
    assign(meta, tmp_path / "a", 4, options)
    part_files = load_parts(load_metadata(meta), tmp_path / "a", 4, tmp_path / "npy")
    report = build_report(load_metadata(meta), part_files, 4, options, tmp_path / "scratch", dask_cluster_client)
    expected = whole_graph_balance(meta, part_files, 4, balance_ntypes, balance_edges)
    assert len(expected) >= 1 and {k: report["imbalance"][k] for k in expected} == expected
    assert set(report["imbalance"]) == {"nodes", *expected}


def test_a_chunk_task_returns_partition_sized_sums(mag_small, tmp_path):
    """What a chunk task hands back has no per-node array: its in-degree sums are (columns, partitions), and the
    node -> column map it reads is int32."""
    g = load_metadata(mag_small)
    options = AssignOptions(method="metis", balance_ntypes=["ntype"], balance_edges=True)
    assign(mag_small, tmp_path / "a", 4, options)
    part_files = load_parts(g, tmp_path / "a", 4, tmp_path / "npy")
    column, labels = class_columns(g, ["ntype"])
    degrees = degree_columns(column, len(labels), part_files, tmp_path / "scratch")
    assert degrees[0] == len(g.node_type) and np.load(degrees[1]).dtype == np.int32
    etype = g.edge_type[0]
    stats = chunk_stats(g, etype, 0, part_files, 4, degrees, False, None, 0)
    assert stats["degree_sums"].shape == (len(g.node_type), 4)
    arrays = [v for v in stats.values() if isinstance(v, np.ndarray)]
    assert arrays and max(a.size for a in arrays) <= len(g.node_type) * 4 < g.total_nodes
    dst_type = g.ntype_id(g.canonical(etype).dst)  # every edge of the type adds one to its destination type's column
    assert stats["degree_sums"].sum() == stats["degree_sums"][dst_type].sum() == stats["edges"].sum() > 0


def test_column_map_on_a_store(mag_small, tmp_path, s3_bucket):
    """With the report's scratch on a store (workers on other hosts), the column map goes there like the parts; the
    figures are the same."""
    g = load_metadata(mag_small)
    options = AssignOptions(method="metis", seed=5, balance_ntypes=["ntype"], balance_edges=True)
    assign(mag_small, tmp_path / "a", 4, options)
    part_files = load_parts(g, tmp_path / "a", 4, tmp_path / "npy")
    with scratch_space(f"{s3_bucket}/report") as where:
        report = build_report(g, part_files, 4, options, where)
    expected = whole_graph_balance(mag_small, part_files, 4, ["ntype"], True)
    assert {k: report["imbalance"][k] for k in expected} == expected


def test_weight_columns_are_dgls():
    """As DGL's `metis_partition_assignment`: a 0/1 column per class, then an in-degree column per class; without
    classes the in-degree column alone."""
    from graphshard.assign.constraints import weight_columns

    codes, classes, deg = np.array([0, 1, 0]), np.array([0, 1]), np.array([3, 4, 5])
    assert weight_columns(codes, classes, deg).tolist() == [[1, 0, 3, 0], [0, 1, 0, 4], [1, 0, 5, 0]]
    assert weight_columns(codes, classes, None).tolist() == [[1, 0], [0, 1], [1, 0]]
    assert weight_columns(None, None, deg).tolist() == [[3], [4], [5]]


@pytest.mark.parametrize("method", ["metis", "multilevel"])
def test_train_mask_and_in_degrees_both_balanced(rmat_small, tmp_path, method):
    """DistDGL's usual setting (`balance_ntypes` a train mask, `balance_edges`): the train and other nodes per
    partition and their in-degrees are all balanced, four columns (before, only the in-degree ones were)."""
    import json

    from graphshard.assign import REPORT_FILE

    assign(rmat_small, tmp_path / "a", 4, AssignOptions(method=method, balance_ntypes=["_N/train_mask"],
                                                  balance_edges=True))
    imbalance = json.loads((tmp_path / "a" / REPORT_FILE).read_text())["imbalance"]
    columns = [f"_N/train_mask={v}{s}" for s in ("", "*in_degree") for v in (0, 1)]
    assert set(imbalance) == {"nodes", *columns}
    assert all(imbalance[c] <= 1.05 for c in columns), imbalance

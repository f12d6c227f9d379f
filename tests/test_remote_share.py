"""The report's remote-share estimate on a written partition set: against the in-memory draw over the same
assignment, the same on Dask and in-process, shown in report.json and report.html, read in pieces."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.assign import assign
from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
from graphshard.assign.options import AssignOptions
from graphshard.formats.assignment import read_parts
from graphshard.formats.chunked import load_metadata
from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.validate import validate
from graphshard.validate.layout import load_layout, owners
from graphshard.validate.remote_share import (
    Sampling,
    estimate,
    in_csr,
    part_seeds,
    remote_share,
    sample_pairs,
    sources_at,
    stable_order,
    wanted_in_degrees,
)
from graphshard.validate.report_html import render_html


@pytest.fixture(scope="module")
def written(make_graph, tmp_path_factory):
    """(metadata, assignment folder, config) of a 4-part METIS set of a 3,000-node R-MAT graph."""
    meta = make_graph("rmat", nodes=3000, edges=30000, chunks=3, seed=5)
    base = tmp_path_factory.mktemp("remote")
    assign(meta, base / "asg", 4, AssignOptions(method="metis", objtype="fetch", sample_fanouts=[4, 6],
                                                sample_batch_size=150))
    return meta, base / "asg", shuffle(meta, base / "asg", base / "out", ShuffleOptions(), None)


def test_estimate_on_the_written_set_agrees_with_the_in_memory_draw(written, monkeypatch):
    from graphshard.validate import piecewise

    monkeypatch.setattr(piecewise, "PIECE_ROWS", 97)  # many pieces per partition
    meta, asg, config = written
    g = load_metadata(meta)
    pieces = [homogeneous_chunk(g, et, i) for et, i in edge_chunks(g)]
    src, dst = np.concatenate([p[0] for p in pieces]), np.concatenate([p[1] for p in pieces])
    parts = np.concatenate([read_parts(asg, nt, g.num_nodes(nt), 4) for nt in g.node_type])
    ip, so = in_csr(src, dst, g.total_nodes)
    sampling = Sampling((4, 6), 150, 8, 2)
    ours = estimate(load_layout(config), sampling)
    direct = remote_share(ip, so, parts, np.ones(g.total_nodes, dtype=bool), [4, 6], seed=9, batch_size=150)
    assert abs(ours["overall"] - direct["overall"]) <= 0.03
    assert len(ours["per_part"]) == 4 and 0.2 < ours["overall"] < 0.9
    assert estimate(load_layout(config), sampling) == ours  # seeded


def test_report_shows_the_estimate_with_the_assignment_fanouts(written, dask_cluster_client):
    _, asg, config = written
    report = validate(config, client=dask_cluster_client, assignment_report=asg / "assignment_report.json")
    share = report["quality"]["remote_share"]
    assert report["ok"] and share["fanouts"] == [4, 6] and share["batch_size"] == 150
    local = validate(config, assignment_report=asg / "assignment_report.json")["quality"]["remote_share"]
    assert local == share  # the same on Dask and in-process
    assert "remote input nodes (est., fanouts 4,6" in render_html(report)


def test_seeds_are_the_training_nodes_the_assignment_named(make_graph, tmp_path):
    meta = make_graph("mag", papers=300, chunks=2)
    assign(meta, tmp_path / "asg", 3, AssignOptions(method="metis", balance_ntypes=["paper/train_mask"]))
    config = shuffle(meta, tmp_path / "asg", tmp_path / "out", ShuffleOptions(), None)
    layout = load_layout(config)
    g = load_metadata(meta)
    spec = g.node_data["paper"]["train_mask"]
    from graphshard.formats.readers import read_rows

    train = int(np.count_nonzero(read_rows(g, spec, 0, g.num_nodes("paper"))))
    assert 0 < train < g.num_nodes("paper")
    drawn = [part_seeds(layout, p, "paper/train_mask") for p in range(3)]
    assert sum(len(d) for d in drawn) == train
    assert all(owners(layout.node_ranges, d)[1].tolist() == [layout.ntypes.index("paper")] * len(d) for d in drawn)
    report = validate(config, assignment_report=tmp_path / "asg" / "assignment_report.json")
    assert report["quality"]["remote_share"]["seeds"] == "paper/train_mask"


def test_estimate_turned_off_in_the_library_and_the_cli(written, capsys):
    """`validate(remote_share=False)` and `graphshard validate --no-remote-share` give the same checks without the
    estimate."""
    from graphshard.cli import main

    _, asg, config = written
    report = validate(config, assignment_report=asg / "assignment_report.json", remote_share=False)
    assert report["ok"] and report["quality"]["remote_share"] is None
    assert "remote input nodes" not in render_html(report)
    capsys.readouterr()
    assert main(["validate", "--partitions", str(config), "--no-remote-share", "--json"]) == 0
    assert '"remote_share": null' in capsys.readouterr().out
    assert main(["validate", "--partitions", str(config), "--json"]) == 0
    assert '"remote_share": {' in capsys.readouterr().out


def test_draws_are_uniform_distinct_and_cost_no_more_than_the_fanout():
    # node 0: 5 in-edges, fanout 2 -> each of the 10 pairs of sources equally likely; node 1: 2 in-edges, all taken
    indptr = np.array([0, 5, 7])
    sources = np.array([10, 11, 12, 13, 14, 20, 21])
    rng = np.random.default_rng(0)
    counts: dict[tuple, int] = {}
    for _ in range(20_000):
        seg, src = sample_pairs(indptr, sources, np.array([0, 1]), 2, rng)
        assert sorted(src[seg == 1]) == [20, 21]
        pair = tuple(sorted(src[seg == 0]))
        assert len(set(pair)) == 2
        counts[pair] = counts.get(pair, 0) + 1
    assert len(counts) == 10 and max(counts.values()) / min(counts.values()) < 1.15  # expected 2,000 each
    hub = np.array([0, 10**7])  # a hub's draw does not materialise its in-degree
    seg, src = sample_pairs(hub, np.zeros(10**7, dtype=np.int32), np.zeros(3000, dtype=np.int64), 25, rng)
    assert len(seg) == 3000 * 25


def test_stable_order_is_numpys_stable_argsort():
    rng = np.random.default_rng(3)
    for keys in (rng.integers(0, 50, 10_000), rng.integers(0, 2**40, 1000), np.zeros(0, np.int64),
                 np.array([2**62, 0, 2**62, 1]), rng.integers(0, 7, 5).astype(np.int32)):
        assert np.array_equal(stable_order(keys), np.argsort(keys, kind="stable"))


def test_two_passes_draw_the_in_csr_sources():
    """The partition task's two passes (in-degrees, then only the drawn positions' sources) give what the in-CSR
    of the wanted nodes' in-edges gives, piece order kept (so the estimate is the same draw, in less memory)."""
    rng = np.random.default_rng(3)
    n, pieces = 50, [(rng.integers(0, 50, size), rng.integers(0, 400, size)) for size in (0, 7, 300, 1, 120)]
    nid = rng.permutation(1000)[:400]

    def edges():
        yield from pieces

    indptr, sources = in_csr(nid[np.concatenate([s for _, s in pieces])], np.concatenate([p for p, _ in pieces]), n)
    assert np.array_equal(wanted_in_degrees(edges, n), indptr)
    at = rng.integers(0, len(sources), 200)
    assert np.array_equal(sources_at(edges, nid, indptr, at), sources[at])
    assert len(sources_at(edges, nid, indptr, at[:0])) == 0


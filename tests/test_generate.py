"""The generators: determinism, shapes, ID ranges, formats, chunk counts."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import load_metadata
from graphshard.formats.readers import read_chunk, read_edge_chunk, read_rows
from graphshard.generate import generate_mag, generate_rmat
from graphshard.generate.common import chunk_rng, scatter_ids
from graphshard.generate.rmat import rmat_edges


def _all_edges(graph, etype):
    parts = [read_edge_chunk(graph, etype, i) for i in range(len(graph.edges[etype].data))]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def test_rmat_small_shape(rmat_small):
    g = load_metadata(rmat_small)
    assert g.node_type == ["_N"] and g.edge_type == ["_N:_E:_N"]
    assert g.num_nodes_per_type == [2000] and g.num_edges_per_type == [20000]
    assert len(g.num_edges_per_chunk[0]) == 3 and len(g.edges["_N:_E:_N"].data) == 3
    src, dst = _all_edges(g, "_N:_E:_N")
    assert src.min() >= 0 and dst.min() >= 0 and src.max() < 2000 and dst.max() < 2000
    assert not np.any(src == dst)
    feat = read_rows(g, g.node_data["_N"]["feat"], 0, 2000)
    assert feat.dtype == np.float32 and feat.shape == (2000, 16)
    assert read_rows(g, g.node_data["_N"]["label"], 0, 2000).dtype == np.int64
    assert read_rows(g, g.node_data["_N"]["train_mask"], 0, 2000).dtype == np.bool_
    weight = read_rows(g, g.edge_data["_N:_E:_N"]["weight"], 0, 20000)
    assert weight.dtype == np.float32 and weight.shape == (20000,)


def test_rmat_is_power_law():
    """The R-MAT skew shows: the busiest 1% of nodes carry far more than 1% of the edge ends."""
    src, dst = rmat_edges(chunk_rng(0, "t"), 200_000, 1 << 14)
    deg = np.bincount(np.concatenate([src, dst]), minlength=1 << 14)
    top = np.sort(deg)[::-1][: (1 << 14) // 100].sum() / deg.sum()
    assert top > 0.1
    assert deg.max() > 50 * deg.mean()


@pytest.mark.parametrize("nodes", [1000, 1024, 1025, 3])
def test_rmat_edges_in_range_for_any_node_count(nodes):
    src, dst = rmat_edges(chunk_rng(1, "t"), 5000, nodes)
    assert len(src) == 5000 and src.max() < nodes and dst.max() < nodes and src.min() >= 0
    if nodes == 3:  # tiny ranges are covered, whatever the rejection of out-of-range draws
        assert set(np.unique(np.concatenate([src, dst]))) == {0, 1, 2}


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 1024, 999_983])
def test_scatter_ids_is_a_bijection(n):
    ids = np.arange(n, dtype=np.int64)
    out = scatter_ids(ids, n, 3, "x")
    assert np.array_equal(np.sort(out), ids)


def test_generation_is_byte_identical(tmp_path):
    a = generate_mag(tmp_path / "a", papers=300, chunks=3, fmt="mixed", seed=5)
    b = generate_mag(tmp_path / "b", papers=300, chunks=3, fmt="mixed", seed=5)
    files_a = sorted(p.relative_to(a.parent) for p in a.parent.rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(b.parent) for p in b.parent.rglob("*") if p.is_file())
    assert files_a == files_b
    for rel in files_a:
        assert (a.parent / rel).read_bytes() == (b.parent / rel).read_bytes(), rel
    c = generate_mag(tmp_path / "c", papers=300, chunks=3, fmt="mixed", seed=6)
    assert not np.array_equal(_all_edges(load_metadata(a), "paper:cites:paper")[0],
                              _all_edges(load_metadata(c), "paper:cites:paper")[0])


def test_mag_small_shape(mag_small):
    g = load_metadata(mag_small)
    assert g.node_type == ["paper", "author", "institution", "field_of_study"]
    assert "author:writes:paper" in g.edge_type and "paper:rev_writes:author" in g.edge_type
    assert len(g.edge_type) == 8
    for et in g.edge_type:
        c = g.canonical(et)
        src, dst = _all_edges(g, et)
        assert len(src) == g.num_edges(et)
        assert 0 <= src.min() and src.max() < g.num_nodes(c.src)
        assert 0 <= dst.min() and dst.max() < g.num_nodes(c.dst)
    # reverse types are the forward edges swapped
    fs, fd = _all_edges(g, "author:writes:paper")
    rs, rd = _all_edges(g, "paper:rev_writes:author")
    assert np.array_equal(fs, rd) and np.array_equal(fd, rs)
    # paper feat is written in a different number of files than the paper node chunks
    assert len(g.node_data["paper"]["feat"].data) != len(g.num_nodes_per_chunk[0])
    assert "institution" not in g.node_data and "field_of_study" not in g.node_data
    n = g.num_nodes("paper")
    year = read_rows(g, g.node_data["paper"]["year"], 0, n)
    masks = [read_rows(g, g.node_data["paper"][m], 0, n) for m in ("train_mask", "val_mask", "test_mask")]
    assert all(m.dtype == np.bool_ for m in masks)
    assert np.array_equal(masks[0] + masks[1] + masks[2], np.ones(n, dtype=np.int64))
    assert np.array_equal(masks[2], year == 2019)
    wf = read_chunk(g, g.edge_data["author:writes:paper"]["feat"], 0)
    assert wf.dtype == np.float32 and wf.ndim == 2


@pytest.mark.parametrize("kind", ["rmat", "mag"])
def test_bad_options_are_rejected(tmp_path, kind):
    gen = {"rmat": generate_rmat, "mag": generate_mag}[kind]
    with pytest.raises(GraphshardError, match="--format"):
        gen(tmp_path / "x", fmt="hdf5")
    with pytest.raises(GraphshardError, match="--chunks"):
        gen(tmp_path / "x", chunks=0)
    assert not (tmp_path / "x").exists()


def test_existing_output_needs_overwrite(tmp_path):
    generate_rmat(tmp_path / "g", nodes=100, edges=500, chunks=2)
    with pytest.raises(GraphshardError, match="exists"):
        generate_rmat(tmp_path / "g", nodes=100, edges=500, chunks=2)
    generate_rmat(tmp_path / "g", nodes=200, edges=500, chunks=2, overwrite=True)
    assert load_metadata(tmp_path / "g").num_nodes_per_type == [200]
    assert [p.name for p in tmp_path.iterdir()] == ["g"]


def test_generate_cli_defaults_and_options(tmp_path, capsys):
    assert main(["generate", "mag", "--out", str(tmp_path / "mag")]) == 0
    g = load_metadata(tmp_path / "mag")
    assert g.num_nodes("paper") == 1000 and len(g.edge_type) == 8 and len(g.num_edges_per_chunk[0]) == 2
    assert main(["generate", "rmat", "--out", str(tmp_path / "r"), "--nodes", "300", "--edges", "4000",
                 "--chunks", "3", "--format", "parquet", "--seed", "2", "--feat-dim", "4"]) == 0
    r = load_metadata(tmp_path / "r")
    assert r.num_nodes_per_type == [300] and r.num_edges_per_type == [4000] and len(r.edges["_N:_E:_N"].data) == 3
    assert r.edges["_N:_E:_N"].format.name == "parquet"
    assert read_rows(r, r.node_data["_N"]["feat"], 0, 300).shape == (300, 4)
    assert capsys.readouterr().out.split() == [str(tmp_path / "mag" / "metadata.json"),
                                               str(tmp_path / "r" / "metadata.json")]
    assert main(["generate", "rmat", "--out", str(tmp_path / "r"), "--nodes", "300"]) == 2
    assert "--overwrite" in capsys.readouterr().err
    assert main(["generate", "mag", "--out", str(tmp_path / "m2"), "--chunks", "0"]) == 2
    assert "--chunks" in capsys.readouterr().err and not (tmp_path / "m2").exists()


@pytest.mark.parametrize("command", ["generate", "chunk", "inspect"])
def test_help(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        main([command, "--help"])
    assert exit_.value.code == 0 and f"graphshard {command}" in capsys.readouterr().out


def test_grid_mesh_edges_and_scattered_ids(tmp_path):
    from graphshard.formats.chunked import load_metadata
    from graphshard.formats.readers import read_edge_chunk
    from graphshard.generate import generate_grid

    md = generate_grid(tmp_path / "g", nodes=100, dims=2, chunks=3, seed=1)
    g = load_metadata(md)
    assert g.total_nodes == 100 and g.total_edges == 2 * 10 * 9
    src, dst = map(np.concatenate, zip(*(read_edge_chunk(g, g.edge_type[0], i) for i in range(3))))
    degree = np.bincount(np.concatenate([src, dst]), minlength=100)
    assert sorted(np.bincount(degree).nonzero()[0].tolist()) == [2, 3, 4]  # corners, sides, inside
    assert np.bincount(degree)[2] == 4
    assert (generate_grid(tmp_path / "h", nodes=100, dims=2, chunks=3, seed=1).parent / "edges").exists()
    same = {p.name: p.read_bytes() for p in (tmp_path / "g" / "edges").iterdir()}
    assert same == {p.name: p.read_bytes() for p in (tmp_path / "h" / "edges").iterdir()}
    assert load_metadata(generate_grid(tmp_path / "c", nodes=30, dims=3, chunks=1)).total_edges == 3 * 9 * 2


def test_rmat_train_share_marks_a_subset_and_keeps_the_edges(tmp_path, capsys):
    default = load_metadata(generate_rmat(tmp_path / "a", nodes=4000, edges=20000, chunks=2, seed=3))
    assert main(["generate", "rmat", "--out", str(tmp_path / "b"), "--nodes", "4000", "--edges", "20000",
                 "--chunks", "2", "--seed", "3", "--train-share", "0.1"]) == 0
    small = load_metadata(tmp_path / "b")
    wide = read_rows(default, default.node_data["_N"]["train_mask"], 0, 4000)
    narrow = read_rows(small, small.node_data["_N"]["train_mask"], 0, 4000)
    assert 0.08 < narrow.mean() < 0.12 and 0.55 < wide.mean() < 0.65 and not np.any(narrow & ~wide)
    for i in range(2):
        assert all(np.array_equal(x, y) for x, y in zip(read_edge_chunk(default, "_N:_E:_N", i),
                                                       read_edge_chunk(small, "_N:_E:_N", i)))
    capsys.readouterr()
    assert main(["generate", "grid", "--out", str(tmp_path / "g"), "--train-share", "0.1"]) == 2
    assert "--train-share" in capsys.readouterr().err and not (tmp_path / "g").exists()
    assert main(["generate", "rmat", "--out", str(tmp_path / "c"), "--train-share", "1.5"]) == 2
    assert "--train-share" in capsys.readouterr().err and not (tmp_path / "c").exists()


@pytest.mark.parametrize("kind,option", [("rmat", ["--mixing", "0.3"]), ("chunglu", ["--communities", "8"]),
                                         ("planted", ["--dims", "3"]), ("grid", ["--edges", "100"])])
def test_an_option_the_kind_does_not_take_is_refused(tmp_path, capsys, kind, option):
    """An option the kind would ignore stops the command in one line that names it, before anything is written."""
    assert main(["generate", kind, "--out", str(tmp_path / "g"), "--nodes", "100", *option]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and option[0] in err[0] and f"drop {option[0]} for {kind}" in err[0], err
    assert not (tmp_path / "g").exists()

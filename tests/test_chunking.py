"""`graphshard chunk`: OGB-style folder -> chunked graph, arrays unchanged, errors naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from graphshard.chunking import chunk_ogb
from graphshard.cli import main
from graphshard.errors import InputError
from graphshard.formats.chunked import load_metadata
from graphshard.formats.readers import read_edge_chunk, read_rows
from graphshard.ingest import check_graph


def _edges(g, et):
    parts = [read_edge_chunk(g, et, i) for i in range(len(g.edges[et].data))]
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def write_ogb(folder: Path, graph_meta: Path) -> Path:
    """An OGB-style folder holding the arrays of a chunked graph; edge index as (2, E) and (E, 2) alternately."""
    g = load_metadata(graph_meta)
    folder.mkdir()
    (folder / "meta.json").write_text(json.dumps({"num_nodes": dict(zip(g.node_type, g.num_nodes_per_type)),
                                                  "graph_name": "ogbish"}))
    for i, et in enumerate(g.edge_type):
        d = folder / et.replace(":", "___")
        d.mkdir()
        src, dst = _edges(g, et)
        np.save(d / "edge_index.npy", np.stack([src, dst]) if i % 2 == 0 else np.stack([src, dst], axis=1))
        for f, spec in g.edge_data.get(et, {}).items():
            np.save(d / f"edge_{f}.npy", read_rows(g, spec, 0, g.num_edges(et)))
    for nt, feats in g.node_data.items():
        (folder / nt).mkdir()
        for f, spec in feats.items():
            np.save(folder / nt / f"node_{f}.npy", read_rows(g, spec, 0, g.num_nodes(nt)))
    return folder


@pytest.mark.parametrize("chunks", [1, 3, 7])
@pytest.mark.parametrize("fmt", ["numpy", "parquet", "csv", "mixed"])
def test_chunk_round_trip(mag_small, tmp_path, chunks, fmt):
    ogb = write_ogb(tmp_path / "ogb", mag_small)
    meta = chunk_ogb(ogb, tmp_path / "out", chunks, fmt=fmt)
    g, h = load_metadata(mag_small), load_metadata(meta)
    assert h.graph_name == "ogbish" and h.node_type == g.node_type and h.edge_type == sorted(g.edge_type)
    assert h.num_nodes_per_type == g.num_nodes_per_type
    assert check_graph(h) == []
    raw = json.loads(meta.read_text())
    assert raw["num_nodes_per_type"] == g.num_nodes_per_type and "num_edges_per_type" in raw
    for et in g.edge_type:
        assert len(h.edges[et].data) == chunks and len(h.num_edges_per_chunk[h.etype_id(et)]) == chunks
        for a, b in zip(_edges(g, et), _edges(h, et)):
            assert np.array_equal(a, b)
    for nt in g.node_type:
        assert len(h.num_nodes_per_chunk[h.ntype_id(nt)]) == chunks
    for section, count in (("node_data", h.num_nodes), ("edge_data", h.num_edges)):
        src_sec, out_sec = getattr(g, section), getattr(h, section)
        assert {k: set(v) for k, v in src_sec.items()} == {k: set(v) for k, v in out_sec.items()}
        for owner, feats in src_sec.items():
            for f, spec in feats.items():
                a = read_rows(g, spec, 0, count(owner))
                b = read_rows(h, out_sec[owner][f], 0, count(owner))
                assert b.shape == a.shape and np.array_equal(b.astype(a.dtype), a), (owner, f)
                if fmt in ("numpy", "parquet"):
                    assert b.dtype == a.dtype


def test_chunk_cli(mag_small, tmp_path, capsys):
    ogb = write_ogb(tmp_path / "ogb", mag_small)
    assert main(["chunk", "--in", str(ogb), "--out", str(tmp_path / "out"), "--chunks", "3"]) == 0
    assert capsys.readouterr().out.strip() == str(tmp_path / "out" / "metadata.json")
    assert main(["chunk", "--in", str(ogb), "--out", str(tmp_path / "out"), "--chunks", "3"]) == 2
    assert "exists" in capsys.readouterr().err
    # inside the OGB folder, every later chunk of it read the chunked graph as a node type
    assert main(["chunk", "--in", str(ogb), "--out", str(ogb / "sub"), "--chunks", "3"]) == 2
    assert "inside the OGB folder" in capsys.readouterr().err and not (ogb / "sub").exists()


def _small_ogb(tmp_path: Path) -> Path:
    ogb = tmp_path / "ogb"
    (ogb / "a___r___b").mkdir(parents=True)
    (ogb / "a").mkdir()
    (ogb / "meta.json").write_text(json.dumps({"num_nodes": {"a": 5, "b": 3}}))
    np.save(ogb / "a___r___b" / "edge_index.npy", np.array([[0, 1, 4, 2], [2, 0, 1, 2]]))
    np.save(ogb / "a" / "node_feat.npy", np.ones((5, 2), dtype=np.float32))
    return ogb


@pytest.mark.parametrize("breakage, file, needle", [
    (lambda o: (o / "meta.json").unlink(), "meta.json", "no such file"),
    (lambda o: (o / "meta.json").write_text("{"), "meta.json", "valid JSON"),
    (lambda o: (o / "meta.json").write_text('{"num_nodes": {"a": 5}}'), "a___r___b", "'b'"),
    (lambda o: np.save(o / "a___r___b" / "edge_index.npy", np.array([[0, 1], [3, 0]])), "edge_index.npy",
     "IDs in [0, 3)"),
    (lambda o: np.save(o / "a___r___b" / "edge_index.npy", np.zeros((3, 4), dtype=np.int64)), "edge_index.npy",
     "(2, E) or (E, 2)"),
    (lambda o: np.save(o / "a___r___b" / "edge_index.npy", np.zeros((2, 4))), "edge_index.npy", "integer"),
    (lambda o: np.save(o / "a" / "node_feat.npy", np.ones((4, 2))), "node_feat.npy", "5 rows"),
    (lambda o: (o / "a" / "node_feat.npy").write_bytes(b"junk"), "node_feat.npy", "readable .npy"),
    (lambda o: (o / "c").mkdir(), "c", "a node type from meta.json"),
    (lambda o: (o / "a___r___b" / "edge_index.npy").rename(o / "a___r___b" / "ei.npy"), "edge_index.npy",
     "no such file"),
])
def test_chunk_errors_name_the_file(tmp_path, capsys, breakage, file, needle):
    ogb = _small_ogb(tmp_path)
    assert chunk_ogb(ogb, tmp_path / "ok", 2)  # the intact folder converts
    breakage(ogb)
    with pytest.raises(InputError) as err:
        chunk_ogb(ogb, tmp_path / "out", 2)
    assert file in str(err.value.file) and needle in str(err.value)
    assert main(["chunk", "--in", str(ogb), "--out", str(tmp_path / "out"), "--chunks", "2"]) == 2
    assert needle in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

"""Digests taken while writing (and remembered by stat identity) equal the files' content hashes, and a changed file
is read again."""

from __future__ import annotations

import os

import numpy as np

from graphshard import digests
from graphshard.formats.dgl_binary import save_graph, save_tensor_dict


def test_written_digest_is_the_content_hash_and_skips_the_read(tmp_path, monkeypatch):
    (tmp_path / "stage").mkdir()
    feats = tmp_path / "stage" / "node_feat.dgl"
    graph = tmp_path / "stage" / "graph.dgl"
    written = [save_tensor_dict(feats, {"x": np.arange(1000, dtype=np.float32).reshape(100, 10)}),
               save_graph(graph, 4, np.array([0, 1, 2]), np.array([1, 2, 3]), formats=("coo", "csc"))]
    assert [d.hexdigest for d in written] == [digests.read_digest(feats), digests.read_digest(graph)]
    digests.remember(written)
    reads = []
    monkeypatch.setattr(digests, "read_digest", lambda p, algorithm=digests.FAST: reads.append(p) or "read")
    os.replace(tmp_path / "stage", tmp_path / "final")  # renaming the folder (as staging does) keeps the identity
    feats, graph = tmp_path / "final" / feats.name, tmp_path / "final" / graph.name
    assert digests.hash_file(feats) == written[0].hexdigest
    assert digests.hash_file(graph) == written[1].hexdigest
    assert reads == []
    with open(graph, "r+b") as f:  # same size, new content: new mtime/ctime, read again
        f.seek(-1, 2)
        f.write(b"\x01")
    assert digests.hash_file(graph) == "read" and reads == [graph]


def test_hashed_read_matches_and_is_remembered(tmp_path, monkeypatch):
    f = tmp_path / "chunk.npy"
    np.save(f, np.arange(10))
    got = digests.hashed_read(f)
    assert got.algorithm == digests.FAST and got.hexdigest == digests.read_digest(f)
    digests.remember([got])
    monkeypatch.setattr(digests, "read_digest", lambda p, algorithm=digests.FAST: "read")
    assert digests.hash_file(f) == got.hexdigest
    assert digests.hash_file(f, digests.INPUT) == "read"  # a digest answers only for its own algorithm


def test_check_and_hash_finds_what_check_graph_finds_and_every_files_hash(mag_small, tmp_path, monkeypatch):
    import shutil

    from graphshard import ingest
    from graphshard.formats.chunked import load_metadata
    from graphshard.pipeline.manifest import graph_files

    graph = load_metadata(mag_small)
    problems, found = ingest.check_and_hash(graph)
    assert problems == [] and ingest.check_graph(graph) == []
    data_files = {p for name, p in graph_files(graph).items() if name != "metadata.json"}
    by_identity = {d.identity: d.hexdigest for d in found}
    assert {digests.identity(os.stat(p)): digests.read_digest(p, digests.INPUT) for p in data_files} == by_identity
    digests.remember(found)
    # the fingerprint reads no chunk again
    monkeypatch.setattr(digests, "read_digest", lambda p, algorithm=digests.FAST: "read")
    assert all(f["blake2b"] != "read" for f in ingest.fingerprint(graph)["files"])

    copy = tmp_path / "g"
    shutil.copytree(mag_small.parent, copy)
    broken = load_metadata(copy / "metadata.json")
    (copy / next(iter(broken.edges.values())).data[0]).write_bytes(b"not a chunk")
    problems, _ = ingest.check_and_hash(broken)
    assert [str(p) for p in problems] == [str(p) for p in ingest.check_graph(broken)] and problems

"""validate(): passes on good partition sets, and catches each entry of a tampering corpus with a message that names
the partition, the file and the check."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

from graphshard.formats.assignment import write_meta, write_parts
from graphshard.formats.chunked import load_metadata
from graphshard.formats.dgl_binary import load_graph, load_tensor_dict, save_graph, save_tensor_dict
from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.validate import CHECKS, problem_lines, validate

ORIG = {"save_orig_nids": True, "save_orig_eids": True}


@pytest.fixture(scope="session")
def client(dask_cluster_client):
    return dask_cluster_client


SMALL_PIECE = 37  # rows per piece: every partition's arrays are read in many pieces, so the multi-piece paths run


@pytest.fixture(autouse=True)
def small_pieces(monkeypatch):
    """Validation reads partitions piece by piece (piecewise.PIECE_ROWS rows at a time): tiny pieces in these tests."""
    from graphshard.validate import piecewise

    monkeypatch.setattr(piecewise, "PIECE_ROWS", SMALL_PIECE)


def assignment(metadata: Path, folder: Path, num_parts: int, seed: int = 0) -> Path:
    """A seeded random assignment folder."""
    g = load_metadata(metadata)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    for nt in g.node_type:
        write_parts(folder, nt, rng.integers(0, num_parts, g.num_nodes(nt)))
    write_meta(folder, num_parts, "random")
    return folder


def partition(client, metadata: Path, out: Path, num_parts: int = 3, **options) -> Path:
    """shuffle() output (config path) for a random assignment."""
    asg = assignment(metadata, out.parent / f"{out.name}-asg", num_parts)
    return shuffle(metadata, asg, out, ShuffleOptions(**options), client)


@pytest.fixture(scope="module")
def mag_set(client, make_graph, tmp_path_factory) -> tuple[Path, Path]:
    """(config, metadata): MAG-like graph in 3 partitions, halo hops 1 as partition_graph builds it, orig IDs saved."""
    md = make_graph("mag", papers=150, chunks=2, seed=3)
    return partition(client, md, tmp_path_factory.mktemp("mag") / "out", halo_hops=1, **ORIG), md


@pytest.fixture(scope="module")
def rmat_set(client, make_graph, tmp_path_factory) -> tuple[Path, Path]:
    md = make_graph("rmat", nodes=300, edges=2500, chunks=2, fmt="parquet", seed=4)
    return partition(client, md, tmp_path_factory.mktemp("rmat") / "out", num_parts=4, halo_hops=2, **ORIG), md


def statuses(report: dict) -> dict[str, str]:
    return {c["name"]: c["status"] for c in report["checks"]}


@pytest.mark.parametrize("piece", [SMALL_PIECE, 1 << 21])
@pytest.mark.parametrize("full", [False, True])
def test_good_sets_pass(mag_set, rmat_set, full, piece, monkeypatch):
    from graphshard.validate import piecewise

    monkeypatch.setattr(piecewise, "PIECE_ROWS", piece)
    for config, md in (mag_set, rmat_set):
        report = validate(config, md, full=full)
        assert report["ok"], problem_lines(report)
        st = statuses(report)
        assert st["edge-identity"] == st["feature-values"] == st["halo-completeness"] == "passed"
        assert st["trainer-ids"] == "skipped"
        assert report["halo_mode"] == "full"


def test_big_endian_input_features_validate(client, make_graph, tmp_path):
    """A big-endian .npy feature is written in DGL's little-endian dtype and validates against the input."""
    md = tmp_path / "graph" / "metadata.json"
    shutil.copytree(make_graph("rmat", nodes=200, edges=1000, chunks=2, seed=6).parent, md.parent)
    meta = json.loads(md.read_text())
    for spec in (meta["node_data"]["_N"]["feat"], meta["edge_data"]["_N:_E:_N"]["weight"]):
        for name in spec["data"]:
            np.save(md.parent / name, np.load(md.parent / name).astype(">f4"))
    report = validate(partition(client, md, tmp_path / "out", num_parts=2, **ORIG), md, full=True)
    assert report["ok"], problem_lines(report)
    assert statuses(report)["feature-values"] == "passed"


@pytest.mark.parametrize("chunks_widened", [1, 2])
def test_parquet_edges_with_more_columns_validate(client, make_graph, tmp_path, chunks_widened):
    """Parquet edge chunks with a column after src and dst (a weight, as exported tables have; the shuffle reads the
    first two only) validate against the input with --full: the input's edge rows are their first two columns too,
    in one chunk or all."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    md = tmp_path / "graph" / "metadata.json"
    shutil.copytree(make_graph("rmat", nodes=200, edges=1000, chunks=2, seed=6, fmt="parquet").parent, md.parent)
    for name in json.loads(md.read_text())["edges"]["_N:_E:_N"]["data"][:chunks_widened]:
        table = pq.read_table(md.parent / name)
        pq.write_table(table.append_column("w", pa.array(np.linspace(0, 1, table.num_rows))), md.parent / name)
    report = validate(partition(client, md, tmp_path / "out", num_parts=2, **ORIG), md, full=True)
    assert report["ok"], problem_lines(report)
    assert statuses(report)["edge-identity"] == "passed"


def test_features_whose_rows_are_matrices_partition_as_in_dgl(client, make_graph, tmp_path):
    """A node feature of (N, 2, 3) in .npy files and an edge feature DGL's parquet writer flattened (its `shape` in the
    schema metadata) are published with their rows' shape, each row at its node or edge: compared with the input."""
    from graphshard.formats.chunked_writer import WRITERS

    src = make_graph("rmat", nodes=400, edges=3000, chunks=2, seed=6)
    shutil.copytree(src.parent, tmp_path / "g")
    md = tmp_path / "g" / "metadata.json"
    meta = json.loads(md.read_text())
    rng, et = np.random.default_rng(1), meta["edge_type"][0]
    meta["node_data"]["_N"]["img"] = {"format": {"name": "numpy"}, "data": []}
    meta["edge_data"][et]["m"] = {"format": {"name": "parquet"}, "data": []}
    for kind, counts, key, fmt in (("node_data", meta["num_nodes_per_chunk"][0], ("_N", "img"), "npy"),
                                   ("edge_data", meta["num_edges_per_chunk"][0], (et, "m"), "parquet")):
        for i, n in enumerate(counts):
            rel = f"{kind}/{key[1]}-{i}.{fmt}"
            with open(tmp_path / "g" / rel, "wb") as fh:
                WRITERS["numpy" if fmt == "npy" else "parquet"][0](fh, rng.random((n, 2, 3), dtype=np.float32), " ")
            meta[kind][key[0]][key[1]]["data"].append(rel)
    md.write_text(json.dumps(meta))
    config = partition(client, md, tmp_path / "out", num_parts=3, halo_hops=1, **ORIG)
    report = validate(config, md, full=True)
    assert report["ok"] and statuses(report)["feature-values"] == "passed", problem_lines(report)
    feats = load_tensor_dict(config.parent / "part1" / "node_feat.dgl")
    edge_feats = load_tensor_dict(config.parent / "part1" / "edge_feat.dgl")
    assert feats["_N/img"].shape[1:] == (2, 3) and edge_feats[f"{et}/m"].shape[1:] == (2, 3)


def test_dask_and_local_runs_agree(client, mag_set):
    config, md = mag_set
    local, dist = validate(config, md), validate(config, md, client=client)
    assert dist["ok"] and local["checks"] == dist["checks"] and local["quality"] == dist["quality"]


def test_output_only_checks_without_input_or_orig_files(client, make_graph, tmp_path):
    md = make_graph("mag", papers=120, chunks=2, seed=5)
    config = partition(client, md, tmp_path / "out", halo_hops=1, halo_mode="in_edges")
    report = validate(config)
    assert report["ok"], problem_lines(report)
    st = statuses(report)
    assert st["inner-nodes"] == st["inner-edges"] == st["halo-completeness"] == "passed"
    assert st["orig-ids"] == st["edge-identity"] == st["feature-values"] == "skipped"
    assert report["halo_mode"] == "in_edges"
    with_input = validate(config, md)
    assert with_input["ok"] and statuses(with_input)["edge-identity"] == "skipped"
    assert statuses(with_input)["counts"] == "passed"


def test_quality_figures(mag_set):
    config, md = mag_set
    q = validate(config)["quality"]
    g = load_metadata(md)
    assert q["num_nodes"] == g.total_nodes and q["num_edges"] == g.total_edges
    matrix = np.array(q["edge_matrix"])
    assert matrix.sum() == g.total_edges
    assert q["edge_cut"]["count"] == matrix.sum() - np.trace(matrix)
    assert q["edge_cut"]["share"] == pytest.approx(q["edge_cut"]["count"] / g.total_edges)
    for nt in g.node_type:
        assert sum(p["inner_nodes"][nt] for p in q["partitions"]) == g.num_nodes(nt)
    stored = sum(sum(p["inner_nodes"].values()) + sum(p["halo_nodes"].values()) for p in q["partitions"])
    assert q["replication_factor"] == pytest.approx(stored / g.total_nodes)
    assert all(p["file_bytes"]["graph.dgl"] > 0 for p in q["partitions"])
    assert q["imbalance"]["all_nodes"] >= 1.0


# ------------------------------------------------------------------------------------------ tampering corpus


def _rewrite_graph(path: Path, edit: Callable) -> None:
    g = load_graph(path)
    edit(g)
    save_graph(path, g.num_nodes, g.src, g.dst, g.ndata, g.edata)


def _edit_json(config: Path, edit: Callable) -> None:
    data = json.loads(config.read_text())
    edit(data)
    config.write_text(json.dumps(data, indent=4))


def shift_node_map(config: Path) -> None:
    def edit(d):
        d["node_map"]["paper"][0][1] += 1
        d["node_map"]["paper"][1][0] += 1
    _edit_json(config, edit)


def wrong_num_nodes(config: Path) -> None:
    _edit_json(config, lambda d: d.update(num_nodes=d["num_nodes"] + 1))


def wrong_graph_num_nodes(config: Path) -> None:
    """graph.dgl's node count (the nodes-per-type vector before the node data) one larger than its node data."""
    path = config.parent / "part1/graph.dgl"
    n = load_graph(path).num_nodes
    raw = path.read_bytes()
    at = raw.rfind(struct.pack("<Qq", 1, n) + struct.pack("<Q", 1))
    assert at > 0
    path.write_bytes(raw[:at] + struct.pack("<Qq", 1, n + 1) + raw[at + 16:])


def swap_graph_files(config: Path) -> None:
    a, b = config.parent / "part0/graph.dgl", config.parent / "part1/graph.dgl"
    tmp = a.with_name("swap")
    a.rename(tmp)
    b.rename(a)
    tmp.rename(b)


def truncate_graph(config: Path) -> None:
    path = config.parent / "part1/graph.dgl"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def change_feature_row(config: Path) -> None:
    path = config.parent / "part1/node_feat.dgl"
    feats = load_tensor_dict(path)
    feats["paper/feat"][3, 2] += 1.0
    save_tensor_dict(path, feats)


def move_edge_to_halo(config: Path) -> None:
    def edit(g):
        inner_e = np.flatnonzero(g.edata["inner_edge"] == 1)
        halo_n = np.flatnonzero(g.ndata["inner_node"] == 0)
        g.dst = g.dst.copy()
        g.dst[inner_e[5]] = halo_n[0]
    _rewrite_graph(config.parent / "part0/graph.dgl", edit)


def remove_node_feat(config: Path) -> None:
    (config.parent / "part2/node_feat.dgl").unlink()


def id_int32(config: Path) -> None:
    _rewrite_graph(config.parent / "part0/graph.dgl", lambda g: g.ndata.update(_ID=g.ndata["_ID"].astype(np.int32)))


def drop_halo_in_edge(config: Path) -> None:
    """Remove one edge from an inner node to a halo node: that halo node's in-edge from the partition (hops = 1)."""
    def edit(g):
        inner = g.ndata["inner_node"] == 1
        victim = np.flatnonzero(inner[g.src] & ~inner[g.dst])[0]
        keep = np.arange(g.src.size) != victim
        g.src, g.dst = g.src[keep], g.dst[keep]
        g.edata = {k: v[keep] for k, v in g.edata.items()}
    _rewrite_graph(config.parent / "part1/graph.dgl", edit)


def orig_not_permutation(config: Path) -> None:
    path = config.parent / "part0/orig_nids.dgl"
    ids = load_tensor_dict(path)
    ids["paper"][1] = ids["paper"][0]
    save_tensor_dict(path, ids)


def orig_duplicate_across_partitions(config: Path) -> None:
    path0, path2 = config.parent / "part0/orig_nids.dgl", config.parent / "part2/orig_nids.dgl"
    a, b = load_tensor_dict(path0), load_tensor_dict(path2)
    b["author"][0] = a["author"][0]
    save_tensor_dict(path2, b)


def flip_feature_byte(config: Path) -> None:
    """One byte of a feature value changed after the set was written (same size, still a valid file)."""
    path = config.parent / "part1/node_feat.dgl"
    data = bytearray(path.read_bytes())
    data[-9] ^= 0x40
    path.write_bytes(bytes(data))


CORPUS = [
    # (tampering, partition named, file named, check)
    (shift_node_map, 0, "part0/graph.dgl", "inner-nodes"),
    (wrong_num_nodes, None, "mag.json", "counts"),
    (wrong_graph_num_nodes, 1, "part1/graph.dgl", "reserved-dtypes"),
    (swap_graph_files, 0, "part0/graph.dgl", "inner-nodes"),
    (truncate_graph, 1, "part1/graph.dgl", "files"),
    (change_feature_row, 1, "part1/node_feat.dgl", "feature-values"),
    (move_edge_to_halo, 0, "part0/graph.dgl", "inner-edges"),
    (remove_node_feat, 2, "part2/node_feat.dgl", "files"),
    (id_int32, 0, "part0/graph.dgl", "reserved-dtypes"),
    (drop_halo_in_edge, 1, "part1/graph.dgl", "halo-completeness"),
    (orig_not_permutation, 0, "part0/orig_nids.dgl", "orig-ids"),
    (orig_duplicate_across_partitions, None, "orig_nids.dgl", "orig-ids"),
    (flip_feature_byte, 1, "part1/node_feat.dgl", "digests"),
]


@pytest.mark.parametrize("tamper,part,file,check", CORPUS, ids=[c[0].__name__ for c in CORPUS])
def test_tampering_is_caught(mag_set, tmp_path, tamper, part, file, check):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    tamper(out / config.name)
    report = validate(out / config.name, md)
    assert not report["ok"]
    assert check in CHECKS
    hits = [p for p in report["problems"] if p["check"] == check and p["partition"] == part
            and file in (p["file"] or "")]
    assert hits, problem_lines(report)
    assert statuses(report)[check] == "failed"
    line = problem_lines(report)[report["problems"].index(hits[0])]
    assert check in line and file in line and (f"partition {part}" if part is not None else "all partitions") in line


def test_digests_file_absent_skips_the_check_and_from_another_set_fails_it(mag_set, tmp_path):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    listing = out / "mag.digests.json"
    doc = json.loads(listing.read_text())
    listing.write_text(json.dumps({**doc, "num_parts": 5}))
    report = validate(out / config.name)
    assert statuses(report)["digests"] == "failed"
    assert "lists 5 partitions, the config 3" in problem_lines(report)[0]
    del doc["files"]["part2/graph.dgl"]
    listing.write_text(json.dumps(doc))
    report = validate(out / config.name)
    assert [(p["partition"], p["file"]) for p in report["problems"]] == [(2, "part2/graph.dgl")]
    listing.unlink()
    report = validate(out / config.name)
    assert report["ok"] and statuses(report)["digests"] == "skipped"


def test_changed_feature_row_named_with_full(mag_set, tmp_path):
    """The sampled run catches one changed row by checksum; --full names the row by its original ID."""
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    change_feature_row(out / config.name)
    orig = load_tensor_dict(out / "part1/orig_nids.dgl")["paper"][3]
    full = validate(out / config.name, md, full=True)
    rows = [p for p in full["problems"] if p["check"] == "feature-values" and "1 of" in p["message"]]
    assert rows and f"original ID {orig}:" in rows[0]["message"]


def test_changed_edge_endpoint_caught(rmat_set, tmp_path):
    """An inner edge whose source is replaced by another node of the same type fails edge identity (hops 2 set)."""
    config, md = rmat_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)

    def edit(g):
        inner = np.flatnonzero(g.edata["inner_edge"] == 1)
        g.src = g.src.copy()
        g.src[inner[7]] = (g.src[inner[7]] + 1) % int((g.ndata["inner_node"] == 1).sum())
    _rewrite_graph(out / "part2/graph.dgl", edit)
    report = validate(out / config.name, md)
    assert any(p["check"] == "edge-identity" and p["partition"] == 2 for p in report["problems"]), \
        problem_lines(report)


def test_unreadable_config_raises(tmp_path):
    from graphshard.errors import InputError

    bad = tmp_path / "g.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="g.json"):
        validate(bad)
    bad.write_text(json.dumps({"graph_name": "g"}))
    with pytest.raises(InputError, match="num_nodes"):
        validate(bad)


def _add_trainer_ids(out: Path, per_machine: int, wrong_part: int | None = None) -> None:
    for p in range(3):
        path = out / f"part{p}/node_feat.dgl"
        feats = load_tensor_dict(path)
        n = feats["paper/feat"].shape[0]
        tid = p * per_machine + np.arange(n, dtype=np.int64) % per_machine
        if p == wrong_part:
            tid[0] = ((p + 1) % 3) * per_machine
        feats["paper/trainer_id"] = tid
        save_tensor_dict(path, feats)


@pytest.mark.parametrize("wrong", [None, 1])
def test_trainer_ids(mag_set, tmp_path, wrong):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    _add_trainer_ids(out, per_machine=2, wrong_part=wrong)
    report = validate(out / config.name, md)
    assert statuses(report)["trainer-ids"] == ("passed" if wrong is None else "failed"), problem_lines(report)
    if wrong is not None:
        assert any(p["partition"] == wrong and p["file"] == "part1/node_feat.dgl" for p in report["problems"])


@pytest.mark.parametrize("make", ["toy_hetero", "toy_homo"])
def test_partitions_from_the_independent_toy_writer_pass(tmp_path, make):
    """tests/handmade.py writes partitions by the reference rules without graphshard.shuffle (in_edges halo)."""
    import handmade

    config = handmade.write_partitions(getattr(handmade, make)(num_parts=3), tmp_path / "toy")
    report = validate(config)
    assert report["ok"], problem_lines(report)
    assert report["halo_mode"] == "in_edges" and statuses(report)["orig-ids"] == "passed"


def test_mark_array_duplicate_and_range_checks_agree_with_sorting():
    """repeats/is_exactly (mark arrays) find what a sort finds: repeats, out-of-range values, overlapping ranges."""
    from graphshard.validate.checks import is_exactly, repeats

    assert repeats(np.array([3, 0, 2, 1]), 4).size == 0
    assert repeats(np.array([3, 1, 2, 1, 1]), 4).tolist() == [1, 1]
    assert repeats(np.array([-1, 5, 5, 0]), 4).tolist() == [5]  # out of range: the sort names the repeat
    ranges = np.array([[4, 6], [0, 2]])
    assert is_exactly(np.array([5, 0, 4, 1]), ranges, 8)
    assert not is_exactly(np.array([5, 0, 4, 4]), ranges, 8)  # a repeat hides a missing ID
    assert not is_exactly(np.array([5, 0, 4, 2]), ranges, 8)  # an ID outside the ranges
    assert not is_exactly(np.array([5, 0, 4, 9]), ranges, 8)  # beyond the bound
    assert not is_exactly(np.array([0, 1, 2, 5]), np.array([[0, 2], [1, 3]]), 8)  # overlapping ranges: sort instead
    assert is_exactly(np.array([], dtype=np.int64), np.array([[3, 3]]), 8)


def test_marks_over_a_graph_sized_range_keep_the_values_not_a_mark_array():
    """A partition's few IDs in a huge ID range are kept and sorted (memory follows the values: a mark array over
    10^12 IDs could not even be made); many IDs in a small range switch to a mark array. Same answers either way."""
    from graphshard.validate.checks import Marks, repeats

    huge = 10**12
    marks = Marks(huge)
    for piece in (np.array([7, huge - 1]), np.array([3])):
        marks.add(piece)
    assert marks.mark is None and marks.clean()
    marks.add(np.array([7]))
    assert not marks.clean() and repeats(np.array([7, huge - 1, 7]), huge).tolist() == [7]
    dense = Marks(64)
    for piece in np.array_split(np.random.default_rng(0).permutation(64), 8):
        dense.add(piece)
    assert dense.mark is not None and not dense.kept and dense.clean()
    dense.add(np.array([64]))  # out of range
    assert not dense.clean()


@pytest.mark.parametrize("formats", [("coo",), ("coo", "csc"), ("csc",)])
def test_indexed_graph_reads_like_the_loader(tmp_path, formats):
    """formats/dgl_columns.py reads graph.dgl piece by piece (COO in edge-ID order) or whole (CSC only): same arrays."""
    from graphshard.errors import InputError
    from graphshard.formats.dgl_columns import graph_columns, tensor_dict_columns
    from graphshard.validate.piecewise import pieces

    rng = np.random.default_rng(0)
    src, dst = rng.integers(0, 50, 300), rng.integers(0, 50, 300)
    path = tmp_path / "graph.dgl"
    save_graph(path, 50, src, dst, {"_ID": np.arange(50)}, {"_ID": np.arange(300), "w": rng.random((300, 3))},
               formats=formats)
    ref, cols = load_graph(path), graph_columns(path)
    assert cols.num_nodes == ref.num_nodes and cols.num_edges == ref.num_edges
    for name, col, want in (("src", cols.src, ref.src), ("dst", cols.dst, ref.dst), ("w", cols.edata["w"],
                                                                                      ref.edata["w"])):
        got = np.concatenate([col.read(a, b) for a, b in pieces(col.rows, SMALL_PIECE)])
        assert np.array_equal(got, want), name
    save_tensor_dict(tmp_path / "t.dgl", {"x": rng.random((10, 2)), "y": np.arange(7)})
    tensors = tensor_dict_columns(tmp_path / "t.dgl")
    assert np.array_equal(tensors["x"].read(3, 9), load_tensor_dict(tmp_path / "t.dgl")["x"][3:9])
    (tmp_path / "t.dgl").write_bytes((tmp_path / "t.dgl").read_bytes()[:-8])
    with pytest.raises(InputError, match="t.dgl"):
        tensor_dict_columns(tmp_path / "t.dgl")


def test_piece_size_does_not_change_the_report(mag_set, tmp_path, monkeypatch):
    """Tampered set: the same problems and figures whether partitions are read in tiny pieces or in one."""
    from graphshard.validate import piecewise

    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    for tamper in (change_feature_row, move_edge_to_halo, drop_halo_in_edge, orig_not_permutation):
        tamper(out / config.name)
    reports = []
    for piece in (SMALL_PIECE, 1 << 21):
        monkeypatch.setattr(piecewise, "PIECE_ROWS", piece)
        reports.append(validate(out / config.name, md))
    assert not reports[0]["ok"] and reports[0]["problems"] == reports[1]["problems"]
    assert reports[0]["quality"] == reports[1]["quality"]

"""`check_graph` and `graphshard inspect --check`: every listed problem is reported with file, field and expectation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphshard.cli import main
from graphshard.errors import InputError
from graphshard.formats import readers
from graphshard.formats.chunked import load_metadata
from graphshard.formats.chunked_writer import WRITERS
from graphshard.formats.readers import read_chunk
from graphshard.ingest import check_graph, fingerprint, summary
from graphshard.storage import Storage

ET = "_N:_E:_N"


@pytest.fixture
def rmat_copy(rmat_small, tmp_path) -> Path:
    """A private copy of rmat_small (numpy files) to corrupt."""
    shutil.copytree(rmat_small.parent, tmp_path / "g")
    return tmp_path / "g" / "metadata.json"


@pytest.fixture
def mixed_copy(make_graph, tmp_path) -> Path:
    """A private copy of a small mixed-format MAG graph (csv, numpy and parquet files) to corrupt."""
    src = make_graph("mag", papers=300, chunks=2, fmt="mixed")
    shutil.copytree(src.parent, tmp_path / "m")
    return tmp_path / "m" / "metadata.json"


def _meta(path: Path) -> dict:
    return json.loads(path.read_text())


def _edit_meta(path: Path, edit) -> None:
    data = _meta(path)
    edit(data)
    path.write_text(json.dumps(data))


def _cli_fails(metadata: Path, capsys, *needles: str) -> str:
    """Run `inspect --check`; assert exit status 2 and that stderr names every needle."""
    assert main(["inspect", str(metadata), "--check"]) == 2
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def _only_problem(metadata: Path) -> InputError:
    problems = check_graph(metadata)
    assert len(problems) == 1, problems
    return problems[0]


def test_sound_graphs_pass(rmat_small, mag_small, make_graph, capsys):
    for g in (rmat_small, mag_small, make_graph("mag", papers=300, chunks=2, fmt="mixed"),
              make_graph("rmat", nodes=500, edges=3000, chunks=2, fmt="csv")):
        assert check_graph(g) == []
        assert main(["inspect", str(g), "--check"]) == 0
    assert "no problems" in capsys.readouterr().out


def test_missing_file(rmat_copy, capsys):
    path = rmat_copy.parent / _meta(rmat_copy)["edges"][ET]["data"][1]
    path.unlink()
    p = _only_problem(rmat_copy)
    assert p.file == str(path) and p.field == f"edges['{ET}'].data[1]" and "no such file" in str(p)
    _cli_fails(rmat_copy, capsys, str(path), f"edges['{ET}'].data[1]", "no such file")


def test_files_here_but_missing_on_the_workers_are_one_line(rmat_copy):
    """Workers that report 'no such file' for files this host has: a cluster without this host's filesystem
    (tests/test_multihost.py shows it on separate hosts), said once, not once per file."""
    from graphshard.ingest.step import _unshared

    files = [rmat_copy.parent / f for f in _meta(rmat_copy)["edges"][ET]["data"]]
    seen_missing = [InputError(f, f"edges['{ET}'].data[{i}]", "an existing chunk file", "no such file")
                    for i, f in enumerate(files)]
    (line,) = map(str, _unshared(seen_missing))
    assert line.startswith(f"ingest: {files[0]} (and {len(files) - 1} more input files) exists on this host but")
    assert "\n" not in line and "s3://" in line
    files[1].unlink()  # a file missing here too is the input's problem: each reported as before
    assert _unshared(seen_missing) == []


@pytest.mark.parametrize("which", ["numpy", "parquet", "csv"])
def test_wrong_edge_row_count(mixed_copy, capsys, which):
    meta = _meta(mixed_copy)
    et = next(et for et in meta["edge_type"] if meta["edges"][et]["format"]["name"] == which)
    i = meta["edge_type"].index(et)
    meta["num_edges_per_chunk"][i][0] += 5
    meta["num_edges_per_chunk"][i][1] -= 5
    mixed_copy.write_text(json.dumps(meta))
    expected = meta["num_edges_per_chunk"][i]
    problems = check_graph(mixed_copy)
    assert [p.field for p in problems] == [f"edges['{et}'].data[0]", f"edges['{et}'].data[1]"]
    assert f"expected {expected[0]} rows (num_edges_per_chunk), found {expected[0] - 5} rows" in str(problems[0])
    _cli_fails(mixed_copy, capsys, "2 problem(s)", meta["edges"][et]["data"][0], meta["edges"][et]["data"][1])


def test_src_dst_out_of_range(mixed_copy, capsys):
    meta = _meta(mixed_copy)
    et = "author:affiliated_with:institution"
    assert meta["edges"][et]["format"]["name"] == "csv"
    path = mixed_copy.parent / meta["edges"][et]["data"][1]
    lines = path.read_text().splitlines()
    n_inst = meta["num_nodes_per_type"][meta["node_type"].index("institution")]
    lines[7] = f"{lines[7].split()[0]} {n_inst}"
    lines[3] = f"-1 {lines[3].split()[1]}"
    path.write_text("\n".join(lines) + "\n")
    problems = check_graph(mixed_copy)
    fields = sorted(p.field for p in problems)
    assert fields == [f"edges['{et}'].data[1] dst", f"edges['{et}'].data[1] src"]
    dst = next(p for p in problems if p.field.endswith("dst"))
    assert f"institution IDs in [0, {n_inst})" in str(dst) and f"first {n_inst} at row 7" in str(dst)
    src = next(p for p in problems if p.field.endswith("src"))
    assert "author IDs in [0, " in str(src) and "first -1 at row 3" in str(src)
    _cli_fails(mixed_copy, capsys, str(path), "src", "dst", f"[0, {n_inst})")


def test_unknown_edge_type_in_edges(rmat_copy, capsys):
    _edit_meta(rmat_copy, lambda d: d["edges"].update({"_N:_F:_N": d["edges"][ET]}))
    p = _only_problem(rmat_copy)
    assert p.file == str(rmat_copy) and p.field == "edges['_N:_F:_N']" and "listed in edge_type" in str(p)
    _cli_fails(rmat_copy, capsys, str(rmat_copy), "edges['_N:_F:_N']", "edge_type")


def test_malformed_edge_type_string(rmat_copy, capsys):
    def edit(d):
        d["edge_type"] = ["_N-_E-_N"]
        d["edges"] = {"_N-_E-_N": d["edges"][ET]}
        d.pop("edge_data")
    _edit_meta(rmat_copy, edit)
    p = _only_problem(rmat_copy)
    assert p.field == "edge_type[0]" and "'src:rel:dst'" in str(p) and "'_N-_E-_N'" in str(p)
    _cli_fails(rmat_copy, capsys, str(rmat_copy), "edge_type[0]", "src:rel:dst")


@pytest.mark.parametrize("feature", ["feat", "label", "year", "h_index"])  # parquet, numpy, csv, parquet
def test_feature_with_wrong_row_count(mixed_copy, capsys, feature):
    meta = _meta(mixed_copy)
    ntype = "author" if feature == "h_index" else "paper"
    spec = meta["node_data"][ntype][feature]
    path = mixed_copy.parent / spec["data"][-1]
    g = load_metadata(mixed_copy)
    arr = read_chunk(g, g.node_data[ntype][feature], len(spec["data"]) - 1)[:-3]
    with Storage().write_atomic(path) as fh:
        WRITERS[spec["format"]["name"]][0](fh, arr, " ")
    p = _only_problem(mixed_copy)
    field = f"node_data['{ntype}']['{feature}']"
    n = g.num_nodes(ntype)
    assert p.field == field and f"expected {n} rows in all" in str(p) and f"found {n - 3} rows" in str(p)
    _cli_fails(mixed_copy, capsys, field, spec["data"][0], f"{n - 3} rows")


def test_unsupported_format_name(rmat_copy, capsys):
    _edit_meta(rmat_copy, lambda d: d["node_data"]["_N"]["label"]["format"].update(name="hdf5"))
    p = _only_problem(rmat_copy)
    assert p.field == "node_data['_N']['label'].format.name" and "'hdf5'" in str(p) and "'parquet'" in str(p)
    _cli_fails(rmat_copy, capsys, str(rmat_copy), "node_data['_N']['label'].format.name", "hdf5")


def test_bad_json(rmat_copy, capsys):
    rmat_copy.write_text(rmat_copy.read_text()[:-40])
    p = _only_problem(rmat_copy)
    assert p.file == str(rmat_copy) and "valid JSON" in str(p)
    _cli_fails(rmat_copy, capsys, str(rmat_copy), "valid JSON", "line")


def test_three_d_feature(rmat_copy, capsys):
    """Rows that are matrices are a feature as DGL partitions them; its files must agree on the row shape."""
    data = _meta(rmat_copy)["node_data"]["_N"]["feat"]["data"]
    for rel in data:
        arr = np.load(rmat_copy.parent / rel)
        np.save(rmat_copy.parent / rel, arr.reshape(len(arr), 4, 4))
    assert check_graph(rmat_copy) == [] and main(["inspect", str(rmat_copy), "--check"]) == 0
    last = rmat_copy.parent / data[-1]
    np.save(last, np.load(last).reshape(-1, 2, 8))
    p = _only_problem(rmat_copy)
    assert p.file == str(last) and "rows of shape (4, 4)" in str(p) and "shape (2, 8)" in str(p)


def test_empty_data_list(rmat_copy, capsys):
    _edit_meta(rmat_copy, lambda d: d["edge_data"][ET]["weight"].update(data=[]))
    p = _only_problem(rmat_copy)
    assert p.field == f"edge_data['{ET}']['weight'].data" and "at least 1 file (for a type with no rows, list one " \
        "empty file" in str(p)
    _cli_fails(rmat_copy, capsys, str(rmat_copy), f"edge_data['{ET}']['weight'].data", "found 0")


def test_bad_dtype_and_mismatched_files(rmat_copy):
    meta = _meta(rmat_copy)
    label0 = rmat_copy.parent / meta["node_data"]["_N"]["label"]["data"][0]
    np.save(label0, np.load(label0).astype("U3"))
    feat2 = rmat_copy.parent / meta["node_data"]["_N"]["feat"]["data"][2]
    np.save(feat2, np.load(feat2)[:, :8])
    problems = check_graph(rmat_copy)
    text = "\n".join(map(str, problems))
    assert "numeric or bool dtype" in text and "dtype <U3" in text
    assert "rows of shape (16,)" in text and "shape (8,)" in text


def test_every_problem_is_reported_also_on_dask(rmat_copy, capsys):
    """Several broken files give one problem each, in one run, the same in-process and on a Dask cluster."""
    from distributed import Client, LocalCluster

    meta = _meta(rmat_copy)
    (rmat_copy.parent / meta["edges"][ET]["data"][0]).unlink()
    e2 = rmat_copy.parent / meta["edges"][ET]["data"][2]
    arr = np.load(e2)
    arr[0, 0] = 10**6
    np.save(e2, arr)
    weight1 = rmat_copy.parent / meta["edge_data"][ET]["weight"]["data"][1]
    np.save(weight1, np.zeros(4, dtype=np.float32))  # too few rows
    local = check_graph(rmat_copy)
    assert len(local) == 3
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=True, dashboard_address=":0") as cluster, \
            Client(cluster) as client:
        remote = check_graph(rmat_copy, client)
    assert [str(p) for p in remote] == [str(p) for p in local]
    assert all(isinstance(p, InputError) for p in remote)
    err = _cli_fails(rmat_copy, capsys, "3 problem(s)")
    assert err.count("\n  - ") == 3


def test_check_makes_the_preflight_of_run(rmat_copy, capsys):
    """`inspect --check` makes `graphshard run`'s pre-flight too: a file listed twice in one `data` list is warned of
    (its rows read twice; the counts still add up, so no problem: exit 0)."""
    def repeat(d: dict) -> None:
        files = d["node_data"]["_N"]["feat"]["data"]
        files[2] = files[1]
    _edit_meta(rmat_copy, repeat)
    assert main(["inspect", str(rmat_copy), "--check"]) == 0
    out, err = capsys.readouterr()
    assert "node_data['_N']['feat'].data[2] is the same file as data[1]" in err and "667 rows are read twice" in err
    assert "no problems" in out


def test_a_problem_both_checks_find_is_reported_once(mixed_copy, capsys):
    """A csv feature of words: the pre-flight names its first line, the full read the value and column; one line."""
    path = mixed_copy.parent / _meta(mixed_copy)["node_data"]["paper"]["year"]["data"][1]
    path.write_text("abc def\n" * 5)
    err = _cli_fails(mixed_copy, capsys, str(path), "node_data['paper']['year'].data[1]", "'abc' in column 1")
    assert "problem(s)" not in err and "first line" not in err, err


def test_parquet_feature_with_mixed_column_types(mixed_copy, capsys):
    """A count column beside float32 ones reads as DGL's pandas read makes it, float64, and so does the feature
    (its other files float32); integer columns that would become a float (int64 beside uint64) are refused."""
    meta = _meta(mixed_copy)
    spec = meta["node_data"]["paper"]["feat"]
    assert spec["format"]["name"] == "parquet"
    path = mixed_copy.parent / spec["data"][0]
    table = pq.read_table(path)
    pq.write_table(table.set_column(0, "c0", pa.array(np.arange(table.num_rows, dtype=np.int64))), path)
    assert check_graph(mixed_copy) == []
    assert summary(mixed_copy)["node_types"]["paper"]["features"]["feat"]["dtype"] == "float64"
    g = load_metadata(mixed_copy)
    first = read_chunk(g, g.node_data["paper"]["feat"], 0)
    assert first.dtype == np.float64 and first[:, 0].tolist() == list(range(table.num_rows))
    ints = pa.table({"a": pa.array(np.zeros(table.num_rows, dtype=np.int64)),
                     "b": pa.array(np.zeros(table.num_rows, dtype=np.uint64))})
    pq.write_table(ints, path)
    p = _only_problem(mixed_copy)
    assert p.file == str(path) and p.field == "node_data['paper']['feat'].data[0]" and "one dtype" in str(p)


# ---- summary, fingerprint, inspect output -----------------------------------------------------------------------

def test_summary_of_mag(mag_small):
    s = summary(mag_small)
    g = load_metadata(mag_small)
    assert s["num_nodes"] == g.total_nodes and s["num_edges"] == g.total_edges
    assert list(s["node_types"]) == g.node_type and list(s["edge_types"]) == g.edge_type
    feat = s["node_types"]["paper"]["features"]["feat"]
    assert feat["dtype"] == "float32" and feat["shape"] == [g.num_nodes("paper"), 16] and feat["files"] == 3
    assert s["node_types"]["institution"]["features"] == {}
    writes = s["edge_types"]["author:writes:paper"]
    assert writes["features"]["feat"]["shape"] == [g.num_edges("author:writes:paper"), 4]
    on_disk = sum(p.stat().st_size for p in mag_small.parent.rglob("*") if p.is_file() and p.name != "metadata.json")
    assert s["bytes"] == on_disk


def test_inspect_prints_text_and_json(mag_small, capsys):
    assert main(["inspect", str(mag_small)]) == 0
    out = capsys.readouterr().out
    assert "paper: 1,000 nodes, 2 chunk(s)" in out and "institution: 12 nodes" in out and "no features" in out
    assert "float32  1000x16" in out and "author:writes:paper: 9,715 edges" in out
    assert main(["inspect", str(mag_small.parent), "--json", "--check"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["check"] == "ok" and data["node_types"]["author"]["features"]["h_index"]["dtype"] == "float32"


def test_inspect_missing_metadata(tmp_path, capsys):
    assert main(["inspect", str(tmp_path / "nope.json")]) == 2
    assert "nope.json" in capsys.readouterr().err


def test_fingerprint_follows_content_not_location(make_graph, tmp_path):
    a = make_graph("rmat", nodes=300, edges=2000, chunks=2, fmt="parquet")
    shutil.copytree(a.parent, tmp_path / "b")
    b = tmp_path / "b" / "metadata.json"
    fa, fb = fingerprint(a), fingerprint(b)
    assert fa == fb
    assert json.dumps(fa, sort_keys=True) == json.dumps(fingerprint(a), sort_keys=True)
    assert [f["path"] for f in fa["files"]] == sorted(f["path"] for f in fa["files"])
    assert fa["num_edges_per_type"] == {ET: 2000} and len(fa["files"]) == 2 * 5
    edge1 = tmp_path / "b" / fa["files"][0]["path"]
    data = bytearray(edge1.read_bytes())
    data[-1] ^= 1
    edge1.write_bytes(bytes(data))
    fc = fingerprint(b)
    assert fc["digest"] != fa["digest"]
    assert [f["path"] for f in fc["files"] if f not in fa["files"]] == [fa["files"][0]["path"]]


def test_fingerprint_of_absolute_paths(rmat_copy):
    """A spec naming a file by absolute path outside the folder is listed by that path."""
    meta = _meta(rmat_copy)
    outside = rmat_copy.parent.parent / "label0.npy"
    shutil.move(rmat_copy.parent / meta["node_data"]["_N"]["label"]["data"][0], outside)
    meta["node_data"]["_N"]["label"]["data"][0] = str(outside)
    rmat_copy.write_text(json.dumps(meta))
    assert check_graph(rmat_copy) == []
    assert str(outside.resolve()) in [f["path"] for f in fingerprint(rmat_copy)["files"]]


def test_summary_says_when_a_large_csv_dtype_comes_from_its_first_rows(mixed_copy, monkeypatch, capsys):
    """A csv file over the scan limit whose first block holds whole numbers may hold a float further on: the summary
    gives the first block's dtype and says it is not known for certain; under the limit the scan finds the float."""
    path = mixed_copy.parent / _meta(mixed_copy)["node_data"]["paper"]["year"]["data"][0]
    rows = len([line for line in path.read_text().splitlines() if line])
    path.write_text("1999\n" * (rows - 1) + "\n" * 70_000 + "2000.5\n")  # blank lines: skipped, as pyarrow does
    year = summary(mixed_copy)["node_types"]["paper"]["features"]["year"]
    assert (year["dtype"], year["dtype_known"]) == ("float64", True)
    monkeypatch.setattr(readers, "CSV_SCAN_LIMIT", 100)
    year = summary(mixed_copy)["node_types"]["paper"]["features"]["year"]
    assert (year["dtype"], year["dtype_known"]) == ("int64", False)
    assert main(["inspect", str(mixed_copy)]) == 0
    assert "dtype from the first rows (float64 if a later row is a float)" in capsys.readouterr().out

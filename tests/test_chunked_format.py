"""The metadata.json model and the chunk writer: derived counts, paths, csv delimiters, parquet list columns."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import load_metadata, parse_metadata
from graphshard.formats.chunked_writer import ChunkedGraphWriter
from graphshard.formats.readers import read_chunk, read_edge_chunk, read_rows
from graphshard.ingest import check_graph
from graphshard.precheck import precheck


def _tiny(out: Path, fmt: str = "numpy", delimiter: str = " ") -> Path:
    w = ChunkedGraphWriter(out, "tiny", ["a", "b"], ["a:r:b", "b:s:a"], delimiter=delimiter)
    w.add_edges("a:r:b", np.array([0, 1, 2]), np.array([1, 0, 1]), fmt)
    w.add_edges("a:r:b", np.array([2]), np.array([0]), fmt)
    w.add_edges("b:s:a", np.array([0, 1]), np.array([2, 2]), fmt)
    w.set_node_chunks("a", [2, 1])
    w.set_node_chunks("b", [2])
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    w.add_node_feature("a", "x", x[:2], fmt)
    w.add_node_feature("a", "x", x[2:], fmt)
    w.add_edge_feature("b:s:a", "w", np.array([0.5, 1.5]), fmt)
    return w.finish()


@pytest.mark.parametrize("delimiter", [" ", ",", "\t", "|"])
def test_csv_delimiter_is_honoured(tmp_path, delimiter):
    meta = _tiny(tmp_path / "g", "csv", delimiter)
    g = load_metadata(meta)
    assert g.edges["a:r:b"].format.delimiter == delimiter
    first = (meta.parent / g.edges["a:r:b"].data[0]).read_text().splitlines()[0]
    assert first == f"0{delimiter}1"
    src, dst = read_edge_chunk(g, "a:r:b", 0)
    assert src.tolist() == [0, 1, 2] and dst.tolist() == [1, 0, 1]
    assert read_rows(g, g.node_data["a"]["x"], 0, 3).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert check_graph(g) == []


def test_csv_lines_ending_in_the_delimiter_read_as_their_values(tmp_path):
    """A delimiter after the last value of every line (a trailing space some writers leave) is no value: the file
    reads as without it and passes every check; one line without it is still named by its line."""
    g = load_metadata(_tiny(tmp_path / "g", "csv"))
    g.path(g.edges["a:r:b"].data[0]).write_text("0 1 \n1 0 \n2 1 \n")
    g.path(g.node_data["a"]["x"].data[0]).write_text("0 1 \n2 3 \n")
    assert [c.tolist() for c in read_edge_chunk(g, "a:r:b", 0)] == [[0, 1, 2], [1, 0, 1]]
    assert read_rows(g, g.node_data["a"]["x"], 0, 3).tolist() == [[0, 1], [2, 3], [4, 5]]
    assert check_graph(g) == [] and precheck(g) == []
    g.path(g.edges["a:r:b"].data[0]).write_text("0 1 \n1 0\n2 1 \n")
    problems = precheck(g) + check_graph(g)
    assert problems and all("line 2" in str(p) for p in problems), problems


def test_csv_read_with_the_wrong_delimiter_names_it(tmp_path):
    meta = _tiny(tmp_path / "g", "csv", ",")
    data = json.loads(meta.read_text())
    data["edges"]["a:r:b"]["format"]["delimiter"] = " "
    meta.write_text(json.dumps(data))
    problems = check_graph(meta)
    assert problems and all(p.field.startswith("edges['a:r:b']") for p in problems)
    assert "2 columns" in str(problems[0]) or "format.delimiter" in str(problems[0])


def test_counts_are_derived_accepted_or_rejected(tmp_path):
    meta = _tiny(tmp_path / "g")
    data = json.loads(meta.read_text())
    assert data["num_nodes_per_type"] == [3, 2] and data["num_edges_per_type"] == [4, 2]
    derived = {k: v for k, v in data.items() if k not in ("num_nodes_per_type", "num_edges_per_type")}
    g = parse_metadata(derived, meta.parent)
    assert g.num_nodes_per_type == [3, 2] and g.num_edges("a:r:b") == 4 and g.total_nodes == 5
    assert parse_metadata(data, meta.parent).num_edges_per_type == [4, 2]
    with pytest.raises(InputError,
                       match=r"field 'num_edges_per_type': expected the sums of num_edges_per_chunk \[4, 2\]"):
        parse_metadata({**data, "num_edges_per_type": [4, 3]}, meta.parent)


def test_offsets_and_lookups(tmp_path):
    g = load_metadata(_tiny(tmp_path / "g"))
    assert g.node_chunk_offsets("a").tolist() == [0, 2, 3]
    assert g.edge_chunk_offsets("a:r:b").tolist() == [0, 3, 4]
    assert g.type_node_offsets.tolist() == [0, 3, 5]
    assert g.canonical("b:s:a").src == "b" and g.etype_id("b:s:a") == 1 and not g.is_homogeneous


def test_relative_and_absolute_paths(tmp_path):
    meta = _tiny(tmp_path / "g")
    data = json.loads(meta.read_text())
    moved = tmp_path / "elsewhere.npy"
    (meta.parent / data["node_data"]["a"]["x"]["data"][1]).rename(moved)
    data["node_data"]["a"]["x"]["data"][1] = str(moved)
    meta.write_text(json.dumps(data))
    g = load_metadata(meta.parent)  # a folder finds its metadata.json
    assert g.path(data["node_data"]["a"]["x"]["data"][0]) == meta.parent / data["node_data"]["a"]["x"]["data"][0]
    assert g.path(str(moved)) == moved
    assert read_rows(g, g.node_data["a"]["x"], 0, 3)[2].tolist() == [4, 5]
    assert check_graph(g) == []


def test_a_checkout_of_links_into_a_store_reads_its_files_beside_the_links(tmp_path):
    """DVC and git-annex check a graph out as links into a content store (metadata.json, the config too): chunk paths
    are relative to the folder the user named, as DGL joins them, never to the store the link points into."""
    import shutil

    from graphshard.ingest import fingerprint
    from graphshard.pipeline.config import load_config

    plain = _tiny(tmp_path / "plain").parent
    store, checkout = tmp_path / "store", tmp_path / "checkout" / "g"
    store.mkdir()
    shutil.copytree(plain, checkout)
    for i, f in enumerate(sorted(p for p in checkout.rglob("*") if p.is_file())):
        f.rename(store / f"object{i}")
        f.symlink_to(store / f"object{i}")
    (store / "job.yaml").write_text("input:\n  metadata: g/metadata.json\noutput:\n  dir: out\nnum_parts: 2\n")
    (checkout.parent / "job.yaml").symlink_to(store / "job.yaml")
    config = load_config(checkout.parent / "job.yaml")
    assert Path(config.input.metadata) == checkout / "metadata.json"
    g = load_metadata(config.input.metadata)
    assert g.base_dir == checkout and check_graph(g) == []
    assert fingerprint(g)["digest"] == fingerprint(load_metadata(plain))["digest"]  # the same bytes, the same names


def test_parquet_list_column_feature(tmp_path):
    meta = _tiny(tmp_path / "g", "parquet")
    data = json.loads(meta.read_text())
    path = meta.parent / data["node_data"]["a"]["x"]["data"][0]
    pq.write_table(pa.table({"x": pa.array([[0.0, 1.0], [2.0, 3.0]], type=pa.list_(pa.float32()))}), path)
    g = load_metadata(meta)
    arr = read_chunk(g, g.node_data["a"]["x"], 0)
    assert arr.shape == (2, 2) and arr.dtype == np.float32 and arr.tolist() == [[0, 1], [2, 3]]
    assert check_graph(g) == []


def test_parquet_edges_use_first_two_columns(tmp_path):
    meta = _tiny(tmp_path / "g", "parquet")
    data = json.loads(meta.read_text())
    path = meta.parent / data["edges"]["b:s:a"]["data"][0]
    pq.write_table(pa.table({"s": [0, 1], "d": [2, 2], "extra": [9, 9]}), path)
    src, dst = read_edge_chunk(load_metadata(meta), "b:s:a", 0)
    assert src.tolist() == [0, 1] and dst.tolist() == [2, 2]


def test_writer_failure_leaves_nothing(tmp_path):
    with pytest.raises(GraphshardError, match="unsupported chunk format"):
        with ChunkedGraphWriter(tmp_path / "g", "tiny", ["a"], ["a:r:a"]) as w:
            w.add_edges("a:r:a", np.array([0]), np.array([0]), "numpy")
            w.add_node_feature("a", "x", np.array([0]), "hdf5")
    assert list(tmp_path.iterdir()) == []


def test_metadata_problems_name_the_field(tmp_path):
    meta = _tiny(tmp_path / "g")
    base = json.loads(meta.read_text())
    cases = [
        (lambda d: d["num_nodes_per_chunk"].pop(), "num_nodes_per_chunk", "one row per node type (2)"),
        (lambda d: d["num_edges_per_chunk"][0].append(1), "edges['a:r:b'].data", "one file per chunk"),
        (lambda d: d["node_data"].update(c={}), "node_data['c']", "node type listed in node_type"),
        (lambda d: d["edge_type"].__setitem__(0, "a:r:z"), "edge_type[0]", "'z' in 'a:r:z'"),
        (lambda d: d["edge_type"].__setitem__(0, "a:r/x:b"), "edge_type[0]", "a relation name without '/'"),
        (lambda d: d.update(graph_name="a-b"), "graph_name", "letters, digits and '_'"),
        (lambda d: d["num_nodes_per_chunk"][1].__setitem__(0, -2), "num_nodes_per_chunk[1]", ">= 0"),
        (lambda d: d.update(num_nodes_per_chunk=[[0] * len(r) for r in d["num_nodes_per_chunk"]]),
         "num_nodes_per_chunk", "at least one node in all"),
        (lambda d: d.pop("edges"), "edges", "required field"),
    ]
    for edit, field, expected in cases:
        data = json.loads(json.dumps(base))
        edit(data)
        with pytest.raises(InputError) as err:
            parse_metadata(data, meta.parent, meta)
        assert err.value.field == field and expected in str(err.value) and str(meta) in str(err.value), str(err.value)


@pytest.mark.parametrize("edit", [
    lambda b: b + b"\n",  # a blank line at the end
    lambda b: b.replace(b"\n", b"\n\n", 1),  # a blank line in the middle
    lambda b: b.replace(b"\n", b"\r\n") + b"\r\n",  # CRLF, a blank line at the end
    lambda b: b.replace(b"\n", b"\r"),  # old Mac line ends
    lambda b: b.rstrip(b"\n"),  # no final newline (a:r:b's second chunk: one row, so no line end at all)
], ids=["trailing-blank", "blank-inside", "crlf-blank", "cr-only", "no-final-newline"])
def test_csv_rows_are_the_rows_pyarrow_reads(tmp_path, edit):
    meta = _tiny(tmp_path / "g", "csv")
    g = load_metadata(meta)
    for name in g.data_files():
        path = g.path(name)
        path.write_bytes(edit(path.read_bytes()))
    assert precheck(g) == [] and check_graph(g) == []
    assert read_edge_chunk(g, "a:r:b", 0)[0].tolist() == [0, 1, 2]


def test_pickled_npy_is_named_by_its_dtype(tmp_path):
    meta = _tiny(tmp_path / "g")
    g = load_metadata(meta)
    np.save(g.path(g.node_data["a"]["x"].data[0]), np.array([{"x": 1}, None], dtype=object), allow_pickle=True)
    problems = precheck(g)
    assert len(problems) == 1 and problems[0].field == "node_data['a']['x'].data[0]", problems
    assert "numeric or bool dtype, found dtype object" in str(problems[0]) and "truncated" not in str(problems[0])


def test_corrupt_parquet_page_is_one_line(tmp_path):
    meta = _tiny(tmp_path / "g", "parquet")
    g = load_metadata(meta)
    path = g.path(g.edges["a:r:b"].data[0])
    pq.write_table(pa.table({"s": np.arange(600), "d": np.arange(600)}), path, row_group_size=200)
    data = bytearray(path.read_bytes())
    start = pq.ParquetFile(path).metadata.row_group(1).column(1).data_page_offset
    data[start + 10:start + 60] = bytes(b ^ 0x5A for b in data[start + 10:start + 60])
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="a readable chunk file") as err:
        read_edge_chunk(g, "a:r:b", 0)
    assert "\n" not in str(err.value), str(err.value)


def test_numeric_columns_of_different_dtypes_are_promoted(tmp_path):
    meta = _tiny(tmp_path / "g", "parquet")
    g = load_metadata(meta)
    pq.write_table(pa.table({"s": pa.array([0, 1, 2], pa.int32()), "d": pa.array([1, 0, 1], pa.int64())}),
                   g.path(g.edges["a:r:b"].data[0]))
    pq.write_table(pa.table({"c0": pa.array([0, 2], pa.int64()), "c1": pa.array([1.5, 3.5])}),
                   g.path(g.node_data["a"]["x"].data[0]))
    pq.write_table(pa.table({"c0": [4.0], "c1": [5.5]}), g.path(g.node_data["a"]["x"].data[1]))
    assert precheck(g) == [] and check_graph(g) == []
    assert read_edge_chunk(g, "a:r:b", 0)[0].tolist() == [0, 1, 2]
    x = read_rows(g, g.node_data["a"]["x"], 0, 3)
    assert x.dtype == np.float64 and x.tolist() == [[0, 1.5], [2, 3.5], [4, 5.5]]
    # a count column beside float32 features: float64, as DGL's pandas read makes it; the float32 file follows
    pq.write_table(pa.table({"c0": pa.array([0, 2], pa.int64()), "c1": pa.array([1.5, 3.5], pa.float32())}),
                   g.path(g.node_data["a"]["x"].data[0]))
    pq.write_table(pa.table({"c0": pa.array([4], pa.float32()), "c1": pa.array([5.5], pa.float32())}),
                   g.path(g.node_data["a"]["x"].data[1]))
    assert precheck(g) == [] and check_graph(g) == []
    x = read_rows(g, g.node_data["a"]["x"], 0, 3)
    assert x.dtype == np.float64 and x.tolist() == [[0, 1.5], [2, 3.5], [4, 5.5]]
    pq.write_table(pa.table({"s": pa.array([0, 1, 2], pa.uint64()), "d": pa.array([1, 0, 1], pa.int64())}),
                   g.path(g.edges["a:r:b"].data[0]))
    assert "columns of one dtype" in str(precheck(g)[0]) and "cast the columns to one dtype" in str(precheck(g)[0])


@pytest.mark.parametrize("text,line,found", [
    ("0 1\n1\n2 1\n", "line 2: '1'", "found 1 at"),  # a value missing
    ("0\n1 0\n2 1\n", "line 1: '0'", "found 1 at"),  # missing on the first line, which pyarrow takes as the norm
    ("0 1\n\n1 0 7\n2 1\n", "line 3: '1 0 7'", "found 3 at"),  # an extra value after a blank line
], ids=["short-row", "short-first-row", "long-row"])
def test_csv_ragged_row_is_named_by_its_line(tmp_path, text: str, line: str, found: str) -> None:
    """A csv row with a value missing or extra is named by its line number and text, the count other rows have."""
    g = load_metadata(_tiny(tmp_path / "g", "csv"))
    g.path(g.edges["a:r:b"].data[0]).write_text(text)
    with pytest.raises(InputError) as err:
        read_edge_chunk(g, "a:r:b", 0)
    assert "expected 2 columns separated by ' '" in str(err.value) and f"{found} {line}" in str(err.value), err.value
    problems = precheck(g)
    assert problems and problems[0].field == "edges['a:r:b'].data[0]" and line in str(problems[0]), problems


def test_parquet_null_integer_or_bool_is_refused_by_row(tmp_path) -> None:
    """A null integer or bool in a parquet chunk is refused naming its column and row (numpy has no value for it);
    a null float stays NaN, as DGL's pandas-based reader reads it."""
    g = load_metadata(_tiny(tmp_path / "g", "parquet"))
    pq.write_table(pa.table({"s": pa.array([0, 1, 2]), "d": pa.array([1, None, 1])}), g.path(g.edges["a:r:b"].data[0]))
    with pytest.raises(InputError, match=r"no nulls in column 'd' of type int64 \(fill them or drop their rows\), "
                                         r"found a null at row 1"):
        read_edge_chunk(g, "a:r:b", 0)
    x = g.path(g.node_data["a"]["x"].data[0])
    for column, row in [(pa.array([True, None]), 1), (pa.array([[0, 1], [2, None]]), 1), (pa.array([None, [0, 1]]), 0)]:
        pq.write_table(pa.table({"c": column}), x)
        with pytest.raises(InputError, match=f"found a null at row {row}"):
            read_chunk(g, g.node_data["a"]["x"], 0)
    pq.write_table(pa.table({"c0": [0.0, None], "c1": [1.0, 3.0]}), x)
    assert np.isnan(read_rows(g, g.node_data["a"]["x"], 0, 3)[1, 0])


def test_parquet_null_in_a_flat_column_is_found_by_the_preflight_from_the_footer(tmp_path) -> None:
    """The pre-flight finds a null integer in a later row group from the footer's statistics, named by its row in
    the file, before any task reads the rows."""
    g = load_metadata(_tiny(tmp_path / "g", "parquet"))
    pq.write_table(pa.table({"s": pa.array([0, 1, 2]), "d": pa.array([1, 0, None])}),
                   g.path(g.edges["a:r:b"].data[0]), row_group_size=2)
    problems = precheck(g)
    assert problems and problems[0].field == "edges['a:r:b'].data[0]", problems
    assert "no nulls in column 'd' of type int64" in str(problems[0]) and "a null at row 2" in str(problems[0])


@pytest.mark.parametrize("text,found", [
    ("0 1\n1 abc\n2 1\n", "'abc' in column 2 of line 2: '1 abc'"),  # text among numbers
    ("0 1\n1 \n2 1\n", "an empty value in column 2 of line 2: '1 '"),  # read as a null, which IDs cannot hold
    ("0 1\n\nNA 0\n2 1\n", "'NA' in column 1 of line 3: 'NA 0'"),  # a null token, after a blank line
], ids=["text", "empty", "null-token"])
def test_csv_bad_value_is_named_by_line_column_and_token(tmp_path, text: str, found: str) -> None:
    """A csv value that is not a number (or empty, where integers cannot be null) is named by line, column, token."""
    g = load_metadata(_tiny(tmp_path / "g", "csv"))
    g.path(g.edges["a:r:b"].data[0]).write_text(text)
    with pytest.raises(InputError) as err:
        read_edge_chunk(g, "a:r:b", 0)
    assert f"expected numbers separated by format.delimiter ' ', found {found}" in str(err.value), err.value
    problems = precheck(g)
    assert problems and problems[0].field == "edges['a:r:b'].data[0]" and found in str(problems[0]), problems


@pytest.mark.parametrize("edit,field,expected", [
    (lambda d: d["edges"]["a:r:b"]["data"].__setitem__(0, ""), "edges['a:r:b'].data[0]", "a chunk file path"),
    (lambda d: d["edges"]["a:r:b"]["format"].update(delimiter=", "), "edges['a:r:b'].format.delimiter",
     "one ASCII character"),
    (lambda d: d["num_edges_per_chunk"][0].__setitem__(0, True), "num_edges_per_chunk[0][0]", "not true or false"),
    (lambda d: d["num_edges_per_chunk"][0].__setitem__(0, str(d["num_edges_per_chunk"][0][0])),
     "num_edges_per_chunk[0][0]", "not a string"),
    (lambda d: d.__setitem__("num_nodes_per_type", [str(sum(r)) for r in d["num_nodes_per_chunk"]]),
     "num_nodes_per_type[0]", "not a string"),
], ids=["empty-path", "two-char-delimiter", "bool-count", "string-count", "string-per-type-count"])
def test_metadata_refuses_what_a_reader_would_misread(tmp_path, edit: Callable[[dict], None], field: str,
                                                      expected: str) -> None:
    """An empty chunk path, a csv delimiter of other than one character, a bool count: refused by the metadata model
    naming metadata.json and the field (were an unnamed empty location, pyarrow's Py_UCS4 error, a count of 1)."""
    meta = _tiny(tmp_path / "g", "csv")
    data = json.loads(meta.read_text())
    edit(data)
    with pytest.raises(InputError) as err:
        parse_metadata(data, meta.parent, meta)
    assert err.value.field == field and expected in str(err.value) and str(meta) in str(err.value), str(err.value)


def test_a_file_listed_twice_with_rows_is_warned_of(tmp_path, caplog) -> None:
    """The same file as two chunks of one spec reads its rows twice (as DGL does): a warning names both entries;
    one empty file standing for two empty chunks is no warning."""
    meta = _tiny(tmp_path / "g", "numpy")
    data = json.loads(meta.read_text())
    data["num_edges_per_chunk"][0] = [3, 3]
    data["edges"]["a:r:b"]["data"][1] = data["edges"]["a:r:b"]["data"][0]
    data["node_data"]["a"]["x"]["data"][1] = data["node_data"]["a"]["x"]["data"][0]
    data.pop("num_edges_per_type", None)  # derived from the chunk counts
    meta.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="graphshard.precheck"):
        precheck(load_metadata(meta))
    warned = [r.getMessage() for r in caplog.records]
    assert any("edges['a:r:b'].data[1] is the same file as data[0]" in w and "its 3 rows are read twice" in w
               for w in warned), warned
    assert any("node_data['a']['x'].data[1] is the same file as data[0]" in w for w in warned), warned
    caplog.clear()
    empty = tmp_path / "g" / "empty.npy"
    np.save(empty, np.zeros((0, 2), dtype=np.int64))
    data["num_edges_per_chunk"][0] = [3, 0, 0]
    data["edges"]["a:r:b"]["data"] = [data["edges"]["a:r:b"]["data"][0], "empty.npy", "empty.npy"]
    meta.write_text(json.dumps(data))
    with caplog.at_level(logging.WARNING, logger="graphshard.precheck"):
        precheck(load_metadata(meta))
    assert not any("edges" in r.getMessage() for r in caplog.records), caplog.records


@pytest.mark.parametrize("fmt, text", [("csv", ""), ("csv", "\n"), ("numpy", None)])
def test_an_empty_feature_file_has_no_shape_or_dtype_to_disagree(tmp_path, fmt: str, text: str | None) -> None:
    """An empty chunk file in a feature's list (an empty csv reads as int64 of no columns; an empty float64 npy beside
    float32 ones) passes both checks, first in the list or not, and leaves the feature's dtype as its rows have it."""
    g = load_metadata(_tiny(tmp_path / "g", fmt))
    name = "node_data/empty" + (".csv" if fmt == "csv" else ".npy")
    empty = g.path(name)
    if fmt == "csv":
        empty.write_text(text)
    else:
        np.save(empty, np.zeros(0, dtype=np.float64))
    x = g.node_data["a"]["x"]
    x.data.insert(1, name)
    g.edge_data["b:s:a"]["w"].data.insert(0, name)
    assert precheck(g) == [] and check_graph(g) == []
    rows = read_rows(g, x, 0, 3)
    assert rows.dtype == read_chunk(g, x, 0).dtype and rows.tolist() == [[0, 1], [2, 3], [4, 5]]
    if fmt == "csv":
        g.path(x.data[2]).write_text("4 5 6\n")
    else:
        np.save(g.path(x.data[2]), np.zeros((1, 3), dtype=np.float32))
    problems = precheck(g)
    assert len(problems) == 1 and problems[0].field == "node_data['a']['x'].data[2]", problems
    assert "rows of shape (2,)" in str(problems[0]) and "as in file 0" in str(problems[0]), problems


def test_parquet_list_column_of_ragged_rows_is_refused_by_row(tmp_path) -> None:
    """A list column whose rows differ in length is named by its first row of another length, also when the values
    would reshape evenly (lengths 1 and 3 over 2 rows: 4 values, once read as [[0, 1], [2, 3]])."""
    g = load_metadata(_tiny(tmp_path / "g", "parquet"))
    x = g.node_data["a"]["x"]
    pq.write_table(pa.table({"c": pa.array([[0.0], [1.0, 2.0, 3.0]])}), g.path(x.data[0]))
    expected = "expected lists of one length in every row (1, as at row 0), found a list of 3 at row 1"
    with pytest.raises(InputError, match=re.escape(expected)):
        read_rows(g, x, 0, 3)
    problems = check_graph(g)
    assert len(problems) == 1 and problems[0].field == "node_data['a']['x'].data[0]", problems
    assert expected in str(problems[0]), problems

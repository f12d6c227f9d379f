"""Round trips: generate -> read -> the same arrays, in every format and chunk count; row-range reads."""

from __future__ import annotations

import numpy as np
import pytest

from graphshard.formats.chunked import chunk_bounds, load_metadata
from graphshard.formats.readers import RowIndex, chunk_row_counts, read_chunk, read_edge_chunk, read_rows, reader_for
from graphshard.generate import mag, rmat
from graphshard.generate.common import chunk_rng
from graphshard.ingest.graph_summary import summary

FORMATS = ["numpy", "parquet", "csv", "mixed"]
LOSSLESS_DTYPES = ("numpy", "parquet")  # csv reads float32 back as float64, int16 as int64: values still equal


def _same(read: np.ndarray, expected: np.ndarray, fmt: str) -> None:
    assert read.shape == expected.shape
    if fmt in LOSSLESS_DTYPES:
        assert read.dtype == expected.dtype
    assert np.array_equal(read.astype(expected.dtype), expected)


@pytest.mark.parametrize("chunks", [1, 3, 7])
@pytest.mark.parametrize("fmt", FORMATS)
def test_rmat_round_trip(make_graph, fmt, chunks):
    nodes, edges, seed = 500, 3000, 11
    g = load_metadata(make_graph("rmat", nodes=nodes, edges=edges, chunks=chunks, fmt=fmt, seed=seed, feat_dim=5))
    et, nt = rmat.ETYPE, rmat.NTYPE
    assert g.num_edges_per_chunk == [np.diff(chunk_bounds(edges, chunks)).tolist()]
    assert g.num_nodes_per_chunk == [np.diff(chunk_bounds(nodes, chunks)).tolist()]
    e_bounds, n_bounds = chunk_bounds(edges, chunks), chunk_bounds(nodes, chunks)
    for i in range(chunks):
        src, dst, weight = rmat.edge_chunk(seed, i, e_bounds[i + 1] - e_bounds[i], nodes)
        r_src, r_dst = read_edge_chunk(g, et, i)
        assert np.array_equal(r_src, src) and np.array_equal(r_dst, dst)
        _same(read_chunk(g, g.edge_data[et]["weight"], i), weight, g.edge_data[et]["weight"].format.name)
        feats = rmat.node_features(chunk_rng(seed, "rmat:nodes", i), n_bounds[i + 1] - n_bounds[i], 5)
        for name, arr in feats.items():
            spec = g.node_data[nt][name]
            _same(read_chunk(g, spec, i), arr, spec.format.name)
    if fmt == "mixed":
        used = {g.edges[et].format.name} | {s.format.name for s in g.node_data[nt].values()}
        assert used == {"csv", "numpy", "parquet"}


@pytest.mark.parametrize("chunks", [1, 3, 7])
@pytest.mark.parametrize("fmt", FORMATS)
def test_mag_round_trip(make_graph, fmt, chunks):
    seed, papers = 4, 200
    g = load_metadata(make_graph("mag", papers=papers, chunks=chunks, fmt=fmt, seed=seed))
    counts = mag.node_counts(papers, chunks)
    assert dict(zip(g.node_type, g.num_nodes_per_type)) == counts
    for relation in mag.RELATIONS:
        s, r, d = relation[:3]
        fwd, rev = mag.forward_etype(s, r, d), mag.reverse_etype(s, r, d)
        bounds = chunk_bounds(g.num_edges(fwd), chunks)
        assert len(g.edges[fwd].data) == chunks == len(g.edges[rev].data)
        for i in range(chunks):
            src, dst = mag.edge_chunk(seed, relation, i, bounds[i + 1] - bounds[i], counts)
            f_src, f_dst = read_edge_chunk(g, fwd, i)
            r_src, r_dst = read_edge_chunk(g, rev, i)
            assert np.array_equal(f_src, src) and np.array_equal(f_dst, dst)
            assert np.array_equal(r_src, dst) and np.array_equal(r_dst, src)
    n = counts["paper"]
    feat_bounds = chunk_bounds(n, chunks + 1)
    expected_feat = np.concatenate([
        chunk_rng(seed, "mag:paper:feat", i).standard_normal((feat_bounds[i + 1] - feat_bounds[i], 16),
                                                             dtype=np.float32)
        for i in range(chunks + 1)])
    spec = g.node_data["paper"]["feat"]
    assert len(spec.data) == chunks + 1
    _same(read_rows(g, spec, 0, n), expected_feat, spec.format.name)
    bounds = chunk_bounds(n, chunks)
    for i in range(chunks):
        for name, arr in mag.paper_columns(chunk_rng(seed, "mag:paper", i), bounds[i + 1] - bounds[i]).items():
            spec = g.node_data["paper"][name]
            _same(read_chunk(g, spec, i), arr, spec.format.name)
            # the same rows through read_rows, whose request crosses the feat files' different boundaries
            _same(read_rows(g, spec, bounds[i], bounds[i + 1]), arr, spec.format.name)


@pytest.mark.parametrize("fmt", ["numpy", "parquet", "csv"])
def test_read_rows_across_file_boundaries(make_graph, fmt):
    g = load_metadata(make_graph("mag", papers=200, chunks=3, fmt=fmt, seed=4))
    spec = g.node_data["paper"]["feat"]
    index = RowIndex.of(g, spec)
    assert chunk_row_counts(g, spec) == np.diff(chunk_bounds(200, 4)).tolist()
    assert index.total == 200 and index.offsets.tolist() == chunk_bounds(200, 4)
    whole = read_rows(g, spec, 0, 200, index)
    for start, stop in [(0, 1), (45, 55), (49, 151), (199, 200), (0, 200), (120, 120)]:
        part = read_rows(g, spec, start, stop, index)
        assert np.array_equal(part, whole[start:stop]) and part.shape == (stop - start, 16)


@pytest.mark.parametrize("fmt", ["numpy", "parquet", "csv"])
def test_head_reads_leading_rows(make_graph, fmt):
    g = load_metadata(make_graph("rmat", nodes=300, edges=1000, chunks=2, fmt=fmt))
    for spec in [g.edges[rmat.ETYPE], *g.node_data[rmat.NTYPE].values(), g.edge_data[rmat.ETYPE]["weight"]]:
        full = read_chunk(g, spec, 0)
        head = reader_for(spec.format).head(g.path(spec.data[0]), spec.format)
        assert 1 <= len(head) <= len(full) and head.shape[1:] == full.shape[1:] and head.dtype == full.dtype
        assert np.array_equal(head, full[: len(head)])


@pytest.mark.parametrize("text", ["", "\n", "\r\n\n"])
def test_empty_csv_edge_chunk_reads_as_no_edges(tmp_path, text):
    """An empty csv chunk (a chunk with zero edges) is valid input, not a parse error: no bytes, or blank lines only
    (`"\\n".join(rows) + "\\n"` of no rows), which pyarrow skips as it does anywhere else."""
    from graphshard.formats.chunked import parse_metadata
    from graphshard.formats.readers import read_edge_chunk
    from graphshard.precheck import precheck

    (tmp_path / "e0.csv").write_text("0 1\n1 0\n")
    (tmp_path / "e1.csv").write_bytes(text.encode())
    meta = {"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[2]], "edge_type": ["n:r:n"],
            "num_edges_per_chunk": [[2, 0]],
            "edges": {"n:r:n": {"format": {"name": "csv", "delimiter": " "}, "data": ["e0.csv", "e1.csv"]}}}
    graph = parse_metadata(meta, tmp_path, tmp_path / "metadata.json")
    src, dst = read_edge_chunk(graph, "n:r:n", 1)
    assert src.dtype == dst.dtype == np.int64 and len(src) == len(dst) == 0
    assert read_edge_chunk(graph, "n:r:n", 0)[1].tolist() == [1, 0]
    assert precheck(graph) == []


def _compressed_csv_graph(folder, codec: str, ext: str) -> None:
    """Two compressed csv edge chunks (CRLF and a blank line in the first, blank lines only in the second) and their
    metadata.json in `folder`."""
    import json

    import pyarrow as pa

    for name, text in ((f"e0.csv.{ext}", "0 1\r\n1 0\n\n2 1\n"), (f"e1.csv.{ext}", "\n")):
        with pa.CompressedOutputStream(str(folder / name), codec) as out:
            out.write(text.encode())
    (folder / "metadata.json").write_text(json.dumps({
        "graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[3]], "edge_type": ["n:r:n"],
        "num_edges_per_chunk": [[3, 0]], "edges": {"n:r:n": {"format": {"name": "csv", "delimiter": " "},
                                                             "data": [f"e0.csv.{ext}", f"e1.csv.{ext}"]}}}))


@pytest.mark.parametrize("codec, ext", [("gzip", "gz"), ("bz2", "bz2"), ("zstd", "zst")])
def test_compressed_csv_chunks_read_as_their_text(tmp_path, codec, ext):
    """A `.csv.gz` (.bz2, .zst) chunk is read decompressed, as pyarrow's read_csv, so DGL's reader, reads it: rows
    counted, values read locally and from bytes a store served, a bad value named by its line and text, and a wrong
    delimiter by the first line's text."""
    import json

    import pyarrow as pa

    from graphshard.formats.chunked import load_metadata
    from graphshard.formats.readers import read_edge_chunk
    from graphshard.ingest import check_graph
    from graphshard.precheck import precheck
    from graphshard.storage import StoredFile

    _compressed_csv_graph(tmp_path, codec, ext)
    graph = load_metadata(tmp_path)
    assert precheck(graph) == [] and check_graph(graph) == []
    assert [c.tolist() for c in read_edge_chunk(graph, "n:r:n", 0)] == [[0, 1, 2], [1, 0, 1]]
    assert len(read_edge_chunk(graph, "n:r:n", 1)[0]) == 0
    f = StoredFile.of(tmp_path / f"e0.csv.{ext}")
    served = f.holding((tmp_path / f"e0.csv.{ext}").read_bytes())
    fmt = graph.edges["n:r:n"].format
    assert reader_for(fmt).table(served, fmt).tolist() == [[0, 1], [1, 0], [2, 1]]
    with pa.CompressedOutputStream(str(tmp_path / f"e0.csv.{ext}"), codec) as out:
        out.write(b"0 1\n1 NA\n2 1\n")
    (problem,) = precheck(graph)
    assert "found 'NA' in column 2 of line 2: '1 NA'" in str(problem), problem
    meta = json.loads((tmp_path / "metadata.json").read_text())
    meta["edges"]["n:r:n"]["format"]["delimiter"] = ","
    (tmp_path / "metadata.json").write_text(json.dumps(meta))
    problems = precheck(load_metadata(tmp_path))
    assert problems and "found first line '0 1'" in str(problems[0]), problems  # its text, not compressed bytes


def test_compressed_csv_chunks_on_a_store_read_as_local_ones(tmp_path, s3_server):
    """The same graph on S3: rows counted and values read from the objects, decompressed."""
    from test_storage_steps import upload_tree

    from graphshard.formats.chunked import load_metadata
    from graphshard.formats.readers import read_edge_chunk
    from graphshard.ingest import check_graph
    from graphshard.precheck import precheck
    from graphshard.storage import Storage

    _compressed_csv_graph(tmp_path, "gzip", "gz")
    storage = Storage({"s3://": s3_server.options()})
    url = upload_tree(storage, tmp_path, f"{s3_server.new_bucket()}/g")
    graph = load_metadata(f"{url}/metadata.json", storage)
    assert precheck(graph) == [] and check_graph(graph) == []
    assert [c.tolist() for c in read_edge_chunk(graph, "n:r:n", 0)] == [[0, 1, 2], [1, 0, 1]]


@pytest.mark.parametrize("dtype", ["int64", "int32"])
def test_fortran_ordered_npy_edge_chunk_reads_as_writable_arrays(tmp_path, dtype):
    """A Fortran-ordered .npy edge chunk (np.save of an asfortranarray) is valid input: its columns come back as
    the caller's own writable int64 arrays, which assign shifts in place into homogeneous IDs."""
    from graphshard.assign.graph_build import homogeneous_chunk
    from graphshard.formats.chunked import parse_metadata

    np.save(tmp_path / "e0.npy", np.asfortranarray(np.array([[0, 1], [1, 2], [2, 0]], dtype=dtype)))
    meta = {"graph_name": "g", "node_type": ["a", "n"], "num_nodes_per_chunk": [[2], [3]], "edge_type": ["n:r:n"],
            "num_edges_per_chunk": [[3]],
            "edges": {"n:r:n": {"format": {"name": "numpy"}, "data": ["e0.npy"]}}}
    graph = parse_metadata(meta, tmp_path, tmp_path / "metadata.json")
    src, dst = read_edge_chunk(graph, "n:r:n", 0)
    assert src.dtype == dst.dtype == np.int64 and src.flags.writeable and dst.flags.writeable
    assert src.tolist() == [0, 1, 2] and dst.tolist() == [1, 2, 0]
    src, dst = homogeneous_chunk(graph, "n:r:n", 0)
    assert src.tolist() == [2, 3, 4] and dst.tolist() == [3, 4, 2]


def test_parquet_edge_chunk_reads_its_first_two_columns_only(tmp_path):
    """A parquet edge file may carry more columns than src and dst (DGL reads the first two): a float timestamp, a
    nullable text column. The pre-flight and the reader look at src and dst only (the header was the float64 of all
    columns: 'expected integer node IDs, found dtype float64')."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphshard.formats.chunked import parse_metadata
    from graphshard.precheck import precheck

    pq.write_table(pa.table({"s": pa.array([0, 1, 2], pa.int64()), "d": pa.array([1, 2, 0], pa.int64()),
                             "ts": pa.array([0.5, 1.5, 2.5]), "note": pa.array(["a", None, "c"])}),
                   tmp_path / "e0.parquet", row_group_size=2)
    meta = {"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[3]], "edge_type": ["n:r:n"],
            "num_edges_per_chunk": [[3]],
            "edges": {"n:r:n": {"format": {"name": "parquet"}, "data": ["e0.parquet"]}}}
    graph = parse_metadata(meta, tmp_path, tmp_path / "metadata.json")
    assert precheck(graph) == []
    src, dst = read_edge_chunk(graph, "n:r:n", 0)
    assert src.tolist() == [0, 1, 2] and dst.tolist() == [1, 2, 0]
    assert summary(graph)["num_edges"] == 3  # ingest's summary reads the header of src and dst only too


def _one_feature_graph(tmp_path, fmt: str, name: str, rows: int = 4):
    from graphshard.formats.chunked import parse_metadata

    np.save(tmp_path / "e.npy", np.array([[0, 1]], dtype=np.int64))
    meta = {"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[rows]], "edge_type": ["n:r:n"],
            "num_edges_per_chunk": [[1]], "edges": {"n:r:n": {"format": {"name": "numpy"}, "data": ["e.npy"]}},
            "node_data": {"n": {"x": {"format": {"name": fmt, "delimiter": " "}, "data": [name]}}}}
    return parse_metadata(meta, tmp_path, tmp_path / "metadata.json")


def test_a_dataframes_index_stored_by_pandas_is_not_feature_data(tmp_path):
    """`df.to_parquet()` of a DataFrame whose index is not a RangeIndex (after filtering rows) stores the index as a
    column and names it in the file's pandas metadata; DGL's reader (through pandas) drops it, so must we."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphshard.precheck import precheck

    table = pa.table({"0": pa.array([1.5, 2.5, 3.5, 4.5]), "__index_level_0__": pa.array([3, 4, 7, 9])})
    pandas = {"index_columns": ["__index_level_0__"], "column_indexes": [], "columns": []}
    pq.write_table(table.replace_schema_metadata({b"pandas": json.dumps(pandas).encode()}), tmp_path / "x.parquet")
    graph = _one_feature_graph(tmp_path, "parquet", "x.parquet")
    assert precheck(graph) == []
    assert read_chunk(graph, graph.node_data["n"]["x"], 0).tolist() == [1.5, 2.5, 3.5, 4.5]


def test_an_array_dgls_parquet_writer_flattened_is_read_back_in_its_shape_as_its_npy(tmp_path):
    """DGL's parquet writer stores an (N, 2, 3) feature as 6 columns with the shape in the schema metadata and its
    reader reshapes it back; read as (N, 6) it would be published flattened. Ours writes it the same way."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphshard.formats.chunked_writer import WRITERS
    from graphshard.formats.readers import RowIndex, read_rows
    from graphshard.precheck import precheck

    cube = np.arange(24, dtype=np.float32).reshape(4, 2, 3)
    table = pa.table({str(i): cube.reshape(4, 6)[:, i] for i in range(6)})
    pq.write_table(table.replace_schema_metadata({"shape": "(4, 2, 3)"}), tmp_path / "x.parquet")
    np.save(tmp_path / "x.npy", cube)
    with open(tmp_path / "ours.parquet", "wb") as fh:
        WRITERS["parquet"][0](fh, cube, " ")
    for fmt, name in (("parquet", "x.parquet"), ("numpy", "x.npy"), ("parquet", "ours.parquet")):
        graph = _one_feature_graph(tmp_path, fmt, name)
        spec = graph.node_data["n"]["x"]
        assert precheck(graph) == []
        np.testing.assert_array_equal(read_chunk(graph, spec, 0), cube)
        np.testing.assert_array_equal(read_rows(graph, spec, 1, 3, RowIndex.of(graph, spec)), cube[1:3])


@pytest.mark.parametrize("shape, fits", [("(4, 2, 3)", True), ("(4, 6)", True), ("(4,6)", True), ("(4, 3, 3)", False),
                                          ("(5, 2, 3)", False), ("[4, 2, 3]", False), ("(4, 2, 3", False)])
def test_a_recorded_parquet_shape_that_does_not_fit_the_file_is_refused_in_one_line(tmp_path, shape, fits):
    """DGL reshapes a parquet file's rows to its schema's `shape`; one that does not fit (rows filtered after it was
    written, columns dropped) fails there and would be read flat here: refused, naming the file and the key."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from graphshard.precheck import precheck

    cube = np.arange(24, dtype=np.float32).reshape(4, 6)
    table = pa.table({str(i): cube[:, i] for i in range(6)})
    pq.write_table(table.replace_schema_metadata({"shape": shape}), tmp_path / "x.parquet")
    graph = _one_feature_graph(tmp_path, "parquet", "x.parquet")
    problems = precheck(graph)
    if fits:
        assert problems == []
        assert read_chunk(graph, graph.node_data["n"]["x"], 0).size == 24
    else:
        (problem,) = problems
        assert "x.parquet: field 'shape'" in str(problem) and "4 rows of 6 values" in str(problem), problem
        assert repr(shape) in str(problem) and "\n" not in str(problem)


@pytest.mark.parametrize("line, found", [("12 NA", "'NA' in column 2 of line 199996: '12 NA'"),
                                         ("+12 3", "'+12' in column 1 of line 199996: '+12 3'")])
def test_a_csv_edge_file_names_its_first_non_integer_value_wherever_it_is(tmp_path, line, found):
    """pyarrow reads a column as float64 from a value like 'NA' (or '+12') on, however deep in the file: the refusal
    names that value and its line, not the dtype."""
    from graphshard.formats.chunked import parse_metadata
    from graphshard.precheck import precheck

    lines = [f"{i % 50} {(i * 7) % 50}" for i in range(200_000)]
    lines[-5] = line
    (tmp_path / "e.csv").write_text("\n".join(lines) + "\n")
    meta = {"graph_name": "g", "node_type": ["n"], "num_nodes_per_chunk": [[50]], "edge_type": ["n:r:n"],
            "num_edges_per_chunk": [[200_000]],
            "edges": {"n:r:n": {"format": {"name": "csv", "delimiter": " "}, "data": ["e.csv"]}}}
    (problem,) = precheck(parse_metadata(meta, tmp_path, tmp_path / "metadata.json"))
    assert f"expected integer node IDs, found {found}" in str(problem), problem


@pytest.mark.parametrize("type_", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                                   "float16", "float32", "float64"])
def test_column_to_numpy_views_numbers_without_nulls(type_):
    import pyarrow as pa

    from graphshard.formats.arrow import column_to_numpy

    values = np.arange(-5, 45).astype(np.dtype(type_) if type_ != "float16" else np.float16)
    if type_.startswith("uint"):
        values = np.arange(50).astype(type_)
    arr = pa.array(values)
    for col in (arr, arr.slice(7, 20), pa.chunked_array([arr.slice(0, 10), arr.slice(10)]), arr.slice(3, 0)):
        out = column_to_numpy(col)
        expected = col.to_numpy() if isinstance(col, pa.Array) else col.combine_chunks().to_numpy()
        assert out.dtype == expected.dtype and np.array_equal(out, expected)


def test_column_to_numpy_falls_back_for_nulls_and_other_types():
    import pyarrow as pa

    from graphshard.formats.arrow import column_to_numpy

    with_null = column_to_numpy(pa.array([1, None, 3]))
    assert np.isnan(with_null[1]) and with_null[2] == 3
    flags = pa.array([True, False, True, True, False, False, True, False, True, True])
    for col in (flags, flags.slice(3, 6), flags.slice(0, 0)):
        assert column_to_numpy(col).tolist() == col.to_pylist()
    assert column_to_numpy(pa.array(["a", "b"])).tolist() == ["a", "b"]


def test_numpy_column_round_trips_numbers_and_booleans():
    import pyarrow as pa

    from graphshard.formats.arrow import column_to_numpy, numpy_column

    rng = np.random.default_rng(0)
    for arr in (rng.integers(-9, 9, 33).astype(np.int8), rng.integers(0, 1 << 40, 33).astype(np.uint64),
                rng.random(33).astype(np.float16), rng.random((33, 3))[:, 1], rng.random(33) < 0.5,
                np.zeros(0, np.int32)):
        col = numpy_column(arr)
        assert col.equals(pa.array(arr))
        back = column_to_numpy(col)
        assert back.dtype == arr.dtype and np.array_equal(back, arr)


def test_csv_and_parquet_chunks_and_assignments_without_pandas(tmp_path):
    """pyarrow imports pandas for `pa.array(ndarray)`, `to_numpy` and `read_table` (~0.6 s per worker): writing and
    reading csv/parquet graphs and assignment files goes around them."""
    import subprocess
    import sys

    code = ("import sys; from pathlib import Path; import numpy as np\n"
            "from graphshard.generate.rmat import generate_rmat\n"
            "from graphshard.formats.chunked import load_metadata\n"
            "from graphshard.formats.readers import read_edge_chunk, read_chunk\n"
            "from graphshard.formats.assignment import write_parts, read_parts\n"
            "from graphshard.assign.base import write_blocks\n"
            "out = Path(sys.argv[1])\n"
            "for fmt in ('csv', 'parquet'):\n"
            "    g = load_metadata(generate_rmat(out / fmt, 1000, 5000, fmt=fmt))\n"
            "    src, dst = read_edge_chunk(g, g.edge_type[0], 0)\n"
            "    feat = read_chunk(g, g.node_data['_N']['feat'], 0)\n"
            "    mask = read_chunk(g, g.node_data['_N']['train_mask'], 0)\n"
            "    assert len(src) and feat.ndim == 2 and len(mask)\n"
            "parts = np.arange(1000) % 4\n"
            "write_parts(out, 'a', parts); write_blocks(out / 'b.txt', [parts[:500], parts[500:]])\n"
            "assert (read_parts(out, 'a', 1000, 4) == parts).all() and (read_parts(out, 'b', 1000, 4) == parts).all()\n"
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"

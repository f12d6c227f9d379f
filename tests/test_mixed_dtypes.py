"""A feature whose files infer different numeric dtypes (a csv file of whole numbers beside one of floats) is read as
their common dtype, as DGL's own pipeline concatenates them: every partition gets the same dtype and the values of
both files. A mix whose common dtype neither file has (int64 beside float32) is still refused in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow.csv as pcsv

from graphshard.cli import main
from graphshard.formats.dgl_binary import load_tensor_dict
from graphshard.ingest import summary


def _csv(path: Path) -> np.ndarray:
    opts = pcsv.ParseOptions(delimiter=" ")
    table = pcsv.read_csv(path, read_options=pcsv.ReadOptions(autogenerate_column_names=True), parse_options=opts)
    return np.stack([c.to_numpy() for c in table.columns], axis=1)


def _whole_numbers(path: Path) -> None:
    """Rewrite a float csv file as whole numbers (pyarrow then infers int64 for it)."""
    rows = np.rint(_csv(path) * 10).astype(np.int64)
    path.write_text("".join(" ".join(map(str, r)) + "\n" for r in rows))


def _int_and_float_csv(make_graph, folder: Path) -> tuple[Path, list[Path]]:
    """A copy of a csv graph whose feature `feat` has a file of whole numbers (int64) before one of floats."""
    shutil.copytree(make_graph("rmat", nodes=300, edges=2000, chunks=2, fmt="csv", feat_dim=3).parent, folder)
    md = folder / "metadata.json"
    files = [folder / f for f in json.loads(md.read_text())["node_data"]["_N"]["feat"]["data"]]
    _whole_numbers(files[0])
    assert (_csv(files[0]).dtype, _csv(files[1]).dtype) == (np.int64, np.float64)
    return md, files


def _partitions_hold(md: Path, tmp_path: Path, expected: np.ndarray) -> None:
    """Assign, dispatch and validate 2 partitions: each holds its rows of `expected` as float64."""
    assert main(["assign", "--in", str(md), "--out", str(tmp_path / "a"), "--num-parts", "2"]) == 0
    assert main(["dispatch", "--in", str(md), "--partitions", str(tmp_path / "a"), "--out", str(tmp_path / "p"),
                 "--save-orig-nids"]) == 0
    assert main(["validate", "--partitions", str(tmp_path / "p" / "rmat.json"), "--input", str(md), "--full"]) == 0
    for part in range(2):
        folder = tmp_path / "p" / f"part{part}"
        feats, orig = load_tensor_dict(folder / "node_feat.dgl"), load_tensor_dict(folder / "orig_nids.dgl")["_N"]
        assert feats["_N/feat"].dtype == np.float64
        assert np.array_equal(feats["_N/feat"], expected[orig])


def test_whole_number_csv_beside_float_csv(make_graph, tmp_path):
    md, files = _int_and_float_csv(make_graph, tmp_path / "g")
    expected = np.concatenate([_csv(f) for f in files]).astype(np.float64)

    assert main(["inspect", str(md), "--check"]) == 0
    _partitions_hold(md, tmp_path, expected)


def test_inspect_shows_the_common_dtype(make_graph, tmp_path, capsys):
    """`graphshard inspect` (text and JSON, and ingest's summary) shows the dtype the partitions get: the files'
    common one (float64), not the first file's (int64)."""
    md, _ = _int_and_float_csv(make_graph, tmp_path / "g")
    assert summary(md)["node_types"]["_N"]["features"]["feat"]["dtype"] == "float64"
    assert main(["inspect", str(md)]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if ln.strip().startswith("feat "))
    assert line.split()[1] == "float64", line


def test_int64_beside_float32_refused(make_graph, tmp_path, capsys):
    graph = tmp_path / "g"
    shutil.copytree(make_graph("rmat", nodes=300, edges=2000, chunks=2).parent, graph)
    md = graph / "metadata.json"
    second = graph / json.loads(md.read_text())["node_data"]["_N"]["feat"]["data"][1]
    np.save(second, np.rint(np.load(second)).astype(np.int64))
    assert main(["inspect", str(md), "--check"]) == 2
    line = capsys.readouterr().err.strip()
    assert "node_data['_N']['feat'].data[1]" in line and "dtype float32 as in file 0" in line, line
    assert "dtype int64" in line and len(line.splitlines()) == 1, line


def test_float_after_the_first_block(make_graph, tmp_path):
    """A csv file of whole numbers whose first float comes after the block `inspect` samples (64 KiB) is still read
    as float64 in every partition, beside a file of whole numbers only."""
    folder = tmp_path / "g"
    shutil.copytree(make_graph("rmat", nodes=24000, edges=60000, chunks=2, fmt="csv", feat_dim=3).parent, folder)
    md = folder / "metadata.json"
    files = [folder / f for f in json.loads(md.read_text())["node_data"]["_N"]["feat"]["data"]]
    for f in files:
        _whole_numbers(f)
    lines = files[0].read_text().splitlines(keepends=True)
    lines[-1] = "0.5 " + lines[-1].split(" ", 1)[1]
    files[0].write_text("".join(lines))
    assert files[0].stat().st_size > 1 << 16
    expected = np.concatenate([_csv(f) for f in files])
    assert expected.dtype == np.float64

    assert main(["inspect", str(md), "--check"]) == 0
    assert summary(md)["node_types"]["_N"]["features"]["feat"]["dtype"] == "float64"
    _partitions_hold(md, tmp_path, expected)

"""A corpus of broken inputs, each given to every command: refused with exit status 2 and one stderr line naming
the file and the field, no traceback, nothing published.

Header-level breakage (missing or truncated files, wrong shapes, dtypes, row counts, delimiters, metadata) is found
by graphshard.precheck before any work starts; a node ID out of range only when the data is read, inside a step.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from graphshard.cli import main

ET = "_N:_E:_N"
NODES, EDGES = 300, 2000


@dataclass(frozen=True)
class Case:
    """One way to break a graph of format `fmt`: what `corrupt(folder, metadata)` does, and what the error names."""

    fmt: str
    corrupt: Callable[[Path, dict], None]
    file: str  # a fragment of the named file
    field: str | None  # a fragment of the named field (None: the whole file is bad)
    needle: str  # what was expected or found
    in_data: bool = False  # only found when a step reads the data


def _file(folder: Path, meta: dict, *keys) -> Path:
    spec = meta
    for k in keys[:-1]:
        spec = spec[k]
    return folder / spec["data"][keys[-1]]


def _edge(folder: Path, meta: dict, chunk: int = 0) -> Path:
    return _file(folder, meta, "edges", ET, chunk)


def _feat(folder: Path, meta: dict, name: str = "feat", chunk: int = 0) -> Path:
    return _file(folder, meta, "node_data", "_N", name, chunk)


def _weight(folder: Path, meta: dict, chunk: int = 0) -> Path:
    return _file(folder, meta, "edge_data", ET, "weight", chunk)


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _drop_rows(path: Path, rows: int = 7) -> None:
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        pq.write_table(table.slice(0, table.num_rows - rows), path)
    else:
        np.save(path, np.load(path)[:-rows])


def _bad_id(folder: Path, meta: dict) -> None:
    path = _edge(folder, meta, 1)
    edges = np.load(path)
    edges[5, 1] = NODES
    np.save(path, edges)


def _huge_id(folder: Path, meta: dict) -> None:
    """A uint64 ID of 2^64 - 1: named as it is, not as the -1 int64 wraps it to."""
    path = _edge(folder, meta, 1)
    edges = np.load(path).astype(np.uint64)
    edges[5, 1] = np.uint64(2**64 - 1)
    np.save(path, edges)


def _directory(path: Path) -> None:
    """Replace a chunk file by a directory of its name: named as a directory, not as a missing file."""
    path.unlink()
    path.mkdir()


def _string_parquet(folder: Path, meta: dict) -> None:
    path = _feat(folder, meta, "label")
    pq.write_table(pa.table({"label": [f"class {i}" for i in range(pq.read_metadata(path).num_rows)]}), path)


def _set(key: str, value) -> Callable[[Path, dict], None]:
    return lambda folder, meta: meta.update({key: value})


def _matrices(path: Path) -> None:
    """A feature file's rows made matrices (a 3-D array): fine alone, not beside files of vector rows."""
    arr = np.load(path)
    np.save(path, arr.reshape(len(arr), 4, -1))


CASES = {
    "bad-json": Case("numpy", lambda f, m: (f / "metadata.json").write_text('{"graph_name": "x",'),
                     "metadata.json", None, "valid JSON"),
    "missing-key": Case("numpy", lambda f, m: m.pop("edges"), "metadata.json", "edges", "required field"),
    "counts-disagree": Case("numpy", _set("num_nodes_per_type", [NODES + 1]), "metadata.json", "num_nodes_per_type",
                            "the sums of num_nodes_per_chunk"),
    "missing-edge-file": Case("numpy", lambda f, m: _edge(f, m, 1).unlink(), "_N___E___N-1.npy",
                              f"edges['{ET}'].data[1]", "no such file"),
    "directory-as-file": Case("csv", lambda f, m: _directory(_edge(f, m, 1)), "_N___E___N-1.csv",
                              f"edges['{ET}'].data[1]", "expected a chunk file, found a directory"),
    "missing-feature-file": Case("parquet", lambda f, m: _feat(f, m).unlink(), "_N-feat-0.parquet",
                                 "node_data['_N']['feat'].data[0]", "no such file"),
    "edges-3-columns": Case("numpy", lambda f, m: np.save(_edge(f, m), np.tile(np.load(_edge(f, m)), 2)[:, :3]),
                            "_N___E___N-0.npy", f"edges['{ET}'].data[0]", "exactly 2 columns (src, dst IDs), found 3"),
    "string-feature-numpy": Case("numpy", lambda f, m: np.save(_feat(f, m, "label"), np.array(["a b"] * 150)),
                                 "_N-label-0.npy", "node_data['_N']['label'].data[0]", "dtype <U3"),
    "string-feature-parquet": Case("parquet", _string_parquet, "_N-label-0.parquet",
                                   "node_data['_N']['label'].data[0]", "numeric or bool dtype"),
    "uint32-feature-numpy": Case("numpy", lambda f, m: np.save(_feat(f, m, "label"),
                                                                np.load(_feat(f, m, "label")).astype(np.uint32)),
                                 "_N-label-0.npy", "node_data['_N']['label'].data[0]", "found dtype uint32"),
    "uint64-feature-parquet": Case("parquet", lambda f, m: pq.write_table(pa.table(
                                       {"w": pa.array(np.arange(pq.read_metadata(_weight(f, m)).num_rows,
                                                                dtype=np.uint64))}), _weight(f, m)),
                                   "weight-0.parquet", f"edge_data['{ET}']['weight'].data[0]", "found dtype uint64"),
    "float128-feature-numpy": Case("numpy", lambda f, m: np.save(_feat(f, m),
                                                                  np.load(_feat(f, m)).astype(np.longdouble)),
                                   "_N-feat-0.npy", "node_data['_N']['feat'].data[0]", "cast the feature to float64"),
    "feature-rows-disagree": Case("numpy", lambda f, m: _matrices(_feat(f, m, "feat", 1)),
                                  "_N-feat-1.npy", "node_data['_N']['feat'].data[1]", "as in file 0, found shape (4, "),
    "wrong-delimiter": Case("csv", lambda f, m: _edge(f, m).write_text(_edge(f, m).read_text().replace(" ", ",")),
                            "_N___E___N-0.csv", f"edges['{ET}'].data[0]", "separated by format.delimiter ' '"),
    "truncated-npy": Case("numpy", lambda f, m: _truncate(_edge(f, m)), "_N___E___N-0.npy",
                          f"edges['{ET}'].data[0]", "the file is truncated"),
    "truncated-parquet": Case("parquet", lambda f, m: _truncate(_feat(f, m)), "_N-feat-0.parquet",
                              "node_data['_N']['feat'].data[0]", "readable"),
    "edge-rows-mismatch": Case("numpy", lambda f, m: _drop_rows(_edge(f, m)), "_N___E___N-0.npy",
                               f"edges['{ET}'].data[0]", "expected 1000 rows (num_edges_per_chunk), found 993"),
    "node-feature-rows-mismatch": Case("numpy", lambda f, m: _drop_rows(_feat(f, m, "feat", 1)), "_N-feat-0.npy",
                                       "node_data['_N']['feat']", f"expected {NODES} rows in all"),
    "edge-feature-rows-mismatch": Case("parquet", lambda f, m: _drop_rows(_weight(f, m)), "weight-0.parquet",
                                       f"edge_data['{ET}']['weight']", f"expected {EDGES} rows in all"),
    "csv-edge-rows-mismatch": Case("csv", lambda f, m: _edge(f, m).write_text(
                                       "".join(_edge(f, m).read_text().splitlines(True)[:-3])),
                                   "_N___E___N-0.csv", f"edges['{ET}'].data[0]", "found 997 rows"),
    "uint64-id-above-int64": Case("numpy", _huge_id, "_N___E___N-1.npy", f"edges['{ET}'].data[1] dst",
                                  f"_N IDs in [0, {NODES}), found 1 out of range, first {2**64 - 1} at row 5",
                                  in_data=True),
    "empty-csv-edge-file": Case("csv", lambda f, m: _edge(f, m).write_text(""), "_N___E___N-0.csv",
                                f"edges['{ET}'].data[0]", "expected 1000 rows (num_edges_per_chunk), found 0 rows"),
    "empty-npy-edge-file": Case("numpy", lambda f, m: np.save(_edge(f, m), np.zeros(0, dtype=np.int64)),
                                "_N___E___N-0.npy", f"edges['{ET}'].data[0]",
                                "expected 1000 rows (num_edges_per_chunk), found 0 rows"),
    "id-out-of-range": Case("numpy", _bad_id, "_N___E___N-1.npy", f"edges['{ET}'].data[1] dst",
                            f"_N IDs in [0, {NODES}), found 1 out of range, first {NODES} at row 5", in_data=True),
}

COMMANDS = ["inspect", "assign-random", "assign-metis", "assign-kaminpar", "assign-parmetis", "assign-file",
            "dispatch", "validate", "run"]
SLOW = {(case, command) for case in ("id-out-of-range", "uint64-id-above-int64")
        for command in ("run", "dispatch", "assign-parmetis")}
PROGRESS = re.compile(r"^(\w+ +\[[#.]+\] \d+/\d+ |Dask dashboard: http)")  # progress bars, the dashboard link


@pytest.fixture(scope="module")
def sound(make_graph, tmp_path_factory) -> dict:
    """Sound graphs of each format (same nodes), an assignment folder and a partition set of the numpy one."""
    from graphshard.assign import AssignOptions, assign
    from graphshard.shuffle import ShuffleOptions, shuffle

    graphs = {fmt: make_graph("rmat", nodes=NODES, edges=EDGES, chunks=2, fmt=fmt)
              for fmt in ("numpy", "csv", "parquet")}
    base = tmp_path_factory.mktemp("sound")
    assignment = assign(graphs["numpy"], base / "assignment", 2, AssignOptions())
    options = ShuffleOptions(save_orig_nids=True, save_orig_eids=True)  # validate --input compares every row
    config = shuffle(graphs["numpy"], assignment, base / "parts", options, None)
    return {"graphs": graphs, "assignment": assignment, "partitions": config}


def _broken(sound: dict, case: Case, folder: Path) -> Path:
    """A private copy of the case's sound graph, broken as the case says (metadata.json rewritten if it edits it)."""
    shutil.copytree(sound["graphs"][case.fmt].parent, folder)
    meta_path = folder / "metadata.json"
    meta = json.loads(meta_path.read_text())
    before = json.dumps(meta)
    case.corrupt(folder, meta)
    if json.dumps(meta) != before:
        meta_path.write_text(json.dumps(meta))
    return meta_path


def _argv(command: str, metadata: Path, out: Path, sound: dict) -> list[str]:
    if command == "inspect":
        return ["inspect", str(metadata), "--check"]
    if command.startswith("assign-"):
        method = command.removeprefix("assign-")
        extra = ["--dir", str(sound["assignment"])] if method == "file" else []
        return ["assign", "--in", str(metadata), "--out", str(out), "--num-parts", "2", "--method", method, *extra]
    if command == "dispatch":
        return ["dispatch", "--in", str(metadata), "--partitions", str(sound["assignment"]), "--out", str(out)]
    if command == "validate":
        return ["validate", "--partitions", str(sound["partitions"]), "--input", str(metadata)]
    config = out.parent / "config.yaml"
    config.write_text(json.dumps({"input": {"metadata": str(metadata)}, "output": {"dir": str(out)}, "num_parts": 2,
                                  "cluster": {"workers": 1}}))
    return ["run", str(config)]


def _params():
    for name, case in CASES.items():
        for command in COMMANDS:
            marks = [pytest.mark.slow] if (name, command) in SLOW else []
            yield pytest.param(name, command, marks=marks, id=f"{name}-{command}")


@pytest.mark.parametrize("name,command", list(_params()))
def test_broken_input_is_refused_in_one_line(name, command, sound, tmp_path, capfd, monkeypatch):
    case = CASES[name]
    if command == "assign-parmetis" and case.in_data and not shutil.which("mpirun"):
        pytest.skip("parmetis reads the data only under MPI (OpenMPI not installed)")
    monkeypatch.setenv("GRAPHSHARD_LOG_DIR", str(tmp_path / "logs"))
    metadata = _broken(sound, case, tmp_path / "graph")
    out = tmp_path / "out"
    capfd.readouterr()
    status = main(_argv(command, metadata, out, sound))
    err = capfd.readouterr().err
    lines = [line for line in err.strip().splitlines() if not PROGRESS.match(line)]
    assert status == 2, err
    assert len(lines) == 1 and "Traceback" not in err and "Compute Failed" not in err, err
    assert lines[0].startswith(f"graphshard {command.split('-')[0]}: error: "), err
    assert case.file in lines[0] and case.needle in lines[0], err
    assert case.field is None or f"field '{case.field}" in lines[0], err
    assert not out.exists()

"""Assignment step, bad input: a clear message, exit status 2, and no output folder (nor staging leftovers)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from graphshard.assign import assign
from graphshard.assign.options import AssignOptions
from graphshard.cli import main
from graphshard.errors import GraphshardError
from graphshard.formats.chunked import load_metadata
from graphshard.formats.chunked_writer import ChunkedGraphWriter
from graphshard.formats.readers import read_edge_chunk


def cli_fails(args: list[str], out: Path, capsys, *needles: str) -> str:
    """Run the CLI, expect exit 2, the message to name every needle, and nothing left in out's folder."""
    before = set(out.parent.iterdir()) if out.parent.exists() else set()
    assert main(["assign", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    for needle in needles:
        assert needle in err, err
    assert not out.exists()
    assert set(out.parent.iterdir()) == before  # no hidden staging folder either
    return err


@pytest.mark.parametrize("k", ["0", "-1", "2001"])
def test_num_parts_out_of_range(rmat_small, tmp_path, capsys, k):
    cli_fails(["--in", str(rmat_small), "--num-parts", k], tmp_path / "a", capsys, "num_parts", "[1, 2000]")


@pytest.mark.parametrize("seed, needle", [("-1", "greater than or equal to 0"),
                                         (str(2**32), "less than or equal to 2147483647")])
def test_seed_out_of_range_names_the_flag(rmat_small, tmp_path, capsys, seed, needle):
    """A seed numpy's generators (negative) or METIS's and KaMinPar's 32-bit options cannot take is one line naming
    --seed before any work (were a worker's ValueError, or an internal error of several lines)."""
    err = cli_fails(["--in", str(rmat_small), "--num-parts", "2", "--method", "kaminpar", "--seed", seed],
                    tmp_path / "a", capsys, "--seed", needle)
    assert len(err.strip().splitlines()) == 1, err


def test_unknown_method(rmat_small, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["assign", "--in", str(rmat_small), "--out", str(tmp_path / "a"), "--num-parts", "2", "--method", "x"])
    assert exc.value.code == 2
    assert "invalid choice: 'x'" in capsys.readouterr().err
    with pytest.raises(ValidationError):
        AssignOptions(method="x")
    assert not (tmp_path / "a").exists()


@pytest.mark.parametrize("args, needles", [
    (["--method", "kaminpar", "--balance-edges"], ["--balance-edges: method 'kaminpar' cannot honour it",
                                                   "no balance constraints", "remove --balance-edges"]),
    (["--method", "kaminpar", "--objtype", "vol"], ["--objtype: method 'kaminpar'", "choose method metis"]),
    (["--method", "multilevel", "--objtype", "vol"], ["--objtype: method 'multilevel'", "edge cut only"]),
    (["--method", "metis", "--balance-ntypes", "paper/nope"], ["balance_ntypes", "'<ntype>/<feature>'"]),
    (["--method", "metis", "--balance-ntypes", "_N/nope"], ["node_data['_N']", "'nope'"]),
    (["--method", "kaminpar", "--kaminpar-preset", "nope"], ["kaminpar_preset", "'nope'"]),
    (["--method", "file"], ["needs --dir"]),
])
def test_options_a_method_cannot_honour(rmat_small, tmp_path, capsys, args, needles):
    cli_fails(["--in", str(rmat_small), "--num-parts", "2", *args], tmp_path / "a", capsys, *needles)


@pytest.mark.parametrize("args, needle", [
    (["--method", "random", "--balance-ntypes", "ntype"], "--balance-ntypes is ignored by method 'random'"),
    (["--method", "metis", "--balanced"], "--balanced is ignored by method 'metis' (random only"),
])
def test_options_a_method_ignores_warn_once(rmat_small, tmp_path, capsys, args, needle):
    """As DGL's partition_graph for random: an option the method does not read is a one-line warning, not an error."""
    assert main(["assign", "--in", str(rmat_small), "--num-parts", "2", *args, "--out", str(tmp_path / "a")]) == 0
    err = capsys.readouterr().err
    assert err.count(needle) == 1, err
    report = json.loads((tmp_path / "a" / "assignment_report.json").read_text())
    assert report["options"]["balance_ntypes"] == [] and report["options"]["balanced"] is False


def test_balance_column_of_wrong_length(rmat_small, tmp_path, capsys):
    g = load_metadata(rmat_small)
    et = g.edge_type[0]
    with ChunkedGraphWriter(tmp_path / "g", "short", g.node_type, g.edge_type) as w:
        w.add_edges(et, *read_edge_chunk(g, et, 0), "numpy")
        w.set_node_chunks("_N", [g.total_nodes])
        w.add_node_feature("_N", "train_mask", np.ones(g.total_nodes - 5, dtype=bool), "numpy")
        meta = w.finish()
    cli_fails(["--in", str(meta), "--num-parts", "2", "--method", "metis", "--balance-ntypes", "_N/train_mask"],
              tmp_path / "a", capsys, "train_mask", f"{g.total_nodes} rows", f"{g.total_nodes - 5} rows")


def test_balance_column_must_be_integer(mag_small, tmp_path, capsys):
    cli_fails(["--in", str(mag_small), "--num-parts", "2", "--method", "metis", "--balance-ntypes", "paper/feat"],
              tmp_path / "a", capsys, "node_data['paper']['feat']", "1-D integer or bool")


def user_folder(tmp_path: Path, lines: list[str], num_parts: int = 4) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "_N.txt").write_text("".join(f"{x}\n" for x in lines))
    (folder / "partition_meta.json").write_text(json.dumps({"num_parts": num_parts, "algo_name": "mine"}))
    return folder


def test_assignment_file_with_wrong_line_count(rmat_small, tmp_path, capsys):
    src = user_folder(tmp_path, [str(i % 4) for i in range(1999)])
    cli_fails(["--in", str(rmat_small), "--num-parts", "4", "--method", "file", "--dir", str(src)],
              tmp_path / "a", capsys, "_N.txt", "line count", "2000 lines", "1999 lines")


def test_assignment_file_with_out_of_range_id(rmat_small, tmp_path, capsys):
    lines = [str(i % 4) for i in range(2000)]
    lines[1234] = "4"
    src = user_folder(tmp_path, lines)
    cli_fails(["--in", str(rmat_small), "--num-parts", "4", "--method", "file", "--dir", str(src)],
              tmp_path / "a", capsys, "_N.txt", "line 1235", "[0, 4)", "found 4")


def test_assignment_file_for_other_part_count(rmat_small, tmp_path, capsys):
    src = user_folder(tmp_path, [str(i % 4) for i in range(2000)])
    cli_fails(["--in", str(rmat_small), "--num-parts", "8", "--method", "file", "--dir", str(src)],
              tmp_path / "a", capsys, "partition_meta.json", "num_parts", "8")


def test_trainer_ids_disagreeing_with_parts(mag_small, tmp_path, capsys):
    assign(mag_small, tmp_path / "src", 2, AssignOptions(method="random", num_trainers_per_machine=2))
    paper = tmp_path / "src" / "paper.txt"
    lines = paper.read_text().splitlines()
    lines[10] = str(1 - int(lines[10]))
    paper.write_text("\n".join(lines) + "\n")
    cli_fails(["--in", str(mag_small), "--num-parts", "2", "--method", "file", "--dir", str(tmp_path / "src"),
               "--num-trainers-per-machine", "2"], tmp_path / "a", capsys, "paper.txt", "line 11", "trainer")


def test_missing_mpirun(rmat_small, tmp_path, capsys, monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "mpirun" else real_which(name))
    cli_fails(["--in", str(rmat_small), "--num-parts", "2", "--method", "parmetis"], tmp_path / "a", capsys,
              "mpirun not found", "apt-get install openmpi-bin libscotchparmetis-dev", "pip install mpi4py")


def test_missing_mpi4py(rmat_small, tmp_path, capsys, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mpi4py" else real(name, *a))
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is absent: the mpirun check fires first")
    cli_fails(["--in", str(rmat_small), "--num-parts", "2", "--method", "parmetis"], tmp_path / "a", capsys,
              "mpi4py is missing", "pip install mpi4py")


def test_missing_parmetis_library(rmat_small, tmp_path, capsys):
    if shutil.which("mpirun") is None:
        pytest.skip("mpirun is absent: the mpirun check fires first")
    cli_fails(["--in", str(rmat_small), "--num-parts", "2", "--method", "parmetis", "--parmetis-lib",
               str(tmp_path / "libparmetis.so")], tmp_path / "a", capsys,
              "libparmetis.so does not exist", "libscotchparmetis-dev")


def test_missing_metis_library(rmat_small, tmp_path, capsys):
    cli_fails(["--in", str(rmat_small), "--num-parts", "2", "--method", "metis", "--metis-lib",
               str(tmp_path / "libmetis.so")], tmp_path / "a", capsys, "not a usable METIS library", "libmetis5")


def test_existing_output_kept_without_overwrite(rmat_small, tmp_path):
    out = tmp_path / "a"
    assign(rmat_small, out, 2, AssignOptions())
    before = (out / "_N.txt").read_bytes()
    with pytest.raises(GraphshardError, match="--overwrite"):
        assign(rmat_small, out, 3, AssignOptions())
    assert (out / "_N.txt").read_bytes() == before


def test_edge_with_out_of_range_node_id(rmat_small, tmp_path, capsys):
    g = load_metadata(rmat_small)
    with ChunkedGraphWriter(tmp_path / "g", "bad", g.node_type, g.edge_type) as w:
        w.add_edges(g.edge_type[0], np.array([0, 1]), np.array([1, 2000]), "numpy")
        w.set_node_chunks("_N", [g.total_nodes])
        meta = w.finish()
    cli_fails(["--in", str(meta), "--num-parts", "2", "--method", "metis"], tmp_path / "a", capsys,
              "dst", "[0, 2000)", "first 2000 at row 1")

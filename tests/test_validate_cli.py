"""`graphshard validate` and `graphshard report` on real partition sets: exit codes, one problem per line, files."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from test_validate import client, id_int32, mag_set, remove_node_feat  # noqa: F401 (fixtures)

from graphshard.cli import main


def test_validate_good_set_exits_0(mag_set, capsys):
    config, md = mag_set
    assert main(["validate", "--partitions", str(config), "--input", str(md)]) == 0
    out, err = capsys.readouterr()
    assert out == "" and "valid" in err and "0 failed" in err
    assert "skipped (trainer-ids: --json says why)" in err  # which checks did not run, on the summary line


def test_validate_accepts_output_folder_and_runs_on_dask(mag_set, capsys):
    config, md = mag_set
    assert main(["validate", "--partitions", str(config.parent), "--input", str(md), "--workers", "2",
                 "--full"]) == 0
    assert "valid" in capsys.readouterr().err


def test_validate_prints_each_problem_on_its_own_line(mag_set, tmp_path, capsys):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    id_int32(out / config.name)
    remove_node_feat(out / config.name)
    assert main(["validate", "--partitions", str(out / config.name), "--input", str(md)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert "partition 0: part0/graph.dgl: [reserved-dtypes] node field '_ID' has dtype int32, expected int64" in lines
    assert any(line.startswith("partition 2: part2/node_feat.dgl: [files]") for line in lines)
    assert all(line.startswith(("partition ", "all partitions: ")) for line in lines)


def test_validate_json_and_report_files(mag_set, tmp_path, capsys):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    assert main(["validate", "--partitions", str(out / config.name), "--json", "--write-report"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] and (out / "report.json").exists() and (out / "report.html").exists()


def test_missing_config_is_a_one_line_error(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "graphshard.cli", "validate", "--partitions",
                           str(tmp_path / "none.json")], capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "none.json" in proc.stderr


def test_report_regenerates_and_keeps_step_times(mag_set, tmp_path, capsys):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    (out / "report.json").write_text(json.dumps({"step_times": {"assign": 1.5, "dispatch": 4.0, "validate": 9.0}}))
    assert main(["report", str(out), "--input", str(md)]) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["step_times"]["assign"] == 1.5 and report["step_times"]["dispatch"] == 4.0
    assert report["step_times"]["validate"] != 9.0
    assert "wrote" in capsys.readouterr().err


def test_report_on_broken_set_writes_report_and_exits_1(mag_set, tmp_path):
    config, md = mag_set
    out = tmp_path / "out"
    shutil.copytree(config.parent, out)
    id_int32(out / config.name)
    assert main(["report", str(out)]) == 1
    report = json.loads((out / "report.json").read_text())
    assert not report["ok"] and report["problem_lines"]
    assert "INVALID" in (out / "report.html").read_text()


@pytest.mark.parametrize("cmd", ["validate", "report"])
def test_help(cmd, capsys):
    with pytest.raises(SystemExit) as exc:
        main([cmd, "--help"])
    assert exc.value.code == 0
    assert "--input" in capsys.readouterr().out

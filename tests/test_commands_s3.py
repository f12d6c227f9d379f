"""Every step command with its locations on S3 (issue 21): assign, shuffle, validate, report, inspect and plan read
and write `s3://` URLs; the set the commands write there, fetched back, equals the same commands' set on local disk
byte for byte."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import yaml
from test_flow_s3 import upload_tree

from graphshard.cli import main
from graphshard.fetch import fetch
from graphshard.storage import Storage

SHUFFLE = ["--save-orig-nids", "--graph-formats", "coo,csc", "--workers", "2", "--memory-limit", "1GB"]


def _steps(metadata: str, asg: str, out: str) -> None:
    assert main(["assign", "--in", metadata, "--out", asg, "--num-parts", "3", "--method", "random"]) == 0
    assert main(["shuffle", "--in", metadata, "--partitions", asg, "--out", out, *SHUFFLE]) == 0


def test_step_commands_on_s3_equal_local(tmp_path: Path, rmat_small: Path, s3_bucket: str):
    _steps(str(rmat_small), str(tmp_path / "asg"), str(tmp_path / "set"))
    upload_tree(rmat_small.parent, f"{s3_bucket}/graph")
    meta = f"{s3_bucket}/graph/metadata.json"
    _steps(meta, f"{s3_bucket}/asg", f"{s3_bucket}/set")
    assert Storage().read_bytes(f"{s3_bucket}/asg/_N.txt") == (tmp_path / "asg" / "_N.txt").read_bytes()
    fetch(f"{s3_bucket}/set/rmat.json", tmp_path / "fetched")
    local = {p.relative_to(tmp_path / "set").as_posix(): p.read_bytes()
             for p in (tmp_path / "set").rglob("*") if p.is_file()}
    assert {p.relative_to(tmp_path / "fetched").as_posix(): p.read_bytes()
            for p in (tmp_path / "fetched").rglob("*") if p.is_file()} == local

    assert main(["validate", "--partitions", f"{s3_bucket}/set", "--input", meta, "--write-report"]) == 0
    report = json.loads(Storage().read_bytes(f"{s3_bucket}/set/report.json"))
    assert report["ok"] and report["num_problems"] == 0
    assert main(["report", f"{s3_bucket}/set", "--input", meta]) == 0
    assert Storage().exists(f"{s3_bucket}/set/report.html")

    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["inspect", meta, "--check", "--json"]) == 0
    assert json.loads(printed.getvalue())["num_edges"] == 20000

    job = {"input": {"metadata": "graph/metadata.json"}, "output": {"dir": "sets/rmat"}, "num_parts": 3}
    Storage().write_bytes(f"{s3_bucket}/job.yaml", yaml.safe_dump(job).encode())
    printed = io.StringIO()
    with redirect_stdout(printed):
        assert main(["plan", f"{s3_bucket}/job.yaml", "--json"]) == 0
    assert json.loads(printed.getvalue())

"""Every location of a pipeline config may be a URL (issue 21): the YAML's keys, the config itself on S3 with
relative locations resolved against its folder there, `storage_options` never shown, and bad locations refused by
the pre-flight check in one line that names the key and never a secret."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from graphshard.errors import GraphshardError
from graphshard.pipeline.config import load_config, parse_config
from graphshard.pipeline.preflight import check_config
from graphshard.storage import Location, Storage

SECRET = "very-secret-value-0042"


def _tree(**extra) -> dict:
    return {"input": {"metadata": "graph/metadata.json"}, "output": {"dir": "out"}, "num_parts": 2, **extra}


def test_urls_stay_urls_and_local_paths_stay_paths(tmp_path: Path):
    cfg = parse_config(_tree(work_dir="s3://bucket/cache", shuffle={"scratch_dir": "s3://bucket/scratch"},
                             assign={"method": "file", "dir": "gs://other/assignment"}), tmp_path / "job.yaml")
    assert cfg.input.metadata == tmp_path / "graph/metadata.json"
    assert cfg.output.dir == tmp_path / "out"
    assert cfg.work == Location("s3", "bucket/cache")
    assert cfg.shuffle.scratch_dir == Location("s3", "bucket/scratch")
    assert cfg.assign.dir == Location("gs", "assignment".join(["other/", ""]))
    assert cfg.section("shuffle")["scratch_dir"] == "s3://bucket/scratch"
    local = parse_config(_tree(), tmp_path / "job.yaml")
    assert local.work == tmp_path / "out.work" and isinstance(local.work, Path)


def test_output_url_gets_a_work_prefix_beside_it(tmp_path: Path):
    cfg = parse_config(_tree(output={"dir": "s3://bucket/sets/run1"}), tmp_path / "job.yaml")
    assert cfg.work == Location("s3", "bucket/sets/run1.work")


def test_config_on_s3_resolves_relative_locations_there(s3_bucket: str):
    Storage().write_bytes(f"{s3_bucket}/jobs/job.yaml", yaml.safe_dump(_tree(work_dir="../cache")).encode())
    cfg = load_config(f"{s3_bucket}/jobs/job.yaml")
    bucket = s3_bucket.removeprefix("s3://")
    assert cfg.source == Location("s3", f"{bucket}/jobs/job.yaml")
    assert cfg.input.metadata == Location("s3", f"{bucket}/jobs/graph/metadata.json")
    assert cfg.output.dir == Location("s3", f"{bucket}/jobs/out")
    assert cfg.work == Location("s3", f"{bucket}/cache")


def test_missing_config_url_is_one_line(s3_bucket: str):
    with pytest.raises(GraphshardError, match="no such file") as err:
        load_config(f"{s3_bucket}/jobs/nothing.yaml")
    assert "\n" not in str(err.value)


def test_storage_options_are_never_shown(tmp_path: Path):
    opts = {"s3://bucket/": {"key": "k", "secret": SECRET, "endpoint_url": "http://127.0.0.1:1"}}
    cfg = parse_config(_tree(storage_options=opts), tmp_path / "job.yaml")
    assert cfg.storage.options.for_location(Location("s3", "bucket/x"))["secret"] == SECRET
    for text in (repr(cfg), str(cfg), cfg.model_dump_json(), repr(cfg.storage)):
        assert SECRET not in text
    with pytest.raises(GraphshardError, match="storage_options") as err:
        parse_config(_tree(storage_options={"s3://bucket/": SECRET}), tmp_path / "job.yaml")
    assert SECRET not in str(err.value)


@pytest.fixture
def graph_copy(rmat_small: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "graph"
    shutil.copytree(rmat_small.parent if rmat_small.is_file() else rmat_small, dst)
    return dst / "metadata.json"


def _checked(tmp_path: Path, graph: Path, **extra):
    cfg = parse_config({"input": {"metadata": str(graph)}, "output": {"dir": str(tmp_path / "out")},
                        "num_parts": 2, **extra}, tmp_path / "job.yaml")
    return check_config(cfg)


def test_bad_work_location_missing_bucket(graph_copy: Path, tmp_path: Path, s3_env):
    with pytest.raises(GraphshardError) as err:
        _checked(tmp_path, graph_copy, work_dir="s3://no-such-bucket-gs/cache")
    line = str(err.value)
    assert "work_dir" in line and "no-such-bucket-gs" in line and "does not exist" in line and "\n" not in line


def test_bad_location_unreachable_endpoint_names_no_secret(graph_copy: Path, tmp_path: Path, s3_env):
    opts = {"s3://": {"key": "k", "secret": SECRET, "endpoint_url": "http://127.0.0.1:9"}}
    with pytest.raises(GraphshardError) as err:
        _checked(tmp_path, graph_copy, output={"dir": "s3://somewhere/out"}, storage_options=opts)
    line = str(err.value)
    assert "output.dir" in line and "cannot reach" in line and SECRET not in line and "\n" not in line


def test_bad_location_wrong_credentials(graph_copy: Path, tmp_path: Path):
    from s3_helpers import authenticating_server

    with authenticating_server() as server:
        opts = {"s3://": {**server.options(), "secret": SECRET}}
        with pytest.raises(GraphshardError) as err:
            _checked(tmp_path, graph_copy, work_dir="s3://bucket/cache", storage_options=opts)
    line = str(err.value)
    assert "work_dir" in line and "refused the credentials" in line and SECRET not in line


def test_bad_location_read_only(graph_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from s3_helpers import read_only_bucket

    with read_only_bucket() as (server, bucket):
        for name, value in server.env().items():
            monkeypatch.setenv(name, value)
        with pytest.raises(GraphshardError) as err:
            _checked(tmp_path, graph_copy, output={"dir": f"{bucket}/out"})
    line = str(err.value)
    assert "output.dir" in line and "denied write access" in line and server.secret not in line


def test_output_at_a_bucket_root_needs_a_work_dir(graph_copy: Path, tmp_path: Path, s3_env, s3_bucket: str):
    """`output.dir: s3://bucket/` without work_dir: the default `<output.dir>.work` was `s3://bucket/bucket.work`,
    refused as 'expected a location separate from output.dir' though the user never chose it."""
    for out in (s3_bucket, f"{s3_bucket}/"):
        with pytest.raises(GraphshardError) as err:
            _checked(tmp_path, graph_copy, output={"dir": out})
        line = str(err.value)
        assert "work_dir" in line and "bucket's root" in line and ".work/" not in line, line
    _checked(tmp_path, graph_copy, output={"dir": f"{s3_bucket}/"}, work_dir=str(tmp_path / "work"))


def test_output_prefix_inside_input_prefix(tmp_path: Path):
    from graphshard.storage import inside

    assert inside(Location("s3", "b/graph/out"), Location("s3", "b/graph"))
    assert not inside(Location("s3", "b/graph2"), Location("s3", "b/graph"))
    assert not inside(Location("gs", "b/graph/out"), Location("s3", "b/graph"))
    assert inside(tmp_path / "a" / "b", tmp_path / "a")
    assert inside("s3://b/graph", "s3://b/graph/") and not inside(tmp_path / "a", tmp_path / "a" / "b")
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert inside(tmp_path / "link" / "x", tmp_path / "real") and not inside(tmp_path / "ab", tmp_path / "a")


def test_run_with_bad_locations_exits_2_with_one_line(tmp_path: Path, graph_copy: Path, s3_bucket: str):
    import subprocess
    import sys

    from test_flow_s3 import upload_tree

    upload_tree(graph_copy.parent, f"{s3_bucket}/graph")
    cases = {"inside": ({"input": {"metadata": f"{s3_bucket}/graph"}, "output": {"dir": f"{s3_bucket}/graph/out"}},
                        "output.dir"),
             "bucket": ({"input": {"metadata": str(graph_copy)}, "output": {"dir": "s3://no-such-bucket-gs/out"}},
                        "does not exist")}
    for name, (tree, expected) in cases.items():
        config = tmp_path / f"{name}.yaml"
        config.write_text(yaml.safe_dump({**tree, "num_parts": 2, "work_dir": str(tmp_path / f"work-{name}")}))
        done = subprocess.run([sys.executable, "-m", "graphshard.cli", "run", str(config)], capture_output=True,
                              text=True, timeout=300)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and expected in lines[0], (name, done.stderr)
        assert "Traceback" not in done.stderr + done.stdout
    assert not Storage().listing(f"{s3_bucket}/graph/out")


def test_storage_options_overrides_are_not_stored_with_the_flow_run(tmp_path: Path, rmat_small: Path):
    """`--set storage_options...=<secret>` reached Prefect as a flow run parameter in clear (its database, its UI): the
    run this process drives applies such overrides without passing them as parameters."""
    import asyncio

    from flow_helpers import run, write_config
    from prefect.client.orchestration import get_client

    config = write_config(tmp_path, rmat_small)
    secret = f"storage_options.s3://bucket/.secret={SECRET}"
    summary = run(config, ["num_parts=3", secret])
    assert summary["num_parts"] == 3

    async def stored() -> dict:
        async with get_client() as client:
            return (await client.read_flow_run(summary["flow_run_id"])).parameters

    params = asyncio.run(stored())
    assert params["overrides"] == ["num_parts=3"] and SECRET not in repr(params)


def test_unparsable_storage_options_override_does_not_show_its_value(tmp_path: Path):
    """`--set storage_options...secret=[...` (a secret YAML cannot parse) printed the secret in its error line."""
    from graphshard.pipeline.config import apply_override

    with pytest.raises(GraphshardError) as err:
        apply_override({}, f"storage_options.s3://bucket/.secret=[{SECRET}")
    assert SECRET not in str(err.value) and "expected a YAML value (quote it" in str(err.value)
    with pytest.raises(GraphshardError, match=r"found '\[4' \(ParserError\)"):
        apply_override({}, "num_parts=[4")

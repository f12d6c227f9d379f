"""Publishing a partition set on an object store (issue 21, item 4): files under a run-unique prefix, the partition
config last naming them, an earlier set replaced only with overwrite and its objects deleted after the new config is
in place, and `fetch` giving back byte for byte what a local run publishes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from flow_helpers import run, tree_bytes, write_config

from graphshard.errors import GraphshardError
from graphshard.fetch import fetch
from graphshard.runprefix import RUNS
from graphshard.storage import Storage, location

REPORT = ("report.json", "report.html")


def _config(folder: Path, metadata: Path, address: str, **changes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return write_config(folder, metadata, address, **changes)


def _objects(url: str) -> list[str]:
    return [e.rel for e in Storage().listing(url)]


def test_run_to_s3_output_then_fetch_equals_local_run(tmp_path, rmat_small, dask_address, s3_bucket):
    local = run(_config(tmp_path / "local", rmat_small, dask_address))
    out = f"{s3_bucket}/sets/rmat"
    summary = run(_config(tmp_path / "s3", rmat_small, dask_address, output={"dir": out}))
    assert summary["partition_config"] == f"{out}/{Path(local['partition_config']).name}"
    objects = _objects(out)
    runs = {o.split("/")[1] for o in objects if o.startswith(RUNS + "/")}
    assert len(runs) == 1
    run_id = runs.pop()
    top = sorted(o for o in objects if not o.startswith(RUNS + "/"))
    assert top == [Path(local["partition_config"]).name]  # the config is the one object outside the run prefix
    assert summary["report"] == f"{out}/{RUNS}/{run_id}/report.html"
    report = json.loads(Storage().read_bytes(f"{out}/{RUNS}/{run_id}/report.json"))
    assert report["config"] == summary["partition_config"]

    fetched = fetch(summary["partition_config"], tmp_path / "fetched")
    got = tree_bytes(tmp_path / "fetched")
    want = tree_bytes(Path(local["output"]), REPORT)
    assert sorted(got) == sorted(want)
    assert got == want  # the config too: the run prefix is taken off its paths
    assert fetched.parts == list(range(json.loads(got[Path(local["partition_config"]).name])["num_parts"]))

    again = run(_config(tmp_path / "s3", rmat_small, dask_address, output={"dir": out}))
    assert again["steps"]["publish"] == "Cached"
    assert _objects(out) == objects


def test_changed_set_replaces_earlier_prefix_only_with_overwrite(tmp_path, rmat_small, dask_address, s3_bucket):
    out = f"{s3_bucket}/sets/rmat"
    first = run(_config(tmp_path / "a", rmat_small, dask_address, output={"dir": out}))
    before = {o.split("/")[1] for o in _objects(out) if o.startswith(RUNS)}
    with pytest.raises(GraphshardError, match="output.dir"):  # another work folder's set: refused
        run(_config(tmp_path / "b", rmat_small, dask_address, output={"dir": out}, num_parts=3))  # example.yaml: 4
    assert {o.split("/")[1] for o in _objects(out) if o.startswith(RUNS)} == before
    second = run(_config(tmp_path / "b", rmat_small, dask_address,
                              output={"dir": out, "overwrite": True}, num_parts=3))  # example.yaml: 4
    after = {o.split("/")[1] for o in _objects(out) if o.startswith(RUNS)}
    assert len(after) == 1 and after != before  # the earlier set's objects are gone
    config = json.loads(Storage().read_bytes(second["partition_config"]))
    assert config["num_parts"] == 3 and first["partition_config"] == second["partition_config"]
    assert config["part-0"]["part_graph"].startswith(f"{RUNS}/{after.pop()}/part0/")


def test_crashed_publish_leftovers_are_deleted_by_the_next(tmp_path, rmat_small, dask_address, s3_bucket):
    out = f"{s3_bucket}/sets/rmat"
    stray = location(out) / RUNS / "0123456789abcdef" / "part0" / "graph.dgl"
    Storage().write_bytes(stray, b"half a set")  # what a publish killed before its config PUT leaves
    run(_config(tmp_path / "a", rmat_small, dask_address, output={"dir": out, "overwrite": True}))
    assert not Storage().exists(stray)


def test_partition_graph_to_s3_equals_local_set(tmp_path, dask_cluster_client, s3_bucket):
    from test_api import hetero

    import graphshard

    g = hetero()
    kwargs = dict(num_nodes=g["num_nodes"], node_feats=g["node_feats"], edge_feats=g["edge_feats"],
                  part_method="random", validate=True, client=dask_cluster_client)
    graphshard.partition_graph(g["edges"], "shop", 2, tmp_path / "local", **kwargs)
    out = f"{s3_bucket}/api/shop"
    graphshard.partition_graph(g["edges"], "shop", 2, out, **kwargs)
    objects = _objects(out)
    assert [o for o in objects if not o.startswith(RUNS + "/")] == ["shop.json"]
    run_id = objects[0].split("/")[1]
    report = json.loads(Storage().read_bytes(f"{out}/{RUNS}/{run_id}/report.json"))
    assert report["ok"] and report["config"] == f"{out}/shop.json"
    fetch(f"{out}/shop.json", tmp_path / "fetched")
    assert tree_bytes(tmp_path / "fetched") == tree_bytes(tmp_path / "local", REPORT)
    graphshard.partition_graph(g["edges"], "shop", 2, out, **kwargs)  # the same seed: the same objects
    assert _objects(out) == objects
    Storage().write_bytes(f"{out}/notes.txt", b"mine")
    with pytest.raises(GraphshardError, match="not part of a partition set"):
        graphshard.partition_graph(g["edges"], "shop", 2, out, **kwargs)


def test_cache_on_s3_output_on_local_disk(tmp_path, rmat_small, dask_address, s3_env, s3_bucket):
    local = run(_config(tmp_path / "local", rmat_small, dask_address))
    options = {"s3://": s3_env.options()}  # the session's workers started without the AWS environment
    config = _config(tmp_path / "mixed", rmat_small, dask_address, work_dir=f"{s3_bucket}/cache",
                     storage_options=options)
    first = run(config)
    assert tree_bytes(Path(first["output"]), REPORT) == tree_bytes(Path(local["output"]), REPORT)
    assert run(config)["steps"]["publish"] == "Cached"


def test_work_and_output_on_s3_set_written_under_its_run_prefix(tmp_path, rmat_small, dask_address, s3_env,
                                                                 s3_bucket, monkeypatch):
    """Work folder and output on the store: the shuffle writes the set straight under `<out>/.runs/<id>/` (its
    artifact holds the manifest only) and publishing copies nothing (no CopyObject: before, the whole set was
    copied there from the step cache), only writes the report and the config naming that prefix. Leftovers of a
    killed run under `.runs/` are no set: accepted without overwrite, deleted by the publish. Fetched: a local run's
    bytes; a second run is cached throughout and changes no object."""
    import aiobotocore.client

    local = run(_config(tmp_path / "local", rmat_small, dask_address))
    out = f"{s3_bucket}/sets/rmat"
    stray = location(out) / RUNS / "0123456789abcdef" / "part0" / "graph.dgl"
    Storage().write_bytes(stray, b"half a set")
    calls, real = [], aiobotocore.client.AioBaseClient._make_api_call

    async def counted(self, operation, params):
        calls.append(operation)
        return await real(self, operation, params)

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", counted)
    config = _config(tmp_path / "s3", rmat_small, dask_address, output={"dir": out}, work_dir=f"{s3_bucket}/work",
                     storage_options={"s3://": s3_env.options()})
    summary = run(config)
    assert not {"CopyObject", "UploadPartCopy"} & set(calls), sorted(set(calls))
    assert not Storage().exists(stray)
    runs = {o.split("/")[1] for o in _objects(out) if o.startswith(RUNS + "/")}
    assert len(runs) == 1
    shuffled = [e.rel for e in Storage().listing(f"{s3_bucket}/work/shuffle")]
    assert len(shuffled) == 1 and shuffled[0].endswith("/manifest.json"), shuffled
    assert shuffled[0].startswith(runs.pop())  # the run prefix is named after the shuffle's key
    fetch(summary["partition_config"], tmp_path / "fetched")
    assert tree_bytes(tmp_path / "fetched") == tree_bytes(Path(local["output"]), REPORT)
    objects = _objects(out)
    again = run(config)
    assert set(again["steps"].values()) == {"Cached"}, again["steps"]
    assert _objects(out) == objects


def test_overwrite_replaces_a_set_beside_its_config(tmp_path, rmat_small, dask_address, s3_bucket):
    """An output holding a set whose config names its files beside it (`graphshard shuffle --out s3://...`, or a
    local set copied up): `overwrite` replaced only the config, leaving the old parts, the old digests file (another
    part count) and the old report beside the new config. Objects no set names stay."""
    local = run(_config(tmp_path / "local", rmat_small, dask_address, num_parts=3))
    out = f"{s3_bucket}/sets/rmat"
    for path in sorted(Path(local["output"]).rglob("*")):
        if path.is_file():
            Storage().upload(path, f"{out}/{path.relative_to(local['output']).as_posix()}")
    Storage().write_bytes(f"{out}/notes.txt", b"not a partition file")
    assert "part2/graph.dgl" in _objects(out)
    run(_config(tmp_path / "s3", rmat_small, dask_address, output={"dir": out, "overwrite": True}, num_parts=2))
    top = sorted(o for o in _objects(out) if not o.startswith(RUNS + "/"))
    assert top == ["notes.txt", Path(local["partition_config"]).name], top
    fetch(f"{out}/{Path(local['partition_config']).name}", tmp_path / "fetched")

"""Validation of a partition set on a store reads each partition file whole, once per worker (the step's copies,
storage/copies.py, through validate/part_files.py `part_copies`), not by ranged GETs per pass nor once per task, and
still finds a damaged file, naming its URL. Requests counted where aiobotocore makes every S3 call."""

from __future__ import annotations

from collections import defaultdict

import pytest
from test_storage_steps import random_assignment, upload_tree

from graphshard.shuffle import ShuffleOptions, shuffle
from graphshard.storage import Storage, location
from graphshard.storage.scratch import local_dir
from graphshard.validate import validate

PARTS = 3


@pytest.fixture
def gets(monkeypatch) -> list[dict]:
    """Every GetObject from now on: its key, Range header (None: the whole object) and the bytes served."""
    import aiobotocore.client

    seen, real = [], aiobotocore.client.AioBaseClient._make_api_call

    async def counted(self, operation, params):
        out = await real(self, operation, params)
        if operation == "GetObject":
            seen.append({"key": params["Key"], "range": params.get("Range"), "bytes": int(out["ContentLength"])})
        elif operation == "HeadObject":
            seen.append({"key": params["Key"], "range": "HEAD", "bytes": 0})
        return out

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", counted)
    return seen


@pytest.fixture
def stored_set(make_graph, s3_server, tmp_path) -> tuple[Storage, str, str, str, dict[str, int]]:
    """A valid set (orig-ID files on) and its input uploaded to a fresh bucket: (storage, bucket URL, config URL,
    input URL, size of every partition file by its key in the bucket)."""
    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=2)
    out = shuffle(metadata, random_assignment(metadata, tmp_path / "asg", PARTS), tmp_path / "out",
                  ShuffleOptions(save_orig_nids=True, save_orig_eids=True), None)
    url = upload_tree(storage, out.parent, f"{bucket}/set")
    graph_url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    sizes = {f"set/{e.rel}": e.size for e in storage.listing(url) if e.rel.startswith("part")}
    assert len(sizes) == PARTS * 5
    return storage, bucket, f"{url}/{out.name}", f"{graph_url}/metadata.json", sizes


def _per_file(gets: list[dict], sizes: dict[str, int]) -> dict[str, list[dict]]:
    """The GETs of each partition file, by key."""
    found = defaultdict(list)
    for g in gets:
        if g["key"] in sizes:
            found[g["key"]].append(g)
    return found


def test_each_partition_file_is_read_whole_once(stored_set, gets):
    """In-process validation with the input and the remote-share estimate (node maps, scans, input checksums,
    cross-checks, two estimate layers): every partition file is fetched once, whole, and kept for the step's later
    tasks (storage/copies.py). Before: once per task that read it (orig_nids 3x, orig_eids 2x, graph.dgl 3x), and
    before the task-local copies dozens of ranged GETs each. The copies are gone when validation returns."""
    storage, _, config, graph, sizes = stored_set
    report = validate(config, graph, storage=storage)
    assert report["ok"], report["problems"]
    assert report["quality"]["remote_share"] is not None
    per_file = _per_file(gets, sizes)
    assert set(per_file) == set(sizes)
    for key, got in per_file.items():
        assert [(g["range"], g["bytes"]) for g in got] == [(None, sizes[key])], (key, got)
    assert not any(local_dir().glob("copies-*")), "the step's copies are deleted when it ends"


def test_a_damaged_partition_file_is_found_and_named_by_its_url(stored_set, gets):
    """A byte changed inside part 1's orig_eids.dgl data (same size, still parses): validation fails on partition 1
    and names the file as the set names it, never the task-local copy's path."""
    storage, bucket, config, graph, sizes = stored_set
    key = "set/part1/orig_eids.dgl"
    target = location(bucket).join(key)
    data = bytearray(storage.read_bytes(target))
    data[-5] ^= 0x7F  # a high byte of the last original edge ID: now out of range or another partition's edge
    storage.write_bytes(target, bytes(data))
    gets.clear()  # validation's reads from here on (the read above is by ranges: Storage.read_bytes)
    report = validate(config, graph, storage=storage, remote_share=False)
    assert not report["ok"]
    bad = [p for p in report["problems"] if p["partition"] == 1]
    assert any(p["check"] == "orig-ids" and p["file"] == "part1/orig_eids.dgl" for p in bad), report["problems"]
    assert all(p["file"].startswith("part1/") for p in bad), report["problems"]
    text = " ".join(f"{p['file']} {p['message']}" for p in report["problems"])
    assert str(local_dir()) not in text and "copies-" not in text, text
    assert all(g["range"] is None for g in _per_file(gets, sizes)[key])


def test_a_truncated_partition_file_names_the_url(stored_set):
    """A file cut short is read from its local copy, and the message names the object, not the copy."""
    storage, bucket, config, _, _ = stored_set
    target = location(bucket).join("set/part2/node_feat.dgl")
    storage.write_bytes(target, storage.read_bytes(target)[:-64])
    report = validate(config, storage=storage, remote_share=False)
    bad = [p for p in report["problems"] if p["partition"] == 2]
    assert bad and any("truncated" in p["message"] for p in bad), report["problems"]
    assert all("copies-" not in p["message"] for p in report["problems"]), report["problems"]


def test_each_input_file_is_read_once(stored_set, gets):
    """Validation with the input on the store reads each input file's data once: the input tasks' one read serves
    the checksums and every partition's sampled rows in it, and the edge features' owners come from the partitions'
    edge claims, not from the edge files. (Before: each partition's sampled comparison read the runs of rows its
    samples touched, most of each chunk, and the edge feature checksums read the edge files again.)"""
    storage, bucket, config, graph, _ = stored_set
    inputs = {f"in/{e.rel}": e.size for e in storage.listing(f"{bucket}/in") if e.rel.endswith(".npy")}
    assert len(inputs) >= 8  # edges, node features, edge features, in 2 chunks each
    report = validate(config, graph, storage=storage, remote_share=False)
    assert report["ok"], report["problems"]
    for key, size in inputs.items():
        got = [g for g in gets if g["key"] == key]
        headers = [g for g in got if g["range"] == "bytes=0-4095"]  # the driver's row index, once
        assert len(headers) == 1 and [g["bytes"] for g in got if g not in headers] == [size], (key, size, got)


def test_sampled_rows_compared_by_the_input_tasks_name_the_first(stored_set, tmp_path):
    """Every row of one partition's node feature changed: the sampled comparison, split over the input chunks'
    tasks, counts every sampled row and names the first one in sample order, as one task comparing them did."""
    from graphshard.formats.dgl_binary import load_tensor_dict, save_tensor_dict
    from graphshard.validate.sampling import SAMPLE_SIZE, sample_rows

    storage, bucket, config, graph, _ = stored_set
    target = location(bucket).join("set/part1/node_feat.dgl")
    local = tmp_path / "node_feat.dgl"
    local.write_bytes(storage.read_bytes(target))
    feats = load_tensor_dict(local)
    key = next(k for k, v in feats.items() if v.dtype.kind == "f" and v.ndim == 2)
    feats[key] = feats[key] + 1.0
    save_tensor_dict(local, feats)
    storage.upload(local, target)
    report = validate(config, graph, storage=storage, remote_share=False)
    rows = [p for p in report["problems"] if p["check"] == "feature-values" and "compared rows" in p["message"]]
    assert len(rows) == 1 and rows[0]["partition"] == 1, report["problems"]
    orig = load_tensor_dict_from(storage, location(bucket).join("set/part1/orig_nids.dgl"), tmp_path)
    ntype, n = key.split("/")[0], feats[key].shape[0]
    picks = sample_rows(n, False, 0, 1, key, SAMPLE_SIZE)
    assert f": {picks.size} of {picks.size} compared rows" in rows[0]["message"], rows[0]["message"]
    assert f"(first: original ID {int(orig[ntype][picks[0]])}:" in rows[0]["message"], rows[0]["message"]


def load_tensor_dict_from(storage: Storage, where, tmp_path) -> dict:
    from graphshard.formats.dgl_binary import load_tensor_dict

    local = tmp_path / where.name
    local.write_bytes(storage.read_bytes(where))
    return load_tensor_dict(local)


def test_each_partition_file_is_fetched_once_per_worker(stored_set, s3_server, tmp_path):
    """On two Dask worker processes, each with its own local folder, every S3 request counted by bench/s3proxy.py
    (the benchmark's proxy): each partition file is served whole at most once per worker for the whole step (node
    maps, scans, cross-checks and both estimate layers share a worker's copy), the set's bytes at most twice in all,
    the report equal to the in-process one's, and no worker keeps a copy afterwards. Before: each task fetched its
    own copy (graph.dgl three times: the scan and two estimate layers, orig_nids.dgl three times)."""
    import sys
    from pathlib import Path

    from distributed import Client, LocalCluster

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from s3proxy import CountingProxy

    _, bucket, config, graph, sizes = stored_set
    workers = 2
    with CountingProxy(s3_server.endpoint) as proxy, \
            LocalCluster(n_workers=workers, threads_per_worker=1, dashboard_address=":0", processes=True,
                         local_directory=str(tmp_path / "workers")) as cluster, Client(cluster) as client:
        storage = Storage({"s3://": {**s3_server.options(), "endpoint_url": proxy.endpoint}})
        report = validate(config, graph, client=client, storage=storage)
        requests = proxy.taken()
        assert not list((tmp_path / "workers").rglob("copies-*")), "every worker's copies go when the step ends"
    assert report["ok"] and report["quality"]["remote_share"] is not None, report["problems"]
    alone = validate(config, graph, storage=Storage({"s3://": s3_server.options()}))
    assert {k: v for k, v in report.items() if k != "step_times"} == \
        {k: v for k, v in alone.items() if k != "step_times"}
    prefix = "/" + bucket.removeprefix("s3://") + "/"
    served = defaultdict(list)
    for r in requests:
        key = r.path.split("?")[0].removeprefix(prefix)
        if r.method in ("GET", "HEAD") and key in sizes:
            served[key].append((r.method, r.served))
    assert set(served) == set(sizes)
    for key, got in served.items():
        assert 1 <= len(got) <= workers and set(got) == {("GET", sizes[key])}, (key, got)
    assert sum(n for got in served.values() for _, n in got) <= workers * sum(sizes.values())


@pytest.fixture
def started(monkeypatch) -> list[tuple[str, str]]:
    """Every S3 request as it starts: (operation, key or listed prefix), in order, from every thread."""
    import aiobotocore.client

    seen, real = [], aiobotocore.client.AioBaseClient._make_api_call

    async def recorded(self, operation, params):
        seen.append((operation, params.get("Key", params.get("Prefix", ""))))
        return await real(self, operation, params)

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", recorded)
    return seen


def test_the_next_partition_is_downloaded_while_a_scan_computes(stored_set, started, monkeypatch):
    """While partition p's scan computes, the download of the next partition's files has begun (validate/prefetch.py:
    in this process every partition's home is here, so scan p fetches p + 1 ahead); the scan of partition 0 is held
    open until that happens (10 s at most), so the test shows the overlap, not a race. Each partition file is still
    fetched once, whole. Before: partition p + 1's graph.dgl was fetched only when its own scan began."""
    import time

    from graphshard.validate import per_partition

    storage, _, config, graph, sizes = stored_set
    real, overlapped = per_partition.scan_partition, {}

    def held_scan(layout, part, setup):
        summary = real(layout, part, setup)
        wanted = ("GetObject", f"set/part{part + 1}/graph.dgl")
        deadline = time.monotonic() + 10
        while part + 1 < PARTS and wanted not in started and time.monotonic() < deadline:
            time.sleep(0.01)
        overlapped[part] = wanted in started  # asked before this scan returned
        return summary

    monkeypatch.setattr(per_partition, "scan_partition", held_scan)
    report = validate(config, graph, storage=storage, remote_share=False)
    assert report["ok"], report["problems"]
    assert overlapped == {0: True, 1: True, 2: False}
    gets = [key for op, key in started if op == "GetObject" and key in sizes]
    assert sorted(gets) == sorted(sizes), "every partition file fetched once"


def test_the_set_is_listed_once_for_every_task(stored_set, started):
    """The set's objects are listed once by the client and the tasks take their partition's names, sizes and ETags
    from that listing (`CopyCache.objects`). Before: one listing per task per partition folder (node maps, scan,
    cross-check, each estimate layer: 15 here). The input's metadata.json is read and its folder listed once for
    the step (before: twice, by the counts check and again for the tasks)."""
    storage, _, config, graph, _ = stored_set
    report = validate(config, graph, storage=storage)
    assert report["ok"], report["problems"]
    listed = [prefix for op, prefix in started if op == "ListObjectsV2" and prefix.startswith("set/")]
    assert listed == ["set/"], listed
    assert [op for op, key in started if key == "in/metadata.json"] == ["GetObject"], started
    assert [prefix for op, prefix in started if op == "ListObjectsV2" and prefix.startswith("in")] == ["in/"]

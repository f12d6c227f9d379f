"""The pre-flight's header checks of an input on a store read the headers concurrently (each is a round trip; 40
files one after the other took 2 s on the local S3 server), with the same problems found as one by one."""

from __future__ import annotations

import asyncio

import pytest
from test_storage_steps import upload_tree

from graphshard.precheck import precheck
from graphshard.storage import Storage


def slow_gets(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Every GetObject 50 ms slower (a slower store: requests in flight together overlap there); the returned dict
    counts them (`gets`) and the most in flight at once (`peak`)."""
    import aiobotocore.client

    state, real = {"now": 0, "peak": 0, "gets": 0}, aiobotocore.client.AioBaseClient._make_api_call

    async def slow(self, operation, params):
        if operation != "GetObject":
            return await real(self, operation, params)
        state["now"] += 1
        state["peak"], state["gets"] = max(state["peak"], state["now"]), state["gets"] + 1
        await asyncio.sleep(0.05)
        try:
            return await real(self, operation, params)
        finally:
            state["now"] -= 1

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", slow)
    return state


def test_headers_on_a_store_are_read_concurrently(make_graph, s3_server, monkeypatch):
    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=4)
    url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    state = slow_gets(monkeypatch)
    assert precheck(f"{url}/metadata.json", storage) == []
    assert state["gets"] >= 16 and state["peak"] > 1, state
    storage.write_bytes(f"{url}/edges/_N___E___N-2.npy", b"not an npy file")
    problems = precheck(f"{url}/metadata.json", storage)
    assert len(problems) == 1 and "_N___E___N-2.npy" in str(problems[0]), problems


def test_the_command_and_its_flow_read_the_headers_once(make_graph, s3_server, tmp_path, monkeypatch):
    """`graphshard run` checks its config in the command and again in the flow, in one process: the second check of
    the same input (same metadata, every chunk object's ETag and size from the listing) reads no header and sends no
    HEAD per chunk object. Before: every header again (12 GETs here). A chunk replaced since has a new ETag: the next
    check reads the headers again and refuses it."""
    import aiobotocore.client

    from graphshard.errors import GraphshardError
    from graphshard.pipeline.config import parse_config
    from graphshard.pipeline.preflight import check_config

    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=4)
    url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    chunks = {f"in/{e.rel}" for e in storage.listing(url) if e.rel.endswith(".npy")}
    seen, real = [], aiobotocore.client.AioBaseClient._make_api_call

    async def recorded(self, operation, params):
        seen.append((operation, params.get("Key")))
        return await real(self, operation, params)

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", recorded)

    def checked() -> list[tuple[str, str]]:
        seen.clear()
        cfg = parse_config({"input": {"metadata": f"{url}/metadata.json"}, "output": {"dir": str(tmp_path / "out")},
                            "num_parts": 2, "storage_options": {"s3://": s3_server.options()}}, tmp_path / "job.yaml")
        try:
            check_config(cfg)
        finally:
            touched = [(op, key) for op, key in seen if key in chunks]
        return touched

    first = checked()
    assert len([1 for op, _ in first if op == "GetObject"]) == len(chunks) >= 12, first
    assert checked() == []
    storage.write_bytes(f"{url}/edges/_N___E___N-2.npy", b"not an npy file")
    with pytest.raises(GraphshardError, match="_N___E___N-2.npy"):
        checked()
    assert ("GetObject", "in/edges/_N___E___N-2.npy") in seen


def test_the_command_and_its_flow_probe_each_location_once(make_graph, s3_server, tmp_path, monkeypatch):
    """Output and work folder on a store: the flow's check, seconds after the command's in the same process, sends no
    second probe (HEAD, listing, PUT, DELETE per location: 8 requests before); past `RECHECK_AFTER`, or with other
    storage options for the location, the probes go out again, and a location that now refuses writes is refused."""
    import aiobotocore.client

    from graphshard.errors import GraphshardError
    from graphshard.pipeline import preflight
    from graphshard.pipeline.config import parse_config

    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=4)
    url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    puts, real = [], aiobotocore.client.AioBaseClient._make_api_call

    async def recorded(self, operation, params):
        if operation == "PutObject":
            puts.append(params.get("Key"))
        return await real(self, operation, params)

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", recorded)

    def probes(**options) -> list[str]:
        puts.clear()
        cfg = parse_config({"input": {"metadata": f"{url}/metadata.json"}, "output": {"dir": f"{bucket}/out"},
                            "work_dir": f"{bucket}/work", "num_parts": 2,
                            "storage_options": {"s3://": {**s3_server.options(), **options}}}, tmp_path / "job.yaml")
        preflight.check_config(cfg)
        return sorted(key.split("/")[0] for key in puts)

    assert probes() == ["out", "work"]
    assert probes() == []
    assert probes(default_block_size=5 << 20) == ["out", "work"]  # other options: checked for those
    monkeypatch.setattr(preflight, "RECHECK_AFTER", 0.0)
    assert probes() == ["out", "work"]

    async def refused(self, operation, params):
        if operation == "PutObject":
            raise PermissionError("AccessDenied")
        return await real(self, operation, params)

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", refused)
    with pytest.raises(GraphshardError, match="output.dir"):
        probes()


@pytest.mark.parametrize("reader", ["summary", "plan_sizes"])
def test_bookkeeping_headers_on_a_store_are_read_concurrently(make_graph, s3_server, monkeypatch, reader):
    """Ingest's summary (every feature file's head) and the plan's row sizes (each feature's first header and first
    row) read them at once on a store, not one round trip after another; the figures equal those of the local graph."""
    from graphshard.formats.chunked import load_metadata
    from graphshard.ingest import summary
    from graphshard.plan.sizes import GraphSizes

    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("mag", papers=300, edges=2000, chunks=2)
    url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    graph = load_metadata(f"{url}/metadata.json", storage)
    state = slow_gets(monkeypatch)
    if reader == "summary":
        got, want = summary(graph), summary(metadata)
        got.pop("metadata"), want.pop("metadata")
    else:
        got, want = GraphSizes.of(graph), GraphSizes.of(load_metadata(metadata))
    assert got == want
    assert state["peak"] > 1, state

"""The pre-flight's header checks of an input on a store read the headers concurrently (each is a round trip; 40
files one after the other took 2 s on the local S3 server), with the same problems found as one by one."""

from __future__ import annotations

import asyncio

import pytest
from test_storage_steps import upload_tree

from graphshard.precheck import precheck
from graphshard.storage import Storage


def test_headers_on_a_store_are_read_concurrently(make_graph, s3_server, monkeypatch):
    import aiobotocore.client

    storage, bucket = Storage({"s3://": s3_server.options()}), s3_server.new_bucket()
    metadata = make_graph("rmat", nodes=3000, edges=30000, chunks=4)
    url = upload_tree(storage, metadata.parent, f"{bucket}/in")
    state, real = {"now": 0, "peak": 0, "gets": 0}, aiobotocore.client.AioBaseClient._make_api_call

    async def slow(self, operation, params):
        if operation != "GetObject":
            return await real(self, operation, params)
        state["now"] += 1
        state["peak"], state["gets"] = max(state["peak"], state["now"]), state["gets"] + 1
        await asyncio.sleep(0.05)  # a slower store: requests in flight together overlap here
        try:
            return await real(self, operation, params)
        finally:
            state["now"] -= 1

    monkeypatch.setattr(aiobotocore.client.AioBaseClient, "_make_api_call", slow)
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

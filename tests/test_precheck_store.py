"""The pre-flight's header checks of an input on a store read the headers concurrently (each is a round trip; 40
files one after the other took 2 s on the local S3 server), with the same problems found as one by one."""

from __future__ import annotations

import asyncio

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

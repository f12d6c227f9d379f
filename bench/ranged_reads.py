"""Requests and bytes the store serves per step when graphshard reads by ranges (npy header + row ranges, parquet
footer + row groups, DGL files walked by headers and read piece by piece) against whole-object reads (every read of
a file downloads the object and slices it: what a reader without ranged requests does).

One process, steps run here (client=None), a local moto S3 server (tests/s3_helpers.py) in a thread; every S3 call
is counted where aiobotocore makes it. Usage: python bench/ranged_reads.py [--edges 1000000] [--fmt numpy]
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import aiobotocore.client  # noqa: E402

from graphshard.assign import AssignOptions, assign  # noqa: E402
from graphshard.generate import GENERATORS  # noqa: E402
from graphshard.ingest import check_and_hash  # noqa: E402
from graphshard.precheck import precheck  # noqa: E402
from graphshard.shuffle import ShuffleOptions, shuffle  # noqa: E402
from graphshard.storage import Storage, StoredFile, location  # noqa: E402
from graphshard.validate import validate  # noqa: E402

COUNTS = {"requests": 0, "get": 0, "head": 0, "bytes": 0, "put_bytes": 0}
OPS: Counter = Counter()
FILES: dict[str, list[int]] = {}  # what GETs read, by kind of object: [requests, bytes]
_call = aiobotocore.client.AioBaseClient._make_api_call


async def _counted(self, operation, params):
    COUNTS["requests"] += 1
    COUNTS["get"] += operation == "GetObject"
    COUNTS["head"] += operation == "HeadObject"
    OPS[operation] += 1
    if operation in ("PutObject", "UploadPart"):
        body = params.get("Body")
        COUNTS["put_bytes"] += len(body) if isinstance(body, (bytes, bytearray, memoryview)) else 0
    out = await _call(self, operation, params)
    if operation == "GetObject":
        COUNTS["bytes"] += int(out.get("ContentLength") or 0)
        got = FILES.setdefault(_kind(params.get("Key", "")), [0, 0])
        got[0] += 1
        got[1] += int(out.get("ContentLength") or 0)
    return out


def _kind(key: str) -> str:
    """The kind of object a key names: a partition file by name, an input file, the step's scratch."""
    if key.startswith("in/"):
        return "input " + key.rsplit("/", 1)[-1].split("-")[0].split(".")[0]
    if ".validate" in key or "scratch" in key:
        return "scratch"
    return key.rsplit("/", 1)[-1]


aiobotocore.client.AioBaseClient._make_api_call = _counted


@contextmanager
def whole_objects():
    """Every read of a remote file downloads the whole object (then slices it)."""
    saved = StoredFile.read_range, StoredFile.open

    def read_range(self, start, end):
        return saved[0](self, start, end) if self.loc.is_local or self.data is not None else self.read_all()[start:end]

    def open_(self, block_size=None):
        return saved[1](self) if self.loc.is_local or self.data is not None else io.BytesIO(self.read_all())

    StoredFile.read_range, StoredFile.open = read_range, open_
    try:
        yield
    finally:
        StoredFile.read_range, StoredFile.open = saved


def measure(label: str, fn) -> dict:
    for k in COUNTS:
        COUNTS[k] = 0
    OPS.clear()
    FILES.clear()
    start = time.perf_counter()
    fn()
    got = dict(COUNTS)
    return {"step": label, "seconds": round(time.perf_counter() - start, 2), "requests": got["requests"],
            "get": got["get"], "head": got["head"], "MB_got": round(got["bytes"] / 1e6, 1),
            "MB_put": round(got["put_bytes"] / 1e6, 1), "ops": dict(sorted(OPS.items())),
            "gets_by_object": {k: [n, round(b / 1e6, 1)] for k, (n, b) in sorted(FILES.items())}}


def steps(storage: Storage, bucket: str, tag: str, asg: Path, parts: int, block_rows: int) -> list[tuple]:
    graph = f"{bucket}/in/metadata.json"
    out = f"{bucket}/set-{tag}"
    opts = ShuffleOptions(save_orig_nids=True, save_orig_eids=True, node_block_rows=block_rows)
    return [
        ("precheck (headers)", lambda: precheck(graph, storage)),
        ("ingest check_and_hash", lambda: check_and_hash(graph, storage=storage)),
        ("shuffle (s3 in, s3 out)", lambda: shuffle(graph, asg, out, opts, None, storage=storage)),
        ("validate (s3 set + s3 input)", lambda: validate(f"{out}/rmat.json", graph, storage=storage)),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edges", type=int, default=1_000_000)
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--chunks", type=int, default=4)
    ap.add_argument("--fmt", default="numpy")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--ranged-only", action="store_true", help="skip the whole-object mode")
    args = ap.parse_args()
    from s3_helpers import threaded_server

    tmp = Path(tempfile.mkdtemp(prefix="ranged-reads-"))
    meta = GENERATORS["rmat"](tmp / "g", nodes=args.nodes, edges=args.edges, chunks=args.chunks, fmt=args.fmt)
    asg = assign(meta, tmp / "asg", args.parts, AssignOptions(method="random"))
    block_rows = args.nodes // (3 * args.chunks)  # node blocks smaller than chunks: a block reads part of a file
    with threaded_server() as server:
        storage, bucket = Storage({"s3://": server.options()}), server.new_bucket()
        for path in sorted(p for p in meta.parent.rglob("*") if p.is_file()):
            storage.upload(path, location(f"{bucket}/in").join(path.relative_to(meta.parent).as_posix()))
        rows = [{"mode": "ranged", **measure(label, fn)}
                for label, fn in steps(storage, bucket, "ranged", asg, args.parts, block_rows)]
        if not args.ranged_only:
            with whole_objects():
                rows += [{"mode": "whole", **measure(label, fn)}
                         for label, fn in steps(storage, bucket, "whole", asg, args.parts, block_rows)]
        same = [storage.read_bytes(f"{bucket}/set-{t}/part0/graph.dgl") for t in ("ranged", "whole")
                if t == "ranged" or not args.ranged_only]
    print(json.dumps({"graph": vars(args), "node_block_rows": block_rows, "same_output": same[0] == same[-1],
                      "rows": rows}, indent=1))


if __name__ == "__main__":
    main()

"""The assignment (random unless --method says otherwise, with its report's edge pass) and the shuffle on a
2-worker local cluster, input and outputs on a local S3 server (moto, its own process) against the same steps on
local disk, in one process: wall seconds per step, the workers' compute seconds per task group (Dask's task
stream), and the S3 clients (fsspec filesystems) the busiest worker made per task group. Run it from two checkouts
one after the other for a before/after pair (same graph, same sitting; PYTHONPATH=<checkout> picks the code).

    nice -n 19 .venv/bin/python bench/steps_store.py --graph <graph>/metadata.json --reps 2 [--method multilevel]
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "bench"))
from s3_helpers import filesystems_per_group, process_server  # noqa: E402
from test_storage_steps import upload_tree  # noqa: E402
from validate_store import group_seconds, store_args  # noqa: E402


def timed_steps(client, graph: str, out: str, parts: int, storage, method: str) -> dict:
    """Assign then shuffle into `out` (a folder or a URL prefix): wall seconds of each, worker seconds per group."""
    from distributed import get_task_stream

    from graphshard.assign import AssignOptions, assign
    from graphshard.shuffle import ShuffleOptions, shuffle

    walls, made = {}, {}
    with get_task_stream(client) as stream:
        def run() -> None:
            start = time.perf_counter()
            asg = assign(graph, f"{out}/asg", parts, AssignOptions(method=method, seed=1), client, storage=storage)
            walls["assign"] = round(time.perf_counter() - start, 2)
            start = time.perf_counter()
            shuffle(graph, asg, f"{out}/set", ShuffleOptions(save_orig_nids=True, save_orig_eids=True), client,
                    storage=storage)
            walls["shuffle"] = round(time.perf_counter() - start, 2)
        made = filesystems_per_group(client, run)
    return {"wall_s": walls, "worker_s": group_seconds(stream.data), "clients_per_worker": made}


def main() -> None:
    args = store_args(__doc__.splitlines()[0], method=True)
    from distributed import Client, LocalCluster

    import graphshard
    from graphshard.storage import Storage

    work = Path(tempfile.mkdtemp(prefix="graphshard-bench-steps-"))
    try:
        with process_server() as s3:
            storage, bucket = Storage({"s3://": s3.options()}), s3.new_bucket()
            graph_url = upload_tree(storage, args.graph.parent, f"{bucket}/in")
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
                    Client(cluster) as client:
                for i, where in enumerate(["local"] + ["s3"] * args.reps):
                    graph, out = ((str(args.graph), str(work / f"run{i}")) if where == "local" else
                                  (f"{graph_url}/metadata.json", f"{bucket}/run{i}"))
                    print(json.dumps({"code": str(Path(graphshard.__file__).parents[1]), "where": where,
                                      **timed_steps(client, graph, out, args.parts, storage, args.method)}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

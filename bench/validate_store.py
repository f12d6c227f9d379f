"""`validate` alone on a 2-worker local cluster, the set and its input on a local S3 server (moto, its own process)
against the same set on local disk, in one process: wall seconds per run and the workers' compute seconds per task
group (Dask's task stream). The S3 runs keep their scratch local, as the pipeline's own local cluster does. Run it
from two checkouts one after the other for a before/after pair (same graph, same sitting).

    nice -n 19 .venv/bin/python bench/validate_store.py --graph <chunked graph>/metadata.json --reps 2
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from s3_helpers import process_server  # noqa: E402
from test_storage_steps import random_assignment, upload_tree  # noqa: E402


def group_seconds(stream: list[dict]) -> dict[str, float]:
    """Compute seconds per task group (`<step>-<what>`: the key's first two parts)."""
    out: dict[str, float] = defaultdict(float)
    for task in stream:
        name = "-".join(str(task["key"]).split("-")[:2])
        out[name] += sum(s["stop"] - s["start"] for s in task["startstops"] if s["action"] == "compute")
    return {k: round(v, 2) for k, v in sorted(out.items())}


def store_args(description: str, method: bool = False) -> argparse.Namespace:
    """The arguments of a local-against-S3 bench: an existing graph, the parts, the S3 runs after one local run (and
    the assignment method, when the bench assigns)."""
    ap = argparse.ArgumentParser(description=description)
    if method:
        ap.add_argument("--method", default="random", help="assignment method (default random)")
    ap.add_argument("--graph", type=Path, required=True, help="an existing chunked graph's metadata.json")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--reps", type=int, default=2, help="S3 runs (one local run first)")
    return ap.parse_args()


def main() -> None:
    args = store_args(__doc__.splitlines()[0])
    from distributed import Client, LocalCluster, get_task_stream

    import graphshard
    from graphshard.shuffle import ShuffleOptions, shuffle
    from graphshard.storage import Storage
    from graphshard.validate import validate

    work = Path(tempfile.mkdtemp(prefix="graphshard-bench-validate-"))
    out = shuffle(args.graph, random_assignment(args.graph, work / "asg", args.parts), work / "out",
                  ShuffleOptions(save_orig_nids=True, save_orig_eids=True), None)
    try:
        with process_server() as s3:
            storage, bucket = Storage({"s3://": s3.options()}), s3.new_bucket()
            set_url = upload_tree(storage, out.parent, f"{bucket}/set")
            graph_url = upload_tree(storage, args.graph.parent, f"{bucket}/in")
            with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
                    Client(cluster) as client:
                for where in ["local"] + ["s3"] * args.reps:
                    with get_task_stream(client) as stream:
                        start = time.perf_counter()
                        report = (validate(out, args.graph, client=client) if where == "local" else
                                  validate(f"{set_url}/{out.name}", f"{graph_url}/metadata.json", client=client,
                                           storage=storage, scratch_dir=tempfile.mkdtemp(dir=work)))
                        wall = time.perf_counter() - start
                    print(json.dumps({"code": str(Path(graphshard.__file__).parents[1]), "where": where,
                                      "wall_s": round(wall, 2), "ok": report["ok"],
                                      "worker_s": group_seconds(stream.data)}))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

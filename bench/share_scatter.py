"""Cost of sending a shared constant to every worker (`daskrun.submit_tasks(share=)`): graphshard's one-worker-at-a-
time scatter against Dask's `scatter(broadcast=True)` (a scatter plus the scheduler's tree `replicate`), same run,
alternating, on a LocalCluster of N single-thread worker processes.

    python bench/share_scatter.py --workers 2 4 8 --sizes 1000 1000000 --rounds 20
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from distributed import Client, LocalCluster

from graphshard.daskrun import _broadcast


def _timed(send, client: Client, value: bytes) -> float:
    """Seconds until `value` is on every worker (Dask's memory manager may drop the copies no task waits for,
    every 2 s, so they are not counted afterwards)."""
    t = time.perf_counter()
    send(client, value)
    return time.perf_counter() - t


def _dask_broadcast(client: Client, value: bytes):
    return client.scatter(value, hash=False, broadcast=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1_000, 1_000_000], help="constant sizes, bytes")
    ap.add_argument("--rounds", type=int, default=20)
    args = ap.parse_args()
    for n in args.workers:
        with LocalCluster(n_workers=n, threads_per_worker=1, dashboard_address=":0", processes=True) as cluster, \
                Client(cluster) as client:
            for size in args.sizes:
                value = bytes(size)
                times: dict[str, list[float]] = {"dask broadcast": [], "graphshard": []}
                for _ in range(args.rounds):  # alternating, so both see the same machine
                    times["dask broadcast"].append(_timed(_dask_broadcast, client, value))
                    times["graphshard"].append(_timed(_broadcast, client, value))
                row = {k: round(statistics.median(v) * 1000, 2) for k, v in times.items()}
                print(json.dumps({"workers": n, "bytes": size, "median_ms": row,
                                  "ratio": round(row["graphshard"] / row["dask broadcast"], 2)}))


if __name__ == "__main__":
    main()

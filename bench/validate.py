"""Benchmark `graphshard.validate.validate` against writing the same partitions, in the same run.

Same cluster (LocalCluster, W workers x 1 thread), same graph: a seeded random assignment into k parts, then
  * write: `dispatch` with original-ID files (the baseline validation must beat);
  * validate without the input (output-only checks), with the input (sampled rows + checksums over every row), and
    with the input and --full (every row compared);
each with its wall time and the peak RSS of every worker (sampled every 50 ms, bench/measure.py), and the ratios of
validation to the write (wall, largest worker peak). `--memory-limit` gives the workers a limit (the nanny kills a
worker above it), as `cluster.memory_limit` does in the flow. Prints one JSON line.
Run heavy: `flock /tmp/graphshard-heavy.lock /work/venv/bin/python bench/validate.py`.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from dispatch import random_assignment  # noqa: E402  (bench/dispatch.py)
from measure import machine, on_workers  # noqa: E402  (bench/measure.py)


def timed(cluster_client, fn, *args, **kwargs) -> tuple[object, dict]:
    """Run fn with every worker's RSS sampled; (result, {seconds, worker peak RSS})."""
    result, seconds, peaks = on_workers(cluster_client, fn, *args, **kwargs)
    return result, {"s": round(seconds, 2), "worker_peak_rss_bytes": peaks}


def main(argv: list[str] | None = None) -> int:
    from distributed import Client, LocalCluster

    from graphshard.shuffle import ShuffleOptions, shuffle
    from graphshard.validate import validate

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", type=Path, default=Path("/work/data/rmat20m/metadata.json"))
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path("/work/data/bench-validate"), help="scratch area (deleted)")
    ap.add_argument("--no-full", action="store_true", help="skip the --full validation")
    ap.add_argument("--no-output-only", action="store_true", help="skip the validation without the input")
    ap.add_argument("--memory-limit", default="auto", help="per worker, e.g. 2GB (default: Dask's share of RAM)")
    ap.add_argument("--also", type=Path, action="append", default=[],
                    help="another partition config to validate in the same run (e.g. one DGL wrote)")
    args = ap.parse_args(argv)

    assignment = random_assignment(args.graph, args.work / "assignment", args.parts, args.seed)
    out = args.work / "out"
    result = {"graph": str(args.graph), "parts": args.parts, "workers": args.workers, "halo_hops": 1,
              "memory_limit": args.memory_limit, **machine()}
    try:
        with LocalCluster(n_workers=args.workers, threads_per_worker=1, dashboard_address=":0", processes=True,
                          memory_limit=args.memory_limit) as cluster, Client(cluster) as client:
            options = ShuffleOptions(halo_hops=1, save_orig_nids=True, save_orig_eids=True)
            config, result["write"] = timed(client, shuffle, args.graph, assignment, out, options, client,
                                            overwrite=True)
            client.run(lambda: __import__("graphshard.validate.step"))  # workers import the validator untimed
            runs = [] if args.no_output_only else [("validate_output_only", {})]
            runs.append(("validate_sampled", {"input_metadata": args.graph}))
            if not args.no_full:
                runs.append(("validate_full", {"input_metadata": args.graph, "full": True}))
            for name, kwargs in runs:
                report, result[name] = timed(client, validate, config, client=client, seed=args.seed, **kwargs)
                result[name]["ok"] = report["ok"]
                result[name]["ratio_to_write"] = round(result[name]["s"] / result["write"]["s"], 3)
                result[name]["peak_ratio_to_write"] = round(result[name]["worker_peak_rss_bytes"][0]
                                                            / result["write"]["worker_peak_rss_bytes"][0], 3)
            result["edge_cut_share"] = round(report["quality"]["edge_cut"]["share"], 4)
            result["output_bytes"] = report["quality"]["bytes_total"]
            for other in args.also:
                report, result[str(other)] = timed(client, validate, other, args.graph, client=client, seed=args.seed)
                result[str(other)]["ok"] = report["ok"]
                result[str(other)]["problems"] = report["problems"][:5]
                result[str(other)]["skipped"] = [c["name"] for c in report["checks"] if c["status"] == "skipped"]
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Prefect's own overhead: the same four steps called as plain library functions vs run as the Prefect flow.

Usage: flock /tmp/graphshard-heavy.lock python bench/prefect_overhead.py [--nodes N] [--edges E] [--repeat R]

Per repeat, in this order, each on a fresh 2-worker LocalCluster and fresh output folders:
  library   check_graph + fingerprint + assign + dispatch + validate + write_report with one Client
  flow      graphshard.pipeline.flow.partition in this process (temporary Prefect server already up), nothing cached
  cached    the same flow run again: every step Cached (what a re-run costs)
and once, `graphshard run` as a new process (imports, temporary Prefect server start, flow) against the library time.
Prints a markdown table for BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import measure  # bench/measure.py
import yaml

REPO = Path(__file__).resolve().parents[1]


def library_run(metadata: Path, out: Path, cfg) -> float:
    """The steps as plain calls, one Client, no Prefect: the baseline. The same work as the flow's: each input file
    checked and hashed in one task (the fingerprint reuses the digests); no edge pass in the assignment report,
    since validation measures the cut."""
    from graphshard import digests, ingest, validate
    from graphshard.assign import assign
    from graphshard.cluster import dask_client
    from graphshard.shuffle import shuffle

    start = time.perf_counter()
    with dask_client(cfg.cluster.spec()) as client:
        problems, found = ingest.check_and_hash(metadata, client)
        assert not problems, problems
        digests.remember(found)
        ingest.fingerprint(metadata)
        parts = assign(metadata, out / "assignment", cfg.num_parts, cfg.assign, client=client, edge_report=False)
        config = shuffle(metadata, parts, out / "partitions", cfg.shuffle, client)
        report = validate.validate(config, input_metadata=metadata, full=cfg.validate_.full, client=client,
                                   seed=cfg.validate_.seed)
        assert report["ok"]
        validate.write_report(out / "report", report)
    return time.perf_counter() - start


def write_config(folder: Path, metadata: Path) -> Path:
    data = yaml.safe_load((REPO / "configs" / "example.yaml").read_text())
    data["input"]["metadata"] = str(metadata)
    data["output"]["dir"] = str(folder / "out")
    data["work_dir"] = str(folder / "work")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "run.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100_000)
    ap.add_argument("--edges", type=int, default=2_000_000)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    root = Path(tempfile.mkdtemp(prefix="graphshard-bench-prefect-"))
    os.environ["PREFECT_HOME"] = str(root / "prefect-home")
    from graphshard.pipeline.prefect_env import prefect_environment

    prefect_environment()
    from graphshard.generate.rmat import generate_rmat
    from graphshard.pipeline.config import load_config
    from graphshard.pipeline.flow import run_pipeline

    metadata = generate_rmat(root / "graph", nodes=args.nodes, edges=args.edges, chunks=args.chunks, seed=0)
    times: dict[str, list[float]] = {"library": [], "flow": [], "cached": []}
    run_pipeline(write_config(root / "warmup", metadata))  # starts the temporary Prefect server once
    for i in range(args.repeat):
        lib_dir = root / f"lib{i}"
        cfg = load_config(write_config(lib_dir, metadata))
        times["library"].append(library_run(metadata, lib_dir, cfg))
        config = write_config(root / f"flow{i}", metadata)
        start = time.perf_counter()
        summary = run_pipeline(config)
        times["flow"].append(time.perf_counter() - start)
        assert all(v != "Cached" for v in summary["steps"].values())
        start = time.perf_counter()
        summary = run_pipeline(config)
        times["cached"].append(time.perf_counter() - start)
        assert all(v == "Cached" for v in summary["steps"].values())
        shutil.rmtree(lib_dir)

    cold_dir = root / "cold"
    config = write_config(cold_dir, metadata)
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_HOME", "PREFECT_API_URL")}
    env["GRAPHSHARD_PREFECT"] = "ephemeral"  # this row measures the temporary server; bench/flow.py the background one
    cold = measure.run([str(Path(sys.executable).with_name("graphshard")), "run", str(config)], check=True, env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True).wall

    lib = statistics.median(times["library"])
    print(f"\nmachine: {platform.node()}, {os.cpu_count()} cores; graph: R-MAT {args.nodes:,} nodes, "
          f"{args.edges:,} edges, {args.chunks} chunks, numpy; 4 parts, random, example.yaml options; "
          f"{args.repeat} repeats (median, all runs)")
    print("| run | median s | runs (s) | ratio to library |")
    print("|---|---|---|---|")
    for name, label in (("library", "steps as library calls, one Client (baseline)"),
                        ("flow", "Prefect flow in-process, server up, nothing cached"),
                        ("cached", "same flow again, every step Cached")):
        vals = times[name]
        print(f"| {label} | {statistics.median(vals):.2f} | {', '.join(f'{v:.2f}' for v in vals)} | "
              f"{statistics.median(vals) / lib:.2f} |")
    print(f"| `graphshard run` as a new process (imports + temporary server + flow) | {cold:.2f} | {cold:.2f} | "
          f"{cold / lib:.2f} |")
    shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

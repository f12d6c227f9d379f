"""Benchmark of the assignment step: time, peak memory and edge cut of every method, k = 4 and 16, beside pymetis
called directly on the same CSR in the same run (the baseline for the pipeline's overhead around METIS).

Each (method, k) runs in its own subprocess so that its peak RSS is its own; `multilevel` runs on a local Dask
cluster (--workers, --memory-limit) and reports each worker's peak RSS too. Run under the heavy-work lock:

    flock /tmp/graphshard-heavy.lock /work/venv/bin/python bench/assign.py --graph /work/data/rmat20m/metadata.json

Prints a Markdown table (and writes the raw figures as JSON with --json).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from measure import own_peak  # bench/measure.py

METHODS = ["pymetis", "metis", "kaminpar", "parmetis", "multilevel", "random"]


def input_edge_cut(meta: Path, hom_parts: np.ndarray) -> tuple[int, int]:
    """(cut, total) over the input's edges, chunk by chunk: the same measure as assignment_report.json."""
    from graphshard.assign.graph_build import edge_chunks, homogeneous_chunk
    from graphshard.formats.chunked import load_metadata

    g = load_metadata(meta)
    cut = total = 0
    for et, i in edge_chunks(g):
        src, dst = homogeneous_chunk(g, et, i)
        cut += int((hom_parts[src] != hom_parts[dst]).sum())
        total += len(src)
    return cut, total


def run_pymetis(meta: Path, k: int, seed: int) -> dict:
    """pymetis k-way on the CSR the pipeline builds (CSR construction timed apart)."""
    import pymetis

    from graphshard.assign.graph_build import build_csr
    from graphshard.formats.chunked import load_metadata

    t0 = time.perf_counter()
    hom = build_csr(load_metadata(meta))
    t1 = time.perf_counter()
    _, parts = pymetis.part_graph(k, adjacency=pymetis.CSRAdjacency(hom.indptr, hom.indices),
                                  options=pymetis.Options(seed=seed), recursive=False)
    t2 = time.perf_counter()
    cut, total = input_edge_cut(meta, np.asarray(parts))
    return {"build_graph_s": t1 - t0, "partition_call_s": t2 - t1, "total_s": t2 - t0, "cut": cut, "edges": total}


def run_method(meta: Path, k: int, method: str, seed: int, ranks: int, args: argparse.Namespace) -> dict:
    """The full assignment step (graphshard.assign.assign) of one method, in this process; `multilevel` on a local
    Dask cluster of `args.workers` workers (started before the clock)."""
    from contextlib import nullcontext

    from distributed import Client, LocalCluster

    from graphshard.assign import REPORT_FILE, assign
    from graphshard.assign.options import AssignOptions

    extra = {}
    if method == "multilevel":
        extra = {"multilevel_block_edges": args.block_edges}
        if args.coarse_nodes:
            extra["multilevel_coarse_nodes"] = args.coarse_nodes
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, memory_limit=args.memory_limit,
                           dashboard_address=":0") if method == "multilevel" else nullcontext()
    with cluster as c, (Client(c) if c is not None else nullcontext()) as client, \
            tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        if client is not None:
            client.run(lambda: None)  # workers up and importing before the clock starts
        t0 = time.perf_counter()
        out = assign(meta, Path(tmp) / "a", k, AssignOptions(method=method, seed=seed, mpi_ranks=ranks, **extra),
                     client=client)
        total = time.perf_counter() - t0
        report = json.loads((out / REPORT_FILE).read_text())
        workers_rss = sorted(client.run(own_peak).values()) if client is not None else None
    secs = report["partitioner"].get("seconds", {})
    result = {"total_s": total, "cut": report["edge_cut"]["count"], "edges": report["num_edges"],
              "imbalance": report["imbalance"]["nodes"], "partition_call_s": secs.get("partition_call"),
              "build_graph_s": secs.get("build_graph")}
    if method == "parmetis":
        result["rank_peak_rss_bytes"] = report["partitioner"]["rank_peak_rss_bytes"]
    if workers_rss is not None:
        result["worker_peak_rss_bytes"] = workers_rss
        result["levels"] = report["partitioner"]["levels"]
        result["phases_s"] = report["partitioner"]["seconds"]
    result["max_imbalance"] = max(report["imbalance"].values())
    return result


def child(args: argparse.Namespace) -> None:
    """One measurement in this (fresh) process; prints one JSON line."""
    if args.one == "pymetis":
        result = run_pymetis(args.graph, args.k, args.seed)
    else:
        result = run_method(args.graph, args.k, args.one, args.seed, args.ranks, args)
    result["peak_rss_bytes"] = own_peak() + sum(result.get("rank_peak_rss_bytes", []))
    print(json.dumps({"method": args.one, "k": args.k, **result}))


def measure(cmd: list[str], method: str, k: int, timeout: float) -> dict:
    """Run one measurement subprocess (its own session, so that a timeout stops mpirun and its ranks too)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"method": method, "k": k, "timeout_s": timeout}
    if proc.returncode != 0:
        raise SystemExit(f"{method} k={k} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1])


def table(rows: list[dict]) -> str:
    """Markdown table, with the METIS overhead ratio against the same-run pymetis call."""
    base = {r["k"]: r for r in rows if r["method"] == "pymetis"}
    lines = ["| method | k | step wall (s) | partitioner call (s) | peak RSS (GB) | edge cut "
             "| vs pymetis call / metis |",
             "|---|---|---|---|---|---|---|"]
    metis = {r["k"]: r for r in rows if r["method"] == "metis" and "cut" in r}
    for r in rows:
        if "timeout_s" in r:
            lines.append(f"| {r['method']} | {r['k']} | did not finish in {r['timeout_s']:.0f} s | | | | |")
            continue
        ratio = ""
        if r["method"] == "metis" and r["k"] in base:
            overhead = r["total_s"] - r["partition_call_s"]
            ratio = f"{overhead:.1f} s = {overhead / base[r['k']]['partition_call_s']:.0%}"
        if r["method"] == "multilevel" and r["k"] in metis:
            same = metis[r["k"]]
            ratio = f"cut {r['cut'] / same['cut']:.3f}x metis, wall {r['total_s'] / same['total_s']:.2f}x"
        call = "" if r.get("partition_call_s") is None else f"{r['partition_call_s']:.1f}"
        rss = f"{r['peak_rss_bytes'] / 1e9:.2f}"
        if "worker_peak_rss_bytes" in r:
            rss += " (driver); workers " + " / ".join(f"{b / 1e9:.2f}" for b in r["worker_peak_rss_bytes"])
        lines.append(f"| {r['method']} | {r['k']} | {r['total_s']:.1f} | {call} | {rss} | "
                     f"{r['cut'] / r['edges']:.1%} | {ratio} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", type=Path, default=Path("/work/data/rmat20m/metadata.json"))
    parser.add_argument("--parts", type=int, nargs="+", default=[4, 16])
    parser.add_argument("--methods", nargs="+", default=METHODS, choices=METHODS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ranks", type=int, default=2, help="MPI ranks for parmetis")
    parser.add_argument("--timeout", type=float, default=900, help="seconds allowed per (method, k) run")
    parser.add_argument("--json", type=Path, default=None, help="write the raw figures here")
    parser.add_argument("--workers", type=int, default=2, help="multilevel: Dask workers (default 2)")
    parser.add_argument("--memory-limit", default="auto", help="multilevel: memory limit per worker (e.g. 2GB)")
    parser.add_argument("--coarse-nodes", type=int, default=0, help="multilevel_coarse_nodes (0: graphshard's default)")
    parser.add_argument("--block-edges", type=int, default=4_000_000, help="multilevel_block_edges")
    parser.add_argument("--tmp", default="/tmp", help="folder for the assignment output (and multilevel scratch)")
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--k", type=int, default=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        child(args)
        return
    rows = []
    for k in args.parts:
        for method in args.methods:
            cmd = [sys.executable, __file__, "--one", method, "--k", str(k), "--graph", str(args.graph),
                   "--seed", str(args.seed), "--ranks", str(args.ranks), "--workers", str(args.workers),
                   "--memory-limit", args.memory_limit, "--coarse-nodes", str(args.coarse_nodes),
                   "--block-edges", str(args.block_edges), "--tmp", args.tmp]
            rows.append(measure(cmd, method, k, args.timeout))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    print(table(rows))


if __name__ == "__main__":
    main()

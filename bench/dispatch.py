"""Benchmark `graphshard.shuffle.dispatch` against a single-process numpy floor (and DGL when its venv exists).

Same graph, same run: a seeded random assignment into k parts, then
  * floor: one process with plain numpy doing the same work (new IDs, route + relabel, full 1-hop halo, write COO and
    features as .npy), the lower bound a distributed version competes with;
  * graphshard: `dispatch` on a LocalCluster (W workers x 1 thread), every worker's peak RSS sampled (measure.py);
  * DGL: `bench/dgl_partition.py` (in-memory `partition_graph`, random) in /work/dgl-venv, when present.
Prints one JSON line. Run heavy: `flock /tmp/graphshard-heavy.lock /work/venv/bin/python bench/dispatch.py`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from measure import machine, on_workers, own_peak  # bench/measure.py

from graphshard.formats.assignment import read_parts, write_meta, write_parts
from graphshard.formats.chunked import load_metadata
from graphshard.formats.readers import read_edge_chunk, read_rows

DGL_PYTHON = Path("/work/dgl-venv/bin/python")
HERE = Path(__file__).resolve().parent


def random_assignment(metadata: Path, folder: Path, num_parts: int, seed: int) -> Path:
    g = load_metadata(metadata)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    rng = np.random.default_rng(seed)
    for nt in g.node_type:
        write_parts(folder, nt, rng.integers(0, num_parts, g.num_nodes(nt), dtype=np.int32))
    write_meta(folder, num_parts, "random")
    return folder


def numpy_floor(metadata: Path, assignment: Path, out: Path) -> dict:
    """The same work in one process with whole-graph numpy arrays (homogeneous graphs): the floor to compare with."""
    t0 = time.perf_counter()
    g = load_metadata(metadata)
    (nt,), (et,) = g.node_type, g.edge_type
    n = g.num_nodes(nt)
    num_parts = int(json.loads((assignment / "partition_meta.json").read_text())["num_parts"])
    parts = read_parts(assignment, nt, n, num_parts)
    ends = [read_edge_chunk(g, et, c) for c in range(len(g.edges[et].data))]
    src, dst = np.concatenate([s for s, _ in ends]), np.concatenate([d for _, d in ends])
    del ends
    nfeat = {f: read_rows(g, spec, 0, n) for f, spec in g.node_data.get(nt, {}).items()}
    efeat = {f: read_rows(g, spec, 0, len(src)) for f, spec in g.edge_data.get(et, {}).items()}
    t_load = time.perf_counter()
    new2old = np.argsort(parts, kind="stable")
    old2new = np.empty(n, np.int64)
    old2new[new2old] = np.arange(n)
    starts = np.concatenate([[0], np.cumsum(np.bincount(parts, minlength=num_parts))])
    owner = parts[dst]
    eorder = np.argsort(owner, kind="stable")
    estarts = np.concatenate([[0], np.cumsum(np.bincount(owner, minlength=num_parts))])
    nsrc, ndst, owner = old2new[src][eorder], old2new[dst][eorder], owner[eorder]
    del src, dst
    t_route = time.perf_counter()
    shutil.rmtree(out, ignore_errors=True)
    for p in range(num_parts):
        lo, hi, elo, ehi = starts[p], starts[p + 1], estarts[p], estarts[p + 1]
        in_src, in_dst = nsrc[elo:ehi], ndst[elo:ehi]
        is_out = (nsrc >= lo) & (nsrc < hi) & (owner != p)
        out_src, out_dst = nsrc[is_out], ndst[is_out]
        mark = np.zeros(n, bool)
        mark[in_src] = True
        mark[out_dst] = True
        mark[lo:hi] = False
        halo = np.flatnonzero(mark)
        table = np.empty(n, np.int64)
        table[lo:hi] = np.arange(hi - lo)
        table[halo] = np.arange(hi - lo, hi - lo + len(halo))
        part_dir = out / f"part{p}"
        part_dir.mkdir(parents=True)
        np.save(part_dir / "src.npy", table[np.concatenate([in_src, out_src])])
        np.save(part_dir / "dst.npy", table[np.concatenate([in_dst, out_dst])])
        np.save(part_dir / "nid.npy", np.concatenate([np.arange(lo, hi), halo]))
        np.save(part_dir / "eid.npy", np.concatenate([np.arange(elo, ehi), np.flatnonzero(is_out)]))
        for f, arr in nfeat.items():
            np.save(part_dir / f"n-{f}.npy", arr[new2old[lo:hi]])
        for f, arr in efeat.items():
            np.save(part_dir / f"e-{f}.npy", arr[eorder[elo:ehi]])
    t_write = time.perf_counter()
    return {"wall_s": round(t_write - t0, 2), "load_s": round(t_load - t0, 2), "route_s": round(t_route - t_load, 2),
            "build_write_s": round(t_write - t_route, 2),
            "peak_rss_bytes": own_peak()}


class StepLog(logging.Handler):
    """Collects the per-step durations that dispatch logs."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.steps: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        what, _, seconds = record.args
        self.steps[what] = round(float(seconds), 2)


def task_compute(records: list[dict]) -> dict[str, list[float]]:
    """Per dispatch step, the compute seconds of each of its tasks (from Dask's task stream)."""
    out: dict[str, list[float]] = {}
    for rec in records:
        step = str(rec["key"]).split("-")[1:-2]
        for ss in rec["startstops"]:
            if ss["action"] == "compute":
                out.setdefault("-".join(step), []).append(round(ss["stop"] - ss["start"], 2))
    return out


def run_graphshard(metadata: Path, assignment: Path, out: Path, workers: int, memory_limit: str,
                   options: dict) -> dict:
    from distributed import Client, LocalCluster, get_task_stream

    from graphshard.shuffle import ShuffleOptions, shuffle

    steps = StepLog()
    logger = logging.getLogger("graphshard.shuffle")
    logger.addHandler(steps)
    logger.setLevel(logging.INFO)
    t0 = time.perf_counter()
    with LocalCluster(n_workers=workers, threads_per_worker=1, memory_limit=memory_limit, dashboard_address=":0",
                      processes=True) as cluster, Client(cluster) as client:
        started = time.perf_counter()
        with get_task_stream(client) as stream:
            _, seconds, peaks = on_workers(client, shuffle, metadata, assignment, out, ShuffleOptions(**options),
                                           client, overwrite=True)
    return {"dispatch_s": round(seconds, 2), "cluster_start_s": round(started - t0, 2), "steps_s": steps.steps,
            "task_compute_s": task_compute(stream.data), "worker_peak_rss_bytes": peaks,
            "client_peak_rss_bytes": own_peak()}


def run_dgl(metadata: Path, out: Path, num_parts: int) -> dict | None:
    if not DGL_PYTHON.exists():
        return None
    env = {**os.environ, "PYTHONPATH": str(HERE.parent)}
    proc = subprocess.run([str(DGL_PYTHON), str(HERE / "dgl_partition.py"), "--in", str(metadata), "--out", str(out),
                           "--parts", str(num_parts), "--method", "random", "--overwrite"],
                          capture_output=True, text=True, env=env)
    shutil.rmtree(out, ignore_errors=True)
    if proc.returncode:
        return {"error": proc.stderr.strip().splitlines()[-1:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graph", type=Path, default=Path("/work/data/rmat20m/metadata.json"))
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="auto", help="per worker, e.g. 1GB")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work", type=Path, default=Path("/work/data/bench-dispatch"), help="scratch area (deleted)")
    ap.add_argument("--halo-hops", type=int, default=1)
    ap.add_argument("--save-orig-ids", action="store_true")
    ap.add_argument("--no-floor", action="store_true")
    ap.add_argument("--no-dgl", action="store_true")
    ap.add_argument("--floor-only", action="store_true", help=argparse.SUPPRESS)  # the floor's own process
    args = ap.parse_args(argv)
    assignment = args.work / "assignment"
    if args.floor_only:
        print(json.dumps(numpy_floor(args.graph, assignment, args.work / "floor-out")))
        return 0
    random_assignment(args.graph, assignment, args.parts, args.seed)
    result = {"graph": str(args.graph), "parts": args.parts, "workers": args.workers,
              "memory_limit": args.memory_limit, "halo_hops": args.halo_hops, **machine()}
    if not args.no_floor:
        proc = subprocess.run([sys.executable, __file__, "--floor-only", "--graph", str(args.graph), "--work",
                               str(args.work)], capture_output=True, text=True, check=True)
        result["numpy_floor"] = json.loads(proc.stdout.strip().splitlines()[-1])
        shutil.rmtree(args.work / "floor-out", ignore_errors=True)
    options = {"halo_hops": args.halo_hops, "save_orig_nids": args.save_orig_ids,
               "save_orig_eids": args.save_orig_ids}
    result["graphshard"] = run_graphshard(args.graph, assignment, args.work / "out", args.workers,
                                          args.memory_limit, options)
    result["out_bytes"] = sum(p.stat().st_size for p in (args.work / "out").rglob("*") if p.is_file())
    if not args.no_dgl:
        result["dgl"] = run_dgl(args.graph, args.work / "dgl-out", args.parts)
    gs = result["graphshard"]["dispatch_s"]
    if "numpy_floor" in result:
        result["ratio_to_floor"] = round(gs / result["numpy_floor"]["wall_s"], 2)
    if result.get("dgl") and "wall_s" in result["dgl"]:
        result["ratio_to_dgl"] = round(gs / result["dgl"]["wall_s"], 3)
    shutil.rmtree(args.work, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`graphshard run` with every location on a local S3 server against the same run on local disk, and the floor: what
the store needs for the bytes any run must move (the input read once, the output written once), copied with s3fs
alone (parallel get, then parallel put) in the same run. Validation on. Per step, what the store served (bytes read
and written, requests), attributed by time: a step ends when its manifest.json is PUT in the step cache.

moto's server is its own process; every S3 request goes through a counting proxy (bench/s3proxy.py), the floor's
too. Figures are process wall times and peak RSS (the flow process, and the largest other process: a Dask worker).

    flock /tmp/graphshard-heavy.lock .venv/bin/python bench/storage.py --nodes 1000000 --edges 20000000
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from measure import _Poll, hwm, machine, tree  # bench/measure.py
from s3proxy import CountingProxy, Request  # bench/s3proxy.py

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
from s3_helpers import DUMMY_KEY, DUMMY_SECRET, REGION, _wait_up, free_port  # noqa: E402

GS = [sys.executable, "-m", "graphshard.cli"]
STEPS = ("ingest", "assign", "shuffle", "validate")
FLOOR = """
import sys, time, s3fs
fs = s3fs.S3FileSystem()
t = time.perf_counter(); fs.get(sys.argv[1], sys.argv[2], recursive=True); got = time.perf_counter() - t
t = time.perf_counter(); fs.put(sys.argv[3], sys.argv[4], recursive=True); put = time.perf_counter() - t
print(f"{got:.3f} {put:.3f}")
"""


def timed(cmd: list[str], env: dict) -> dict:
    """Run to completion: wall seconds, the root process's peak RSS and the largest other process's."""
    peaks: dict[int, int] = {}
    start = time.perf_counter()
    with subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as proc:

        def sample() -> None:
            for p in tree(proc.pid):
                peaks[p.pid] = max(peaks.get(p.pid, 0), hwm(p.pid))

        with _Poll(sample, 0.1):
            out, _ = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{out[-4000:]}")
    others = [v for pid, v in peaks.items() if pid != proc.pid]
    return {"wall_s": round(wall, 2), "flow_peak_gib": round(peaks.get(proc.pid, 0) / 2**30, 3),
            "worker_peak_gib": round(max(others, default=0) / 2**30, 3), "output": out}


def job(metadata: str, out: str, work: str, workers: int, memory: str, parts: int) -> dict:
    return {"input": {"metadata": metadata}, "output": {"dir": out}, "work_dir": work, "num_parts": parts,
            "assign": {"method": "random", "seed": 0}, "validate": {"enabled": True},
            "shuffle": {"save_orig_nids": True, "save_orig_eids": True},
            "cluster": {"workers": workers, "threads_per_worker": 1, "memory_limit": memory}}


def per_step(requests: list[Request], start: float, end: float) -> dict[str, dict]:
    """Requests grouped by step: each step ends at the PUT of its manifest.json; publish is what follows."""
    ends = {}
    for r in requests:
        parts = r.path.split("?")[0].strip("/").split("/")
        if r.method == "PUT" and parts[-1] == "manifest.json" and len(parts) >= 4 and parts[-3] in STEPS:
            ends[parts[-3]] = r.t
    bounds, last = [], start
    for step in STEPS:
        bounds.append((step, last, ends.get(step, last)))
        last = ends.get(step, last)
    bounds.append(("publish", last, end))
    table = {}
    for step, lo, hi in bounds:
        mine = [r for r in requests if lo < r.t <= hi or (step == "ingest" and r.t <= lo)]
        table[step] = {"seconds": round(hi - lo, 2), "requests": len(mine),
                       "gets": sum(r.method == "GET" for r in mine), "puts": sum(r.method in ("PUT", "POST")
                                                                                   for r in mine),
                       "mb_read": round(sum(r.served for r in mine if r.method == "GET") / 1e6, 1),
                       "mb_written": round(sum(r.sent for r in mine) / 1e6, 1)}
    return table


def local_steps(cache: Path, start: float, end: float) -> dict[str, float]:
    """Seconds per step of the local run, the same way: a step ends at its manifest.json's mtime."""
    ends = {m.parent.parent.name: m.stat().st_mtime for m in cache.glob("*/*/manifest.json")}
    table, last = {}, start
    for step in STEPS:
        table[step] = round(ends.get(step, last) - last, 2)
        last = ends.get(step, last)
    table["publish"] = round(end - last, 2)
    return table


def tree_mb(folder: Path) -> float:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=1_000_000)
    ap.add_argument("--edges", type=int, default=20_000_000)
    ap.add_argument("--chunks", type=int, default=8)
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="4GB")
    ap.add_argument("--graph", type=Path, default=None, help="an existing chunked graph's metadata.json")
    ap.add_argument("--requests-log", type=Path, default=None,
                    help="write the S3 run's every request (seconds from its start, method, path, bytes) here")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="graphshard-bench-storage-"))
    port = free_port()
    moto = f"http://127.0.0.1:{port}"
    creds = {"AWS_ACCESS_KEY_ID": DUMMY_KEY, "AWS_SECRET_ACCESS_KEY": DUMMY_SECRET, "AWS_DEFAULT_REGION": REGION}
    server = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_up(moto, timeout=600)  # a loaded machine at nice 19 can take minutes to import moto
        graph = args.graph
        if graph is None:
            subprocess.run([*GS, "generate", "rmat", "--out", str(work / "graph"), "--nodes", str(args.nodes),
                            "--edges", str(args.edges), "--chunks", str(args.chunks)], check=True,
                           stdout=subprocess.DEVNULL)
            graph = work / "graph" / "metadata.json"
        os.environ.update({"AWS_ENDPOINT_URL": moto, **creds})
        from graphshard.storage import Storage, location

        storage = Storage()
        storage.fs(location("s3://bench")).mkdir("bench")
        for p in sorted(graph.parent.rglob("*")):
            if p.is_file():
                storage.upload(p, f"s3://bench/graph/{p.relative_to(graph.parent).as_posix()}")
        base = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        local_cfg = work / "local.yaml"
        local_cfg.write_text(yaml.safe_dump(job(str(graph), str(work / "out"), str(work / "cache"), args.workers,
                                                args.memory_limit, args.parts)))
        storage.write_bytes("s3://bench/jobs/job.yaml", yaml.safe_dump(job(
            "../graph/metadata.json", "../sets/rmat", "../cache", args.workers, args.memory_limit,
            args.parts)).encode())
        with CountingProxy(moto) as proxy:
            env = {**base, **creds, "AWS_ENDPOINT_URL": proxy.endpoint, "GRAPHSHARD_LOG_DIR": str(work / "logs")}
            start = time.time()
            local = timed([*GS, "run", str(local_cfg)], {**base, "GRAPHSHARD_LOG_DIR": str(work / "logs")})
            local_times = local_steps(work / "cache", start, time.time())
            proxy.taken()
            start = time.time()
            remote = timed([*GS, "run", "s3://bench/jobs/job.yaml"], env)
            requests = proxy.taken()
            steps = per_step(requests, start, time.time())
            if args.requests_log is not None:
                args.requests_log.write_text(json.dumps([[round(r.t - start, 3), r.method, r.path, r.sent, r.served]
                                                         for r in requests]))
            floor_out = timed([sys.executable, "-c", FLOOR, "bench/graph/", str(work / "floor-in") + "/",
                               str(work / "out") + "/", "bench/floor/"], env)
        got, put = (float(x) for x in floor_out["output"].split())
        in_mb, out_mb = tree_mb(graph.parent), tree_mb(work / "out")
        floor = got + put
        result = {**machine(), "bench": "storage", "nodes": args.nodes, "edges": args.edges, "parts": args.parts,
                  "workers": args.workers, "memory_limit": args.memory_limit, "input_mb": round(in_mb, 1),
                  "output_mb": round(out_mb, 1), "local": {k: v for k, v in local.items() if k != "output"},
                  "s3": {k: v for k, v in remote.items() if k != "output"},
                  "floor": {"get_s": round(got, 2), "put_s": round(put, 2), "process_s": floor_out["wall_s"]},
                  "s3_minus_local_over_floor": round((remote["wall_s"] - local["wall_s"]) / floor, 2),
                  "goal_s": round(local["wall_s"] + 1.2 * floor, 2), "steps": steps, "local_steps": local_times,
                  "requests": len(requests)}
        print(json.dumps(result))
        print("\n| run | process s | flow peak GiB | worker peak GiB |\n|---|---|---|---|")
        for name in ("local", "s3"):
            r = result[name]
            print(f"| {name} | {r['wall_s']} | {r['flow_peak_gib']} | {r['worker_peak_gib']} |")
        print(f"| floor: s3fs get input {in_mb:.0f} MB + put output {out_mb:.0f} MB | {floor:.2f} | | |")
        print("\n| step | local s | s3 s | requests | GET | PUT/POST | MB read | MB written |\n"
              "|---|---|---|---|---|---|---|---|")
        for step, row in steps.items():
            print(f"| {step} | {local_times[step]} | {row['seconds']} | {row['requests']} | {row['gets']} | "
                  f"{row['puts']} | {row['mb_read']} | {row['mb_written']} |")
    finally:
        server.terminate()
        server.wait(timeout=60)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Peak memory per Dask worker of `dispatch` as the graph grows (10M, 40M, 160M edges by default).

Each graph is an R-MAT graph (average degree 20, 16-dim float32 node features, chunks of `--chunk-edges` edges)
generated under --work and deleted afterwards. dispatch runs on 2 workers with a memory limit (1 GB by default: the
nanny kills a worker that exceeds it). The partition count grows with the graph (`--edges-per-part`) unless
`--parts` fixes it: a partition's task holds its partition, so its memory follows the partition size, while every
exchange task holds one chunk. Prints one JSON line per graph and a markdown table.

    flock /tmp/graphshard-heavy.lock /work/venv/bin/python bench/dispatch_memory.py
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dispatch import random_assignment, run_graphshard  # noqa: E402

from graphshard.generate import generate_rmat  # noqa: E402

MiB = 2**20


def one_graph(work: Path, edges: int, chunk_edges: int, parts: int, memory_limit: str, workers: int) -> dict:
    nodes = edges // 20
    chunks = max(1, edges // chunk_edges)
    graph_dir = work / f"rmat-{edges}"
    t0 = time.perf_counter()
    metadata = generate_rmat(graph_dir, nodes=nodes, edges=edges, chunks=chunks, fmt="numpy", seed=0, overwrite=True)
    generated = time.perf_counter() - t0
    in_bytes = sum(p.stat().st_size for p in graph_dir.rglob("*") if p.is_file())
    assignment = random_assignment(metadata, work / "assignment", parts, seed=0)
    try:
        run = run_graphshard(metadata, assignment, work / "out", workers, memory_limit, {})
        run["out_bytes"] = sum(p.stat().st_size for p in (work / "out").rglob("*") if p.is_file())
    except Exception as err:  # noqa: BLE001 - a worker killed for memory is a result to report
        run = {"error": f"{type(err).__name__}: {err}"}
    finally:
        shutil.rmtree(graph_dir, ignore_errors=True)
        shutil.rmtree(work / "out", ignore_errors=True)
        shutil.rmtree(assignment, ignore_errors=True)
    return {"edges": edges, "nodes": nodes, "chunks": chunks, "chunk_edges": edges // chunks, "parts": parts,
            "input_bytes": in_bytes, "generate_s": round(generated, 1), **run}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--edges", type=int, nargs="+", default=[10_000_000, 40_000_000, 160_000_000])
    ap.add_argument("--chunk-edges", type=int, default=5_000_000)
    ap.add_argument("--edges-per-part", type=int, default=2_500_000, help="partitions = edges / this")
    ap.add_argument("--parts", type=int, default=None, help="fixed partition count instead")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="1GB")
    ap.add_argument("--work", type=Path, default=Path("/work/data/bench-dispatch-memory"))
    args = ap.parse_args(argv)
    rows = []
    try:
        for edges in args.edges:
            parts = args.parts or max(1, edges // args.edges_per_part)
            row = one_graph(args.work, edges, args.chunk_edges, parts, args.memory_limit, args.workers)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        shutil.rmtree(args.work, ignore_errors=True)
    print("\n| edges | nodes | input | parts | dispatch | peak RSS per worker (MiB) | output |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        peaks = ", ".join(str(round(b / MiB)) for b in r.get("worker_peak_rss_bytes", []))
        took = f"{r['dispatch_s']} s" if "dispatch_s" in r else r.get("error", "")
        out = f"{r['out_bytes'] / 2**30:.2f} GiB" if "out_bytes" in r else "-"
        print(f"| {r['edges'] / 1e6:g}M | {r['nodes'] / 1e6:g}M | {r['input_bytes'] / 2**30:.2f} GiB | {r['parts']} "
              f"| {took} | {peaks} | {out} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

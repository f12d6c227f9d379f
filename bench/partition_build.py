"""One partition's write task in-process: `build_partition` time, tracemalloc peak and peak RSS, on the buckets of a
real shuffle (issue 20: the task's memory must follow the partition, not the graph).

`prepare` runs the shuffle's exchange here (no cluster) into a kept scratch folder and pickles what a write task
receives (plan, node and edge ID layouts); `build` loads that state in a fresh process and builds one partition,
printing a JSON line. Run `build` under another snapshot's PYTHONPATH to compare code versions in the same sitting
(the state's classes are the same in both):

    python bench/partition_build.py prepare --graph /work/data/plan/rmat20m --parts 4 --work /tmp/h20/k4
    PYTHONPATH=<old snapshot> python bench/partition_build.py build --work /tmp/h20/k4 --part 0
    python bench/partition_build.py build --work /tmp/h20/k4 --part 0
"""

from __future__ import annotations

import argparse
import json
import pickle
import resource
import sys
import time
import tracemalloc
from pathlib import Path

STATE = "state.pkl"


def prepare(graph: Path, parts: int, work: Path, hops: int, halo_mode: str, seed: int) -> None:
    from graphshard.assign import AssignOptions, assign
    from graphshard.formats.chunked import load_metadata
    from graphshard.shuffle.options import ShuffleOptions
    from graphshard.shuffle.scratch import ShuffleScratch
    from graphshard.shuffle.step import route
    from graphshard.storage import location

    work.mkdir(parents=True, exist_ok=True)
    asg = assign(graph, work / "assignment", parts, AssignOptions(method="random", seed=seed), overwrite=True)
    g = load_metadata(graph)
    options = ShuffleOptions(halo_hops=hops, halo_mode=halo_mode)
    t0 = time.perf_counter()
    plan, nodes, edges = route(g, location(asg), parts, options, None, ShuffleScratch(work / "scratch").make())
    (work / STATE).write_bytes(pickle.dumps((plan, nodes, edges)))
    print(json.dumps({"prepared": str(work), "parts": parts, "nodes": nodes.total, "edges": edges.total,
                      "route_s": round(time.perf_counter() - t0, 1)}))


def build(work: Path, part: int, trace: bool, window: int | None) -> dict:
    import graphshard
    from graphshard.shuffle.partition_build import build_partition

    if window is not None:  # the dense windows' size (a smaller one runs the windowed path on a small graph)
        from graphshard.shuffle import local_ids

        local_ids.WINDOW_IDS = window

    plan, nodes, edges = pickle.loads((work / STATE).read_bytes())
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if trace:
        tracemalloc.start()
    t0, c0 = time.perf_counter(), time.process_time()
    data = build_partition(plan, part, nodes, edges)
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    peak = tracemalloc.get_traced_memory()[1] if trace else None
    out = sum(a.nbytes for a in (data.src, data.dst, *data.ndata.values(), *data.edata.values()))
    return {"code": str(Path(graphshard.__file__).parents[1]), "part": part, "window": window,
            "seconds": round(seconds, 3), "cpu_s": round(cpu, 3),
            "traced_peak_mb": None if peak is None else round(peak / 1e6, 1), "output_mb": round(out / 1e6, 1),
            "rss_before_mb": round(before / 1e6, 1),
            "rss_peak_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6, 1),
            **data.stats, "digest": _digest(data)}


def _digest(data) -> str:
    """A hash of every array the partition's graph.dgl is made of (old and new code must agree)."""
    import hashlib

    h = hashlib.blake2b()
    for name, arr in [("src", data.src), ("dst", data.dst), *sorted(data.ndata.items()), *sorted(data.edata.items())]:
        h.update(name.encode() + str(arr.dtype).encode() + arr.tobytes())
    return h.hexdigest()[:16]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--graph", type=Path, required=True)
    p.add_argument("--parts", type=int, required=True)
    p.add_argument("--work", type=Path, required=True)
    p.add_argument("--hops", type=int, default=1)
    p.add_argument("--halo-mode", default="full")
    p.add_argument("--seed", type=int, default=0)
    b = sub.add_parser("build")
    b.add_argument("--work", type=Path, required=True)
    b.add_argument("--part", type=int, default=0)
    b.add_argument("--no-trace", action="store_true", help="time without tracemalloc's overhead")
    b.add_argument("--window", type=int, default=None, help="local_ids.WINDOW_IDS (new code only)")
    args = ap.parse_args(argv)
    if args.cmd == "prepare":
        prepare(args.graph, args.parts, args.work, args.hops, args.halo_mode, args.seed)
    else:
        print(json.dumps(build(args.work, args.part, not args.no_trace, args.window)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

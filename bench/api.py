"""graphshard.partition_graph vs dgl.distributed.partition_graph on the same in-memory DGLGraph (run in the DGL venv).

Each (side, method) runs in a fresh process that loads the chunked graph into one DGLGraph with its features
(bench/dgl_partition.load_dgl_graph), then calls the side's `partition_graph(g, ..., return_mapping=True)`.
Measured per run: the call's wall time, the process's wall time, and the peak of the summed RSS of the process and
all its descendants (graphshard's Dask scheduler and workers), sampled every 50 ms, so the caller's graph is included.
graphshard's rows also hold its phases (`phases_s`: chunks, assign, cluster wait (what is left of the local cluster's
start-up, which runs in a thread from the call's start), shuffle, cluster stop, mapping, publish), as partition_graph
logs them.

    flock /tmp/graphshard-heavy.lock /work/dgl-venv/bin/python bench/api.py --graph /work/data/rmat20m/metadata.json

The DGL venv's graphshard is the checkout installed there last; `PYTHONPATH=<checkout>` in front picks another (an
A/B of two checkouts in the same sitting, the children and their Dask workers inherit it).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import time
from pathlib import Path

from measure import RssSampler  # bench/measure.py

HERE = Path(__file__).resolve().parent


def one_run(graph: Path, side: str, method: str, parts: int, out: Path) -> dict:
    """Load the graph, partition it with one side; the figures of this process."""
    start = time.perf_counter()
    with RssSampler(tree_of=os.getpid()) as rss:
        os.environ.setdefault("DGLBACKEND", "pytorch")
        sys.path.insert(0, str(HERE))
        from dgl_partition import load_dgl_graph  # the DGL venv's dgl, imported here

        from graphshard.formats.chunked import load_metadata

        g = load_dgl_graph(load_metadata(graph))
        loaded = time.perf_counter()
        phases = PhaseRecorder()
        if side == "dgl":
            from dgl.distributed import partition_graph
        else:
            from graphshard import partition_graph
            logging.getLogger("graphshard.inmemory.partition").addHandler(phases)
            logging.getLogger("graphshard.inmemory.partition").setLevel(logging.INFO)
        nids, eids = partition_graph(g, "rmat", parts, str(out), num_hops=1, part_method=method,
                                     return_mapping=True)
        call = time.perf_counter() - loaded
    return {"side": side, "method": method, "num_parts": parts, "nodes": g.num_nodes(), "edges": g.num_edges(),
            "load_s": round(loaded - start, 2), "call_s": round(call, 2),
            "process_s": round(time.perf_counter() - start, 2), "peak_tree_rss_gib": round(rss.total / 2**30, 3),
            "mapping_types": [type(nids).__name__, type(eids).__name__], "phases_s": phases.seconds}


class PhaseRecorder(logging.Handler):
    """Keeps the `phases` graphshard.partition_graph logs at its end (wall seconds per phase)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict = {}

    def emit(self, record: logging.LogRecord) -> None:
        self.seconds.update(getattr(record, "phases", {}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--graph", type=Path, required=True, help="chunked graph metadata.json (loaded into a DGLGraph)")
    ap.add_argument("--parts", type=int, default=4)
    ap.add_argument("--methods", default="random,metis")
    ap.add_argument("--out", type=Path, default=Path("/work/data/bench-api"), help="where partition sets go")
    ap.add_argument("--one", nargs=2, metavar=("SIDE", "METHOD"), help=argparse.SUPPRESS)  # a child run
    args = ap.parse_args(argv)
    if args.one:
        side, method = args.one
        print(json.dumps(one_run(args.graph, side, method, args.parts, args.out / f"{side}-{method}")), flush=True)
        return 0
    rows = []
    for method in args.methods.split(","):
        for side in ("dgl", "graphshard"):
            cmd = [sys.executable, __file__, "--graph", str(args.graph), "--parts", str(args.parts),
                   "--out", str(args.out), "--one", side, method]
            result = subprocess.run(cmd, capture_output=True, text=True)
            if result.returncode:
                sys.stderr.write(result.stderr[-4000:])
                return result.returncode
            rows.append(json.loads(result.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
        dgl_row, gs_row = rows[-2], rows[-1]
        print(json.dumps({"method": method, "call_ratio": round(gs_row["call_s"] / dgl_row["call_s"], 3),
                          "peak_ratio": round(gs_row["peak_tree_rss_gib"] / dgl_row["peak_tree_rss_gib"], 3)}),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

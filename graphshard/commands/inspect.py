"""`graphshard inspect`: summarize a chunked graph; with --check, make `graphshard run`'s pre-flight and open and
verify every file."""

from __future__ import annotations

import argparse
import json

from graphshard.cluster import ClusterSpec, dask_client
from graphshard.errors import GraphshardError, InputError
from graphshard.formats.chunked import ChunkedGraph, load_metadata
from graphshard.ingest import check_graph, summary
from graphshard.precheck import precheck, refuse

NAME = "inspect"
HELP = "Print a chunked graph's types, counts, chunks, features and bytes; --check verifies every file."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("metadata", help="metadata.json of the chunked graph (or its folder)")
    parser.add_argument("--check", action="store_true",
                        help="the pre-flight of `graphshard run` (its warnings too), then open every file: row counts, "
                        "ID ranges, feature rows, shapes, dtypes; exit 2 on problems")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--workers", type=int, default=0,
                        help="check on a local Dask cluster of this many workers (default 0: in this process)")
    parser.add_argument("--scheduler", default=None, help="check on the Dask scheduler at this address")


def _bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return ""


def _chunks(counts: list[int]) -> str:
    return f"{len(counts)} chunk(s)" + (f" of {counts}" if len(counts) <= 8 else "")


def _features(lines: list[str], feats: dict) -> None:
    for name, f in feats.items():
        shape = "x".join(str(x) for x in f["shape"])
        lines.append(f"      {name:<16} {f['dtype']:<8} {shape:<16} {f['format']:<8} {f['files']} file(s)  "
                     f"{_bytes(f['bytes'])}" + ("" if f["dtype_known"] else
                                                ", dtype from the first rows (float64 if a later row is a float)"))


def format_summary(s: dict) -> str:
    """The summary as aligned text."""
    lines = [f"graph {s['graph_name']}  ({s['metadata']})",
             f"  {s['num_nodes']:,} nodes, {s['num_edges']:,} edges, {_bytes(s['bytes'])} of chunk files",
             f"  node types ({len(s['node_types'])}):"]
    for nt, t in s["node_types"].items():
        lines.append(f"    {nt}: {t['count']:,} nodes, {_chunks(t['chunks'])}" +
                     ("" if t["features"] else ", no features"))
        _features(lines, t["features"])
    lines.append(f"  edge types ({len(s['edge_types'])}):")
    for et, t in s["edge_types"].items():
        lines.append(f"    {et}: {t['count']:,} edges, {_chunks(t['chunks'])}, {t['format']}, {_bytes(t['bytes'])}")
        _features(lines, t["features"])
    return "\n".join(lines)


def _check(graph: ChunkedGraph, args: argparse.Namespace) -> list[GraphshardError]:
    """The pre-flight `graphshard run` makes (headers; its warnings logged) and the check of every file: each problem
    once, the full check's wording first (it read the data), then what only the pre-flight found."""
    preflight = precheck(graph)
    if not (args.workers or args.scheduler):
        found = check_graph(graph)
    else:
        with dask_client(ClusterSpec(address=args.scheduler, workers=args.workers or 2)) as client:
            found = check_graph(graph, client)
    seen = {_where(p) for p in found}
    return found + [p for p in preflight if _where(p) not in seen]


def _where(problem: GraphshardError) -> tuple | str:
    """What a problem is about, so that one problem in both checks' words is reported once: a file's field (the
    wording may differ: the full read names a csv value by its column), else the whole line."""
    if isinstance(problem, InputError) and problem.file:
        return problem.file, problem.field
    return str(problem)


def run(args: argparse.Namespace) -> int:
    graph = load_metadata(args.metadata)
    if args.check:
        refuse(_check(graph, args))
    s = summary(graph)
    if args.json:
        print(json.dumps({**s, **({"check": "ok"} if args.check else {})}, indent=2))
    else:
        print(format_summary(s))
        if args.check:
            print("check: every file opened and verified, no problems")
    return 0

"""`graphshard validate`: check a partition set against formats.md §5 (and the input graph); exit 1 on any problem."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import nullcontext
from pathlib import Path

from graphshard.storage import Location, location

NAME = "validate"
HELP = ("Check every invariant of a partition set (with --input also against the input graph); print each problem "
        "on its own line and exit 1 if there is any.")


def add_cluster_arguments(parser: argparse.ArgumentParser) -> None:
    """--input/--full/--seed and where the tasks run (shared with `graphshard report`)."""
    parser.add_argument("--input", default=None, metavar="METADATA",
                        help="metadata.json of the input chunked graph: also check original IDs, edges and features")
    parser.add_argument("--full", action="store_true",
                        help="compare every row with the input (default: seeded sample + checksums over all rows)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the row sample (default 0)")
    parser.add_argument("--sample-size", type=int, default=None, help="rows sampled per partition and type "
                        "(default 1024)")
    parser.add_argument("--assignment-report", default=None,
                        help="assignment_report.json for the balance-constraint figures (default: beside the config)")
    parser.add_argument("--remote-share", action=argparse.BooleanOptionalAction, default=True,
                        help="estimate the remote share of mini-batch input nodes (more passes over every edge; "
                        "default on, --no-remote-share skips it)")
    parser.add_argument("--workers", type=int, default=0,
                        help="run on a local Dask cluster of this many workers (default 0: in this process)")
    parser.add_argument("--scheduler", default=None, help="run on the Dask scheduler at this address")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--partitions", required=True, metavar="CONFIG",
                        help="the partition config <out>/<graph_name>.json (or the output folder)")
    add_cluster_arguments(parser)
    parser.add_argument("--write-report", action="store_true",
                        help="also write report.json and report.html beside the config")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")


def client_context(args: argparse.Namespace):
    """A Dask client when --workers or --scheduler asks for one, else nothing (tasks run in this process)."""
    if not (args.workers or args.scheduler):
        return nullcontext(None)
    from graphshard.cluster import ClusterSpec, dask_client
    return dask_client(ClusterSpec(address=args.scheduler, workers=args.workers or 2))


def run_validation(config: Path | Location, args: argparse.Namespace, step_times: dict | None = None) -> dict:
    """validate() with the command-line options."""
    from graphshard.precheck import checked_graph
    from graphshard.validate import validate
    from graphshard.validate.sampling import SAMPLE_SIZE

    if args.input:
        checked_graph(args.input)  # the input's file headers, before any work starts
    with client_context(args) as client:
        return validate(config, args.input, full=args.full, client=client, seed=args.seed,
                        sample_size=args.sample_size or SAMPLE_SIZE, step_times=step_times,
                        assignment_report=args.assignment_report, remote_share=args.remote_share)


def print_outcome(report: dict) -> int:
    """Problems one per line on stdout, a summary line on stderr; 0 when valid, 1 otherwise."""
    from graphshard.validate import problem_lines

    for line in problem_lines(report):
        print(line)
    checks = report["checks"]
    counts = {s: sum(c["status"] == s for c in checks) for s in ("passed", "failed", "skipped")}
    verdict = "valid" if report["ok"] else f"INVALID ({report['num_problems']} problem(s))"
    skipped = ", ".join(c["name"] for c in checks if c["status"] == "skipped")
    print(f"{report['graph_name']}: {verdict}; checks {counts['passed']} passed, {counts['failed']} failed, "
          f"{counts['skipped']} skipped{f' ({skipped}: --json says why)' if skipped else ''}", file=sys.stderr)
    return 0 if report["ok"] else 1


def partition_config(where: str) -> Path | Location:
    """The partition config a flag names: the file (a path or URL ending in .json) or the folder holding it."""
    from graphshard.validate.layout import find_config

    loc = location(where)
    if loc.is_local:
        path = Path(loc.path)
        return find_config(path) if path.is_dir() else path
    return loc if loc.name.endswith(".json") else find_config(loc)


def report_folder(config: Path | Location) -> Path | Location:
    """Where a set's report goes: beside its config, or beside its files when a store holds them under a run prefix
    (graphshard.runprefix)."""
    if isinstance(config, Path):
        return config.parent
    from graphshard.runprefix import split_prefix
    from graphshard.storage import Storage

    prefix, _ = split_prefix(Storage().read_bytes(config).decode())
    return config.parent / prefix if prefix else config.parent


def write_reports(config: Path | Location, report: dict) -> None:
    from graphshard.pipeline.files import write_report_to
    from graphshard.storage import Storage

    html = write_report_to(report_folder(config), report, Storage())
    print(f"wrote {html.parent / 'report.json'}", file=sys.stderr)
    print(f"wrote {html}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    config = partition_config(args.partitions)
    report = run_validation(config, args)
    if args.write_report:
        write_reports(config, report)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["ok"] else 1
    return print_outcome(report)

"""`graphshard report`: (re)write report.json and report.html for an existing partition output folder."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from graphshard.commands.validate import add_cluster_arguments, print_outcome, run_validation

NAME = "report"
HELP = "Validate an existing partition output folder and write report.json and report.html into it."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the partition output folder (holds <graph_name>.json)")
    add_cluster_arguments(parser)


def previous_step_times(out: Path) -> dict:
    """Step times of an earlier report.json in the folder (the pipeline's timings survive a regeneration)."""
    try:
        times = json.loads((out / "report.json").read_text()).get("step_times", {})
    except (OSError, json.JSONDecodeError, AttributeError):
        return {}
    return {k: float(v) for k, v in times.items() if k != "validate" and isinstance(v, (int, float))}


def run(args: argparse.Namespace) -> int:
    from graphshard.validate import write_report
    from graphshard.validate.layout import find_config

    out = Path(args.out)
    config = find_config(out)
    report = run_validation(config, args, previous_step_times(out))
    for path in write_report(out, report):
        print(f"wrote {path}", file=sys.stderr)
    return print_outcome(report)

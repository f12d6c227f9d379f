"""`graphshard report`: (re)write report.json and report.html for an existing partition output folder."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from graphshard.commands.validate import (
    add_cluster_arguments,
    print_outcome,
    report_folder,
    run_validation,
    write_reports,
)
from graphshard.errors import GraphshardError
from graphshard.storage import Location, location

NAME = "report"
HELP = "Validate an existing partition output folder and write report.json and report.html into it."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("out", help="the partition output folder (holds <graph_name>.json; a path or a URL)")
    add_cluster_arguments(parser)


def previous_step_times(folder: Path | Location) -> dict:
    """Step times of an earlier report.json in the folder (the pipeline's timings survive a regeneration)."""
    from graphshard.storage import Storage

    try:
        times = json.loads(Storage().read_bytes(location(folder) / "report.json")).get("step_times", {})
    except (GraphshardError, json.JSONDecodeError, AttributeError):
        return {}
    return {k: float(v) for k, v in times.items() if k != "validate" and isinstance(v, (int, float))}


def run(args: argparse.Namespace) -> int:
    from graphshard.validate.layout import find_config

    config = find_config(args.out)
    report = run_validation(config, args, previous_step_times(report_folder(config)))
    write_reports(config, report)
    return print_outcome(report)

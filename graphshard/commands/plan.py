"""`graphshard plan CONFIG`: what each step of the run will need, and whether the configured cluster holds it."""

from __future__ import annotations

import argparse
import json

from graphshard.pipeline.config import load_config
from graphshard.pipeline.preflight import check_config
from graphshard.pipeline.publish import published_record

NAME = "plan"
HELP = ("Predict, per step, memory per worker and of the flow process, scratch and output bytes, Dask tasks and time "
        "from metadata.json, the files' headers and the config; say whether the cluster and disks fit (exit 1 if not).")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="pipeline config (YAML), e.g. configs/example.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, value parsed as YAML (repeatable): --set cluster.workers=8")
    parser.add_argument("--json", action="store_true", help="print the plan as JSON")


def show(cfg, graph, as_json: bool = False) -> int:
    """Print the plan of a checked config; 0 when it fits, 1 when it does not."""
    from graphshard.plan.build import plan_run
    from graphshard.plan.render import text

    plan = plan_run(cfg, graph)
    print(json.dumps(plan.to_json(), indent=2) if as_json else text(plan))
    return 0 if plan.fits else 1


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    graph = check_config(cfg, published_by_us=published_record(cfg))
    return show(cfg, graph, args.json)

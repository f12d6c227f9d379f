"""`graphshard serve`: serve the pipeline flow as a deployment (`graphshard/partition`) until interrupted."""

from __future__ import annotations

import argparse
import os

from graphshard.errors import GraphshardError

NAME = "serve"
HELP = ("Serve the pipeline flow as the deployment 'graphshard/partition' (a long-running flow.serve); start runs "
        "with `prefect deployment run 'graphshard/partition' --param config=configs/example.yaml`.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="partition", help="deployment name (default: partition)")
    parser.add_argument("--limit", type=int, default=None, help="maximum concurrent flow runs")


def run(args: argparse.Namespace) -> int:
    from graphshard.flows.env import check_api, prefect_environment

    if not os.environ.get("PREFECT_API_URL"):
        raise GraphshardError("PREFECT_API_URL is not set: start a server (`prefect server start`) and point "
                              "PREFECT_API_URL at it (e.g. http://127.0.0.1:4200/api) before serving")
    check_api()
    prefect_environment()
    from graphshard.flows.pipeline import partition

    partition.serve(name=args.name, limit=args.limit, print_starting_message=True)
    return 0

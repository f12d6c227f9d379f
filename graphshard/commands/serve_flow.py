"""`graphshard serve`: serve the pipeline flow as a deployment (`graphshard/partition`) until interrupted."""

from __future__ import annotations

import argparse

NAME = "serve"
HELP = ("Serve the pipeline flow as the deployment 'graphshard/partition' (a long-running flow.serve) on "
        "PREFECT_API_URL or graphshard's background Prefect server; start runs with "
        "`prefect deployment run 'graphshard/partition' --param config=configs/example.yaml`.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--name", default="partition", help="deployment name (default: partition)")
    parser.add_argument("--limit", type=int, default=None, help="maximum concurrent flow runs")


def run(args: argparse.Namespace) -> int:
    from graphshard.pipeline import prefect_server
    from graphshard.pipeline.prefect_env import connect

    pending = connect(ephemeral_ok=False)
    from graphshard.pipeline.flow import partition

    if pending is not None:
        prefect_server.ensure(pending)
    partition.serve(name=args.name, limit=args.limit, print_starting_message=True)
    return 0

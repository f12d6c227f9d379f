"""`graphshard run CONFIG`: the whole pipeline as a Prefect flow, driven by a YAML config."""

from __future__ import annotations

import argparse
from pathlib import Path

from graphshard import gcfreeze, logs
from graphshard.pipeline.config import STEPS, load_config
from graphshard.pipeline.preflight import check_config

NAME = "run"
HELP = "Run ingest -> assign -> shuffle -> validate from a YAML config (a Prefect flow; finished steps are reused)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help="pipeline config (YAML), e.g. configs/example.yaml")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key, value parsed as YAML (repeatable): --set assign.method=metis")
    parser.add_argument("--from", dest="from_step", choices=STEPS, help="re-run this step and every later one")
    parser.add_argument("--force", action="append", default=[], choices=STEPS,
                        help="re-run this step even if its result is cached (repeatable)")
    parser.add_argument("--plan", action="store_true", help="print the run's plan (graphshard plan) and exit")
    parser.add_argument("--force-plan", action="store_true",
                        help="run even if the plan says the cluster's memory or the disks are too small")


def run(args: argparse.Namespace) -> int:
    from graphshard.pipeline import prefect_server
    from graphshard.pipeline.ondemand import prestart
    from graphshard.pipeline.prefect_env import connect
    from graphshard.pipeline.publish import published_record

    cfg = load_config(args.config, args.overrides)
    # every config error first
    ours = published_record(cfg)
    graph = check_config(cfg, published_by_us=ours)
    if args.plan:
        from graphshard.commands.plan import show
        return show(cfg, graph)
    from graphshard.plan import gate
    gate.check(cfg, graph, force=args.force_plan)  # a cluster or disk the plan does not fit: refused here
    local_work = cfg.work if isinstance(cfg.work, Path) else None  # a work folder on a store: logs stay local
    pending = connect(local_work)  # a cold background server starts while Prefect is imported
    if local_work is not None:
        logs.move_to(local_work / "logs", NAME)  # the run's log file lives in its work folder
    if args.from_step or args.force or not ours:  # steps will run: workers start meanwhile
        prestart(cfg.cluster.spec())
    with gcfreeze.imports_kept():  # Prefect: imported only after its environment is set
        from graphshard.pipeline.flow import run_pipeline
        from graphshard.pipeline.summary import summary_line

    if pending is not None:
        prefect_server.ensure(pending)

    summary = run_pipeline(args.config, args.overrides, args.from_step, args.force, args.force_plan)
    print(summary_line(summary))
    print(f"partitions: {summary['partition_config']}")
    if summary["report"]:
        print(f"report:     {summary['report']}")
    if summary["prefect_url"]:  # graphshard's background server or the user's PREFECT_API_URL
        print(f"prefect:    {summary['prefect_url']}")
    return 0

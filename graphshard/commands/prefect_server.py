"""`graphshard server status|start|stop`: the background Prefect server `graphshard run` starts and reuses."""

from __future__ import annotations

import argparse

NAME = "server"
HELP = ("See, start or stop graphshard's background Prefect server (started by the first `graphshard run`, "
        "reused by later runs; state under $GRAPHSHARD_HOME/prefect, default ~/.graphshard/prefect).")
ACTIONS = ("status", "start", "stop")
NOT_RUNNING = 3  # `status` exit code when no server runs (as `systemctl status`)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=ACTIONS, nargs="?", default="status",
                        help=f"status (default; exit {NOT_RUNNING} when not running), start (and wait until it "
                             "answers), stop (refused while a graphshard run or serve uses it, unless --force)")
    parser.add_argument("--force", action="store_true", help="stop: even while graphshard processes use it")


def _describe(srv, state: str) -> str:
    from graphshard.pipeline import prefect_server

    return (f"Prefect server {state}: UI {srv.url}, API {srv.api_url} (PREFECT_API_URL), pid {srv.pid}, "
            f"home {prefect_server.server_home()}, log {prefect_server.log_path()}")


def run(args: argparse.Namespace) -> int:
    from graphshard.pipeline import prefect_server

    if args.action == "start":
        srv, started = prefect_server.start()
        print(_describe(prefect_server.ensure(srv), "started" if started else "already running"))
        return 0
    if args.action == "stop":
        srv = prefect_server.stop(force=args.force)
        print(f"Prefect server stopped (pid {srv.pid}, {srv.url})" if srv else "no Prefect server was running")
        return 0
    srv = prefect_server.recorded()
    if srv is None:
        print(f"no Prefect server running (home {prefect_server.server_home()}); `graphshard run` or "
              "`graphshard server start` starts one")
        return NOT_RUNNING
    print(_describe(srv, "running" if srv.healthy() else "starting (not answering yet)"))
    return 0

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
    _stop_on_sigterm_as_on_ctrl_c()
    _keep_watching_for_cancellations()
    partition.serve(name=args.name, limit=args.limit, print_starting_message=True)
    return 0


def _stop_on_sigterm_as_on_ctrl_c() -> None:
    """SIGTERM (a service manager's or Kubernetes' stop) ends the runner the way Ctrl-C does: `serve` catches
    TerminationSignal and shuts the runner down. Prefect 3.8's own SIGTERM handler calls the runner's stop from
    inside its event loop, where it returns a coroutine nobody awaits: the runner did not stop its loops and the
    terminal got a RuntimeWarning."""
    from prefect.exceptions import TerminationSignal
    from prefect.runner import Runner

    def terminate(self: Runner, signum: int, frame: object) -> None:
        raise TerminationSignal(signum)

    Runner.handle_sigterm = terminate


def _keep_watching_for_cancellations() -> None:
    """A Prefect server that does not answer for a while (restarted, a network blip) no longer ends the watch for
    cancelled runs. Prefect 3.8's runner, its event stream lost, polls for runs in Cancelling, and after three failed
    polls in a row stopped polling for good (its failure handler was never awaited): no run this process started
    afterwards could be cancelled from the UI, each stayed in Cancelling and ran to its end. A poll the server does
    not answer is now logged and tried again at the next interval."""
    import httpx
    from prefect._internal.observers import FlowRunCancellingObserver

    check = FlowRunCancellingObserver._check_for_cancelled_flow_runs
    if getattr(check, "keeps_watching", False):
        return

    async def check_until_answered(self: FlowRunCancellingObserver) -> None:
        try:
            await check(self)
        except httpx.HTTPError as err:
            self.logger.warning("Prefect server did not answer the check for cancelled runs (%s); trying again in "
                                "%g s", err, self.polling_interval)

    check_until_answered.keeps_watching = True
    FlowRunCancellingObserver._check_for_cancelled_flow_runs = check_until_answered

"""The `graphshard` command: one subcommand per module in graphshard/commands/.

Each command module defines `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`. User errors
(GraphshardError) and a full disk print one clear message to stderr and exit with status 2; any other failure prints
one line and exits with status 1. Tracebacks go to the command's log file (graphshard.logs), and to the terminal too
with --debug (the same line and status follow).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

from graphshard import __version__, diskfull, gcfreeze, logs
from graphshard.errors import GraphshardError, first_line

# command -> its module in graphshard/commands/ (a module may list ALIASES: other names of its command)
COMMANDS = {"inspect": "inspect", "generate": "generate", "chunk": "chunk", "assign": "assign", "shuffle": "shuffle",
            "validate": "validate", "report": "report", "run": "run", "plan": "plan", "fetch": "fetch",
            "serve": "serve_flow", "server": "prefect_server"}
ALIASES = {"dispatch": "shuffle"}  # `graphshard dispatch`, the shuffle command's first name


DEBUG_HELP = "print tracebacks and Dask's own worker messages on the terminal (they always go to the log file)"


def _add_command(sub: argparse._SubParsersAction, name: str) -> None:
    module = importlib.import_module(f"graphshard.commands.{COMMANDS[name]}")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=DEBUG_HELP)
    p = sub.add_parser(module.NAME, aliases=getattr(module, "ALIASES", []), help=module.HELP,
                       description=module.HELP, parents=[common])
    module.add_arguments(p)
    p.set_defaults(_run=module.run)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen subcommand's module is imported (fast start), all of them for top-level help."""
    parser = argparse.ArgumentParser(prog="graphshard", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"graphshard {__version__}")
    parser.add_argument("--debug", action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in (argv or []) if not a.startswith("-")), None)
    chosen = ALIASES.get(chosen, chosen)
    for name in [chosen] if chosen in COMMANDS else COMMANDS:
        _add_command(sub, name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    logs.setup(args.command, args.debug)
    diskfull.watch(_written_by(args))
    # a run ended by SIGTERM leaves its cluster's semaphores to multiprocessing's tracker, which warned about them on
    # the terminal at its own exit (it reads this when it starts, with the first local cluster)
    os.environ.setdefault("PYTHONWARNINGS", "ignore:resource_tracker:UserWarning")
    try:
        return int(args._run(args) or 0)
    except GraphshardError as err:
        log = logs.record_failure(err)  # with --debug, the traceback is on the terminal too; then the same line
        details = f" (details: {log})" if err.__cause__ is not None and log else ""
        print(f"graphshard {args.command}: error: {err}{details}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"graphshard {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `graphshard run ... | head -1`: the reader is gone, and nothing more to say to it
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a process that SIGPIPE ended
    except Exception as err:  # noqa: BLE001 - a bug or an unforeseen failure: one line, the traceback in the log
        log = logs.record_failure(err)
        if diskfull.is_full(err):  # a write of this process (its log, generate's files): where, what to change
            print(f"graphshard {args.command}: error: {diskfull.line('', err, run=args.command == 'run')}",
                  file=sys.stderr)
            return 2
        shown = "above, and in" if logs.debug_enabled() else "in"
        print(f"graphshard {args.command}: internal error: {type(err).__name__}: {first_line(err)} (traceback "
              f"{shown} {log}{'' if logs.debug_enabled() else '; --debug prints it'})", file=sys.stderr)
        return 1


def _written_by(args: argparse.Namespace) -> dict[str, Path]:
    """The local folders a command's flags say it writes to, by flag: what a full disk's line names (`run` replaces
    them with its config's, after its plan)."""
    return {f"--{name.replace('_', '-')}": Path(value) for name in ("out", "scratch_dir")
            if isinstance(value := getattr(args, name, None), (str, Path)) and "://" not in str(value)}


def console() -> int:
    """The `graphshard` program (its exit status): `main`, then no final cyclic collection of the heap at exit."""
    code = main()
    gcfreeze.freeze_before_exit()
    return code


if __name__ == "__main__":
    sys.exit(console())

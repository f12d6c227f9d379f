"""The `graphshard` command: one subcommand per module in graphshard/commands/.

Each command module defines `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`. User errors
(GraphshardError) print one clear message to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from graphshard import __version__
from graphshard.errors import GraphshardError

COMMANDS = ["inspect", "generate", "chunk", "assign", "dispatch", "validate", "report", "run", "serve"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="graphshard", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"graphshard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        module = importlib.import_module(f"graphshard.commands.{name}")
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args) or 0)
    except GraphshardError as err:
        print(f"graphshard {args.command}: error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"graphshard {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

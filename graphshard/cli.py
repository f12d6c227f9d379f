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

COMMANDS = ["inspect", "generate", "chunk", "assign", "dispatch", "validate", "report", "run", "serve", "server"]


def _add_command(sub: argparse._SubParsersAction, name: str) -> None:
    module = importlib.import_module(f"graphshard.commands.{name}")
    p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
    module.add_arguments(p)
    p.set_defaults(_run=module.run)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; only the chosen subcommand's module is imported (fast start), all of them for top-level help."""
    parser = argparse.ArgumentParser(prog="graphshard", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"graphshard {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in (argv or []) if not a.startswith("-")), None)
    for name in [chosen] if chosen in COMMANDS else COMMANDS:
        _add_command(sub, name)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
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

"""The `graphshard` program's subcommands, one module each (`graphshard/cli.py` maps a command to its module): each
defines `NAME`, `HELP`, `add_arguments(parser)`, `run(args) -> int` and, when the command has other names, `ALIASES`.
A module imports what its command needs inside `run`, so that `graphshard --help` and every other command start fast.
"""

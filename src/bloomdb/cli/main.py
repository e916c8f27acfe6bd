"""``bloomdb`` command: one sub-command per module listed in ``COMMANDS``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import sys

COMMANDS = (
    "bloomdb.cli.demo",
    "bloomdb.cli.filter_bench",
    "bloomdb.cli.calc",
    "bloomdb.cli.join_bench",
    "bloomdb.cli.db_bench",
    "bloomdb.cli.db_stress",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bloomdb", description="Fast, accurate membership filters and the engines built on them.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for modname in COMMANDS:
        mod = importlib.import_module(modname)
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    return int(args._run(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

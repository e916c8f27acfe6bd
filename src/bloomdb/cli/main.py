"""``bloomdb`` command: one sub-command per module listed in ``COMMANDS``.

Each command module defines ``NAME``, ``HELP``, ``add_arguments(parser)`` and ``run(args) -> int``.
Bad arguments are refused by argparse (``cli/args.py`` types): one line, exit status 2. An error
bloomdb raises on purpose (``BloomDBError``) or a file that cannot be read or written (``OSError``)
while a command runs is printed the same way, as one line and status 2, never as a traceback.
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
    "bloomdb.cli.dask_bench",
    "bloomdb.cli.db_bench",
    "bloomdb.cli.db_stress",
    "bloomdb.cli.ldb",
    "bloomdb.cli.sst_dump",
    "bloomdb.cli.warmup",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bloomdb", description="Fast, accurate membership filters and the engines built on them.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for modname in COMMANDS:
        mod = importlib.import_module(modname)
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run, _parser=p)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("bloomdb")
    except PackageNotFoundError:
        from .. import __version__

        return __version__


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    from ..errors import BloomDBError

    try:
        return int(args._run(args) or 0)
    except (BloomDBError, OSError) as exc:
        args._parser.exit(2, f"{args._parser.prog}: error: {_one_line(exc)}\n")
    except KeyboardInterrupt:
        args._parser.exit(130, f"{args._parser.prog}: interrupted\n")


def _one_line(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
        text = f"{text}: {exc.filename}"
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())

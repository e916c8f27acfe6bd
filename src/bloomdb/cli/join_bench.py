"""``bloomdb join-bench``: the filtered hash join against DuckDB and Polars on the same data."""

from __future__ import annotations

import argparse

from .args import choices_list, comma_list, existing_folder, fraction, output_file, positive_int
from .report import print_runs

NAME = "join-bench"
HELP = "sum of 8 payload columns + count over an inner join (probe N rows, build N/100), bloomdb vs DuckDB/Polars"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=positive_int, default=20_000_000, help="probe rows (default 20M)")
    p.add_argument("--build-rows", type=positive_int, default=None, help="build rows (default rows/100)")
    p.add_argument("--fractions", type=comma_list(fraction), default=[0.01, 0.1, 0.5, 1.0], help="match fractions (comma-separated)")
    p.add_argument("--compare", type=choices_list(("duckdb", "polars"), allow_empty=True), default=["duckdb", "polars"], help="peers to run in the same process: duckdb,polars ('' for none)")
    p.add_argument("--threads", type=positive_int, default=2)
    p.add_argument("--repeats", type=positive_int, default=3, help="timed runs per engine (best reported) after one warm-up")
    p.add_argument("--no-parquet", action="store_true", help="skip the Parquet runs (bloomdb and DuckDB)")
    p.add_argument("--modes", type=choices_list(("adaptive", "on", "off")), default=["adaptive", "on", "off"], help="bloomdb pushdown modes to run")
    p.add_argument("--dir", type=existing_folder, default=None, help="work directory for the data (default: a temp dir, removed after)")
    p.add_argument("--shapes", type=comma_list(str), default=[],
                   help="also run these join shapes (bloomdb.bench.join_shapes): m2m,m2m_rows,multikey,groupby,left_rows,dataset")
    p.add_argument("--cpu-time", action="store_true", help="shapes: report CPU seconds of the process, not wall time")
    p.add_argument("--no-fractions", action="store_true", help="skip the match-fraction runs (only --shapes)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="also write the runs as JSON")


def run(args: argparse.Namespace) -> int:
    from ..bench import join_bench as jb

    runs, tables = [], []
    if not args.no_fractions:
        runs = jb.run(args.rows, args.build_rows, tuple(args.fractions), args.compare,
                      args.threads, args.repeats, not args.no_parquet, args.dir, tuple(args.modes), progress=True)
        tables.append(jb.format_table(runs))
    if args.shapes:
        from ..bench import join_shapes

        shaped = join_shapes.run(args.rows, tuple(args.shapes), args.threads, args.repeats, args.compare, args.dir,
                                 cpu=args.cpu_time)
        tables.append(join_shapes.format_table(shaped))
        runs += shaped
    print_runs("\n\n".join(tables),
               f"(best of {args.repeats} after a warm-up; {args.threads} threads; ratios against bloomdb"
               f"{' columnar adaptive' if not args.no_fractions else ''})", runs, args.json)
    return 0

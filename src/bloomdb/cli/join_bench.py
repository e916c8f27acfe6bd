"""``bloomdb join-bench``: the filtered hash join against DuckDB and Polars on the same data."""

from __future__ import annotations

import argparse
import json

NAME = "join-bench"
HELP = "sum of 8 payload columns + count over an inner join (probe N rows, build N/100), bloomdb vs DuckDB/Polars"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=int, default=20_000_000, help="probe rows (default 20M)")
    p.add_argument("--build-rows", type=int, default=None, help="build rows (default rows/100)")
    p.add_argument("--fractions", default="0.01,0.1,0.5,1.0", help="match fractions (comma-separated)")
    p.add_argument("--compare", default="duckdb,polars", help="peers to run in the same process: duckdb,polars ('' for none)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3, help="timed runs per engine (best reported) after one warm-up")
    p.add_argument("--no-parquet", action="store_true", help="skip the Parquet runs (bloomdb and DuckDB)")
    p.add_argument("--modes", default="adaptive,on,off", help="bloomdb pushdown modes to run")
    p.add_argument("--dir", default=None, help="work directory for the data (default: a temp dir, removed after)")
    p.add_argument("--json", metavar="FILE", help="also write the runs as JSON")


def run(args: argparse.Namespace) -> int:
    from ..bench import join_bench as jb

    compare = [c.strip() for c in args.compare.split(",") if c.strip()]
    unknown = set(compare) - {"duckdb", "polars"}
    if unknown or args.rows < 1 or args.threads < 1 or args.repeats < 1:
        print(f"join-bench: bad arguments (unknown peers: {sorted(unknown)})" if unknown else "join-bench: bad arguments")
        return 2
    modes = tuple(m.strip() for m in args.modes.split(",") if m.strip())
    runs = jb.run(args.rows, args.build_rows, tuple(float(f) for f in args.fractions.split(",")), compare,
                  args.threads, args.repeats, not args.no_parquet, args.dir, modes)
    print()
    print(jb.format_table(runs))
    print(f"(best of {args.repeats} after a warm-up; {args.threads} threads; ratios against bloomdb columnar adaptive)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([r.as_dict() for r in runs], fh, indent=1, default=float)
    return 0

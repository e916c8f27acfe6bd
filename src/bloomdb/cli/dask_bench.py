"""``bloomdb dask-bench``: the filtered join on a Dask cluster against dd.merge and DuckDB."""

from __future__ import annotations

import argparse

from .args import choices_list, comma_list, fraction, output_file, positive_int
from .report import print_runs

NAME = "dask-bench"
HELP = ("sum of 8 payload columns + count over an inner join of a partitioned Parquet dataset on a Dask "
        "cluster: bloomdb.dask vs dd.merge (same cluster) and DuckDB (one process); time and bytes moved")
ENGINES = ("broadcast", "shuffle", "dd.merge", "duckdb")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=positive_int, default=20_000_000, help="probe rows (default 20M)")
    p.add_argument("--files", type=positive_int, default=20, help="Parquet files the probe rows are split into")
    p.add_argument("--fractions", type=comma_list(fraction), default=[0.01, 0.1, 1.0], help="match fractions")
    p.add_argument("--workers", type=positive_int, default=2, help="LocalCluster worker processes")
    p.add_argument("--scheduler", default=None, help="a running cluster's scheduler address instead of a LocalCluster")
    p.add_argument("--repeats", type=positive_int, default=2, help="timed runs per engine (best reported) after a warm-up")
    p.add_argument("--engines", type=choices_list(ENGINES), default=list(ENGINES), help="engines to run")
    p.add_argument("--json", type=output_file, metavar="FILE", help="also write the runs as JSON")


def run(args: argparse.Namespace) -> int:
    from ..bench import dask_bench as b

    runs = b.run(args.rows, args.files, tuple(args.fractions), args.workers, args.scheduler, args.repeats,
                 engines=tuple(args.engines))
    print_runs(b.format_table(runs), f"(best of {args.repeats} after a warm-up; ratios against dd.merge on the same cluster)",
               runs, args.json)
    return 0

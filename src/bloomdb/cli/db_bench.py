"""``bloomdb db-bench``: LevelDB-style benchmark phases on the LSM store (and peers)."""

from __future__ import annotations

import argparse

from .args import choices_list, existing_folder, positive_int

PEERS = ("leveldb", "rocksdb")

NAME = "db-bench"
HELP = "benchmark the LSM store: fillseq, fillrandom, readrandom, readmissing, readmixed, scan"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..bench.db_bench import EXTRA_PHASES, PHASES

    p.add_argument("--benchmarks", type=choices_list(PHASES + EXTRA_PHASES), default=list(PHASES),
                   help=f"comma-separated phases (default {','.join(PHASES)}; also: {','.join(EXTRA_PHASES)})")
    p.add_argument("--num", type=positive_int, default=100_000, help="number of keys (default 100k)")
    p.add_argument("--filter", default="blocked:10", help="filter spec for bloomdb tables, or 'none'")
    p.add_argument("--compression", default=None, choices=[None, "zstd", "lz4"], help="per-block compression")
    p.add_argument("--compare", type=choices_list(PEERS, allow_empty=True), default=[], help="peers to run too: leveldb,rocksdb")
    p.add_argument("--dir", type=existing_folder, default=None, help="folder for the temporary stores")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from ..bench import db_bench as B

    phases, peers = args.benchmarks, args.compare
    spec = None if args.filter.lower() == "none" else args.filter
    from ..lsm.probe import _probe_kernels  # noqa: F401  (compile/load kernels before timing)

    _warmup(B, spec)  # opens a store with the spec first: DB.open refuses a bad one before any work
    print(f"db-bench: {args.num:,} keys of 16 bytes, values of {B.VALUE_SIZE} bytes, filter={spec}, "
          f"compression={args.compression}")
    runs = B.run_engines(["bloomdb", *peers], phases, args.num, spec, not args.no_progress, args.dir, args.compression)
    print(B.format_runs(runs))
    return 0


def _warmup(B, spec) -> None:
    """Run every phase on a tiny store (with the benchmark's filter spec) so JIT compilation stays
    out of the timings."""
    B.run_engine("bloomdb", list(B.PHASES + B.EXTRA_PHASES), 2000, spec, False)
    B.warmup()

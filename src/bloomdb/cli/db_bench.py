"""``bloomdb db-bench``: LevelDB-style benchmark phases on the LSM store (and peers)."""

from __future__ import annotations

import argparse

NAME = "db-bench"
HELP = "benchmark the LSM store: fillseq, fillrandom, readrandom, readmissing, readmixed, scan"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--benchmarks", default="fillseq,fillrandom,readrandom,readmissing,readmixed,scan",
                   help="comma-separated phases (also: mgetmissing)")
    p.add_argument("--num", type=int, default=100_000, help="number of keys (default 100k)")
    p.add_argument("--filter", default="blocked:10", help="filter spec for bloomdb tables, or 'none'")
    p.add_argument("--compression", default=None, choices=[None, "zstd", "lz4"], help="per-block compression")
    p.add_argument("--compare", default="", help="peers to run too: leveldb,rocksdb")
    p.add_argument("--dir", default=None, help="folder for the temporary stores")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from ..bench import db_bench as B
    from ..errors import InvalidArgument

    phases = [p.strip() for p in args.benchmarks.split(",") if p.strip()]
    for p in phases:
        if p not in B.PHASES + B.EXTRA_PHASES:
            raise InvalidArgument(f"unknown benchmark {p!r}; known: {', '.join(B.PHASES + B.EXTRA_PHASES)}")
    spec = None if args.filter.lower() == "none" else args.filter
    peers = [x.strip() for x in args.compare.split(",") if x.strip()]
    for peer in peers:
        if peer not in ("leveldb", "rocksdb"):
            raise InvalidArgument(f"unknown peer {peer!r}; known: leveldb, rocksdb")
    from ..lsm import _lsm_kernels  # noqa: F401  (compile/load kernels before timing)

    _warmup(B)
    print(f"db-bench: {args.num:,} keys of 16 bytes, values of {B.VALUE_SIZE} bytes, filter={spec}, "
          f"compression={args.compression}")
    runs = [B.run_engine("bloomdb", phases, args.num, spec, not args.no_progress, args.dir, args.compression)]
    for peer in peers:
        runs.append(B.run_engine(peer, phases, args.num, spec, not args.no_progress, args.dir, args.compression))
    print(B.format_runs(runs))
    return 0


def _warmup(B) -> None:
    """Run every phase on a tiny store so JIT compilation stays out of the timings."""
    B.warmup()
    B.run_engine("bloomdb", list(B.PHASES + B.EXTRA_PHASES), 2000, "blocked:10", False)

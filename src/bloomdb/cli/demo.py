"""``bloomdb demo``: what bloomdb does, in under a minute."""

from __future__ import annotations

import argparse
import time

from .args import plot_file, positive_int

NAME = "demo"
HELP = "build every filter family over 1M keys, print the table and draw FPR vs bits/key"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", type=positive_int, default=1_000_000, help="keys per filter in the table (default 1M)")
    p.add_argument("--plot", type=plot_file, default="bloomdb-demo-fpr.png", help="where to write the FPR plot")
    p.add_argument("--sweep-keys", type=positive_int, default=200_000, help="keys per filter in the plot sweep")


def run(args: argparse.Namespace) -> int:
    from .. import filters
    from ..bench import filter_bench as fb

    t0 = time.perf_counter()
    print("bloomdb demo — membership filters: 'definitely not there' or 'probably there'\n")
    print(f"1. Every filter family over {args.keys:,} random 64-bit keys (numpy array, batch API):\n")
    results = []
    for info in filters.available():
        spec = filters.family(info.name).example_spec or info.name
        results.append(fb.run_one(spec, n=args.keys, repeats=1, absent=args.keys))
    print(fb.format_table(results))
    print("\nbits/key = memory per key; FPR measured on absent keys vs the family's model; ns per key include hashing.")

    print(f"\n2. FPR vs bits/key for every family ({args.sweep_keys:,} keys per point) ...")
    sweep = fb.sweep(bits_per_key=[4, 6, 8, 10, 12, 16, 20], n=args.sweep_keys, repeats=1, absent=1_000_000)
    path = fb.plot(sweep, args.plot, title="bloomdb: measured FPR vs bits/key")
    print(f"   plot written to {path}")
    for number, (title, hook) in enumerate(_sections(), start=3):
        print(f"\n{number}. {title}")
        hook()
    print(f"\ndemo finished in {time.perf_counter() - t0:.1f} s")
    return 0


def _equal_fpr_section() -> None:
    """Memory at equal FP rate: blocked vs the static paired and ribbon filters (~5 s)."""
    from ..bench import equal_fpr as ef

    print()
    points = ef.equal_fpr(["blocked", "paired", "ribbon"], [1e-2, 1e-4], n=200_000, steps=6)
    print(ef.format_table(points))


def _sections():
    """Further demo sections, in order: (title, function printing the section's body).
    The driver numbers them after the two filter sections."""
    from ..bench.lsm_demo import DEMO_TITLE, demo_hook as lsm_hook
    from . import demo_formats

    return [
        ("Memory at equal FP rate (200,000 keys; bits/key found by bisection on measured FPR):", _equal_fpr_section),
        ("Filters in other formats", demo_formats.section),
        (DEMO_TITLE, lsm_hook),
        ("The filtered hash join (bloomdb.join)", _join_section),
    ]


def _join_section() -> None:
    from ..bench import join_bench

    join_bench.demo()

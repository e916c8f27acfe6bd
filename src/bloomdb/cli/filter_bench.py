"""``bloomdb filter-bench``: measure one family, or sweep all of them."""

from __future__ import annotations

import argparse
import json
import sys

from .args import comma_list, output_file, plot_file, positive_float, positive_int, probability

NAME = "filter-bench"
HELP = "build/query ns per key, bytes per key and measured vs expected FP rate of filter families"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--impl", default="blocked", help="family or full spec (blocked, standard:12, ...); comma-separated for several")
    p.add_argument("--bits-per-key", type=positive_float, default=10.0, help="bits per key when --impl names a family only")
    p.add_argument("--keys", type=positive_int, default=1_000_000, help="keys added (default 1M)")
    p.add_argument("--absent", type=positive_int, default=None, help="absent keys queried for the FP rate (default max(keys, 1M))")
    p.add_argument("--key-type", choices=("int", "str"), default="int")
    p.add_argument("--repeats", type=positive_int, default=3, help="timing repeats; the best is reported")
    p.add_argument("--sweep", action="store_true", help="every family over a range of bits/key")
    p.add_argument("--sweep-bits", type=comma_list(positive_float), default=[4.0, 6.0, 8.0, 10.0, 12.0, 16.0, 20.0, 24.0], help="bits/key values for --sweep")
    p.add_argument("--families", default=None, help="families for --sweep (default: all)")
    p.add_argument("--plot", type=plot_file, metavar="FILE", help="draw FPR vs bits/key to FILE (png/svg/pdf)")
    p.add_argument("--json", type=output_file, metavar="FILE", help="also write the results as JSON")
    p.add_argument(
        "--equal-fpr", nargs="?", type=comma_list(probability), const=[1e-2, 1e-3, 1e-4, 1e-5], metavar="TARGETS",
        help="memory at equal FP rate: bits/key each family (--families, default blocked,paired,ribbon,fuse8,fuse16) "
        "needs for each target FP rate, found by bisection on measured FP rates (default 1e-2,1e-3,1e-4,1e-5)",
    )
    p.add_argument("--allow-bad-fp-rate", action="store_true", help="do not fail when the measured FP rate is far above expected")


def run(args: argparse.Namespace) -> int:
    from .. import filters
    from ..bench import filter_bench as fb

    if args.families and not (args.sweep or args.equal_fpr):
        from ..errors import InvalidArgument

        raise InvalidArgument("--families chooses the families of --sweep and --equal-fpr; "
                              f"to bench one run of them give --impl {args.families}")
    if args.equal_fpr:
        return _run_equal_fpr(args)
    if args.sweep:
        fams = args.families.split(",") if args.families else None
        results = fb.sweep(fams, args.sweep_bits, n=args.keys, key_type=args.key_type, absent=args.absent,
                           repeats=args.repeats, progress=True)
    else:
        specs = []
        for item in args.impl.split(","):
            item = item.strip()
            # a family alone: its spec at --bits-per-key (register/cuckoo translate it themselves)
            specs.append(item if ":" in item else filters.family(item).spec_for_bits_per_key(args.bits_per_key))
        results = [
            fb.run_one(s, n=args.keys, key_type=args.key_type, absent=args.absent, repeats=args.repeats)
            for s in specs
        ]
    print(fb.format_table(results))
    print("(ns per key; q+ = present keys, q- = absent keys; JIT compile time measured apart)")
    from ..bench.equal_fpr import speed_ratios

    if not args.sweep and len(results) > 1 and (ratios := speed_ratios(results)):
        print(ratios)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([r.as_dict() for r in results], fh, indent=1)
    if args.plot:
        print(f"plot written to {fb.plot(results, args.plot)}")
    bad = [r for r in results if r.fpr_is_bad(filters.family(r.family).fpr_tolerance)]
    if bad and not args.allow_bad_fp_rate:
        for r in bad:
            print(
                f"filter-bench: {r.spec}: measured FP rate {100 * r.fpr:.4f}% is far above the expected "
                f"{100 * r.expected_fpr:.4f}% (pass --allow-bad-fp-rate to accept)",
                file=sys.stderr,
            )
        return 1
    return 0


def _run_equal_fpr(args: argparse.Namespace) -> int:
    from ..bench import equal_fpr as ef
    from ..bench.progress import bar

    fams = args.families.split(",") if args.families else list(ef.DEFAULT_FAMILIES)
    with bar(len(fams) * len(args.equal_fpr), "equal FPR", unit="point") as b:
        def done(p) -> None:
            b.write(f"  {p.target_fpr:g}: {p.spec} -> {p.bits_per_key:.2f} bits/key, FPR {p.fpr:.3e}", file=sys.stderr)
            b.update()

        points = ef.equal_fpr(fams, args.equal_fpr, n=args.keys, absent=args.absent, key_type=args.key_type,
                              progress=done)
    print(ef.format_table(points))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump([p.as_dict() for p in points], fh, indent=1)
    return 0

"""``bloomdb calc``: the Bloom calculator — size, k and expected FP rate per family."""

from __future__ import annotations

import argparse

from .args import positive_int, probability

NAME = "calc"
HELP = "bits, bytes, k and expected FP rate per family for N keys at FP rate P"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--keys", type=positive_int, required=True, help="number of keys N")
    p.add_argument("--fpr", type=probability, required=True, help="target false-positive rate P, e.g. 0.01")
    p.add_argument("--bytes", type=positive_int, default=None, help="fix the filter size instead: how many keys fit under P")


def run(args: argparse.Namespace) -> int:
    from ..bench.calc import calculate, format_rows

    print(format_rows(calculate(args.keys, args.fpr, args.bytes), args.keys, args.fpr, args.bytes))
    return 0

"""``bloomdb warmup``: compile every kernel a first call needs into numba's cache, now."""

from __future__ import annotations

import argparse

NAME = "warmup"
HELP = "compile bloomdb's kernels into numba's cache ahead of first use (about a minute once; then instant)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from ..warmup import STEPS
    from .args import choices_list

    p.add_argument("--only", type=choices_list(tuple(STEPS)), default=None,
                   help=f"comma-separated steps (default all: {','.join(STEPS)})")


def run(args: argparse.Namespace) -> int:
    import time

    from ..warmup import warmup

    t = time.perf_counter()
    warmup(args.only, progress=lambda step, s: print(f"  {step:<8} {s:6.1f} s", flush=True))
    print(f"warmup done in {time.perf_counter() - t:.1f} s")
    return 0

"""``bloomdb db-stress``: the store against a dict under random ops, then under SIGKILL."""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time

from .args import existing_folder, non_negative_int, positive_float, positive_int

NAME = "db-stress"
HELP = "check the LSM store against a dict under random ops and SIGKILL crashes"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ops", type=positive_int, default=100_000, help="random operations in the model check")
    p.add_argument("--kills", type=non_negative_int, default=50, help="SIGKILL cycles (0 = none)")
    p.add_argument("--kill-every", type=positive_float, default=0.25, help="longest time (s) a child writes before it is killed")
    p.add_argument("--seed", type=non_negative_int, default=0)
    p.add_argument("--dir", type=existing_folder, default=None, help="where to put the temporary stores")
    p.add_argument("--no-progress", action="store_true", help="no progress bars")


def run(args: argparse.Namespace) -> int:
    from ..bench import stress
    from ..bench.progress import bar

    root = tempfile.mkdtemp(prefix="bloomdb-stress-", dir=args.dir)
    show = not args.no_progress
    print(f"db-stress: model check of {args.ops:,} random ops, then {args.kills} SIGKILL cycles "
          f"(up to {args.kill_every} s each), seed {args.seed}, in {root}", flush=True)
    try:
        t = time.perf_counter()
        with bar(args.ops, "model check", unit="op", unit_scale=True, enabled=show) as b:
            bad = stress.model_check(f"{root}/model", args.ops, args.seed, report=b.write, tick=b.update)
        print(f"model check: {args.ops:,} ops, {bad} divergences ({time.perf_counter() - t:.1f} s)", flush=True)
        if args.kills:
            t = time.perf_counter()
            with bar(args.kills, "kill check", unit="kill", enabled=show) as b:
                k = stress.kill_check(f"{root}/kill", args.kills, args.kill_every, args.seed, report=b.write, tick=b.update)
            print(f"kill check: {args.kills} SIGKILLs, {k} problems ({time.perf_counter() - t:.1f} s)")
            bad += k
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 1 if bad else 0

"""A full scan of a one-level store with and without the one-source round path
(:func:`bloomdb.lsm._scan_kernels.all_visible`), interleaved (docs/benchmarks.md, "LSM multi_get
and scans, eighth session").

    PYTHONPATH=src python benchmarks/lsm_scan_one_level.py [N]

N keys (db-bench's) filled in random order, then ``compact_range`` (one level, as db-bench's 5M
store after its fill and overwrite); this thread's CPU per entry, min of 7 scans each way.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time

from bloomdb.bench.db_bench import make_keys, puts
from bloomdb.lsm import DB, Options
from bloomdb.lsm import _scan_kernels as SK


def _scan_ns(db) -> float:
    c = time.thread_time()
    n = sum(1 for _ in db.scan())
    return (time.thread_time() - c) / n * 1e9


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    _, shuffled, _, values = make_keys(n)
    root = tempfile.mkdtemp(prefix="lsm-scan1-")
    real = SK.all_visible
    try:
        with DB.open(os.path.join(root, "s"), Options(filter="blocked:10")) as db:
            puts(db.put, shuffled, values)
            db.compact_range()
            db.wait_for_compactions()
            best = {"one-source path": 1e9, "merge + gather (path off)": 1e9}
            for _ in range(7):
                best["one-source path"] = min(best["one-source path"], _scan_ns(db))
                SK.all_visible = lambda *a: False
                try:
                    best["merge + gather (path off)"] = min(best["merge + gather (path off)"], _scan_ns(db))
                finally:
                    SK.all_visible = real
            print(f"{n:,} keys, tables per level {db.stats()['tables_per_level']}, load {os.getloadavg()[0]:.1f}")
            for k, v in best.items():
                print(f"  scan per entry, {k:28s} {v:6.0f} ns")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

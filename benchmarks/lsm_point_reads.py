"""Where a point read's time goes (docs/benchmarks.md, "LSM point reads, seventh session").

    PYTHONPATH=src python benchmarks/lsm_point_reads.py [STORE] [N]

Builds (once) a store of N db-bench keys filled in random order, then, on a copy reopened as a
user would (the fill's log flushed, an empty memtable), times per key in this thread's CPU time
(min of 7 rounds over 200K keys; background compactions do not count):
a Python loop calling a no-op method; ``DB.get`` with its kernel replaced by a no-op compiled
kernel (the Python floor of a get); ``DB.get``; the lookup kernel over the same keys in one
batch (no Python); ``multi_get`` in batches of 1000. Missing keys and present keys.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import time

import numpy as np
from numba import njit

from bloomdb.bench.db_bench import make_keys, puts
from bloomdb.lsm import DB, Options
from bloomdb.lsm.fs import RealFS
from bloomdb.lsm.probe import _get_kernels as G, lookup as LK
from bloomdb.lsm.probe.fastcall import direct
from bloomdb.lsm.sstable.builder import pack_bytes

M = 200_000


def _options():
    return Options(filter="blocked:10", fs=RealFS())


def build(path: str, n: int, shuffled, values) -> None:
    with DB.open(path, _options()) as db:
        puts(db.put, shuffled, values)
        db.wait_for_compactions()
        for k in shuffled:  # readrandom: its seek compactions, as in db-bench
            db.get(k)
        db.wait_for_compactions()


@njit(nogil=True)
def _nothing(d, key):
    return None


class _NoOp:
    def get(self, key, default=None, snapshot=None):
        return None


def _per_key(fn, keys) -> float:
    c = time.thread_time()
    for k in keys:
        fn(k)
    return (time.thread_time() - c) / len(keys) * 1e9


def measure(db, keys) -> dict[str, float]:
    db.get(keys[0])
    ver = db._state[2]  # held while ``d`` is used: the array points into the version's tables
    d = ver.probe()[0]
    real, noop = LK.newest, direct(_nothing, (d, keys[0]))
    data, offs = pack_bytes(keys)
    outs = [np.empty(len(keys), np.int64) for _ in range(4)]
    batches = [keys[s : s + 1000] for s in range(0, len(keys), 1000)]

    def batch(_):
        c = time.thread_time()
        G.lookup_many(d, data, offs, G.NEWEST, *outs)
        return (time.thread_time() - c) / len(keys) * 1e9

    def mget(_):
        c = time.thread_time()
        for b in batches:
            db.multi_get(b)
        return (time.thread_time() - c) / len(keys) * 1e9

    res: dict[str, float] = {}
    for _ in range(7):
        rows = {"Python loop + no-op method": lambda: _per_key(_NoOp().get, keys),
                "lookup kernel, one batch (no Python)": lambda: batch(None),
                "multi_get, batches of 1000": lambda: mget(None),
                "db.get": lambda: _per_key(db.get, keys)}
        for name, f in rows.items():
            res[name] = min(res.get(name, 1e9), f())
        LK.newest = noop
        try:
            res["db.get, kernel replaced by a no-op"] = min(res.get("db.get, kernel replaced by a no-op", 1e9),
                                                           _per_key(db.get, keys))
        finally:
            LK.newest = real
    return res


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/bloomdb-point-reads"
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
    keys, shuffled, missing, values = make_keys(n)
    if not os.path.exists(path):
        build(path, n, shuffled, values)
    work = path + ".run"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(path, work)
    gc.disable()
    try:
        with DB.open(work, _options()) as db:
            sets = (("missing", missing[:M]), ("present", shuffled[:M]))
            for _, ks in sets + sets:  # filters read, blocks checked, seek compactions done: the warm state
                for k in ks:
                    db.get(k)
                db.wait_for_compactions()
            for label, ks in sets:
                st = db.stats()
                print(f"{label} keys, tables per level {st['tables_per_level']}, load {os.getloadavg()[0]:.1f}")
                for name, ns in measure(db, ks).items():
                    print(f"  {name:40s} {ns:7.0f} ns")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

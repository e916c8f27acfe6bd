"""Where ``multi_get`` of missing keys and a full scan spend their time (docs/benchmarks.md, "LSM
multi_get and scans, eighth session").

    PYTHONPATH=src python benchmarks/lsm_multi_get.py [N] [--spy]

Builds a store as db-bench leaves it before ``mgetmissing`` (N keys filled in random order, then
overwritten in random order, background compactions waited for, one pass of missing gets: no
reopen, so the memtable holds the overwrite's tail), then times per key in this thread's CPU
time (min of 7 rounds over ``M`` keys in batches of 1000): ``multi_get``; its parts
(:func:`bloomdb.lsm.keylist.key_list`, the memtable pass, the batch kernel and the one-key-at-a-time kernel);
and a full ``scan``. ``--spy``: loop ``multi_get`` for 20 s (attach ``py-spy`` to the pid printed).
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from bloomdb.bench.db_bench import BATCH, make_keys, puts
from bloomdb.lsm import DB, Options
from bloomdb.lsm.keylist import key_list
from bloomdb.lsm.probe import _get_kernels as G
from bloomdb.lsm.probe._batch_kernels import lookup_batch

M = 200_000


def _ns(fn, batches) -> float:
    c = time.thread_time()
    for b in batches:
        fn(b)
    return (time.thread_time() - c) / sum(map(len, batches)) * 1e9


def _kernel(db, batch: bool):
    """key_list, the offsets and one kernel call per batch: ``lookup_batch`` (overlapped filter
    loads) or, for comparison, ``lookup_many`` (one key's whole lookup after another)."""
    ver = db._state[2]  # held with its directory: the array points into the version's tables
    d = ver.probe()[0]
    out = np.empty((4, BATCH), np.int64)

    def run(b, _version=ver):
        _, joined = key_list(b)
        offs = np.zeros(len(b) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, b), np.int64, len(b)), out=offs[1:])
        data = np.frombuffer(joined, np.uint8)
        if batch:
            lookup_batch(d, data, offs, G.NEWEST, out)
        else:
            G.lookup_many(d, data, offs, G.NEWEST, *out)

    return run


def measure(db, missing) -> dict[str, float]:
    batches = [missing[s : s + BATCH] for s in range(0, len(missing), BATCH)]
    mem = db._state[0].latest
    rows = {
        "multi_get": db.multi_get,
        "  key_list": key_list,
        "  memtable pass (map dict.get)": lambda b: list(map(mem.get, b)),
        "  key_list + offsets + lookup_batch kernel": _kernel(db, True),
        "  key_list + offsets + lookup_many kernel": _kernel(db, False),
    }
    res: dict[str, float] = {}
    for _ in range(7):
        for name, f in rows.items():
            res[name] = min(res.get(name, 1e9), _ns(f, batches))
        c = time.thread_time()
        n = sum(1 for _ in db.scan())
        res["scan, per entry"] = min(res.get("scan, per entry", 1e9), (time.thread_time() - c) / n * 1e9)
    return res


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 1_000_000
    keys, shuffled, missing, values = make_keys(n)
    root = tempfile.mkdtemp(prefix="lsm-mget-")
    try:
        with DB.open(os.path.join(root, "s"), Options(filter="blocked:10")) as db:
            puts(db.put, shuffled, values)
            db.wait_for_compactions()
            puts(db.put, shuffled, values)
            db.wait_for_compactions()
            for k in missing:
                db.get(k)
            db.wait_for_compactions()
            gc.disable()
            if "--spy" in sys.argv:
                print("pid", os.getpid(), flush=True)
                batches = [missing[s : s + BATCH] for s in range(0, n, BATCH)]
                t = time.time()
                while time.time() - t < 20:
                    for b in batches:
                        db.multi_get(b)
                return
            st = db.stats()
            print(f"{n:,} keys, tables per level {st['tables_per_level']}, memtable {len(db._state[0].latest):,} "
                  f"keys, load {os.getloadavg()[0]:.1f}")
            for name, ns in measure(db, missing[:M]).items():
                print(f"  {name:40s} {ns:7.0f} ns")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()

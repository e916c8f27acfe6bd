"""The LSM store's demo section: what the filters buy a read for a missing key."""

from __future__ import annotations

import shutil
import tempfile
import time


def store_section(n: int = 100_000, reads: int = 50_000) -> dict:
    """Fill two stores (``blocked:10`` and no filter at all: no table filters and no store filter,
    :mod:`bloomdb.lsm.store_filter`) with ``n`` keys into >= 20 tables, read ``reads`` missing keys
    from each, print ops/s and the filter statistics; returns them."""
    from ..lsm import DB, Options
    from ..lsm.fs import RealFS

    out = {}
    root = tempfile.mkdtemp(prefix="bloomdb-demo-lsm-")
    value = b"v" * 100

    def measure(spec, path, keys, missing, small):
        opts = Options(filter=spec, store_filter=spec is not None, memtable_bytes=small, table_bytes=small,
                       level1_bytes=4 * small, fs=RealFS(fsync=False))
        with DB.open(path, opts) as db:
            t = time.perf_counter()
            for k in keys:
                db.put(k, value)
            fill = len(keys) / (time.perf_counter() - t)
            db.flush()
            db.wait_for_compactions()
            get = db.get
            t = time.perf_counter()
            for k in missing:
                get(k)
            rm = len(missing) / (time.perf_counter() - t)
            t = time.perf_counter()
            db.multi_get(missing)
            mg = len(missing) / (time.perf_counter() - t)
            return dict(fill=fill, readmissing=rm, multi_get=mg, stats=db.stats())

    try:
        # Warm-up: a small store of each kind runs every code path once (numba compiles, or loads
        # from its cache, the store's kernels) so the timed runs below measure the store, not JIT.
        warm = [b"%016d" % (i * 7919 % 20_000) for i in range(20_000)]
        for spec in ("blocked:10", None):
            measure(spec, f"{root}/warm-{spec}", warm, [k + b"." for k in warm[:500]], 64 << 10)
        keys = [b"%016d" % (i * 7919 % n) for i in range(n)]
        missing = [k + b"." for k in keys[:reads]]
        for spec in ("blocked:10", None):
            out[spec] = r = measure(spec, f"{root}/{spec}", keys, missing, 256 << 10)
            st = r["stats"]
            print(f"   filter={spec or 'none':<11} fill {r['fill']:>9,.0f} puts/s | read missing {r['readmissing']:>9,.0f} gets/s | "
                  f"multi_get missing {r['multi_get']:>11,.0f} keys/s | tables {sum(st['tables_per_level'])} "
                  f"{st['tables_per_level'][:4]} | data blocks read {st['data_blocks_read']:,}")
        s = out["blocked:10"]["stats"]
        print(f"   with blocked:10: {s['filter_checks']:,} filter checks, {s['filter_useful']:,} said 'not here' "
              f"({100 * s['filter_useful_ratio']:.1f}%), {s['filter_bytes']:,} filter bytes in all tables, "
              f"{s['store_filter_bytes']:,} in the store filter (filter=none keeps no store filter either)")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return out


DEMO_TITLE = "The LSM store (bloomdb.lsm): 100,000 keys, 100-byte values, missing-key reads with and without filters"


def demo_hook() -> None:
    """The demo's store section (its numbered title is printed by the demo driver: ``DEMO_TITLE``)."""
    store_section()

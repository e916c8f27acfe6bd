"""Memory bound of the LSM store: RSS of random reads with ``Options(cache_bytes=N)`` vs the
default (memory-mapped) route, on one store (issue 15).

    PYTHONPATH=src python benchmarks/lsm_cache_rss.py --keys 5000000 --reads 200000 \\
        --cache-mib 16 --folder /tmp/lsmcache-bench

Builds the store once (``--keys`` 16-byte keys in order, 100-byte random values, batches of
1000; kept in ``--folder`` for later runs), then measures each route in a fresh child process:
VmRSS after importing bloomdb, compiling the kernels on a tiny store and making the list of keys
to read (the baseline), after
opening the store, and after the random reads of existing keys; the peak (VmHWM) minus the
baseline; the cache's own bytes and peak; reads per second; then (after the RSS figures) the
time of a read of a missing key and per key of ``multi_get`` of 1000 missing keys. Prints one
table.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import subprocess
import sys
import tempfile
import time


def _status(field: str) -> int:
    """``field`` of /proc/self/status in bytes (VmRSS, VmHWM)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def _key(i: int) -> bytes:
    return b"%016d" % i


def build(folder: str, n: int) -> None:
    from bloomdb.lsm import DB, Options, WriteBatch
    from bloomdb.lsm.fs import RealFS

    t = time.perf_counter()
    db = DB.open(folder, Options(fs=RealFS(fsync=False)))
    for a in range(0, n, 1000):
        blob = os.urandom(100 * 1000)
        b = WriteBatch()
        for j, i in enumerate(range(a, min(n, a + 1000))):
            b.put(_key(i), blob[100 * j : 100 * j + 100])
        db.write(b)
    db.flush()
    db.wait_for_compactions()
    st = db.stats()
    db.close()
    print(f"built {n} keys in {time.perf_counter() - t:.0f} s: tables per level {st['tables_per_level']}, "
          f"{sum(st['bytes_per_level']) / 2**20:.0f} MiB", file=sys.stderr)


def measure(folder: str, n: int, reads: int, cache_bytes: int | None) -> dict:
    """One route in this process (a fresh child): RSS before and after, cache bytes."""
    from bloomdb.lsm import DB, Options

    opts = Options(cache_bytes=cache_bytes, background_compaction=False)
    with tempfile.TemporaryDirectory() as tmp:  # compile every kernel of the route first
        w = DB.open(tmp, Options(cache_bytes=cache_bytes, background_compaction=False,
                                 pin_top_level_filters=False))  # the filters' Python path too
        for i in range(3000):
            w.put(_key(i), b"v" * 100)
        w.flush()
        w.get(_key(5))
        w.get(b"missing")
        w.multi_get([_key(1), _key(2)])
        w.multi_get([_key(1) + b"x", _key(2) + b"x", _key(3)])
        w.close()
    del w
    rng = random.Random(7)
    keys = [_key(rng.randrange(n)) for _ in range(reads)]  # before the baseline: not the store's
    missing = [k + b"x" for k in keys[: reads // 4]]
    gc.collect()
    base = _status("VmRSS")
    db = DB.open(folder, opts)
    opened = _status("VmRSS")
    t = time.perf_counter()
    get = db.get
    for k in keys:
        if get(k) is None:
            raise AssertionError(f"{k!r} missing")
    dt = time.perf_counter() - t
    after = _status("VmRSS")
    t = time.perf_counter()
    for k in missing:
        get(k)
    miss_us = (time.perf_counter() - t) / len(missing) * 1e6
    t = time.perf_counter()
    for i in range(0, len(missing), 1000):
        db.multi_get(missing[i : i + 1000])
    mget_us = (time.perf_counter() - t) / len(missing) * 1e6
    st = db.stats()
    out = {"route": "default (mmap)" if cache_bytes is None else f"cache_bytes={cache_bytes >> 20} MiB",
           "base_mib": base / 2**20, "open_mib": (opened - base) / 2**20, "after_mib": (after - base) / 2**20,
           "peak_mib": (_status("VmHWM") - base) / 2**20, "kreads_s": reads / dt / 1000,
           "missing_us": miss_us, "multi_get_us": mget_us,
           "filter_index_mib": (st["filter_memory_bytes"] + st["index_memory_bytes"]) / 2**20,
           "tables": sum(st["tables_per_level"])}
    bc = st.get("block_cache")
    if bc:
        out.update(cache_mib=bc["usage"] / 2**20, cache_peak_mib=bc["peak_usage"] / 2**20,
                   hit_rate={k: round(bc[k]["hits"] / max(1, bc[k]["hits"] + bc[k]["misses"]), 3)
                             for k in ("data", "index", "filter")})
    db.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--keys", type=int, default=5_000_000)
    ap.add_argument("--reads", type=int, default=200_000)
    ap.add_argument("--cache-mib", type=int, default=16)
    ap.add_argument("--folder", default="/tmp/lsmcache-bench")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child is not None:
        cache = None if a.child == "none" else int(a.child)
        print(json.dumps(measure(a.folder, a.keys, a.reads, cache)))
        return
    if not os.path.exists(os.path.join(a.folder, "MANIFEST")):
        build(a.folder, a.keys)
    rows = []
    for child in ("none", str(a.cache_mib << 20)):
        cmd = [sys.executable, __file__, "--keys", str(a.keys), "--reads", str(a.reads), "--folder", a.folder,
               "--child", child]
        rows.append(json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout))
    print(f"{a.keys} keys (16 B keys, 100 B values), {a.reads} random reads of existing keys, "
          f"{rows[0]['tables']} tables; RSS in MiB above the baseline (interpreter, numpy, numba, "
          f"compiled kernels: {rows[0]['base_mib']:.0f} MiB)")
    print(f"{'route':>20} {'open':>7} {'after':>7} {'peak':>7} {'cache':>7} {'cpeak':>7} {'kreads/s':>9} "
          f"{'miss us':>8} {'mget us':>8}  hit rate")
    for r in rows:
        print(f"{r['route']:>20} {r['open_mib']:7.1f} {r['after_mib']:7.1f} {r['peak_mib']:7.1f} "
              f"{r.get('cache_mib', 0):7.1f} {r.get('cache_peak_mib', 0):7.1f} {r['kreads_s']:9.1f} "
              f"{r['missing_us']:8.2f} {r['multi_get_us']:8.2f}  "
              f"{r.get('hit_rate', '')}")


if __name__ == "__main__":
    main()

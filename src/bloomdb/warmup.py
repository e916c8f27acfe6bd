"""Compile every kernel a first call is likely to need, ahead of that call (``bloomdb warmup``).

bloomdb's kernels are numba functions compiled on first use and kept in numba's on-disk cache
(``__pycache__`` beside each kernel module, or ``NUMBA_CACHE_DIR``). The cache is keyed by the
source file's contents, the numba version and the CPU, so it is never used stale: an upgrade that
changes a kernel file recompiles that file's kernels. What it cannot do by itself is keep the first
call of a new install fast: that call pays for compiling. :func:`warmup` runs a small version of
every workload the README shows — each filter family on integer, string and bytes keys, the LSM
store through writes, flushes, compaction, reads, scans and a reopen, Parquet page reads of the
encodings and compressions writers use, Bloom-filter pruning, the column store and the joins — so
the cache holds those kernels afterwards. ``pip install`` of bloomdb from source runs it at build
time (``setup.py``), ``make demo`` runs it, and Docker images or CI can run ``bloomdb warmup``.

Cost: about a minute on an empty cache (2 cores), about a second on a full one. Imports every
engine: nothing in the package imports this module.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from typing import Callable

import numpy as np


def _filters(tmp: str) -> None:
    import pyarrow as pa

    from . import filters

    filters.warmup()
    ints = np.arange(2000, dtype=np.uint64)
    strs = [f"user-{i}" for i in range(2000)]
    for info in filters.available():
        spec = filters.family(info.name).example_spec or info.name
        for keys in (ints, ints.astype(np.int64), strs, pa.array(strs), [s.encode() for s in strs]):
            if info.static:
                f = filters.build(spec, keys)
            else:
                f = filters.create(spec, capacity=4000)
                f.add_many(keys)
                f.add(strs[0])
                f.add(7)
            f.might_contain_many(keys)
            f.might_contain(strs[1])
            f.might_contain(5)
            f.estimated_count()  # a popcount pass (the LSM's store filter checks its fill with it)
        g = filters.from_bytes(f.to_bytes())
        path = os.path.join(tmp, f"{info.name}.blm")
        g.save(path)
        filters.open(path, mmap=True).might_contain_many(strs)
        if not info.static:
            f.union(filters.create(spec, capacity=4000))


def _lsm(tmp: str) -> None:
    from .bench import db_bench
    from .lsm import DB, Options, WriteBatch

    db_bench.warmup()  # writes, flushes, compaction, point reads, multi_get, scans, snapshots
    path = os.path.join(tmp, "store")
    for spec in ("blocked:10", None):
        o = Options(filter=spec, memtable_bytes=32 << 10)
        with DB.open(path, o) as db:
            for i in range(3000):
                db.put(b"k%06d" % i, b"v" * 20)
            db.write(WriteBatch().put("alice", b"1").delete(b"k000001"))
        with DB.open(path, o) as db:  # recovery: manifest, WAL replay, table opens
            db.get(b"k000002")
            db.get(b"nobody")
            db.multi_get([b"k000003", b"nobody"])
            list(db.scan(b"k0001", b"k0002"))
        shutil.rmtree(path)


def _parquet(tmp: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from . import parquet

    n = 20_000
    rng = np.random.default_rng(0)
    cols = {
        "i64": np.arange(n, dtype=np.int64) * 3,
        "i32": (np.arange(n) % 1000).astype(np.int32),
        "f64": rng.random(n),
        "f32": rng.random(n).astype(np.float32),
        "opt": pa.array(np.arange(n, dtype=np.int64), mask=np.arange(n) % 7 == 0),
    }
    table = pa.table(cols)
    positions = np.array([0, 5, n // 4, n // 2 - 1])  # row group 0 holds rows [0, n/2)
    variants = [
        dict(compression="snappy"),
        dict(compression="zstd", data_page_version="2.0"),
        dict(compression="none", use_dictionary=False),
        dict(compression="snappy", use_dictionary=False, use_byte_stream_split=["f64", "f32"]),
    ]
    for i, kw in enumerate(variants):
        path = os.path.join(tmp, f"w{i}.parquet")
        pq.write_table(table, path, row_group_size=n // 2, bloom_filter_options={"i64": {"ndv": n, "fpp": 0.01}}, **kw)
        pc = parquet.ParquetColumns(path)
        for name in cols:
            pc.read(row_group=0, column=name, positions=positions)
        parquet.row_groups_that_may_contain(path, "i64", np.array([3, 4], dtype=np.int64))


def _join(tmp: str) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from . import columnar
    from .join import hash_join

    n = 50_000
    probe = pa.table({"k": np.arange(n, dtype=np.int64), "s": pa.array([f"s{i % 5000}" for i in range(n)]),
                      "v": np.ones(n)})
    build = probe.take(np.arange(0, n, 7)).select(["k", "s"])
    folder = os.path.join(tmp, "facts")
    columnar.write(folder, probe)
    pq.write_table(probe, os.path.join(tmp, "facts.parquet"), row_group_size=n // 4)
    for source in (folder, os.path.join(tmp, "facts.parquet"), probe):
        for key in ("k", "s"):
            hash_join(source, build, on=key, aggregates=["sum(v)", "count(*)"])
            hash_join(source, build, on=key, how="semi", columns=["k", "v"])
            hash_join(source, build, on=key, how="anti", columns=["k"])
            hash_join(source, build, on=key, columns=["k", "v"])
        # rows with a fixed-width build column: a left join (unique keys) and a 2x fan-out
        wide = build.append_column("w", pa.array(np.arange(build.num_rows, dtype=np.int64)))
        hash_join(source, wide, on="k", how="left", columns=["k", "v", "w"])
        hash_join(source, pa.concat_tables([wide, wide]), on="k", columns=["k", "v", "w"])


STEPS: dict[str, Callable[[str], None]] = {
    "filters": _filters,
    "lsm": _lsm,
    "parquet": _parquet,
    "join": _join,
}


def warmup(steps: list[str] | None = None, progress: Callable[[str, float], None] | None = None) -> dict[str, float]:
    """Run each step's small workload (all by default) so its kernels are compiled into numba's
    cache; returns seconds per step. ``progress(step, seconds)`` is called after each one."""
    out = {}
    with tempfile.TemporaryDirectory(prefix="bloomdb-warmup-") as tmp:
        for name in steps or list(STEPS):
            t = time.perf_counter()
            sub = os.path.join(tmp, name)
            os.makedirs(sub)
            STEPS[name](sub)
            out[name] = time.perf_counter() - t
            if progress:
                progress(name, out[name])
    return out

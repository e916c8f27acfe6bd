"""The filtered join on a Dask cluster against ``dask.dataframe.merge`` on the same cluster and
DuckDB on one machine (issue 17).

Data: the join benchmark's workload (:mod:`.join_bench`: an int64 key and 8 payload columns; a
build side of ``rows / 100`` distinct keys of which a fraction f is in the probe's key universe, so
about f of the probe rows match) written as ``files`` Parquet files of ``rows / files`` rows. The
query: the sum of every payload column and ``count(*)`` over the inner join.

Engines, each timed best of ``repeats`` after a warm-up on the same cluster:

* ``bloomdb.dask broadcast``: :func:`bloomdb.dask.filtered_join` on the Parquet folder (one task
  per file; the build table shipped once per worker; only partial aggregates leave a worker);
* ``bloomdb.dask shuffle``: the same with ``broadcast_rows=0`` (filter, then a co-partitioned
  shuffle of the surviving rows, ``shuffle_method="tasks"`` so the workers count its transfers);
* ``dd.merge``: what a Dask user writes — ``dd.read_parquet`` both sides, ``dd.merge``, sums. The
  build side has ``build_partitions`` partitions so Dask hash-shuffles both sides (``shuffle_method
  ="tasks"``, whose transfers the workers count);
* ``duckdb``: one process over the same files (``read_parquet``), for scale.

Bytes moved: the workers' ``transfer_outgoing_bytes_total`` growth during the run (worker to
worker and worker to client), plus what the client scattered (the broadcast build table).
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable

import pyarrow.parquet as pq

from .join_bench import PAYLOAD, QUERY_AGGS, _agree, make_build, make_probe


@dataclass
class DaskRun:
    engine: str
    fraction: float
    seconds: float
    bytes_moved: int
    result: dict
    note: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def write_dataset(folder: str, rows: int, files: int, universe: int) -> None:
    """``files`` Parquet files of the join benchmark's probe rows (one random stream per file)."""
    os.makedirs(folder, exist_ok=True)
    per = -(-rows // files)
    for i in range(files):
        n = min(per, rows - i * per)
        if n > 0:
            pq.write_table(make_probe(n, universe, seed=1000 + i), os.path.join(folder, f"part-{i:04d}.parquet"),
                           row_group_size=65536)


def _outgoing(client) -> int:
    return sum(client.run(lambda dask_worker: dask_worker.transfer_outgoing_bytes_total).values())


def _timed(client, fn: Callable[[], Any], repeats: int) -> tuple[float, int, Any]:
    fn()  # warm-up: JIT on every worker, file cache
    best, moved, out = float("inf"), 0, None
    for _ in range(repeats):
        before = _outgoing(client)
        t = time.perf_counter()
        out = fn()
        sec = time.perf_counter() - t
        if sec < best:
            best, moved = sec, _outgoing(client) - before
    return best, moved, out


def run(rows: int = 20_000_000, files: int = 20, fractions=(0.01, 0.1, 1.0), workers: int = 2,
        scheduler: str | None = None, repeats: int = 2, build_partitions: int = 4, workdir: str | None = None,
        engines=("broadcast", "shuffle", "dd.merge", "duckdb"), log: Callable[[str], None] = print) -> list[DaskRun]:
    """Write the data, start a LocalCluster of ``workers`` processes (or connect to ``scheduler``),
    run every engine at every match fraction; results are cross-checked against the first engine."""
    import dask.dataframe as dd
    import distributed

    from .. import dask as bd

    build_rows = max(1, rows // 100)
    tmp = tempfile.TemporaryDirectory(prefix="bloomdb-dask-bench-") if workdir is None else None
    workdir = tmp.name if tmp is not None else workdir
    cluster = None
    runs: list[DaskRun] = []
    try:
        t0 = time.perf_counter()
        data = os.path.join(workdir, "probe")
        write_dataset(data, rows, files, build_rows)
        log(f"data: {rows:,} probe rows x 9 columns in {files} Parquet files, {build_rows:,} build rows; "
            f"written in {time.perf_counter() - t0:.1f} s")
        if scheduler is None:
            cluster = distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                               dashboard_address=":0")
        client = distributed.Client(scheduler or cluster)
        nworkers = len(client.scheduler_info()["workers"])
        log(f"cluster: {nworkers} workers ({scheduler or 'LocalCluster, 1 thread each'})")
        for frac in fractions:
            bpath = os.path.join(workdir, f"build-{frac}.parquet")
            build = make_build(build_rows, frac)
            pq.write_table(build, bpath)
            ref: dict | None = None

            def record(engine: str, sec: float, moved: int, result: dict, note: str = "") -> None:
                nonlocal ref
                if ref is None:
                    ref = result
                elif not _agree(result, ref):
                    raise AssertionError(f"{engine} disagrees at {frac:.0%}: {result} vs {ref}")
                runs.append(DaskRun(engine, frac, sec, moved, result, note))
                log(f"  {frac:>5.0%}  {engine:<24} {sec * 1e3:9.1f} ms  {moved / 1e6:10.2f} MB moved  {note}")

            bdd = dd.read_parquet(bpath)
            for plan in ("broadcast", "shuffle"):
                if plan not in engines:
                    continue
                kw = dict(on="k", aggregates=QUERY_AGGS, broadcast_rows=10**12 if plan == "broadcast" else 0,
                          shuffle_method="tasks")
                sec, moved, res = _timed(client, lambda: bd.filtered_join(data, bdd, **kw), repeats)
                _, st = bd.filtered_join(data, bdd, explain=True, **kw)  # untimed: what the filter rejected
                scattered = st.build_bytes * nworkers if plan == "broadcast" else 0
                record(f"bloomdb.dask {plan}", sec, moved + scattered, res,
                       f"rejected {st.total('rows_rejected') / max(1, st.total('rows_scanned')):.0%} of probe rows")
            if "dd.merge" in engines:
                def merge() -> dict:
                    probe = dd.read_parquet(data)
                    b = dd.read_parquet(bpath).repartition(npartitions=build_partitions)
                    j = dd.merge(probe, b[["k"]], on="k", how="inner", shuffle_method="tasks")
                    sums = [j[c].sum() for c in PAYLOAD]
                    out = client.compute(sums + [j.shape[0]], sync=True)
                    return dict(zip(QUERY_AGGS, [x.item() if hasattr(x, "item") else x for x in out]))

                sec, moved, res = _timed(client, merge, repeats)
                record("dd.merge (hash shuffle)", sec, moved, res)
            if "duckdb" in engines:
                import duckdb

                con = duckdb.connect()
                con.execute(f"SET threads = {nworkers}")
                sql = (f"SELECT {', '.join(f'sum(p.{c})' for c in PAYLOAD)}, count(*) FROM "
                       f"read_parquet('{data}/*.parquet') p JOIN read_parquet('{bpath}') b ON p.k = b.k")
                t_best = float("inf")
                row = con.execute(sql).fetchall()[0]
                for _ in range(repeats):
                    t = time.perf_counter()
                    row = con.execute(sql).fetchall()[0]
                    t_best = min(t_best, time.perf_counter() - t)
                record("duckdb (one process)", t_best, 0, dict(zip(QUERY_AGGS, row)), f"{nworkers} threads")
                con.close()
        client.close()
    finally:
        if cluster is not None:
            cluster.close()
        if tmp is not None:
            tmp.cleanup()
    return runs


def format_table(runs: list[DaskRun], baseline: str = "dd.merge (hash shuffle)") -> str:
    """One line per (fraction, engine): time, speed-up over ``baseline``, bytes moved and how many
    times fewer than the baseline."""
    lines = [f"{'match':>6}  {'engine':<26}{'ms':>10}{'x faster':>10}{'MB moved':>11}{'x fewer':>9}"]
    for frac in sorted({r.fraction for r in runs}):
        group = [r for r in runs if r.fraction == frac]
        base = next((r for r in group if r.engine == baseline), None)
        for r in group:
            speed = f"{base.seconds / r.seconds:9.2f}x" if base else ""
            fewer = f"{base.bytes_moved / r.bytes_moved:8.1f}x" if base and r.bytes_moved else ""
            lines.append(f"{frac:>6.0%}  {r.engine:<26}{r.seconds * 1e3:10.1f}{speed:>10}{r.bytes_moved / 1e6:11.2f}{fewer:>9}")
    return "\n".join(lines)

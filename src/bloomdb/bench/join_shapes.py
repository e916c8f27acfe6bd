"""More join shapes for ``bloomdb join-bench --shapes`` (issue 16), bloomdb against DuckDB and
Polars in the same run, answers cross-checked:

* ``m2m`` — many-to-many: probe keys from a universe of ``rows / 100`` values; the build side
  holds 10% of them, each 10 times, so 10% of probe rows match with a 10x fan-out (``rows``
  result rows). Query: ``count(*)``, sums of two probe columns and of a build column.
* ``m2m_rows`` — the same join returning its rows (probe key, one probe and one build column) as
  an Arrow table (all engines materialise ``rows`` rows).
* ``multikey`` — a two-column key (int64, int32) at 10% match; the sums of the payload.
* ``groupby`` — the star-schema query: the fact (probe) joined to a dimension whose 50% of keys
  match, ``sum`` / ``count(*)`` grouped by a 20-value string attribute of the dimension.
* ``left_rows`` — a left join at 10% match returning its rows (probe key, a probe and a build
  column: ``rows`` rows, 90% with a null build column).
* ``dataset`` — the payload-sum query at 10% match over the probe written as 10 Parquet files
  (bloomdb: the folder; DuckDB: ``read_parquet`` of the glob; Polars: ``scan_parquet``).

Each engine runs in this process on ``threads`` threads, best of ``repeats`` after a warm-up.
bloomdb reads its columnar table (Parquet for ``dataset``), DuckDB its native table, Polars memory.
"""

from __future__ import annotations

import math
import os
import tempfile
from typing import Any, Callable

import numpy as np
import pyarrow as pa

from .join_bench import PAYLOAD, Run, _best, _scramble, make_probe

SHAPES = ("m2m", "m2m_rows", "multikey", "groupby", "left_rows", "dataset")


def _m2m_build(universe: int, seed: int = 11) -> pa.Table:
    rng = np.random.default_rng(seed)
    ids = rng.permutation(universe)[: max(1, universe // 10)]
    keys = np.repeat(_scramble(ids), 10)
    return pa.table({"k": keys, "payload": np.arange(keys.shape[0], dtype=np.int64)})


def _dim(universe: int, seed: int = 13) -> pa.Table:
    """Half the universe's keys plus as many from outside it, with a 20-value region attribute."""
    rng = np.random.default_rng(seed)
    ids = np.concatenate([rng.permutation(universe)[: universe // 2], universe + np.arange(universe // 2)])
    return pa.table({"k": _scramble(ids), "region": pa.array([f"region {i % 20:02d}" for i in range(ids.shape[0])])})


def _canon(rows: list[tuple]) -> list[tuple]:
    return sorted((tuple(round(x, 6) if isinstance(x, float) else x for x in r) for r in rows), key=repr)


def _sorted_table(t: Any) -> pa.Table:
    """A row result with positional column names, sorted by every column (order-free comparison)."""
    if not isinstance(t, pa.Table):
        t = t.to_arrow() if hasattr(t, "to_arrow") else t.read_all()
    t = t.rename_columns([f"c{i}" for i in range(t.num_columns)])
    return t.sort_by([(c, "ascending") for c in t.column_names])


def _agree(a: Any, b: Any) -> bool:
    if not isinstance(a, list):
        x, y = _sorted_table(a), _sorted_table(b)
        return x.num_rows == y.num_rows and all(u.equals(v.cast(u.type)) for u, v in zip(x.columns, y.columns))
    if len(a) != len(b):
        return False
    for x, y in zip(_canon(a), _canon(b)):
        for u, v in zip(x, y):
            if isinstance(u, float) or isinstance(v, float):
                if not math.isclose(float(u), float(v), rel_tol=1e-9, abs_tol=1e-6):
                    return False
            elif u != v:
                return False
    return True


def run(rows: int = 20_000_000, shapes=SHAPES, threads: int = 2, repeats: int = 3, compare=("duckdb", "polars"),
        workdir: str | None = None, log: Callable[[str], None] = print, cpu: bool = False) -> list[Run]:
    """Run every shape of ``shapes``; each Run's ``fraction`` field holds the shape's index.
    ``cpu``: time CPU seconds of the process (``time.process_time``, fair with ``threads=1``) instead
    of wall time. Raises InvalidArgument for a shape not in :data:`SHAPES`."""
    import time
    from .. import columnar
    from ..errors import InvalidArgument
    from ..join import hash_join

    clock = time.process_time if cpu else time.perf_counter
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        raise InvalidArgument(f"unknown join shape {', '.join(unknown)} (known: {', '.join(SHAPES)})")
    tmp = tempfile.TemporaryDirectory(prefix="bloomdb-join-shapes-") if workdir is None else None
    workdir = tmp.name if tmp is not None else workdir
    os.makedirs(workdir, exist_ok=True)
    universe = max(10, rows // 100)
    probe = make_probe(rows, universe)
    probe = probe.append_column("a", pa.array(probe["k"].to_numpy() >> 10))
    probe = probe.append_column("b", pa.array((probe["k"].to_numpy() & 1023).astype(np.int32)))
    cpath = os.path.join(workdir, "probe.bdc")
    columnar.write(cpath, probe)
    duck = pl = pdf = None
    if "duckdb" in compare:
        import duckdb

        duck = duckdb.connect()
        duck.execute(f"SET threads = {threads}")
        duck.register("probe_arrow", probe)
        duck.execute("CREATE TABLE p AS SELECT * FROM probe_arrow")
        duck.unregister("probe_arrow")
    if "polars" in compare:
        os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
        import polars as pl

        pdf = pl.from_arrow(probe)
    runs: list[Run] = []
    try:
        for si, shape in enumerate(shapes):
            ref: list[tuple] | None = None

            def record(engine: str, seconds: float, result: list[tuple], note: str = "") -> None:
                nonlocal ref
                if ref is None:
                    ref = result
                elif not _agree(result, ref):
                    raise AssertionError(f"{engine} disagrees on {shape}: {_canon(result)[:3]} vs {_canon(ref)[:3]}")
                n = len(result) if isinstance(result, list) else result.shape[0] if hasattr(result, "shape") else 0
                runs.append(Run(f"{shape}: {engine}", si, seconds, {"rows": n}, {}, note))
                log(f"  {shape:<9} {engine:<22} {seconds * 1e3:9.1f} ms  {note}")

            kw: dict[str, Any] = dict(threads=threads)
            if shape in ("m2m", "m2m_rows"):
                build = _m2m_build(universe)
                if shape == "m2m":
                    aggs = ["count(*)", "sum(i0)", "sum(f0)", "sum(payload)"]
                    sec, out = _best(lambda: hash_join(cpath, build, on="k", aggregates=aggs, **kw), repeats, clock)
                    record("bloomdb columnar", sec, [tuple(out.values())])
                    sql = "SELECT count(*), sum(p.i0), sum(p.f0), sum(b.payload) FROM p JOIN b ON p.k = b.k"
                    plq = lambda pb, bb: pb.lazy().join(bb.lazy(), on="k").select(  # noqa: E731
                        [pl.len(), pl.col("i0").sum(), pl.col("f0").sum(), pl.col("payload").sum()])
                else:
                    sec, out = _best(lambda: hash_join(cpath, build, on="k", columns=["k", "i0", "payload"], **kw),
                                     repeats, clock)
                    record("bloomdb columnar", sec, out, f"{out.num_rows:,} rows")
                    sql = "SELECT p.k, p.i0, b.payload FROM p JOIN b ON p.k = b.k"
                    plq = lambda pb, bb: pb.lazy().select(["k", "i0"]).join(bb.lazy(), on="k")  # noqa: E731
            elif shape == "multikey":
                keys = np.unique(_m2m_build(universe, seed=17)["k"].to_numpy())
                build = pa.table({"a": pa.array(keys >> 10), "b": pa.array((keys & 1023).astype(np.int32)),
                                  "payload": np.arange(keys.shape[0], dtype=np.int64)})
                aggs = [f"sum({c})" for c in PAYLOAD[:2]] + ["count(*)"]
                sec, out = _best(lambda: hash_join(cpath, build, on=["a", "b"], aggregates=aggs, **kw), repeats, clock)
                record("bloomdb columnar", sec, [tuple(out.values())])
                sql = "SELECT sum(p.i0), sum(p.i1), count(*) FROM p JOIN b ON p.a = b.a AND p.b = b.b"
                plq = lambda pb, bb: pb.lazy().join(bb.lazy(), on=["a", "b"]).select(  # noqa: E731
                    [pl.col("i0").sum(), pl.col("i1").sum(), pl.len()])
            elif shape == "left_rows":
                from .join_bench import make_build

                build = make_build(universe, 0.1)
                sec, out = _best(lambda: hash_join(cpath, build, on="k", how="left", columns=["k", "i0", "payload"],
                                                   **kw), repeats, clock)
                record("bloomdb columnar", sec, out, f"{out.num_rows:,} rows")
                sql = "SELECT p.k, p.i0, b.payload FROM p LEFT JOIN b ON p.k = b.k"
                plq = lambda pb, bb: pb.lazy().select(["k", "i0"]).join(bb.lazy(), on="k", how="left")  # noqa: E731
            elif shape == "groupby":
                build = _dim(universe)
                aggs = ["sum(i0)", "sum(f0)", "count(*)"]
                sec, out = _best(lambda: hash_join(cpath, build, on="k", aggregates=aggs, group_by="region", **kw),
                                 repeats, clock)
                record("bloomdb columnar", sec, _rows_of(out))
                sql = "SELECT b.region, sum(p.i0), sum(p.f0), count(*) FROM p JOIN b ON p.k = b.k GROUP BY b.region"
                plq = lambda pb, bb: pb.lazy().join(bb.lazy(), on="k").group_by("region").agg(  # noqa: E731
                    [pl.col("i0").sum(), pl.col("f0").sum(), pl.len()])
            else:  # dataset
                import pyarrow.parquet as pq

                folder = os.path.join(workdir, "probe_files")
                os.makedirs(folder, exist_ok=True)
                step = -(-rows // 10)
                for j in range(10):
                    pq.write_table(probe.slice(j * step, step), os.path.join(folder, f"part-{j:02d}.parquet"),
                                   row_group_size=columnar.DEFAULT_CHUNK_ROWS)
                from .join_bench import make_build

                build = make_build(universe, 0.1)
                aggs = [f"sum({c})" for c in PAYLOAD] + ["count(*)"]
                sec, out = _best(lambda: hash_join(folder, build, on="k", aggregates=aggs, **kw), repeats, clock)
                record("bloomdb parquet", sec, [tuple(out.values())])
                glob_ = os.path.join(folder, "*.parquet")
                sql = (f"SELECT {', '.join(f'sum(p.{c})' for c in PAYLOAD)}, count(*) FROM read_parquet('{glob_}') p"
                       " JOIN b ON p.k = b.k")
                plq = lambda pb, bb: pl.scan_parquet(glob_).join(bb.lazy(), on="k").select(  # noqa: E731
                    [pl.col(c).sum() for c in PAYLOAD] + [pl.len()])
            if duck is not None:
                duck.register("b", build)
                label = "duckdb parquet" if shape == "dataset" else "duckdb native"
                fetch = (lambda: duck.sql(sql).to_arrow_table()) if shape.endswith("_rows") else (
                    lambda: duck.execute(sql).fetchall())
                sec, out = _best(fetch, repeats, clock)
                record(label, sec, out)
                duck.unregister("b")
            if pdf is not None:
                bdf = pl.from_arrow(build)
                q = plq(pdf, bdf)
                sec, out = _best(lambda: q.collect(), repeats, clock)
                record("polars parquet" if shape == "dataset" else "polars in-memory", sec,
                       out if shape.endswith("_rows") else out.rows())
    finally:
        if duck is not None:
            duck.close()
        if tmp is not None:
            tmp.cleanup()
    return runs


def _rows_of(t: pa.Table) -> list[tuple]:
    return list(zip(*[t.column(i).to_pylist() for i in range(t.num_columns)]))


def format_table(runs: list[Run]) -> str:
    """One line per (shape, engine): time and ratio to the shape's bloomdb run."""
    lines = [f"{'shape':<10}{'engine':<24}{'ms':>9}  {'x bloomdb':>10}"]
    for si in sorted({int(r.fraction) for r in runs}):
        group = [r for r in runs if int(r.fraction) == si]
        base = next((r.seconds for r in group if "bloomdb" in r.engine), None)
        for r in group:
            shape, engine = r.engine.split(": ", 1)
            ratio = f"{r.seconds / base:9.2f}x" if base else ""
            lines.append(f"{shape:<10}{engine:<24}{r.seconds * 1e3:9.1f}  {ratio:>10}  {r.note}")
    return "\n".join(lines)

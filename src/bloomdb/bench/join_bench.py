"""The filtered hash join benchmark: bloomdb's join against DuckDB and Polars on the same data.

Workload (issue 7): a probe table of ``rows`` rows — an int64 key and 8 payload columns (4 int64
of various widths, 4 float64) — and a build table of ``build_rows`` distinct int64 keys; the
query is the sum of every payload column and ``count(*)`` over the inner join. Probe keys are
drawn from a universe of ``build_rows`` values (each repeated ``rows / build_rows`` times); for a
match fraction f, the build side holds ``f · build_rows`` keys of that universe and the rest from
outside it, so exactly about f of the probe rows match and the build size stays fixed.

Every engine runs in this process, on 2 threads by default, best of ``repeats`` timed runs after
one warm-up run (JIT compilation and file caching are left out). Results are cross-checked.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import pyarrow as pa

PAYLOAD = ["i0", "i1", "i2", "i3", "f0", "f1", "f2", "f3"]
QUERY_AGGS = [f"sum({c})" for c in PAYLOAD] + ["count(*)"]
_MULT = np.uint64(0x9E3779B97F4A7C15)


def _scramble(x: np.ndarray) -> np.ndarray:
    """A bijection of [0, 2^40) that makes consecutive ids look random (keys spread over the range)."""
    return ((x.astype(np.uint64) * _MULT) & np.uint64((1 << 40) - 1)).astype(np.int64)


def make_probe(rows: int, universe: int, seed: int = 42) -> pa.Table:
    rng = np.random.default_rng(seed)
    cols: dict[str, Any] = {"k": _scramble(rng.integers(0, universe, rows))}
    for name, bits in zip(PAYLOAD[:4], (8, 20, 32, 48)):
        cols[name] = rng.integers(-(1 << (bits - 1)), 1 << (bits - 1), rows)
    for name in PAYLOAD[4:]:
        cols[name] = rng.normal(size=rows)
    return pa.table(cols)


def make_build(build_rows: int, fraction: float, seed: int = 7) -> pa.Table:
    """``build_rows`` distinct keys: ``fraction`` of them from the probe universe, the rest outside it."""
    rng = np.random.default_rng(seed)
    inside = int(round(fraction * build_rows))
    ids = np.concatenate([rng.permutation(build_rows)[:inside], build_rows + np.arange(build_rows - inside)])
    return pa.table({"k": _scramble(rng.permutation(ids)), "payload": np.arange(build_rows, dtype=np.int64)})


@dataclass
class Run:
    engine: str
    fraction: float
    seconds: float
    result: dict
    rows_decoded: dict[str, int] = field(default_factory=dict)
    note: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def _best(fn: Callable[[], Any], repeats: int, clock: Callable[[], float] = time.perf_counter) -> tuple[float, Any]:
    """Best of ``repeats`` timed calls after a warm-up; ``clock``: wall (default) or
    ``time.process_time`` (CPU seconds of the process: less moved by a loaded machine)."""
    fn()  # warm-up: JIT, page cache, engine caches
    best, out = float("inf"), None
    for _ in range(repeats):
        t = clock()
        out = fn()
        best = min(best, clock() - t)
    return best, out


def _sql(src: str) -> str:
    return f"SELECT {', '.join(f'sum(p.{c})' for c in PAYLOAD)}, count(*) FROM {src} p JOIN b ON p.k = b.k"


def _agree(a: dict, b: dict) -> bool:
    for k in QUERY_AGGS:
        x, y = a.get(k), b.get(k)
        if x is None or y is None:
            if x is not y:
                return False
        elif not np.isclose(float(x), float(y), rtol=1e-9, atol=1e-6):
            return False
    return True


def run(rows: int = 20_000_000, build_rows: int | None = None, fractions=(0.01, 0.1, 0.5, 1.0),
        compare=("duckdb", "polars"), threads: int = 2, repeats: int = 3, parquet: bool = True,
        workdir: str | None = None, modes=("adaptive", "on", "off"), log: Callable[[str], None] = print,
        progress: bool = False) -> list[Run]:
    """Build the data under ``workdir`` (a temp dir by default), run every engine, return the runs.
    ``progress``: a bar over the engine runs with the time left (on a terminal)."""
    from .progress import bar
    from .. import columnar
    from ..join import hash_join

    build_rows = build_rows or max(1, rows // 100)
    tmp = None
    if workdir is None:
        tmp = tempfile.TemporaryDirectory(prefix="bloomdb-join-bench-")
        workdir = tmp.name
    os.makedirs(workdir, exist_ok=True)
    runs: list[Run] = []
    per_fraction = len(modes) + int(parquet) + 2 * int("duckdb" in compare) - int("duckdb" in compare and not parquet)
    per_fraction += int("polars" in compare)
    steps = bar(len(fractions) * per_fraction, "join-bench", unit="run", enabled=progress)
    if progress:
        log = steps.write
    try:
        t0 = time.perf_counter()
        probe = make_probe(rows, build_rows)
        cpath = os.path.join(workdir, "probe.bdc")
        columnar.write(cpath, probe)
        ppath = os.path.join(workdir, "probe.parquet")
        if parquet:
            import pyarrow.parquet as pq

            pq.write_table(probe, ppath, row_group_size=columnar.DEFAULT_CHUNK_ROWS)
        log(f"data: {rows:,} probe rows x 9 columns, {build_rows:,} build rows; written in {time.perf_counter() - t0:.1f} s")
        duck = None
        if "duckdb" in compare:
            import duckdb

            duck = duckdb.connect(os.path.join(workdir, "duck.db"))
            duck.execute(f"SET threads = {threads}")
            duck.register("probe_arrow", probe)
            duck.execute("CREATE TABLE probe AS SELECT * FROM probe_arrow")
            duck.unregister("probe_arrow")
            duck.execute("CHECKPOINT")
        pl = pdf = None
        if "polars" in compare:
            os.environ.setdefault("POLARS_MAX_THREADS", str(threads))
            import polars as pl

            pdf = pl.from_arrow(probe)
        del probe
        for frac in fractions:
            build = make_build(build_rows, frac)
            ref: dict | None = None

            def record(engine: str, seconds: float, result: dict, decoded=None, note=""):
                nonlocal ref
                r = Run(engine, frac, seconds, result, decoded or {}, note)
                if ref is None:
                    ref = result
                elif not _agree(result, ref):
                    raise AssertionError(f"{engine} disagrees at {frac:.0%}: {result} vs {ref}")
                runs.append(r)
                log(f"  {frac:>5.0%}  {engine:<24} {seconds * 1e3:9.1f} ms")
                steps.update()

            for mode in modes:
                sec, (res, st) = _best(lambda: hash_join(cpath, build, on="k", aggregates=QUERY_AGGS, pushdown=mode,
                                                          threads=threads, explain=True), repeats)
                record(f"bloomdb columnar {mode}", sec, res, st.rows_decoded,
                       f"filter rejected {st.rejection_rate:.0%}, {len(st.transitions)} switches")
            if parquet:
                sec, (res, st) = _best(lambda: hash_join(ppath, build, on="k", aggregates=QUERY_AGGS, threads=threads,
                                                          explain=True), repeats)
                record("bloomdb parquet adaptive", sec, res, st.rows_decoded)
            if duck is not None:
                duck.register("b", build)
                for label, src in (("duckdb native", "probe"), ("duckdb parquet", f"read_parquet('{ppath}')")):
                    if label.endswith("parquet") and not parquet:
                        continue
                    sec, row = _best(lambda: duck.execute(_sql(src)).fetchall()[0], repeats)
                    record(label, sec, dict(zip(QUERY_AGGS, row)))
                duck.unregister("b")
            if pdf is not None:
                bdf = pl.from_arrow(build.select(["k"]))
                q = pdf.lazy().join(bdf.lazy(), on="k").select([pl.col(c).sum() for c in PAYLOAD] + [pl.len()])
                sec, out = _best(lambda: q.collect().row(0), repeats)
                record("polars in-memory", sec, dict(zip(QUERY_AGGS, out)))
        if duck is not None:
            duck.close()
    finally:
        steps.close()
        if tmp is not None:
            tmp.cleanup()
    return runs


def format_table(runs: list[Run], baseline: str = "bloomdb columnar adaptive") -> str:
    """One line per (fraction, engine): time, ratio to ``baseline``, payload rows decoded."""
    lines = [f"{'match':>6}  {'engine':<26}{'ms':>9}  {'x ' + baseline.split()[-1]:>11}  payload rows decoded"]
    for frac in sorted({r.fraction for r in runs}):
        group = [r for r in runs if r.fraction == frac]
        base = next((r.seconds for r in group if r.engine == baseline), None)
        for r in group:
            ratio = f"{r.seconds / base:10.2f}x" if base else ""
            dec = ""
            if r.rows_decoded:
                key = r.rows_decoded.get("k", 0)
                pay = [r.rows_decoded.get(c, 0) for c in PAYLOAD]
                dec = f"{np.mean(pay) / max(1, key):.1%} of key rows per column ({int(np.mean(pay)):,})"
            lines.append(f"{frac:>6.0%}  {r.engine:<26}{r.seconds * 1e3:9.1f}  {ratio:>11}  {dec}")
    return "\n".join(lines)


def demo(rows: int = 1_000_000, fraction: float = 0.01, threads: int = 2, log: Callable[[str], None] = print) -> None:
    """The join demo: the same query with the filter off, on and adaptive, and what it saved."""
    from .. import columnar
    from ..join import hash_join

    build_rows = max(1, rows // 100)
    with tempfile.TemporaryDirectory(prefix="bloomdb-join-demo-") as d:
        path = os.path.join(d, "probe")
        columnar.write(path, make_probe(rows, build_rows))
        build = make_build(build_rows, fraction)
        log(f"\nFiltered hash join: {rows:,} probe rows (key + 8 payload columns, bloomdb.columnar) joined with "
            f"{build_rows:,} build keys, {fraction:.0%} of probe rows match; sum of every payload column + count(*):\n")
        stats = {}
        for mode in ("off", "on", "adaptive"):
            sec, (res, st) = _best(lambda: hash_join(path, build, on="k", aggregates=QUERY_AGGS, pushdown=mode,
                                                      threads=threads, explain=True), 2)
            stats[mode] = (sec, st)
            pay = sum(st.rows_decoded.get(c, 0) for c in PAYLOAD)
            log(f"   filter {mode:<8} {sec * 1e3:8.1f} ms   payload values decoded {pay:>12,}   "
                f"rows rejected by the filter {st.rows_rejected_by_filter:>10,}   count(*) = {res['count(*)']:,}")
        off, on = stats["off"], stats["on"]
        saved = 1 - sum(on[1].rows_decoded.get(c, 0) for c in PAYLOAD) / max(1, sum(off[1].rows_decoded.get(c, 0) for c in PAYLOAD))
        log(f"\n   the {on[1].filter} filter ({on[1].filter_bytes // 1024} KiB) rejected {on[1].rejection_rate:.1%} of probe rows "
            f"before the hash table; {on[1].false_positives:,} false positives were caught by the hash table.")
        log(f"   pushdown skipped {saved:.1%} of payload decoding: {off[0] / on[0]:.1f}x faster than without the filter.")
        log("   details (adaptive):\n" + "\n".join("     " + line for line in stats["adaptive"][1].explain().splitlines()))
